package activities

import (
	"go.temporal.io/sdk/activity"
)

// Registry is the part of a worker (or of a plugin's registry) that
// activities are registered on.
type Registry interface {
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// Register registers every memagent activity under its stable name. The
// worker command and the plugin both use it.
func (a *Activities) Register(r Registry) {
	r.RegisterActivityWithOptions(a.convertDocument, activity.RegisterOptions{Name: ConvertDocumentName})
	r.RegisterActivityWithOptions(a.assembleCorpus, activity.RegisterOptions{Name: AssembleCorpusName})
	r.RegisterActivityWithOptions(a.findCheckpoint, activity.RegisterOptions{Name: FindCheckpointName})
	r.RegisterActivityWithOptions(a.prepareDocument, activity.RegisterOptions{Name: PrepareDocumentName})
	r.RegisterActivityWithOptions(a.updateMemory, activity.RegisterOptions{Name: UpdateMemoryName})
	r.RegisterActivityWithOptions(a.answer, activity.RegisterOptions{Name: AnswerName})
	r.RegisterActivityWithOptions(a.estimateCost, activity.RegisterOptions{Name: EstimateCostName})
	r.RegisterActivityWithOptions(a.groundAnswer, activity.RegisterOptions{Name: GroundAnswerName})
	r.RegisterActivityWithOptions(a.verifyContinuedRun, activity.RegisterOptions{Name: VerifyContinuedRunName})
	a.registerReview(r)
	a.registerBatch(r)
	a.registerSignOff(r)
}
