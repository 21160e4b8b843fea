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
func Register(r Registry) {
	r.RegisterWorkflowWithOptions(DocumentQA, workflow.RegisterOptions{Name: api.DocumentQAName})
	r.RegisterWorkflowWithOptions(ReviewDocument, workflow.RegisterOptions{Name: api.ReviewDocumentName})
	r.RegisterWorkflowWithOptions(BatchQA, workflow.RegisterOptions{Name: api.BatchQAName})
	r.RegisterWorkflowWithOptions(Estimate, workflow.RegisterOptions{Name: api.EstimateName})
	r.RegisterWorkflowWithOptions(SignOff, workflow.RegisterOptions{Name: api.SignOffName})
}
