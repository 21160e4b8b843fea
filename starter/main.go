// Command starter starts and inspects memagent runs.
//
//	starter demo                      everything in one process, on a generated document
//	starter ask --doc PATH|s3://b/k --question TEXT [--answer GOLD]... [--json]
//	starter status WORKFLOW_ID        progress of a run
//	starter watch WORKFLOW_ID         follow a run live until it closes
//	starter runs [--document URI] [--status S] ...   list runs by their search attributes
//	starter setup                     register the search attributes in the namespace
//	starter review --doc D --question Q [--question Q]...   many questions, one reading, a grid
//	starter batch --manifest M        a manifest of documents and questions, a scored report
//	starter schedule create|list|describe|pause|unpause|trigger|delete   nightly batches
//	starter eval gen|run|score        RULER-style evaluation sets, their scores by length, one answer's score
//	starter gen-doc --tokens N --out PATH   the demo's document, at any length
//
// Without environment it finds the dev stack (`worker --dev`) at its
// default addresses.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage: starter <command> [flags]

commands:
  demo     run the embedded stack, the simulator and a worker in this process and
           answer a question about a generated document of 100K+ tokens
  ask      answer a question about a document (local file or s3://bucket/key)
  status   show the progress of a run: starter status WORKFLOW_ID
  watch    follow a run live until it closes: starter watch WORKFLOW_ID
  runs     list runs by document, model, status or batch, newest first
  setup    register memagent's search attributes in the namespace (once, before any worker)
  simulator  serve the inference simulator alone (an OpenAI-compatible stand-in, not a model)
  review   ask many questions of one document, reading it once; writes a grid and an HTML report
  batch    run a manifest of documents and questions through BatchQA and write a scored report
  schedule create|list|describe|pause|unpause|trigger|delete Temporal Schedules that run BatchQA
  eval     gen|run|score: write RULER-style evaluation sets in MemAgent's format, run one and print scores by length
           (--protocol paper: as the MemAgent paper's scripts), or score one answer
  export   rollouts BATCH_WORKFLOW_ID --out FILE: a batch's turns as RL training data (JSON Lines)
  gen-doc  write the demo's generated document (filler with one planted fact) to a file
  chaos    SIGKILL workers and the server, inject model and S3 faults, and check nothing is lost

Run "starter <command> -h" for the flags of a command.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "starter:", err)
		}
		stop()
		os.Exit(exitCode(err))
	}
}

// run runs one command. Its errors name JSON fields where the workflows
// do, with the flags that set them added (withFlags).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	err := runCommand(ctx, args, stdout, stderr)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	if exitCode(err) == ExitFailed && isFlagError(err) {
		err = badRequest(err)
	}
	if msg := withFlags(err.Error()); msg != err.Error() {
		return &flagged{msg: msg, err: err}
	}
	return err
}

// flagged is an error whose message gained flag names; errors.Is and As
// still see the original.
type flagged struct {
	msg string
	err error
}

func (f *flagged) Error() string { return f.msg }
func (f *flagged) Unwrap() error { return f.err }

func runCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	switch args[0] {
	case "demo":
		return runDemo(ctx, args[1:], stdout, stderr)
	case "ask":
		return runAsk(ctx, args[1:], stdout, stderr)
	case "status":
		return runStatus(ctx, args[1:], stdout, stderr)
	case "watch":
		return runWatch(ctx, args[1:], stdout, stderr)
	case "runs":
		return runRuns(ctx, args[1:], stdout, stderr)
	case "setup":
		return runSetup(ctx, args[1:], stdout, stderr)
	case "simulator":
		return runSimulator(ctx, args[1:], stdout, stderr)
	case "review":
		return runReview(ctx, args[1:], stdout, stderr)
	case "batch":
		return runBatch(ctx, args[1:], stdout, stderr)
	case "schedule":
		return runSchedule(ctx, args[1:], stdout, stderr)
	case "eval":
		return runEval(ctx, args[1:], stdout, stderr)
	case "export":
		return runExport(ctx, args[1:], stdout, stderr)
	case "gen-doc":
		return runGenDoc(args[1:], stdout, stderr)
	case "chaos":
		return runChaos(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}
