package workflows

import (
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Register registers the workflows under their stable names.
func Register(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(DocumentQA, workflow.RegisterOptions{Name: DocumentQAName})
}
