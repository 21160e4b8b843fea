package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/internal/config"
	"github.com/memagent/memagent/internal/workerapp"
	"github.com/memagent/memagent/workflows"
)

// runWatch follows one run until it closes: a live bar on a terminal,
// progress lines elsewhere, then the answer or the failure.
func runWatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: starter watch [flags] WORKFLOW_ID")
	}
	id := fs.Arg(0)
	cfg.Normalize()
	c, err := workerapp.Dial(ctx, cfg, cliLogger(stderr))
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.DescribeWorkflow(ctx, id, ""); err != nil {
		return fmt.Errorf("watch %s: %w", id, err)
	}
	stop := watchProgress(ctx, c, id, newProgressView(stdout, isTerminal(stdout)))
	var res workflows.DocumentQAResult
	err = c.GetWorkflow(ctx, id, "").Get(ctx, &res)
	stop()
	if err := runError(id, err); err != nil {
		return err
	}
	answer := res.Answer
	if !res.AnswerFound {
		answer = "(no answer found in the model's reply)"
	}
	fmt.Fprintf(stdout, "answer: %s\n", answer)
	return nil
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
