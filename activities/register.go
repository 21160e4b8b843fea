package activities

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
)

// Register registers the activities under their stable names.
func (a *Activities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.PrepareDocument, activity.RegisterOptions{Name: PrepareDocumentName})
	r.RegisterActivityWithOptions(a.UpdateMemory, activity.RegisterOptions{Name: UpdateMemoryName})
	r.RegisterActivityWithOptions(a.Answer, activity.RegisterOptions{Name: AnswerName})
}
