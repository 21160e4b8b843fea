package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"

	"github.com/memagent/memagent/internal/actwire"
)

// VerifyContinuedRunName is the local activity with which a run that was
// handed a state over continue-as-new proves where the state came from.
const VerifyContinuedRunName = actwire.VerifyContinuedRunName

// describer is the part of a Temporal client that verifyContinuedFrom uses.
type describer interface {
	DescribeWorkflowExecution(ctx context.Context, workflowID, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error)
}

// verifyContinuedRun checks that the run the calling run continued from
// (in.PreviousRunID) is a run of the same workflow id and type on the same
// task queue, closed by continuing as new: a run that memagent's own
// workers ran, so the state it handed over is one memagent's code wrote.
// A workflow of anyone else's, on a task queue of its own, can continue as
// new into memagent's types on memagent's queue with any state; it fails
// this check, since the run it continued from is on that other queue.
// The calling run's id, type and task queue come from the activity's info
// (Temporal's), never from the input.
func (a *Activities) verifyContinuedRun(ctx context.Context, in actwire.VerifyRunInput) error {
	info := activity.GetInfo(ctx)
	return verifyContinuedFrom(ctx, activity.GetClient(ctx), info.WorkflowExecution.ID, in.PreviousRunID, info.WorkflowType.Name, info.TaskQueue)
}

// verifyContinuedFrom is verifyContinuedRun for the run of workflowID
// that continued from prev, of type wfType on taskQueue, asking c.
func verifyContinuedFrom(ctx context.Context, c describer, workflowID, prev, wfType, taskQueue string) error {
	if prev == "" {
		return forbidden("this run was handed a state but did not continue from another run: the state is set by the workflow itself when it continues as new, never by a caller; start the run without it")
	}
	desc, err := c.DescribeWorkflowExecution(ctx, workflowID, prev)
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return forbidden("the run %s that this run continues from does not exist: a carried state is taken only from memagent's own previous run", prev)
	case err != nil:
		return fmt.Errorf("describe the run continued from: %w", err)
	}
	info := desc.GetWorkflowExecutionInfo()
	gotType := info.GetType().GetName()
	gotQueue := desc.GetExecutionConfig().GetTaskQueue().GetName()
	if gotQueue == "" {
		gotQueue = info.GetTaskQueue()
	}
	status := info.GetStatus()
	if gotType != wfType || gotQueue != taskQueue || status != enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW {
		return forbidden("this run continues from run %s, a %s on task queue %q (%s), not memagent's own %s on %q: "+
			"a state carried over continue-as-new is taken only from memagent's own previous run (see docs/DEPLOY.md, the threat model)",
			prev, gotType, gotQueue, strings.ToLower(strings.TrimPrefix(status.String(), "WORKFLOW_EXECUTION_STATUS_")), wfType, taskQueue)
	}
	return nil
}
