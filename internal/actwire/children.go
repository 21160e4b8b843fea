package actwire

import (
	"errors"

	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
)

// CheckChildrenInput asks CheckBatchChildren how the DocumentQA children of
// a batch that a run carried over from its previous run are doing.
type CheckChildrenInput struct {
	// Children are the children, each with the execution the batch
	// started: only that execution and its continue-as-new chain settle
	// the child.
	Children []ChildRef `json:"children,omitempty"`
	// IDs are children known by workflow id alone: those a run of a worker
	// from before run ids were kept handed over. Each is read from the
	// latest run under its id.
	IDs []string `json:"ids,omitempty"`
	// WaitSeconds is how long to wait for a child that is still open to
	// close: a child that has just said it is finishing closes in moments.
	// 0 reports open children at once.
	WaitSeconds int `json:"wait_seconds,omitempty"`
}

// ChildRef names a batch's child: its workflow id and the run id of the
// execution the batch started, the first of the child's continue-as-new
// chain.
type ChildRef struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
}

// CheckChildrenOutput lists the children that have closed, with their
// outcome; the others are still running.
type CheckChildrenOutput struct {
	Closed []ChildOutcome `json:"closed,omitempty"`
}

// ChildOutcome is a closed child's outcome as the batch records it: the
// parts of its DocumentQAResult an item's result keeps, or its failure.
type ChildOutcome struct {
	WorkflowID string                `json:"workflow_id"`
	Result     *api.DocumentQAResult `json:"result,omitempty"`
	Error      string                `json:"error,omitempty"`
	ErrorType  string                `json:"error_type,omitempty"`
}

// Trim keeps of a child's result what an item's result uses, so that the
// outcome stays small in the batch's history.
func (o ChildOutcome) Trim() ChildOutcome {
	if o.Result == nil {
		return o
	}
	r := *o.Result
	o.Result = &api.DocumentQAResult{
		WorkflowID: r.WorkflowID, Answer: r.Answer, AnswerFound: r.AnswerFound, Scores: r.Scores,
		Chunks: r.Chunks, Tokens: r.Tokens, Usage: r.Usage, ResultURI: r.ResultURI, AnswerPages: r.AnswerPages,
		Grounding: r.Grounding, Documents: r.Documents, AnswerSources: r.AnswerSources,
	}
	return o
}

// ChildFailure turns a child's failure into the item's error message and
// type: the memagent.* type of the activity that failed when there is one.
func ChildFailure(err error) (msg, typ string) {
	var appErr *temporal.ApplicationError
	var timeout *temporal.TimeoutError
	var canceled *temporal.CanceledError
	var terminated *temporal.TerminatedError
	switch {
	case temporal.IsWorkflowExecutionAlreadyStartedError(err):
		// A caller outside the batch runs a workflow under the item's id:
		// the item's run was never started, and nothing of that one is
		// taken.
		return "another workflow already runs under this item's id, started by a caller outside the batch: the item's run was not started; run the item again", api.ErrChildReplaced
	case errors.As(err, &appErr):
		return appErr.Message(), appErr.Type()
	case errors.As(err, &timeout):
		return timeout.Error(), "Timeout"
	case errors.As(err, &canceled):
		return "canceled", "Canceled"
	case errors.As(err, &terminated):
		return "terminated", "Terminated"
	}
	return err.Error(), ""
}

// BudgetRequestInput is what a batch's DocumentQA child that has spent its
// grant sends RequestBatchBudget: its usage, as the batch's answer is
// computed from (the batch reads the figure again from the child itself;
// the child and its batch come from Temporal, not from this input).
type BudgetRequestInput struct {
	Usage api.Usage `json:"usage"`
}

// ChildUsage is what ReadBatchChild read of a child: whether the child's
// chain is still open, and then its usage.
type ChildUsage struct {
	Open  bool      `json:"open"`
	Usage api.Usage `json:"usage"`
}
