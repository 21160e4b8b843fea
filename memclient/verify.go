package memclient

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
)

// ErrNotMemagent is wrapped (errors.Is) by the error of every function of
// a Client that found, under a workflow id memagent expects, an execution
// that is not memagent's: another workflow type, another task queue, or a
// continue-as-new chain that did not start as memagent's. Such an
// execution is treated as forbidden, never as data: nothing of it is read,
// and no query or Update is sent to it.
var ErrNotMemagent = errors.New("not memagent's")

// NotMemagentError describes an execution that is not memagent's. It
// wraps ErrNotMemagent.
type NotMemagentError struct {
	// WorkflowID and RunID name the execution found; Type and TaskQueue
	// are what it is, WantType and WantTaskQueue what memagent's would be.
	WorkflowID, RunID       string
	Type, TaskQueue         string
	WantType, WantTaskQueue string
	// FirstRun is set when the run found is the first of the chain that
	// the execution continued from, not the execution itself.
	FirstRun bool
}

func (e *NotMemagentError) Error() string {
	what := "workflow " + e.WorkflowID
	if e.RunID != "" {
		what += " (run " + e.RunID + ")"
	}
	if e.FirstRun {
		what += " started as"
	} else {
		what += " is"
	}
	return fmt.Sprintf("%s a %s on task queue %s, not memagent's %s on %s: it is not memagent's; ask the operator to terminate it",
		what, e.Type, e.TaskQueue, e.WantType, e.WantTaskQueue)
}

// Unwrap makes errors.Is(err, ErrNotMemagent) hold.
func (e *NotMemagentError) Unwrap() error { return ErrNotMemagent }

// Execution is an execution Verify found to be memagent's.
type Execution struct {
	// WorkflowID and RunID name the run described; FirstRunID the first
	// run of its continue-as-new chain (RunID for a run that never
	// continued).
	WorkflowID, RunID, FirstRunID string
	// Type is its workflow type, TaskQueue its task queue.
	Type, TaskQueue string
	// Status is the run's status.
	Status enumspb.WorkflowExecutionStatus
	// Info is the description Temporal returned.
	Info *workflowpb.WorkflowExecutionInfo
}

// Verify describes the execution workflowID (its run runID, or its latest
// run for "") and checks that it is memagent's: of workflowType, on the
// client's task queue (Options.TaskQueue), and, when it continued as new,
// so is the first run of its chain (while Temporal still holds it).
// Anything else is a
// *NotMemagentError; a workflow that does not exist is Temporal's
// *serviceerror.NotFound, wrapped.
//
// Every function of a Client that reads, joins, queries or sends an
// Update to a workflow it did not just start verifies it this way first,
// and then addresses the verified run (queries) or chain (Updates), so that
// a run swapped in between is not addressed.
func (c *Client) Verify(ctx context.Context, workflowID, runID, workflowType string) (Execution, error) {
	d, err := c.c.DescribeWorkflowExecution(ctx, workflowID, runID)
	if err != nil {
		return Execution{}, fmt.Errorf("memagent: describe %s: %w", workflowID, err)
	}
	info := d.GetWorkflowExecutionInfo()
	x := Execution{
		WorkflowID: workflowID, RunID: info.GetExecution().GetRunId(), FirstRunID: info.GetFirstRunId(),
		Type: info.GetType().GetName(), TaskQueue: taskQueueOf(d.GetExecutionConfig().GetTaskQueue().GetName(), info),
		Status: info.GetStatus(), Info: info,
	}
	if x.FirstRunID == "" {
		x.FirstRunID = x.RunID
	}
	if err := c.memagents(x.WorkflowID, x.RunID, x.Type, x.TaskQueue, workflowType, false); err != nil {
		return Execution{}, err
	}
	if x.FirstRunID != x.RunID {
		// A chain that started as something else and continued as new into
		// memagent's type and queue is not memagent's either.
		fd, err := c.c.DescribeWorkflowExecution(ctx, workflowID, x.FirstRunID)
		var nf *serviceerror.NotFound
		switch {
		case errors.As(err, &nf):
			// Closed longer than the namespace's retention ago (a sign-off
			// waits for weeks): the run itself was checked, and what it
			// carried over is the worker's to prove.
		case err != nil:
			return Execution{}, fmt.Errorf("memagent: describe the first run %s of %s: %w", x.FirstRunID, workflowID, err)
		default:
			fi := fd.GetWorkflowExecutionInfo()
			if err := c.memagents(workflowID, x.FirstRunID, fi.GetType().GetName(),
				taskQueueOf(fd.GetExecutionConfig().GetTaskQueue().GetName(), fi), workflowType, true); err != nil {
				return Execution{}, err
			}
		}
	}
	return x, nil
}

// memagents refuses a run that is not a workflowType on the client's task
// queue.
func (c *Client) memagents(id, runID, typ, queue, workflowType string, first bool) error {
	if typ == workflowType && queue == c.taskQueue {
		return nil
	}
	return &NotMemagentError{WorkflowID: id, RunID: runID, Type: typ, TaskQueue: queue,
		WantType: workflowType, WantTaskQueue: c.taskQueue, FirstRun: first}
}

// taskQueueOf is an execution's task queue: the one its info names, or
// else its execution config's.
func taskQueueOf(config string, info *workflowpb.WorkflowExecutionInfo) string {
	if q := info.GetTaskQueue(); q != "" {
		return q
	}
	return config
}
