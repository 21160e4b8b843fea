package activities

// registerReview registers the activities of the ReviewDocument workflow.
func (a *Activities) registerReview(r Registry) {}
