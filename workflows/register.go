package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
)

// Registry is the part of a worker (or of a plugin's registry, or a
// replayer) that workflows are registered on.
type Registry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
}

// Register registers every memagent workflow under its stable name. The
// worker command, the plugin and the replay tests all use it, so a new
// workflow is registered in one place.
//
// Each is Pinned, which a versioned worker (Worker Deployments) needs
// declared and an unversioned one ignores: a run stays on the build that
// started it. DocumentQA, ReviewDocument and BatchQA move to the target
// build when they continue as new (versioning.go); Estimate, which
// prepares a document and counts, ends on its build within minutes.
// SignOff, which waits days or weeks for people, wakes every
// signOffMoveCheck to see whether its target build changed and then
// continues as new onto it, and continues as new at least every run_hours.
func Register(r Registry) {
	pinned := workflow.VersioningBehaviorPinned
	r.RegisterWorkflowWithOptions(DocumentQA, workflow.RegisterOptions{Name: api.DocumentQAName, VersioningBehavior: pinned})
	r.RegisterWorkflowWithOptions(ReviewDocument, workflow.RegisterOptions{Name: api.ReviewDocumentName, VersioningBehavior: pinned})
	r.RegisterWorkflowWithOptions(BatchQA, workflow.RegisterOptions{Name: api.BatchQAName, VersioningBehavior: pinned})
	r.RegisterWorkflowWithOptions(Estimate, workflow.RegisterOptions{Name: api.EstimateName, VersioningBehavior: pinned})
	r.RegisterWorkflowWithOptions(SignOff, workflow.RegisterOptions{Name: api.SignOffName, VersioningBehavior: pinned})
	r.RegisterWorkflowWithOptions(ClaimScheduleReports, workflow.RegisterOptions{Name: api.ClaimScheduleReportsName, VersioningBehavior: pinned})
	r.RegisterWorkflowWithOptions(Validate, workflow.RegisterOptions{Name: api.ValidateName, VersioningBehavior: pinned})
}
