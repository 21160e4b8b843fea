package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// childBudget is a DocumentQA run's side of the budget: a budget of its
// own, which the raise-budget Update moves, or (a batch child) its batch's
// grant, which only the batch moves. The batch's side is grantLedger.
//
// Invariants (TestChildBudgetInterleavings, childbudget_test.go, checks them
// on the real DocumentQA children of the real BatchQA):
//   - the run makes no model call its budget does not cover: it waits
//     (await) before each, paused;
//   - a batch child's budget moves only by its batch's reply to its
//     request (pullGrant, BudgetPullChange): a BudgetGrantSignal only
//     wakes it, and a raise-budget Update on it is refused (checkRaise);
//   - a raise of a budget of the run's own never falls to what the run
//     has spent (checkOwnRaise): a raise never stops a run it was meant
//     to let go on.
type childBudget struct {
	// pull is BudgetPullChange at version 1; wake the channel of the
	// batch's wake-ups. Both unset for a run whose budget is its own.
	pull bool
	wake workflow.ReceiveChannel
}

// BudgetPullChange gates pulling a batch child's grant (RequestBatchBudget,
// which sends the batch's BudgetRequestUpdate): a BudgetGrantSignal only
// wakes the child to ask again, so nobody but its batch moves its budget
// (gate: see VERSIONS.md, budget-pull).
const BudgetPullChange = "budget-pull"

// budgetAskEvery is how often a batch child that waits for a grant asks
// its batch again without being woken: a wake-up the batch sent is never
// lost (the batch awaits its signals), so this only bounds a wait on a
// batch that could not be reached.
const budgetAskEvery = 5 * time.Minute

// take sets up how a batch child's budget moves (BudgetPullChange); in is
// the run's input, which holds its budget and which continue-as-new
// carries. A run from before BudgetPullChange takes the grant a
// BudgetGrantSignal carries, and replays so; a run at version 1 never does.
func (c *childBudget) take(ctx workflow.Context, g gates, in *api.DocumentQAInput) {
	if !grantedByBatch(ctx, *in) {
		return
	}
	c.pull = g.at(ctx, BudgetPullChange)
	c.wake = workflow.GetSignalChannel(ctx, api.BudgetGrantSignal)
	if c.pull {
		return
	}
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var b api.Budget
			c.wake.Receive(ctx, &b)
			in.Budget = &b
		}
	})
}

// checkRaise is the validator of the raise-budget Update on a run with
// input in that has spent spent: a batch child's budget is its batch's
// grant, which only the batch changes; a budget of the run's own is held
// to checkOwnRaise.
func (c *childBudget) checkRaise(ctx workflow.Context, in api.DocumentQAInput, nb api.Budget, spent api.Usage) error {
	if grantedByBatch(ctx, in) {
		batch := workflow.GetInfo(ctx).ParentWorkflowExecution.ID
		return fmt.Errorf("this run's budget is a grant of its batch %s, which only the batch changes: raise the batch's budget instead (starter budget %s --max-calls N)", batch, batch)
	}
	return checkOwnRaise(nb, spent)
}

// checkOwnRaise refuses a new budget of a run's own (DocumentQA's,
// ReviewDocument's) that is negative or that the run has already spent.
func checkOwnRaise(b api.Budget, spent api.Usage) error {
	switch {
	case b.MaxCalls < 0 || b.MaxTokens < 0:
		return fmt.Errorf("max_calls (%d) and max_tokens (%d) must not be negative (0 is no bound)", b.MaxCalls, b.MaxTokens)
	case overBudget(&b, spent):
		return fmt.Errorf("the run has made %d calls and spent %d tokens: give a budget above that (0 is no bound)", spent.Calls, spent.PromptTokens+spent.CompletionTokens)
	}
	return nil
}

// overBudget reports whether usage has reached b: the next model call
// would pass it.
func overBudget(b *api.Budget, u api.Usage) bool {
	if b == nil {
		return false
	}
	return (b.MaxCalls > 0 && u.Calls >= b.MaxCalls) || (b.MaxTokens > 0 && u.PromptTokens+u.CompletionTokens >= b.MaxTokens)
}

// await stops the run before a model call that its budget does not
// cover: it shows the status paused and waits until the raise-budget
// Update lifts the budget, or (a batch child) its batch grants it more, or
// the run is canceled; then it resumes the stage it was in. Everything
// done so far is kept. It returns errContinueAsNew when the paused run
// should continue as new, paused still (awaitRoom, leaveWait).
func (c *childBudget) await(ctx workflow.Context, in *api.DocumentQAInput, st *qaState, progress *api.Progress, vis *visibility) error {
	if !overBudget(in.Budget, st.Usage) {
		return nil
	}
	stage := progress.Stage
	progress.Stage = api.StagePaused
	vis.publish(*progress, api.StatusKey.ValueSet(api.StagePaused))
	workflow.GetLogger(ctx).Info("paused at the budget", "calls", st.Usage.Calls, "tokens", st.Usage.PromptTokens+st.Usage.CompletionTokens)
	switch {
	case grantedByBatch(ctx, *in) && c.pull:
		if err := c.pullGrant(ctx, in, st); err != nil {
			return err
		}
	case grantedByBatch(ctx, *in):
		// Before BudgetPullChange: ask the batch for more by a signal;
		// it grants it when its own budget has room, else it pauses too.
		// A request that fails leaves the run paused, for an operator's
		// raise-budget.
		info := workflow.GetInfo(ctx)
		req := api.BudgetRequest{WorkflowID: info.WorkflowExecution.ID, Usage: st.Usage}
		if err := workflow.SignalExternalWorkflow(ctx, info.ParentWorkflowExecution.ID, "", api.BudgetRequestSignal, req).Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Warn("ask the batch for budget", "error", err)
		}
		fallthrough
	default:
		if err := awaitRoom(ctx, true, func() bool { return !overBudget(in.Budget, st.Usage) }); err != nil {
			return err
		}
	}
	progress.Stage = stage
	vis.publish(*progress, api.StatusKey.ValueSet(stage))
	return nil
}

// pullGrant asks the run's batch for more budget (RequestBatchBudget) until
// the batch's reply covers the next call, waiting between two asks for the
// batch's wake-up (or budgetAskEvery). The grant is the batch's reply, never
// what a signal carries.
func (c *childBudget) pullGrant(ctx workflow.Context, in *api.DocumentQAInput, st *qaState) error {
	opts := activityOptions(2*time.Minute, DefaultHeartbeatTimeout, temporal.Priority{}, "ask the batch for budget")
	opts.RetryPolicy = askRetryPolicy()
	actx := workflow.WithActivityOptions(ctx, opts)
	for overBudget(in.Budget, st.Usage) {
		// Wake-ups that came before this ask are answered by it.
		for c.wake.ReceiveAsync(nil) {
		}
		var g api.Budget
		err := actwire.RequestBatchBudget.Execute(actx, actwire.BudgetRequestInput{Usage: st.Usage}).Get(ctx, &g)
		switch {
		case err == nil:
			in.Budget = &g
		case temporal.IsCanceledError(err) || ctx.Err() != nil:
			return temporal.NewCanceledError()
		default:
			workflow.GetLogger(ctx).Warn("ask the batch for budget", "error", err)
		}
		if !overBudget(in.Budget, st.Usage) {
			return nil
		}
		tctx, stop := workflow.WithCancel(ctx)
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(c.wake, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
		sel.AddFuture(workflow.NewTimer(tctx, budgetAskEvery), func(workflow.Future) {})
		sel.Select(ctx)
		stop()
		if ctx.Err() != nil {
			return temporal.NewCanceledError()
		}
		if leaveWait(ctx) {
			return errContinueAsNew
		}
	}
	return nil
}

// grantedByBatch reports whether the run's budget is a grant of its
// batch's: a child of a BatchQA with a budget, which asks the batch for
// more when it runs out.
func grantedByBatch(ctx workflow.Context, in api.DocumentQAInput) bool {
	return in.Budget != nil && in.BatchID != "" && workflow.GetInfo(ctx).ParentWorkflowExecution != nil
}
