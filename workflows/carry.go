package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// CarryChange gates checkCarry: a run accepts a continue-as-new state
// only from its own previous run (gate: see VERSIONS.md, carry-from-own-run).
const CarryChange = "carry-from-own-run"

// VerifyCarryChange gates the proof of a carried state's origin: before
// anything else, a run handed a state asks Temporal (VerifyContinuedRun,
// a local activity) whether the run it continued from is of its own
// workflow type on its own task queue, and a state that fails either check
// fails the run as memagent.Forbidden (gate: see VERSIONS.md,
// carry-verified). Before: only the run id was compared, and a refused
// state failed as memagent.BadInput.
const VerifyCarryChange = "carry-verified"

// errCallerState is the failure of a run started with a state of its own.
var errCallerState = errors.New("state is set by the workflow itself when it continues as new, never by a caller: start the run without it")

// checkCarry refuses a state that a run was given (from, the run id it
// names) unless the run can prove that memagent's own previous run handed
// it over. Temporal sets ContinuedExecutionRunID only on a run that
// continued from another, and run ids are the server's, so a caller can
// neither start such a run nor guess the id. But anyone in the namespace
// can run a worker of its own and continue as new from a workflow of its
// own, on its own task queue, into memagent's types on memagent's queue,
// with any state naming the run it continues from: so at VerifyCarryChange
// the run also asks Temporal what that run was (verifyCarried), and takes
// the state only from a run of its own type on its own task queue, which
// only memagent's workers run (the operator keeps other workers off that
// queue: docs/DEPLOY.md). A state without a run id is one handed over by a
// worker from before the run-id check (a run in flight across the
// upgrade); it is trusted only on a plain continuation (no cron schedule,
// first attempt), which a caller cannot start either: a cron schedule's or
// a retry's next run would repeat the caller's input, and the run it
// continues from would be memagent's own.
func checkCarry(ctx workflow.Context, from string) error {
	return checkCarryAt(ctx, gates{}, from)
}

// checkCarryAt is checkCarry with the run's gates.
func checkCarryAt(ctx workflow.Context, g gates, from string) error {
	if !g.at(ctx, CarryChange) {
		return nil
	}
	info := workflow.GetInfo(ctx)
	prev := info.ContinuedExecutionRunID
	own := prev != "" && (from == prev || from == "" && info.CronSchedule == "" && info.Attempt <= 1)
	verify := g.at(ctx, VerifyCarryChange)
	switch {
	case !own && verify:
		return forbidden(errCallerState)
	case !own:
		return badInput(errCallerState)
	case verify:
		return verifyCarried(ctx, prev)
	}
	return nil
}

// verifyCarried runs VerifyContinuedRun for the run this one continued
// from (prev). It retries while Temporal cannot answer; a refusal fails
// the run as memagent.Forbidden before any other activity.
func verifyCarried(ctx workflow.Context, prev string) error {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: 24 * time.Hour,
		StartToCloseTimeout:    30 * time.Second,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	err := actwire.VerifyContinuedRun.ExecuteLocal(lctx, actwire.VerifyRunInput{PreviousRunID: prev}).Get(ctx)
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == api.ErrForbidden {
		return temporal.NewNonRetryableApplicationError(appErr.Message(), api.ErrForbidden, nil)
	}
	return err
}

// forbidden is a non-retryable memagent.Forbidden failure of the run.
func forbidden(err error) error {
	return temporal.NewNonRetryableApplicationError(err.Error(), api.ErrForbidden, nil)
}

// chainID names the chain of runs a workflow is: its first run's id, which
// Temporal always sets (the SDK's test environment does not: there, the
// run's own).
func chainID(info *workflow.Info) string {
	if info.FirstRunID != "" {
		return info.FirstRunID
	}
	return info.WorkflowExecution.RunID
}
