package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/config"
)

// bindBudget replaces a question's budget through the raise-budget Update:
// a run paused at its budget goes on, and nothing it did is paid again.
func bindBudget(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	cfg, cfgErr := config.Load()
	connectionFlags(cmd, &cfg)
	var b api.Budget
	cmd.Flags().IntVar(&b.MaxCalls, "max-calls", 0, "the run's new bound on model calls (0: no bound)")
	cmd.Flags().Int64Var(&b.MaxTokens, "max-tokens", 0, "the run's new bound on prompt and completion tokens (0: no bound)")
	return func(args []string) error {
		if cfgErr != nil {
			return cfgErr
		}
		id, err := oneWorkflowID("budget", args)
		if err != nil {
			return err
		}
		if b.MaxCalls < 0 || b.MaxTokens < 0 {
			return badRequest(errors.New("--max-calls and --max-tokens must not be negative (0 is no bound)"))
		}
		s, kind, err := stopSession(ctx, cfg, id, stderr)
		if err != nil {
			return err
		}
		defer s.close()
		if kind != api.DocumentQAName {
			return badRequest(fmt.Errorf("%s is a %s: budgets are on %s runs", id, kind, api.DocumentQAName))
		}
		h, err := s.temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID: id, UpdateName: api.RaiseBudgetUpdate, Args: []any{b}, WaitForStage: client.WorkflowUpdateStageCompleted,
		})
		if err != nil {
			return badRequest(fmt.Errorf("raise the budget of %s: %w", id, err))
		}
		var got api.Budget
		if err := h.Get(ctx, &got); err != nil {
			return badRequest(fmt.Errorf("raise the budget of %s: %w", id, err))
		}
		fmt.Fprintf(stdout, "%s: budget now %s; follow it with starter watch %s\n", id, describeBudget(got), id)
		return nil
	}
}

func describeBudget(b api.Budget) string {
	calls, tokens := "no bound on calls", "no bound on tokens"
	if b.MaxCalls > 0 {
		calls = fmt.Sprintf("%d calls", b.MaxCalls)
	}
	if b.MaxTokens > 0 {
		tokens = fmt.Sprintf("%d tokens", b.MaxTokens)
	}
	return calls + ", " + tokens
}
