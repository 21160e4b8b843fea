package workflows

import (
	"errors"

	"go.temporal.io/sdk/workflow"
)

// CarryChange gates checkCarry: a run accepts a continue-as-new state
// only from its own previous run (gate: see VERSIONS.md, carry-from-own-run).
const CarryChange = "carry-from-own-run"

// errCallerState is the failure of a run started with a state of its own.
var errCallerState = errors.New("state is set by the workflow itself when it continues as new, never by a caller: start the run without it")

// checkCarry fails as memagent.BadInput unless the state a run was given
// (from, the run id it names) was handed over by this workflow's own
// previous run: Temporal sets ContinuedExecutionRunID only on a run that
// continued from another, and run ids are the server's, so a caller can
// neither start such a run nor guess the id. A state without a run id is
// one handed over by a worker from before this check (a run in flight
// across the upgrade); it is trusted only on a plain continuation (no cron
// schedule, first attempt), which a caller cannot start either: a cron
// schedule's or a retry's next run would repeat the caller's input.
func checkCarry(ctx workflow.Context, from string) error {
	if workflow.GetVersion(ctx, CarryChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	info := workflow.GetInfo(ctx)
	prev := info.ContinuedExecutionRunID
	switch {
	case prev == "":
	case from == prev:
		return nil
	case from == "" && info.CronSchedule == "" && info.Attempt <= 1:
		return nil
	}
	return badInput(errCallerState)
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
