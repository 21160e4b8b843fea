// Package cli is the starter's command tree, out of package main so that
// its helpers and tests can be reused (as the temporal CLI keeps its
// commands). The starter's main calls Main; the devstack command calls Run
// for `devstack demo`, whose question is the starter's `ask`.
//
// It is memagent's own CLI, importable only so that devstack and the tests
// reuse it: its API carries no compatibility promise for other programs,
// which should use packages plugin, memclient and api instead.
//
//	starter ask --doc PATH|s3://b/k --question TEXT [--answer GOLD]... [--json]
//	starter status WORKFLOW_ID        progress of a run
//	starter watch WORKFLOW_ID         follow a run live until it closes
//	starter runs [--document URI] [--status S] ...   list runs by their search attributes
//	starter setup                     register the search attributes in the namespace
//	starter review --doc D --question Q [--question Q]...   many questions, one reading, a grid
//	starter batch --manifest M        a manifest of documents and questions, a scored report
//	starter schedule create|list|describe|pause|unpause|trigger|delete   nightly batches
//	starter decide ID --cell C --accept|--edit A|--reject   one decision of a sign-off
//	starter signoff ID --start|--level N   start a sign-off, sign a level off
//	starter export grid ID --xlsx F   the decided grid
//
// Without environment it finds the dev stack (`devstack`) at its
// default addresses. The package links no Temporal server and none of the
// developer's tools: the demo, gen-doc, the simulator alone and the
// evaluation sets are devstack's commands, the review desk is command desk.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/temporal"
)

// Main runs one command of args (without the program's name), prints a
// failure as one line, "starter: message" (the name WithName gives), on
// stderr, and returns the process's exit code (docs/EXIT-CODES.md).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, opts ...Option) int {
	err := run(ctx, args, stdout, stderr, opts...)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stderr, "%s: %v\n", buildOptions(opts).name, err)
	}
	return exitCode(err)
}

// Run runs one command of args and returns its error unprinted; ExitCode
// maps it to the process's exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, opts ...Option) error {
	return run(ctx, args, stdout, stderr, opts...)
}

// ExitCode is the process's exit code for an error of Run.
func ExitCode(err error) int { return exitCode(err) }

// NewRoot is the command tree, for a program that runs it its own way.
// Run and Main add what a bare tree lacks: the "did you mean" of a
// mistyped command, one-dash long flags, the flag names in errors, and
// --json's failure object.
func NewRoot(ctx context.Context, stdout, stderr io.Writer, opts ...Option) *cobra.Command {
	return newRoot(ctx, stdout, stderr, opts...)
}

// run runs one command. Its errors name JSON fields where the workflows
// do, with the flags that set them added (withFlags).
func run(ctx context.Context, args []string, stdout, stderr io.Writer, opts ...Option) error {
	err := runCommand(ctx, args, stdout, stderr, opts...)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	if exitCode(err) == ExitFailed && isFlagError(err) {
		err = badRequest(err)
	}
	if msg := withFlags(err.Error()); msg != err.Error() {
		err = &flagged{msg: msg, err: err}
	}
	var printed resultPrinted
	if jsonRequested(args) && !errors.As(err, &printed) {
		// --json promises one JSON object on stdout, a failure included.
		_ = printJSON(stdout, failureJSON(err))
	}
	return err
}

// failureOutput is what --json prints when a command fails.
type failureOutput struct {
	// Status is "failed", "bad_input", "stopped_waiting", "paused" or
	// "canceled", as the exit code says (1, 2, 3, 4, 5).
	Status   string `json:"status"`
	ExitCode int    `json:"exit_code"`
	// WorkflowID is the run the failure is about, "" when none started.
	WorkflowID string `json:"workflow_id"`
	// FailureType is the run's failure type (memagent.BadInput,
	// memagent.ModelUnavailable, ...) when the run failed with one.
	FailureType string `json:"failure_type,omitempty"`
	Message     string `json:"message"`
}

func failureJSON(err error) failureOutput {
	out := failureOutput{Status: "failed", ExitCode: exitCode(err), Message: err.Error(), WorkflowID: workflowIDOf(err)}
	switch out.ExitCode {
	case ExitBadInput:
		out.Status = "bad_input"
	case ExitStoppedWaiting:
		out.Status = "stopped_waiting"
	case ExitPaused:
		out.Status = "paused"
	case ExitCanceled:
		out.Status = "canceled"
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		out.FailureType = app.Type()
	}
	return out
}

// jsonRequested reports whether args ask for JSON output (--json, -o json,
// --output json and their = forms).
func jsonRequested(args []string) bool {
	for i, a := range args {
		switch a {
		case "--json", "-json", "--json=true", "--output=json", "-output=json", "-o=json", "-ojson":
			return true
		case "--output", "-output", "-o":
			if i+1 < len(args) && args[i+1] == "json" {
				return true
			}
		}
	}
	return false
}

// flagged is an error whose message gained flag names; errors.Is and As
// still see the original.
type flagged struct {
	msg string
	err error
}

func (f *flagged) Error() string { return f.msg }
func (f *flagged) Unwrap() error { return f.err }

func runCommand(ctx context.Context, args []string, stdout, stderr io.Writer, opts ...Option) error {
	root := newRoot(ctx, stdout, stderr, opts...)
	if err := unknownCommand(root, args); err != nil {
		return err
	}
	root.SetArgs(oneDashLongFlags(root, args))
	return root.ExecuteContext(ctx)
}

// newRoot is the command tree. Help goes to stderr, as the flag package's
// did; results and completion scripts go to stdout.
func newRoot(ctx context.Context, stdout, stderr io.Writer, opts ...Option) *cobra.Command {
	o := buildOptions(opts)
	bind := func(f commandBody) binder {
		return func(cmd *cobra.Command) func([]string) error { return f(ctx, cmd, stdout, stderr) }
	}
	root := &cobra.Command{
		Use:   o.name,
		Short: "Start and inspect memagent runs",
		Long: `Starts and inspects memagent runs: questions about documents of any length,
reviews, batches and their schedules, sign-offs. Without environment it
finds the dev stack (devstack) at its default addresses.`,
		Example: `  starter ask --doc contract.txt --question "Who may terminate the agreement?"
  starter status memagent-qa-1f2e3d4c5b6a7980 --history
  starter completion bash > /etc/bash_completion.d/starter`,
		Args:          cobra.ArbitraryArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.RunE = func(c *cobra.Command, args []string) error {
		fmt.Fprint(stderr, helpText(c))
		if len(args) == 0 {
			return errors.New("no command given")
		}
		return fmt.Errorf("unknown command %q", args[0])
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetHelpFunc(func(c *cobra.Command, _ []string) { fmt.Fprint(stderr, helpText(c)) })
	root.SetUsageFunc(func(c *cobra.Command) error { _, err := fmt.Fprint(stderr, helpText(c)); return err })
	root.SetFlagErrorFunc(flagError)
	root.CompletionOptions.HiddenDefaultCmd = false

	root.AddCommand(runCommands(bind)...)
	root.AddCommand(scheduleCommand(bind, stderr))
	root.AddCommand(signOffCommands(bind)...)
	root.AddCommand(exportCommand(bind, stderr))
	root.AddCommand(validateCommand(bind))
	root.InitDefaultCompletionCmd()
	return root
}

// commandBody is a command's body given the command tree's context and
// outputs; bindWith binds one to them.
type commandBody func(context.Context, *cobra.Command, io.Writer, io.Writer) func([]string) error

type bindWith func(commandBody) binder

// runCommands start, follow and stop runs.
func runCommands(bind bindWith) []*cobra.Command {
	return []*cobra.Command{
		leaf("ask --doc PATH|s3://bucket/key --question TEXT [flags]", "Answer a question about a document",
			`Answers a question about a document (a local file, uploaded once, or
s3://bucket/key) with a memagent.DocumentQA run, following its progress until
the answer. The same request again returns the finished run's answer.`,
			`  starter ask --doc contract.txt --question "Who may terminate the agreement?"
  starter ask --doc s3://memagent/docs/paper.txt --question "..." --answer "gold answer" --output json`, bind(bindAsk)),
		leaf("status [flags] WORKFLOW_ID", "Show the progress of a run",
			`Shows the progress of a memagent.DocumentQA run (stage, chunks, tokens, calls),
a memagent.ReviewDocument run (the same, and each question's status and answer)
or a memagent.BatchQA run (items done, running, answered, reused, failed).`,
			`  starter status memagent-qa-1f2e3d4c5b6a7980 --history
  starter status memagent-batch-nightly-20250102T030405.006Z -o json`, bind(bindStatus)),
		leaf("watch [flags] WORKFLOW_ID", "Follow a run live until it closes",
			`Follows a memagent.DocumentQA, memagent.ReviewDocument or memagent.BatchQA run
until it closes, then prints its answer, its grid or its batch report.`,
			`  starter watch memagent-qa-1f2e3d4c5b6a7980
  starter watch memagent-batch-nightly --timeout 10m`, bind(bindWatch)),
		leaf("estimate --doc PATH|s3://bucket/key --question TEXT [--question TEXT ...] [flags]", "Say what a question (or a review) will cost, without calling the model",
			`Indexes the document as a run would (the index is the one the run then reuses) and prints
the model calls and the prompt and completion tokens the questions would take: upper bounds
and typical figures, priced with --price-in and --price-out (per million tokens). It runs the
memagent.Estimate workflow, which other services can start too (docs/API.md); no model is called.`,
			`  starter estimate --doc contract.pdf --question "Who may terminate the agreement?" -o json
  starter estimate --doc case.txt --question Q1 --question Q2 --price-in 0.15 --price-out 0.60`, bind(bindEstimate)),
		leaf("budget WORKFLOW_ID [--max-calls N] [--max-tokens N]", "Raise the budget of a question, which lets a paused run go on",
			`Replaces a question's budget (raise-budget Update): a run paused at its budget goes on at
once, and nothing it did is paid again. A budget below what the run has spent is refused.`,
			"  starter budget memagent-qa-1f2e3d4c5b6a7980 --max-calls 100", bind(bindBudget)),
		leaf("cancel [flags] WORKFLOW_ID", "Ask a run, a review or a batch to stop",
			`Asks a run, a review or a batch to stop: it cancels its model calls and children and
closes as canceled, keeping what it wrote. A worker must take the run to act on the request;
with none polling its task queue, cancel says so and names terminate.`,
			"  starter cancel memagent-qa-1f2e3d4c5b6a7980", bind(bindCancel)),
		leaf("terminate [flags] WORKFLOW_ID --reason TEXT", "End a run, a review or a batch at once, without a worker",
			`Ends a run, a review or a batch at once, with the reason recorded in its history. No
worker is needed; a batch's children end with it. What it wrote to S3 stays.`,
			`  starter terminate memagent-qa-1f2e3d4c5b6a7980 --reason "started on the wrong task queue"`, bind(bindTerminate)),
		leaf("runs [flags]", "List runs by document, model, status or batch, newest first",
			`Lists runs by their search attributes, newest first. CHUNKS of a run that did not
finish (going, paused, canceled, terminated, failed) is its last known progress: what
its progress query says when a worker answers within 3 s, else the search attribute.
A sign-off is listed right after the review or batch it signs off, with its state
(waiting-level-1, waiting-level-2, signed-off) as its STATUS.`,
			`  starter runs --batch nightly
  starter runs --type signoff --status waiting
  starter runs --status failed --limit 5 --output json`, bind(bindRuns)),
		leaf("setup", "Register memagent's search attributes in the namespace",
			"Registers memagent's search attributes in the namespace: once, before any worker.",
			"  starter setup --namespace default\n  starter setup --create-namespace --retention 72h   # a self-hosted cluster's first run", bind(bindSetup)),
		leaf("review --doc PATH|s3://bucket/key (--question Q [--answer GOLD]... ... | --questions FILE) [flags]",
			"Ask many questions of one document, reading it once",
			`Asks every question of one document, reading it once: each question keeps its
own memory, and each chunk's memory updates run in parallel. Prints the grid of
answers, evidence (chunks and byte ranges where a memory changed) and tokens,
and where the grid (JSON, CSV) and the HTML report were written.`,
			`  starter review --doc policy.docx --questions questions.json --html report.html
  starter review --doc contract.txt --question "Who may terminate?" --question "Which law governs?"`, bind(bindReview)),
		leaf("batch --manifest PATH|s3://bucket/key [flags]", "Run a manifest of documents and questions and write a scored report",
			`Runs a manifest of documents and questions through memagent.BatchQA and writes
a scored report (see docs/BATCH.md).`,
			`  starter batch --manifest items.jsonl --concurrency 16 --name nightly
  starter batch --manifest s3://memagent/manifests/big.jsonl --no-wait`, bind(bindBatch)),
	}
}

// scheduleCommand is `schedule` and its subcommands.
func scheduleCommand(bind bindWith, stderr io.Writer) *cobra.Command {
	return group("schedule", "Temporal Schedules that run BatchQA", `Temporal Schedules that run a BatchQA over a manifest, each run writing a
dated report.`,
		`  starter schedule create --id nightly-qa --manifest s3://memagent/manifests/nightly.jsonl --cron "0 2 * * *"
  starter schedule describe nightly-qa -o json`, stderr,
		leaf("create --id NAME --manifest s3://…|PATH (--cron SPEC | --every INTERVAL) [flags]", "Create a schedule",
			"Creates a schedule that runs BatchQA over a manifest on a cron spec or at an interval.",
			`  starter schedule create --id nightly-qa --manifest items.jsonl --cron "0 2 * * *" --timezone Europe/Paris
  starter schedule create --id weekly --manifest s3://memagent/m.jsonl --every 7d`, bind(bindScheduleCreate)),
		leaf("list [flags]", "List the schedules that run BatchQA",
			"Lists the schedules that run BatchQA: spec, paused, next run, last run's status.",
			"  starter schedule list --all", bind(bindScheduleList)),
		leaf("describe ID [flags]", "Show a schedule", "Shows a schedule's spec, action, recent runs with their workflow ids and next runs.",
			"  starter schedule describe nightly-qa --json", bind(bindScheduleDescribe)),
		leaf("pause ID [--note TEXT]", "Pause a schedule", "", `  starter schedule pause nightly-qa --note "GPU pool upgrade"`, bind(bindSchedulePause)),
		leaf("unpause ID [--note TEXT]", "Unpause a schedule", "", "  starter schedule unpause nightly-qa", bind(bindSchedulePause)),
		leaf("trigger ID [--wait] [--overlap POLICY]", "Run a schedule now",
			"Runs a schedule's batch now; --wait waits for the batch and prints its report.",
			"  starter schedule trigger nightly-qa --wait", bind(bindScheduleTrigger)),
		leaf("delete ID", "Delete a schedule", "Deletes a schedule; runs already started and their reports are kept.",
			"  starter schedule delete nightly-qa", bind(bindScheduleDelete)),
	)
}

// signOffCommands record decisions and sign-offs (the review desk is
// command desk, ./desk).
func signOffCommands(bind bindWith) []*cobra.Command {
	return []*cobra.Command{
		leaf("decide ID --cell CELL (--accept | --edit ANSWER --reason WHY | --reject --reason WHY | --reopen --reason WHY) [flags]",
			"Decide on one answer of a review or batch waiting for sign-off",
			`Records a decision on one cell of a sign-off (a review's question, a batch's
item) as the reviewer your token names ($MEMAGENT_REVIEWER_TOKEN, checked against
the operator's token file, $MEMAGENT_REVIEWERS). A cell that changed since the
--version you decided on refuses the decision; so does a level-2 decision by the
cell's level-1 reviewer.`,
			`  starter decide memagent-review-1f2e3d4c5b6a7980 --cell q1 --accept
  starter decide memagent-review-1f2e3d4c5b6a7980 --cell q2 --edit "30 days" --reason "the notice period is in § 4"`, bind(bindDecide)),
		leaf("signoff ID (--start [--levels N] | --level N) [flags]", "Start a sign-off, sign a level off, or show where it stands",
			`Starts the sign-off of a finished review or batch (--start), signs a level off
once none of its cells is pending (--level), or, with neither, shows the
sign-off: its state, the pending cells, the audit log and the decided grid.`,
			`  starter signoff memagent-review-1f2e3d4c5b6a7980 --start
  starter signoff memagent-review-1f2e3d4c5b6a7980 --level 1 --comment "all answers checked"`, bind(bindSignOff)),
	}
}

// exportCommand is `export` and its subcommands.
func exportCommand(bind bindWith, stderr io.Writer) *cobra.Command {
	return group("export", "Export a batch's turns or a decided grid", "Exports data from finished runs.",
		"  starter export rollouts memagent-batch-grpo-step-1-20250102T030405.006Z --out rollouts.jsonl\n  starter export grid memagent-review-1f2e3d4c5b6a7980 --xlsx decided.xlsx", stderr,
		leaf("grid ID (--xlsx FILE | --csv FILE)", "Write a sign-off's decided grid as XLSX or CSV",
			`Writes the grid of a review's or batch's sign-off, decided or not yet, one row a
cell: model answer, final answer, decision, reviewer, time, comment, reason,
each level's decision, and the evidence (document, printed page, quote).`,
			"  starter export grid memagent-review-1f2e3d4c5b6a7980 --xlsx decided.xlsx --csv decided.csv", bind(bindExportGrid)),
		leaf("rollouts BATCH_WORKFLOW_ID --out FILE [--reward sub_em|em|f1]", "Write a batch's turns as RL training data (JSON Lines)",
			`Writes the rollouts of a finished BatchQA run (run it with --samples K for
groups of K) as JSON Lines, one record per model turn: the exact chat
messages sent, the text returned, loss_mask 1 for a memory update and 0 for
the final answer, and the sample's reward spread evenly over its turns.
See docs/ROLLOUTS.md.`,
			`  starter export rollouts "$(jq -r .result.workflow_id batch.json)" --out rollouts.jsonl --reward sub_em`, bind(bindExportRollouts)),
	)
}
