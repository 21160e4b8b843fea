package memclient

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
)

// StartSignOff starts the sign-off of a finished review or batch, under
// api.SignOffWorkflowID of it, or joins the one already going (or
// finds the one that completed), and returns its workflow id.
func (c *Client) StartSignOff(ctx context.Context, in api.SignOffInput) (string, error) {
	if err := in.Validate(); err != nil {
		return "", fmt.Errorf("memagent: %w", err)
	}
	subject, _ := in.Subject()
	id := api.SignOffWorkflowID(subject)
	_, err := c.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: c.taskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    api.SignOffStartSearchAttributes(in),
		StaticSummary:            "sign-off of " + subject,
	}, api.SignOffName, in)
	var exists *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &exists) {
		// Already started and completed (signed off) is not an error:
		// the sign-off is there, final.
		return "", fmt.Errorf("start sign-off %s: %w", id, err)
	}
	return id, nil
}

// SignOffGrid returns the sign-off's grid: its query while it runs, its
// result once signed off.
func (c *Client) SignOffGrid(ctx context.Context, subject string) (*api.SignOffGrid, error) {
	id := api.SignOffWorkflowID(subject)
	d, err := c.c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return nil, fmt.Errorf("%s has no sign-off: start one (starter signoff %s --start)", subject, subject)
		}
		return nil, err
	}
	var g api.SignOffGrid
	if d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		if err := c.c.GetWorkflow(ctx, id, "").Get(ctx, &g); err != nil {
			return nil, err
		}
		return &g, nil
	}
	v, err := c.c.QueryWorkflow(ctx, id, "", api.SignOffGridQuery)
	if err != nil {
		return nil, err
	}
	if err := v.Get(&g); err != nil {
		return nil, err
	}
	return &g, nil
}

// CellHistory returns one cell's decisions, oldest first.
func (c *Client) CellHistory(ctx context.Context, subject, cell string) (*api.SignOffCellHistory, error) {
	v, err := c.c.QueryWorkflow(ctx, api.SignOffWorkflowID(subject), "", api.CellHistoryQuery, cell)
	if err != nil {
		return nil, err
	}
	var h api.SignOffCellHistory
	if err := v.Get(&h); err != nil {
		return nil, err
	}
	return &h, nil
}

// update sends an Update to the sign-off of subject and waits for its
// result. A refusal (the validator's) is the error.
func update[T any](ctx context.Context, c client.Client, subject, name string, arg any) (*T, error) {
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: api.SignOffWorkflowID(subject), UpdateName: name, Args: []any{arg},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return nil, err
	}
	var out T
	if err := h.Get(ctx, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Decide records a decision on a cell of the sign-off of subject.
func (c *Client) Decide(ctx context.Context, subject string, r api.DecideRequest) (*api.SignOffCell, error) {
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("memagent: %w", err)
	}
	return update[api.SignOffCell](ctx, c.c, subject, api.DecideUpdate, r)
}

// SignOff signs a level of the sign-off of subject off.
func (c *Client) SignOff(ctx context.Context, subject string, r api.SignOffRequest) (*api.SignOffGrid, error) {
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("memagent: %w", err)
	}
	return update[api.SignOffGrid](ctx, c.c, subject, api.SignOffUpdate, r)
}

// Reopen withdraws a cell's decisions at a level and above.
func (c *Client) Reopen(ctx context.Context, subject string, r api.ReopenRequest) (*api.SignOffCell, error) {
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("memagent: %w", err)
	}
	return update[api.SignOffCell](ctx, c.c, subject, api.ReopenUpdate, r)
}
