package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/clientconf"
	"github.com/memagent/memagent/memclient"
)

// budgetFlags adds --max-calls and --max-tokens to fs, for what ("the
// run", "the review", "the batch"); the function it returns reads them: nil
// when neither is set, a bad-input error when one is negative.
func budgetFlags(fs *pflag.FlagSet, what string) func() (*api.Budget, error) {
	maxCalls := fs.Int("max-calls", 0, "budget: the most model calls "+what+" may make; it pauses before the next (exit 4) until starter budget raises it (0: no bound)")
	maxTokens := fs.Int64("max-tokens", 0, "budget: the most prompt and completion tokens "+what+" may spend (0: no bound)")
	return func() (*api.Budget, error) {
		if *maxCalls < 0 || *maxTokens < 0 {
			return nil, badRequest(fmt.Errorf("--max-calls (%d) and --max-tokens (%d) must not be negative (0 is no bound)", *maxCalls, *maxTokens))
		}
		if *maxCalls == 0 && *maxTokens == 0 {
			return nil, nil
		}
		return &api.Budget{MaxCalls: *maxCalls, MaxTokens: *maxTokens}, nil
	}
}

// awaitBudgeted waits like await; when the run may pause (it has a
// budget, or watch follows a run whose budget it does not know) it also
// polls the run's progress and, once the run shows paused, stops waiting
// with exit code 4 and the commands that resume or end it.
func awaitBudgeted(ctx context.Context, c client.Client, id string, mayPause bool, stop func(), out any, say io.Writer) error {
	waitCtx, stopWaiting := context.WithCancel(ctx)
	defer stopWaiting()
	paused := make(chan pausedProgress, 1)
	if mayPause {
		go watchPause(waitCtx, c, id, paused, stopWaiting)
	}
	err := await(waitCtx, c, id, stop, out, say)
	if err == nil {
		return nil
	}
	select {
	case p := <-paused:
		where := ""
		if p.ChunksTotal > 0 {
			where = fmt.Sprintf(", %d of %d chunks read", p.ChunksDone, p.ChunksTotal)
		}
		spent := fmt.Sprintf("after %d model calls (%d tokens)%s", p.Usage.Calls, p.Usage.PromptTokens+p.Usage.CompletionTokens, where)
		if b := p.Budget; b != nil {
			// A batch: its children's calls count as they are granted.
			spent = fmt.Sprintf("with %d calls and %d tokens spent or granted to its running children, %d of them waiting", b.Committed.MaxCalls, b.Committed.MaxTokens, b.Waiting)
		}
		return &exitError{code: ExitPaused, id: id, err: fmt.Errorf("run %s paused at its budget %s: raise it with starter budget %s --max-calls N (or --max-tokens N), or end it with starter cancel %s",
			id, spent, id, id)}
	default:
	}
	return err
}

// bindBudget replaces a question's budget through the raise-budget Update:
// a run paused at its budget goes on, and nothing it did is paid again.
func bindBudget(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	cfg, cfgErr := clientconf.Load()
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
		switch kind {
		case api.DocumentQAName, api.ReviewDocumentName, api.BatchQAName:
		default:
			return badRequest(fmt.Errorf("%s is a %s: budgets are on questions, reviews and batches", id, kind))
		}
		// Only to memagent's run, and to its chain: a look-alike under the
		// id is refused, and a run swapped in meanwhile is not addressed.
		x, err := memclient.New(s.temporal, memclient.Options{TaskQueue: cfg.TaskQueue}).Verify(ctx, id, "", kind)
		if err != nil {
			return notMemagents(err)
		}
		h, err := s.temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID: id, FirstExecutionRunID: x.FirstRunID, UpdateName: api.RaiseBudgetUpdate, Args: []any{b},
			WaitForStage: client.WorkflowUpdateStageCompleted,
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
