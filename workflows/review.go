package workflows

import (
	"errors"

	"go.temporal.io/sdk/workflow"
)

// ReviewDocumentName is the registered name of ReviewDocument.
const ReviewDocumentName = "memagent.ReviewDocument"

// ReviewInput starts a ReviewDocument run.
type ReviewInput struct{}

// ReviewResult is ReviewDocument's result.
type ReviewResult struct{}

// ReviewDocument asks many questions of one document, reading it once.
func ReviewDocument(ctx workflow.Context, in ReviewInput) (*ReviewResult, error) {
	return nil, errors.New("not implemented")
}
