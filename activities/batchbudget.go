package activities

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// Names of the activities of a batch's budget protocol (see BatchQA's
// grantLedger). They are part of the wire format.
const (
	// RequestBatchBudgetName is run by a batch's DocumentQA child that has
	// spent its grant: it asks the child's own batch for more and returns
	// the batch's answer.
	RequestBatchBudgetName = actwire.RequestBatchBudgetName
	// ReadBatchChildName is run by a batch to read a child's usage from
	// the child run it started.
	ReadBatchChildName = actwire.ReadBatchChildName
)

// ErrNotBatchChild is the type of RequestBatchBudget's failure for a run
// that Temporal does not know as a child of a running BatchQA.
const ErrNotBatchChild = "memagent.NotBatchChild"

// requestBatchBudget asks the batch that started the calling DocumentQA run
// for more budget, through the batch's BudgetRequestUpdate, and returns the
// grant the batch answers with. Who the child is and which batch started
// it come from Temporal (the activity's own workflow and that workflow's
// parent), never from the input; the Update goes to the batch's own chain
// of runs (its first run id), so a workflow started under the batch's id
// by someone else cannot answer it. A batch that has closed answers
// nothing: the child stays paused.
func (a *Activities) requestBatchBudget(ctx context.Context, in actwire.BudgetRequestInput) (*api.Budget, error) {
	defer a.startHeartbeat(ctx)()
	info := activity.GetInfo(ctx)
	c := activity.GetClient(ctx)
	self, err := c.DescribeWorkflowExecution(ctx, info.WorkflowExecution.ID, info.WorkflowExecution.RunID)
	if err != nil {
		return nil, fmt.Errorf("describe the run itself: %w", err)
	}
	parent := self.GetWorkflowExecutionInfo().GetParentExecution()
	if parent.GetWorkflowId() == "" {
		return nil, temporal.NewNonRetryableApplicationError("the run has no parent workflow: its budget is its own", ErrNotBatchChild, nil)
	}
	batch, err := c.DescribeWorkflowExecution(ctx, parent.GetWorkflowId(), parent.GetRunId())
	if err != nil {
		return nil, fmt.Errorf("describe the batch: %w", err)
	}
	bi := batch.GetWorkflowExecutionInfo()
	if bi.GetType().GetName() != api.BatchQAName {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("the run's parent is a %s, not a %s: its budget is its own", bi.GetType().GetName(), api.BatchQAName), ErrNotBatchChild, nil)
	}
	chain := bi.GetFirstRunId()
	if chain == "" {
		chain = parent.GetRunId()
	}
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		// A retry of this activity asks the same question again: the same
		// Update id, answered once.
		UpdateID:            fmt.Sprintf("budget/%s/%s", info.WorkflowExecution.RunID, info.ActivityID),
		WorkflowID:          parent.GetWorkflowId(),
		FirstExecutionRunID: chain,
		UpdateName:          api.BudgetRequestUpdate,
		Args:                []any{api.BudgetRequest{WorkflowID: info.WorkflowExecution.ID, Usage: in.Usage}},
		WaitForStage:        client.WorkflowUpdateStageCompleted,
	})
	var missing *serviceerror.NotFound
	switch {
	case errors.As(err, &missing):
		return nil, temporal.NewNonRetryableApplicationError("the batch that started this run has closed: the run stays paused (cancel it, or raise its batch's budget in a new batch)", ErrNotBatchChild, err)
	case err != nil:
		return nil, fmt.Errorf("ask the batch for budget: %w", err)
	}
	var g api.Budget
	if err := h.Get(ctx, &g); err != nil {
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) {
			// The batch refused: it no longer holds this run as a running
			// child. Wait for a wake-up rather than retry at once.
			return nil, temporal.NewNonRetryableApplicationError("the batch refused: "+appErr.Message(), ErrNotBatchChild, err)
		}
		return nil, fmt.Errorf("ask the batch for budget: %w", err)
	}
	if g.MaxCalls < 0 || g.MaxTokens < 0 {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("the batch answered a negative grant (%+v)", g), ErrNotBatchChild, nil)
	}
	return &g, nil
}

// readBatchChild reads the usage of a batch's child from the child itself
// (its progress query), from the execution ref names and its
// continue-as-new chain only: the figure a budget request carries is the
// sender's word, this is the child's. A child whose chain has closed is
// reported closed, without usage; the batch settles it from its outcome.
func (a *Activities) readBatchChild(ctx context.Context, ref actwire.ChildRef) (*actwire.ChildUsage, error) {
	defer a.startHeartbeat(ctx)()
	c := activity.GetClient(ctx)
	latest, ours, err := childChain(ctx, c, ref)
	var missing *serviceerror.NotFound
	switch {
	case errors.As(err, &missing):
		return &actwire.ChildUsage{}, nil
	case err != nil:
		return nil, fmt.Errorf("describe child %s: %w", ref.WorkflowID, err)
	}
	if !ours || latest.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return &actwire.ChildUsage{}, nil
	}
	v, err := c.QueryWorkflow(ctx, ref.WorkflowID, latest.GetExecution().GetRunId(), api.ProgressQuery)
	if err != nil {
		return nil, fmt.Errorf("query child %s: %w", ref.WorkflowID, err)
	}
	var p api.Progress
	if err := v.Get(&p); err != nil {
		return nil, fmt.Errorf("decode the progress of child %s: %w", ref.WorkflowID, err)
	}
	return &actwire.ChildUsage{Open: true, Usage: p.Usage}, nil
}
