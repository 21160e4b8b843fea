package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"go.temporal.io/sdk/client"
)

// maxCheckChildren bounds the children one CheckBatchChildren looks at.
const maxCheckChildren = 2000

// checkBatchChildren reports which of a batch's carried-over children have
// closed, and how: their result as Temporal holds it, never as anyone
// signalled it. It reads through the worker's own Temporal client, the
// children's workflow ids coming from the batch's own state.
func (a *Activities) checkBatchChildren(ctx context.Context, in actwire.CheckChildrenInput) (*actwire.CheckChildrenOutput, error) {
	if len(in.IDs) > maxCheckChildren {
		return nil, badInput(fmt.Errorf("%d children to check: at most %d at once", len(in.IDs), maxCheckChildren))
	}
	defer a.startHeartbeat(ctx)()
	c := activity.GetClient(ctx)
	closed := make([]*actwire.ChildOutcome, len(in.IDs))
	errs := make([]error, len(in.IDs))
	parallel(ctx, len(in.IDs), func(i int) {
		closed[i], errs[i] = checkChild(ctx, c, in.IDs[i], time.Duration(in.WaitSeconds)*time.Second)
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := &actwire.CheckChildrenOutput{}
	for _, o := range closed {
		if o != nil {
			out.Closed = append(out.Closed, *o)
		}
	}
	return out, nil
}

// checkChild returns the outcome of child id once it has closed, waiting
// up to wait for one still open; nil when it is still open.
func checkChild(ctx context.Context, c client.Client, id string, wait time.Duration) (*actwire.ChildOutcome, error) {
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	var missing *serviceerror.NotFound
	switch {
	case errors.As(err, &missing):
		return &actwire.ChildOutcome{WorkflowID: id, Error: "the child workflow does not exist", ErrorType: "NotFound"}, nil
	case err != nil:
		return nil, err
	}
	wctx := ctx
	if desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		if wait <= 0 {
			return nil, nil
		}
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	var res api.DocumentQAResult
	err = c.GetWorkflow(wctx, id, "").Get(wctx, &res)
	switch {
	case err == nil:
		o := actwire.ChildOutcome{WorkflowID: id, Result: &res}.Trim()
		return &o, nil
	case wctx.Err() != nil && ctx.Err() == nil:
		return nil, nil // still open after the wait: a later check settles it
	}
	msg, typ := actwire.ChildFailure(err)
	return &actwire.ChildOutcome{WorkflowID: id, Error: msg, ErrorType: typ}, nil
}
