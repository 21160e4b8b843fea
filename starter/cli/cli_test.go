package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
)

// parsedCommand finds the command args name in the starter's tree and
// parses its flags, as run does, without running it.
func parsedCommand(t *testing.T, args ...string) *cobra.Command {
	t.Helper()
	root := newRoot(context.Background(), io.Discard, io.Discard)
	args = oneDashLongFlags(root, args)
	cmd, rest, err := root.Find(args)
	if err != nil {
		t.Fatalf("find %q: %v", args, err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return cmd
}

// ask's help lists what ask uses, not the worker's flags; the worker's
// flags are still accepted, for scripts that passed them.
func TestAskHelpShowsOnlyAskFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"ask", "--help"}, &stdout, &stderr); err != nil {
		t.Fatalf("ask --help: %v", err)
	}
	for _, f := range []string{"    --doc", "    --question", "-o, --output", "    --json", "    --temporal-address", "    --bucket", "    --model "} {
		if !strings.Contains(stderr.String(), f) {
			t.Errorf("ask --help does not list %s", f)
		}
	}
	for _, f := range []string{"chunk-cache-mb", "rate-limit", "max-in-flight", "model-url", "model-timeout"} {
		if strings.Contains(stderr.String(), f) {
			t.Errorf("ask --help lists the worker's --%s", f)
		}
	}
	cmd := parsedCommand(t, "ask", "--rate-limit", "2", "-json", "-doc", "-x", "--question=q")
	if j, _ := cmd.Flags().GetBool("json"); !j {
		t.Error("-json (one dash) was not read as --json")
	}
	if d, _ := cmd.Flags().GetString("doc"); d != "-x" {
		t.Errorf("-doc -x: doc = %q, want the value -x", d)
	}
}

func TestCompletionScript(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), []string{"completion", shell}, &stdout, &stderr); err != nil {
			t.Fatalf("completion %s: %v", shell, err)
		}
		if !strings.Contains(stdout.String(), "starter") || stdout.Len() < 1000 {
			t.Errorf("completion %s printed %d bytes to stdout", shell, stdout.Len())
		}
	}
}

func TestOutputFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		json bool
	}{
		{[]string{"runs"}, false},
		{[]string{"runs", "--json"}, true},
		{[]string{"runs", "-o", "json"}, true},
		{[]string{"runs", "--output=json", "--json=false"}, false},
		{[]string{"runs", "--output", "text"}, false},
	} {
		cmd := parsedCommand(t, tc.args...)
		if got, _ := cmd.Flags().GetBool("json"); got != tc.json {
			t.Errorf("%q: json %v, want %v", tc.args, got, tc.json)
		}
	}
	err := run(context.Background(), []string{"runs", "--output", "yaml"}, io.Discard, io.Discard)
	if exitCode(err) != ExitBadInput || !strings.Contains(err.Error(), "use text or json") {
		t.Errorf("--output yaml: %v (exit %d)", err, exitCode(err))
	}
}

// TestTypoSuggestions: a mistyped command or flag fails as bad input
// (exit 2) before anything connects, naming what it likely meant.
func TestTypoSuggestions(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"asks", "--doc", "x.txt"}, `unknown command "asks" for "starter": did you mean "ask"?`},
		{[]string{"stauts", "id"}, `did you mean "status"?`},
		{[]string{"schedule", "craete"}, `schedule: unknown subcommand "craete": did you mean "create"?`},
		{[]string{"ask", "--document", "x.txt", "--question", "q"}, "--document (did you mean --doc?)"},
		{[]string{"ask", "--doc", "x.txt", "--questoin", "q"}, "(did you mean --question?)"},
		{[]string{"ask", "--doc", "x.txt", "--question", "q", "--max-call", "3"}, "(did you mean --max-calls?)"},
		{[]string{"runs", "--limt", "3"}, "(did you mean --limit?)"},
		{[]string{"ask", "--zzzzzz"}, "flag provided but not defined: --zzzzzz"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tc.args, &stdout, &stderr)
			if exitCode(err) != ExitBadInput || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("starter %s: %v (exit %d), want exit %d with %q", strings.Join(tc.args, " "), err, exitCode(err), ExitBadInput, tc.want)
			}
			if strings.Contains(err.Error(), "did you mean") && strings.Contains(tc.want, "zzzz") {
				t.Errorf("a flag close to none gets a suggestion: %v", err)
			}
		})
	}
	for _, args := range [][]string{{"help"}, {"completion", "bash"}, {"ask", "--help"}} {
		if err := run(context.Background(), args, io.Discard, io.Discard); err != nil {
			t.Errorf("starter %s: %v", strings.Join(args, " "), err)
		}
	}
}

// TestFailureJSONIsOneLineWithWorkflowID: a failure's --json object is one
// line and names the run it is about; a failure before any run, "".
func TestFailureJSONIsOneLineWithWorkflowID(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"ask", "--question", "q", "--json"}, &out, io.Discard)
	if exitCode(err) != ExitBadInput || strings.Count(out.String(), "\n") != 1 || !strings.Contains(out.String(), `"workflow_id":""`) {
		t.Errorf("ask without --doc --json printed %q (exit %d), want one line with an empty workflow_id", out.String(), exitCode(err))
	}
	for _, err := range []error{
		runFailed("memagent-qa-1", temporal.NewCanceledError()),
		stoppedWaiting("memagent-qa-1", context.Background(), nil),
	} {
		f := failureJSON(err)
		if f.WorkflowID != "memagent-qa-1" {
			t.Errorf("%v: workflow_id %q", err, f.WorkflowID)
		}
	}
	if f := failureJSON(runFailed("memagent-qa-1", temporal.NewCanceledError())); f.Status != "canceled" || f.ExitCode != ExitCanceled ||
		strings.Contains(f.Message, "\n") {
		t.Errorf("a canceled run: %+v", f)
	}
}

// TestLastProgress: runs replaces the chunk count of runs that did not
// finish with what their progress query says, and leaves done runs,
// batches and runs whose query fails as they are.
func TestLastProgress(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	rows := []runRow{
		{WorkflowID: "canceled", Status: "canceled", WorkflowType: api.ReviewDocumentName, ChunksDone: n(0), ChunksTotal: n(108)},
		{WorkflowID: "done", Status: api.StageDone, WorkflowType: api.DocumentQAName, ChunksDone: n(108), ChunksTotal: n(108)},
		{WorkflowID: "batch", Status: "canceled", WorkflowType: api.BatchQAName, ChunksDone: n(0), ChunksTotal: n(3)},
		{WorkflowID: "silent", Status: api.StageReading, WorkflowType: api.DocumentQAName, ChunksDone: n(7), ChunksTotal: n(108)},
	}
	asked := map[string]bool{}
	var mu sync.Mutex
	lastProgress(context.Background(), rows, func(_ context.Context, id string) (int64, error) {
		mu.Lock()
		asked[id] = true
		mu.Unlock()
		if id == "silent" {
			return 0, errors.New("no worker")
		}
		return 15, nil
	})
	if *rows[0].ChunksDone != 15 || *rows[1].ChunksDone != 108 || *rows[2].ChunksDone != 0 || *rows[3].ChunksDone != 7 {
		t.Errorf("chunks done %d %d %d %d, want 15 108 0 7", *rows[0].ChunksDone, *rows[1].ChunksDone, *rows[2].ChunksDone, *rows[3].ChunksDone)
	}
	if asked["done"] || asked["batch"] {
		t.Errorf("queried %v, want neither the done run nor the batch", asked)
	}
}

// TestNoMovedStubs: the starter links no Temporal server and none of the
// developer's tools: no `demo`, `gen-doc`, `simulator` or `eval` (devstack
// has them), no `chaos` and no `desk` (commands of their own): an unknown
// command, a usage error, not a stub kept for a release that never was
// (CHANGELOG.md lists them).
func TestNoMovedStubs(t *testing.T) {
	for _, name := range []string{"demo", "chaos", "desk", "gen-doc", "simulator", "eval"} {
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), []string{name}, &stdout, &stderr)
		if code != ExitBadInput || !strings.Contains(stderr.String(), "unknown command") {
			t.Errorf("starter %s: exit %d, stderr %q; want exit 2, unknown command", name, code, stderr.String())
		}
	}
}
