package activities

// registerBatch registers the activities of the BatchQA workflow.
func (a *Activities) registerBatch(r Registry) {}
