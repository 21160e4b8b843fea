package memclient

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/memagent/memagent/api"
)

// FinishedValidation returns the report of the finished validation of
// run runID of subject (a batch or review), for the Validation sheet of
// the subject's decided workbook; nil when there is none (no validation,
// one still open, or one of another run of the subject). An execution
// under the validation's id that is not memagent's is an error
// (ErrNotMemagent), never a report.
func (c *Client) FinishedValidation(ctx context.Context, subject, runID string) (*api.ValidationReport, error) {
	x, err := c.validation(ctx, api.ValidationWorkflowID(subject))
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return nil, nil
	case err != nil:
		return nil, err
	case x.Status != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return nil, nil
	}
	var rep api.ValidationReport
	if err := c.c.GetWorkflow(ctx, x.WorkflowID, x.RunID).Get(ctx, &rep); err != nil {
		return nil, fmt.Errorf("memagent: report of %s: %w", x.WorkflowID, err)
	}
	if rep.Finished == nil || rep.Subject != subject || rep.SubjectRun != runID {
		return nil, nil
	}
	return &rep, nil
}
