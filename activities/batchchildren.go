package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"go.temporal.io/sdk/client"
)

// maxCheckChildren bounds the children one CheckBatchChildren looks at.
const maxCheckChildren = 2000

// checkBatchChildren reports which of a batch's carried-over children have
// closed, and how: their result as Temporal holds it, never as anyone
// signalled it. It reads through the worker's own Temporal client, the
// children's workflow ids and run ids coming from the batch's own state:
// a child is settled only from the execution the batch started and its
// continue-as-new chain (checkChildRun).
func (a *Activities) checkBatchChildren(ctx context.Context, in actwire.CheckChildrenInput) (*actwire.CheckChildrenOutput, error) {
	n := len(in.Children) + len(in.IDs)
	if n > maxCheckChildren {
		return nil, badInput(fmt.Errorf("%d children to check: at most %d at once", n, maxCheckChildren))
	}
	defer a.startHeartbeat(ctx)()
	c := activity.GetClient(ctx)
	var b *batchChain
	if !a.SkipExecutionChecks {
		var why string
		var err error
		if b, why, err = callingBatch(ctx, c); err != nil {
			return nil, err
		}
		if why != "" {
			return nil, forbidden("only memagent's batch checks its children: %s", why)
		}
	}
	wait := time.Duration(in.WaitSeconds) * time.Second
	closed := make([]*actwire.ChildOutcome, n)
	errs := make([]error, n)
	parallel(ctx, n, func(i int) {
		if i < len(in.Children) {
			closed[i], errs[i] = checkChildRun(ctx, c, b, in.Children[i], wait)
			return
		}
		closed[i], errs[i] = checkChildRun(ctx, c, b, actwire.ChildRef{WorkflowID: in.IDs[i-len(in.Children)]}, wait)
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

// checkChildRun returns the outcome of the child execution ref names once
// its chain has closed, waiting up to wait for one still open; nil when it
// is still open. The outcome is that chain's own, read by run id, whatever
// now runs under the workflow id: a chain ended by a caller outside the
// batch (terminated, or terminated to start another workflow under its id)
// fails the item as api.ErrChildReplaced. A ref without a run id (a child a
// worker from before run ids were kept handed over) is read from the
// latest run under its id, as that worker read it.
//
// With b (in a worker, always) the execution must be b's child
// (batchChain.child: a DocumentQA on memagent's task queue, started by a
// run of the batch's chain): a look-alike under the child's id fails the
// item as api.ErrChildReplaced, and nothing of it is taken.
func checkChildRun(ctx context.Context, c client.Client, b *batchChain, ref actwire.ChildRef, wait time.Duration) (*actwire.ChildOutcome, error) {
	latest, ours, err := childChain(ctx, c, ref)
	var missing *serviceerror.NotFound
	switch {
	case errors.As(err, &missing):
		return &actwire.ChildOutcome{WorkflowID: ref.WorkflowID, Error: "the child workflow does not exist", ErrorType: "NotFound"}, nil
	case err != nil:
		return nil, err
	}
	if b != nil {
		// The chain's latest run while it is the latest under the id, else
		// its first, by run id.
		var why string
		if ours {
			why, err = b.check(ctx, latest)
		} else {
			_, why, err = b.child(ctx, ref.WorkflowID, ref.RunID)
		}
		switch {
		case errors.As(err, &missing):
			return &actwire.ChildOutcome{WorkflowID: ref.WorkflowID, Error: "the child workflow does not exist", ErrorType: "NotFound"}, nil
		case err != nil:
			return nil, err
		}
		if why != "" {
			return &actwire.ChildOutcome{WorkflowID: ref.WorkflowID, ErrorType: api.ErrChildReplaced,
				Error: why + ": it is not the batch's child, and nothing of it is taken; run the item again (and ask the operator to terminate that workflow)"}, nil
		}
	}
	wctx := ctx
	if ours && latest.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		if wait <= 0 {
			return nil, nil
		}
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	var res api.DocumentQAResult
	err = c.GetWorkflow(wctx, ref.WorkflowID, ref.RunID).Get(wctx, &res)
	switch {
	case err == nil:
		o := actwire.ChildOutcome{WorkflowID: ref.WorkflowID, Result: &res}.Trim()
		return &o, nil
	case wctx.Err() != nil && ctx.Err() == nil:
		return nil, nil // still open after the wait: a later check settles it
	case errors.As(err, &missing):
		return &actwire.ChildOutcome{WorkflowID: ref.WorkflowID, Error: "the child workflow does not exist", ErrorType: "NotFound"}, nil
	}
	msg, typ := actwire.ChildFailure(err)
	var terminated *temporal.TerminatedError
	if errors.As(err, &terminated) && !ours {
		msg, typ = "the item's run was terminated from outside the batch and another workflow now holds its id: nothing of that workflow is taken; run the item again", api.ErrChildReplaced
	}
	return &actwire.ChildOutcome{WorkflowID: ref.WorkflowID, Error: msg, ErrorType: typ}, nil
}

// childChain describes the latest run under ref's workflow id and reports
// whether it belongs to the chain ref names (its first run, or, for a ref
// without a run id, any). Only one run under an id is open at a time: when
// the latest is not of the chain, the chain has closed.
func childChain(ctx context.Context, c client.Client, ref actwire.ChildRef) (*workflowpb.WorkflowExecutionInfo, bool, error) {
	desc, err := c.DescribeWorkflowExecution(ctx, ref.WorkflowID, "")
	if err != nil {
		return nil, false, err
	}
	latest := desc.GetWorkflowExecutionInfo()
	return latest, ref.RunID == "" || latest.GetFirstRunId() == ref.RunID || latest.GetExecution().GetRunId() == ref.RunID, nil
}
