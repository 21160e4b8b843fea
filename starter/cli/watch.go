package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/spf13/cobra"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/clientconf"
	"github.com/memagent/memagent/memclient"
)

// runWatch follows one run, a question, a review or a batch, until it
// closes: a live bar on a terminal, progress lines elsewhere, then what
// ask, review or batch prints at the end (the answer with its pages,
// grounding and result link; the grid; the batch's scores and report
// links), or the failure.
func bindWatch(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	fs := cmd.Flags()
	cfg, cfgErr := clientconf.Load()
	connectionFlags(cmd, &cfg)
	asJSON := outputFlag(cmd, "print the result (answer, grid or batch result) as one JSON object, as ask, review and batch do")
	timeout := fs.Duration("timeout", 0, "stop waiting after this long, with exit code 3 (the run goes on); 0 waits for the end, through Temporal outages")
	return func(args []string) (err error) {
		if cfgErr != nil {
			return cfgErr
		}
		id, err := oneWorkflowID("watch", args)
		if err != nil {
			return badRequest(err)
		}
		if *timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, *timeout)
			defer cancel()
		}
		cfg.Normalize()
		c, err := cfg.Dial(ctx, cliLogger(stderr))
		if err != nil {
			return err
		}
		defer c.Close()
		kind, err := runKind(ctx, c, id)
		if err != nil {
			return err
		}
		view := stdout
		if *asJSON {
			// stdout holds the one JSON object; progress goes to stderr.
			view = stderr
		}
		stop := watchRun(ctx, readerFor(c, cfg.TemporalNamespace, kind, id), newProgressView(view, isTerminal(view)))
		switch kind {
		case api.ReviewDocumentName:
			var g api.ReviewResult
			if err := awaitBudgeted(ctx, c, id, true, stop, &g, stderr); err != nil {
				return err
			}
			if *asJSON {
				return printJSON(stdout, g)
			}
			printReviewGrid(stdout, &g)
		case api.BatchQAName:
			var res api.BatchQAResult
			if err := awaitBudgeted(ctx, c, id, true, stop, &res, stderr); err != nil {
				return err
			}
			if *asJSON {
				return printJSON(stdout, res)
			}
			printBatchReport(stdout, &res, nil)
		default:
			var res api.DocumentQAResult
			if err := awaitBudgeted(ctx, c, id, true, stop, &res, stderr); err != nil {
				return err
			}
			return printResult(stdout, cfg, &res, *asJSON)
		}
		return nil
	}
}

// runKind is the workflow type of id's latest run, which must be one of
// memagent's.
func runKind(ctx context.Context, c client.Client, id string) (string, error) {
	kind, err := memclient.New(c, memclient.Options{}).WorkflowType(ctx, id)
	var missing *serviceerror.NotFound
	switch {
	case errors.As(err, &missing):
		return "", badRequest(fmt.Errorf("no workflow %s: check the id (starter runs lists the runs)", id))
	case err != nil:
		return "", err
	}
	switch kind {
	case api.DocumentQAName, api.ReviewDocumentName, api.BatchQAName:
		return kind, nil
	}
	return "", badRequest(fmt.Errorf("%s is a %s workflow, not a memagent run (%s, %s or %s)",
		id, kind, api.DocumentQAName, api.ReviewDocumentName, api.BatchQAName))
}

// await waits for the result of id's run (following continue-as-new) into
// out, then stops the progress display. (watch waits with awaitBudgeted,
// so that a run paused at its budget ends the wait with exit code 4.)
func await(ctx context.Context, c client.Client, id string, stop func(), out any, say io.Writer) error {
	err := waitResult(ctx, c, id, out, say)
	stop()
	return runFailed(id, err)
}

// runError returns a run's failure with the workflow's own error type and
// message, or nil.
func runError(id string, err error) error {
	var appErr *temporal.ApplicationError
	switch {
	case errors.As(err, &appErr):
		// The workflow's own error carries the stage and the class; the
		// SDK's wrapping around it repeats them.
		return fmt.Errorf("run %s failed (%s): %s", id, appErr.Type(), appErr.Message())
	case err != nil:
		return fmt.Errorf("run %s: %w", id, err)
	}
	return nil
}

// fieldFlags maps the JSON fields that workflow failures name to the
// starter's flags that set them.
var fieldFlags = strings.NewReplacer(
	"options.chunk_tokens", "options.chunk_tokens (--chunk-tokens)",
	"options.memory_max_tokens", "options.memory_max_tokens (--memory-tokens)",
	"options.answer_max_tokens", "options.answer_max_tokens (--answer-tokens)",
	"options.temperature", "options.temperature (--temperature)",
	"options.top_p", "options.top_p (--top-p)",
	"options.model", "options.model (--model)",
	"options.ocr_languages", "options.ocr_languages (--ocr-lang)",
	"options.ocr ", "options.ocr (--ocr) ",
	"set question", "set question (--question)",
	"set document", "set document (--doc)",
	"set manifest", "set manifest (--manifest)",
)

// withFlags adds, to a failure message that names JSON fields, the flags
// that set them: workflows speak the JSON contract, the starter its flags.
func withFlags(msg string) string { return fieldFlags.Replace(msg) }
