package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
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
	c := activity.GetClient(ctx)
	var mu sync.Mutex
	out := &actwire.CheckChildrenOutput{}
	errs := make([]error, len(in.IDs))
	parallel(ctx, len(in.IDs), func(i int) {
		id := in.IDs[i]
		desc, err := c.DescribeWorkflowExecution(ctx, id, "")
		var missing *serviceerror.NotFound
		switch {
		case errors.As(err, &missing):
			mu.Lock()
			out.Closed = append(out.Closed, actwire.ChildOutcome{WorkflowID: id, Error: "the child workflow does not exist", ErrorType: "NotFound"})
			mu.Unlock()
			return
		case err != nil:
			errs[i] = err
			return
		}
		wctx := ctx
		if desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			if in.WaitSeconds <= 0 {
				return
			}
			var cancel context.CancelFunc
			wctx, cancel = context.WithTimeout(ctx, time.Duration(in.WaitSeconds)*time.Second)
			defer cancel()
		}
		var res api.DocumentQAResult
		err = c.GetWorkflow(wctx, id, "").Get(wctx, &res)
		switch {
		case err == nil:
			o := actwire.ChildOutcome{WorkflowID: id, Result: &res}
			mu.Lock()
			out.Closed = append(out.Closed, o.Trim())
			mu.Unlock()
		case wctx.Err() != nil && ctx.Err() == nil:
			// Still open after the wait: a later check settles it.
		default:
			msg, typ := actwire.ChildFailure(err)
			mu.Lock()
			out.Closed = append(out.Closed, actwire.ChildOutcome{WorkflowID: id, Error: msg, ErrorType: typ})
			mu.Unlock()
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(out.Closed, func(x, y actwire.ChildOutcome) int { return strings.Compare(x.WorkflowID, y.WorkflowID) })
	return out, nil
}
