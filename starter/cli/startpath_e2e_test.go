package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/memclient"
	"github.com/memagent/memagent/worker/config"
)

// TestStartsGoThroughClient starts a question and a review with the CLI, on
// a task queue no worker polls, and then the same requests with package
// client: client joins the CLI's runs (one workflow id rule), and the runs
// carry the summary, memo, search attributes and priority that client gives
// a run it starts itself (one start path). A CLI that started runs its own
// way would fail here on the id, the summary or the memo.
func TestStartsGoThroughClient(t *testing.T) {
	stack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	s := &session{cfg: cfg.Client(), logger: testLogger(t)}
	if err := s.connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.close()
	c := s.temporal
	// stack(t) named a task queue for this test, and no worker polls it.
	mc := memclient.New(c, memclient.Options{TaskQueue: cfg.TaskQueue})

	path, text := writeDoc(t, 3000)
	h := sha256.Sum256([]byte(text))
	sha := hex.EncodeToString(h[:])
	uri := "s3://" + cfg.Bucket + "/documents/sha256/" + sha + "/doc.txt"
	const question = "Which colour is the door of the lighthouse?"
	opts := api.ModelOptions{Model: cfg.Model, ChunkTokens: 1000}

	t.Run("ask", func(t *testing.T) {
		_, _, err := runCLI(t, "ask", "--doc", path, "--question", question, "--chunk-tokens", "1000", "--priority", "2", "--timeout", "2s")
		if code := exitCode(err); code != ExitStoppedWaiting {
			t.Fatalf("ask without a worker: %v (exit %d), want exit %d", err, code, ExitStoppedWaiting)
		}
		cliID := workflowIDOf(err)
		in := api.DocumentQAInput{Document: uri, Question: question, Options: opts, Priority: 2}
		run, err := mc.Start(ctx, in, memclient.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if run.ID != cliID || !run.Existing {
			t.Errorf("client started %s (existing %v) for the request the CLI started as %s, want it to join that run", run.ID, run.Existing, cliID)
		}
		own, err := mc.Start(ctx, in, memclient.StartOptions{Fresh: true, Memo: map[string]any{"document_sha256": sha}})
		if err != nil {
			t.Fatal(err)
		}
		sameStart(ctx, t, c, cliID, own.ID, "Q#"+api.QuestionDigest(question)+" · "+uri)
	})

	t.Run("review", func(t *testing.T) {
		// review has no --timeout: the CLI stops waiting when its context ends.
		short, stop := context.WithTimeout(ctx, 3*time.Second)
		defer stop()
		var stdout, stderr bytes.Buffer
		err := run(short, []string{"review", "--doc", path, "--question", question, "--chunk-tokens", "1000"}, &stdout, &stderr)
		if code := exitCode(err); code != ExitStoppedWaiting {
			t.Fatalf("review without a worker: %v (exit %d), want exit %d", err, code, ExitStoppedWaiting)
		}
		cliID := workflowIDOf(err)
		in := api.ReviewInput{Document: uri, Questions: []api.ReviewQuestion{{Question: question}}, Options: opts}
		run, err := mc.StartReview(ctx, in, memclient.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if run.ID != cliID || !run.Existing {
			t.Errorf("client started %s (existing %v) for the review the CLI started as %s, want it to join that run", run.ID, run.Existing, cliID)
		}
		own, err := mc.StartReview(ctx, in, memclient.StartOptions{Fresh: true, Memo: map[string]any{"document_sha256": sha}})
		if err != nil {
			t.Fatal(err)
		}
		sameStart(ctx, t, c, cliID, own.ID, "Review · 1 questions · "+uri)
	})
}

// sameStart checks that the runs cliID and clientID were started alike:
// the summary (want), the memo, the search attributes set at start and the
// priority.
func sameStart(ctx context.Context, t *testing.T, c client.Client, cliID, clientID, want string) {
	t.Helper()
	cli, err := c.DescribeWorkflow(ctx, cliID, "")
	if err != nil {
		t.Fatal(err)
	}
	own, err := c.DescribeWorkflow(ctx, clientID, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		who string
		d   *client.WorkflowExecutionDescription
	}{{"CLI", cli}, {"client", own}} {
		if got, err := d.d.GetStaticSummary(); err != nil || got != want {
			t.Errorf("%s run's summary = %q (%v), want %q", d.who, got, err, want)
		}
	}
	if len(cli.Memo.GetFields()) != len(own.Memo.GetFields()) {
		t.Errorf("memo of the CLI's run has %d entries, client's %d", len(cli.Memo.GetFields()), len(own.Memo.GetFields()))
	}
	for k := range own.Memo.GetFields() {
		if _, ok := cli.Memo.GetFields()[k]; !ok {
			t.Errorf("memo of the CLI's run lacks %q, which client sets", k)
		}
	}
	if a, b := cli.TypedSearchAttributes.Size(), own.TypedSearchAttributes.Size(); a != b || a == 0 {
		t.Errorf("search attributes at start: CLI's run %d, client's %d, want the same, not none", a, b)
	}
	a, _ := cli.TypedSearchAttributes.GetKeyword(api.DocumentKey)
	b, _ := own.TypedSearchAttributes.GetKeyword(api.DocumentKey)
	if a != b || a == "" {
		t.Errorf("document search attribute: CLI's run %q, client's %q, want the same", a, b)
	}
	var keys [2]int32
	for i, id := range []string{cliID, clientID} {
		d, err := c.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			t.Fatal(err)
		}
		keys[i] = d.GetWorkflowExecutionInfo().GetPriority().GetPriorityKey()
	}
	if keys[0] != keys[1] {
		t.Errorf("priority key: CLI's run %d, client's %d, want the same", keys[0], keys[1])
	}
}
