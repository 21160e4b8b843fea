package workflows_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/secret"
	"github.com/memagent/memagent/worker/workerapp/workerapptest"
	"github.com/memagent/memagent/workflows"
)

type contractStack struct {
	*workerapptest.Stack
	c     client.Client
	store *s3store.Store
	doc   string
}

func startContractStack(t *testing.T) *contractStack {
	t.Helper()
	s := workerapptest.Start(t)
	d := s.Dev.Stack
	c, err := client.Dial(client.Options{HostPort: d.TemporalAddress, Namespace: d.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx := context.Background()
	store, err := s3store.New(ctx, s3store.Config{Endpoint: secret.Endpoint(d.S3Endpoint), Region: d.Region, AccessKeyID: d.S3AccessKey, SecretAccessKey: secret.Value(d.S3SecretKey)})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := range 120 {
		fmt.Fprintf(&b, "Paragraph %d tells of river boats and the harvest weather in the valley. ", i)
	}
	b.WriteString("The vault code is 7391-ALPHA. ")
	doc := fmt.Sprintf("s3://%s/docs/contract.txt", d.Bucket)
	loc, _ := s3store.ParseURI(doc)
	if err := store.Put(ctx, loc, []byte(b.String()), "text/plain"); err != nil {
		t.Fatal(err)
	}
	return &contractStack{Stack: s, c: c, store: store, doc: doc}
}

func (s *contractStack) start(t *testing.T, id, workflow, input string) client.WorkflowRun {
	t.Helper()
	run, err := s.c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: api.DefaultTaskQueue},
		workflow, workflows.RawJSON(input))
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// count is a visibility count, waited for: visibility is eventually
// consistent.
func (s *contractStack) waitCount(t *testing.T, query string, want int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := s.c.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{Query: query})
		if err == nil && resp.Count == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("count of %s = %v (err %v), want %d", query, resp.GetCount(), err, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (s *contractStack) modelCalls() int { return len(s.Dev.Simulator.Calls()) }

func (s *contractStack) keys(t *testing.T) []string {
	t.Helper()
	keys, err := s.store.List(context.Background(), s.Dev.Stack.Bucket, "", 10000)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// The contract's edges as a client outside Go meets them, on the real
// server: strict decoding, who may read and write what, and honest status.
func TestContractOnTheEmbeddedStack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded stack")
	}
	s := startContractStack(t)
	ctx := context.Background()

	t.Run("bad input fails fast as BadInput naming the JSON field", func(t *testing.T) {
		for i, tt := range []struct{ workflow, input, want string }{
			{api.DocumentQAName, `{"document":"` + s.doc + `","question":"What is the vault code?","options":{"chunk_token":1000}}`,
				"options.chunk_token: unknown field; did you mean options.chunk_tokens?"},
			{api.DocumentQAName, `{"document":"` + s.doc + `","question":"What is the vault code?","options":{"chunk_tokens":"1000"}}`,
				`options.chunk_tokens: expected an integer, got a string ("1000")`},
			{api.ReviewDocumentName, `{"document":"` + s.doc + `","questions":["Who?","What?"]}`,
				`questions[0]: expected an object {"id", "question", "gold_answers"}, got a string ("Who?")`},
		} {
			began := time.Now()
			run := s.start(t, fmt.Sprintf("contract-bad-%d", i), tt.workflow, tt.input)
			err := run.Get(ctx, nil)
			took := time.Since(began)
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) || appErr.Type() != api.ErrBadInput {
				t.Fatalf("%s: error %v, want %s", tt.workflow, err, api.ErrBadInput)
			}
			if !strings.Contains(appErr.Message(), tt.want) || strings.Contains(appErr.Message(), "--") || strings.Contains(appErr.Message(), "(type:") {
				t.Errorf("message %q: want it to contain %q and name no CLI flag", appErr.Message(), tt.want)
			}
			if took > 2*time.Second {
				t.Errorf("%s failed after %v, want under 2s", tt.workflow, took)
			}
			t.Logf("%s failed in %v: %s", tt.workflow, took.Round(time.Millisecond), appErr.Message())
		}
	})

	t.Run("outputs of another run and documents outside the prefixes are forbidden", func(t *testing.T) {
		prefix := fmt.Sprintf("s3://%s/team/out/", s.Dev.Stack.Bucket)
		first := s.start(t, "contract-owner", api.DocumentQAName,
			`{"document":"`+s.doc+`","question":"What is the vault code?","output_prefix":"`+prefix+`","options":{"chunk_tokens":2000}}`)
		if err := first.Get(ctx, nil); err != nil {
			t.Fatal(err)
		}
		resultLoc, _ := s3store.ParseURI(prefix + "result.json")
		before, err := s.store.ReadAll(ctx, resultLoc)
		if err != nil {
			t.Fatal(err)
		}
		keysBefore, callsBefore := s.keys(t), s.modelCalls()
		other := fmt.Sprintf("s3://%s-private/secret.txt", s.Dev.Stack.Bucket)
		for id, input := range map[string]string{
			"contract-intruder": `{"document":"` + s.doc + `","question":"Who signed?","output_prefix":"` + prefix + `"}`,
			"contract-outside":  `{"document":"` + other + `","question":"Who signed?"}`,
		} {
			err := s.start(t, id, api.DocumentQAName, input).Get(ctx, nil)
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) || appErr.Type() != api.ErrForbidden {
				t.Fatalf("%s: error %v, want %s", id, err, api.ErrForbidden)
			}
			if msg := appErr.Message(); strings.Contains(msg, "(type:") || len(msg) > 400 {
				t.Errorf("%s: top-level message is not one short line: %q", id, msg)
			}
			t.Logf("%s: %s", id, appErr.Message())
		}
		if n := s.modelCalls(); n != callsBefore {
			t.Errorf("%d model calls were made for forbidden runs", n-callsBefore)
		}
		after, _ := s.store.ReadAll(ctx, resultLoc)
		if string(after) != string(before) {
			t.Error("the first run's result.json changed")
		}
		if keysAfter := s.keys(t); !slices.Equal(keysAfter, keysBefore) {
			t.Errorf("S3 changed: %d keys before, %d after", len(keysBefore), len(keysAfter))
		}
	})

	t.Run("a reset keeps the first run's result", func(t *testing.T) {
		run := s.start(t, "contract-reset", api.DocumentQAName,
			`{"document":"`+s.doc+`","question":"What is the vault code?","options":{"chunk_tokens":500}}`)
		var first workflows.DocumentQAResult
		if err := run.Get(ctx, &first); err != nil {
			t.Fatal(err)
		}
		firstLoc := mustLoc(first.ResultURI)
		before, err := s.store.ReadAll(ctx, firstLoc)
		if err != nil {
			t.Fatal(err)
		}
		newRun := s.resetToStart(t, "contract-reset", first.RunID)
		var second workflows.DocumentQAResult
		if err := s.c.GetWorkflow(ctx, "contract-reset", newRun).Get(ctx, &second); err != nil {
			t.Fatal(err)
		}
		after, err := s.store.ReadAll(ctx, firstLoc)
		if err != nil || string(after) != string(before) {
			t.Fatalf("the first run's %s changed after the reset (err %v)", first.ResultURI, err)
		}
		if second.RunID != newRun || second.ResultURI == first.ResultURI {
			t.Fatalf("reset run's result names run %s at %s; want run %s somewhere other than %s",
				second.RunID, second.ResultURI, newRun, first.ResultURI)
		}
		if _, err := s.store.ReadAll(ctx, mustLoc(second.ResultURI)); err != nil {
			t.Fatalf("the reset run's result at %s: %v", second.ResultURI, err)
		}
		t.Logf("first result %s kept; the reset run's at %s", first.ResultURI, second.ResultURI)
	})

	t.Run("a reset keeps the first review's grid", func(t *testing.T) {
		run := s.start(t, "contract-review-reset", api.ReviewDocumentName,
			`{"document":"`+s.doc+`","questions":[{"question":"What is the vault code?"},{"question":"What do the paragraphs tell of?"}],"options":{"chunk_tokens":500}}`)
		var first workflows.ReviewResult
		if err := run.Get(ctx, &first); err != nil {
			t.Fatal(err)
		}
		before, err := s.store.ReadAll(ctx, mustLoc(first.JSONURI))
		if err != nil {
			t.Fatal(err)
		}
		newRun := s.resetToStart(t, "contract-review-reset", first.RunID)
		var second workflows.ReviewResult
		if err := s.c.GetWorkflow(ctx, "contract-review-reset", newRun).Get(ctx, &second); err != nil {
			t.Fatal(err)
		}
		if after, err := s.store.ReadAll(ctx, mustLoc(first.JSONURI)); err != nil || string(after) != string(before) {
			t.Fatalf("the first review's %s changed after the reset (err %v)", first.JSONURI, err)
		}
		if second.RunID != newRun || second.JSONURI == first.JSONURI {
			t.Fatalf("reset review's grid names run %s at %s; want run %s beside %s", second.RunID, second.JSONURI, newRun, first.JSONURI)
		}
		if _, err := s.store.ReadAll(ctx, mustLoc(second.JSONURI)); err != nil {
			t.Fatalf("the reset review's grid at %s: %v", second.JSONURI, err)
		}
	})

	t.Run("a reset keeps the first batch's report", func(t *testing.T) {
		manifest := fmt.Sprintf("s3://%s/manifests/contract.jsonl", s.Dev.Stack.Bucket)
		lines := `{"id":"a","document":"` + s.doc + `","question":"What is the vault code?","gold_answers":["7391-ALPHA"]}` + "\n" +
			`{"id":"b","document":"` + s.doc + `","question":"What do the paragraphs tell of?"}` + "\n"
		if err := s.store.Put(ctx, mustLoc(manifest), []byte(lines), "application/x-ndjson"); err != nil {
			t.Fatal(err)
		}
		run := s.start(t, "contract-batch-reset", api.BatchQAName, `{"manifest":"`+manifest+`","options":{"chunk_tokens":500}}`)
		var first api.BatchQAResult
		if err := run.Get(ctx, &first); err != nil {
			t.Fatal(err)
		}
		before, err := s.store.ReadAll(ctx, mustLoc(first.ReportURI))
		if err != nil {
			t.Fatal(err)
		}
		newRun := s.resetToStart(t, "contract-batch-reset", run.GetRunID())
		var second api.BatchQAResult
		if err := s.c.GetWorkflow(ctx, "contract-batch-reset", newRun).Get(ctx, &second); err != nil {
			t.Fatal(err)
		}
		if after, err := s.store.ReadAll(ctx, mustLoc(first.ReportURI)); err != nil || string(after) != string(before) {
			t.Fatalf("the first batch's %s changed after the reset (err %v)", first.ReportURI, err)
		}
		if second.ReportURI == first.ReportURI || !strings.Contains(second.ReportURI, newRun) {
			t.Fatalf("reset batch's report at %s; want it under runs/%s/ beside %s", second.ReportURI, newRun, first.ReportURI)
		}
		if _, err := s.store.ReadAll(ctx, mustLoc(second.ReportURI)); err != nil {
			t.Fatalf("the reset batch's report at %s: %v", second.ReportURI, err)
		}
	})

	t.Run("status: canceled, and a continue-as-new chain leaves nothing reading", func(t *testing.T) {
		// Three runs of 2 chunks each: chunk_tokens 100 over about 2,000
		// tokens is 20 chunks, so chunks_per_run 7.
		chain := s.start(t, "contract-chain", api.DocumentQAName,
			`{"document":"`+s.doc+`","question":"What is the vault code?","chunks_per_run":7,"options":{"chunk_tokens":100}}`)
		var res workflows.DocumentQAResult
		if err := chain.Get(ctx, &res); err != nil {
			t.Fatal(err)
		}
		if res.Runs < 3 {
			t.Fatalf("chain ran %d runs, want at least 3 (chunks %d)", res.Runs, res.Chunks)
		}
		// Get followed the chain: the handle names its last run now.
		if res.RunID == res.FirstRunID || res.RunID != chain.GetRunID() {
			t.Errorf("result run_id %s, first_run_id %s: want the last run (%s) and the first", res.RunID, res.FirstRunID, chain.GetRunID())
		}
		s.waitCount(t, `WorkflowId="contract-chain" AND MemagentStatus="continued"`, int64(res.Runs-1))
		s.waitCount(t, `WorkflowId="contract-chain" AND MemagentStatus="done"`, 1)
		s.waitCount(t, `MemagentStatus="reading"`, 0)

		// A document long enough to be read when the cancellation comes.
		bigLoc, _ := s3store.ParseURI(s.doc + ".big")
		small, err := s.store.ReadAll(ctx, mustLoc(s.doc))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.store.Put(ctx, bigLoc, []byte(strings.Repeat(string(small), 20)), "text/plain"); err != nil {
			t.Fatal(err)
		}
		long := s.start(t, "contract-cancel", api.DocumentQAName,
			`{"document":"`+bigLoc.String()+`","question":"What is the vault code?","options":{"chunk_tokens":64}}`)
		s.waitCount(t, `WorkflowId="contract-cancel" AND MemagentStatus="reading"`, 1)
		if err := s.c.CancelWorkflow(ctx, "contract-cancel", ""); err != nil {
			t.Fatal(err)
		}
		if err := long.Get(ctx, nil); !temporal.IsCanceledError(err) {
			t.Fatalf("canceled run ended with %v", err)
		}
		s.waitCount(t, `MemagentStatus="canceled"`, 1)
		s.waitCount(t, `MemagentStatus="reading"`, 0)
	})
}

func mustLoc(uri string) s3store.Location {
	loc, err := s3store.ParseURI(uri)
	if err != nil {
		panic(err)
	}
	return loc
}

// resetToStart resets a closed run to the end of its first workflow task
// (after the start, before anything ran), as `temporal workflow reset
// --type FirstWorkflowTask` does, and returns the new run's id.
func (s *contractStack) resetToStart(t *testing.T, id, runID string) string {
	t.Helper()
	ctx := context.Background()
	var wftCompleted int64
	iter := s.c.GetWorkflowHistory(ctx, id, runID, false, 0)
	for iter.HasNext() && wftCompleted == 0 {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetWorkflowTaskCompletedEventAttributes() != nil {
			wftCompleted = ev.GetEventId()
		}
	}
	resp, err := s.c.ResetWorkflowExecution(ctx, &workflowservice.ResetWorkflowExecutionRequest{
		Namespace:                 s.Dev.Stack.Namespace,
		WorkflowExecution:         &commonpb.WorkflowExecution{WorkflowId: id, RunId: runID},
		Reason:                    "contract test",
		WorkflowTaskFinishEventId: wftCompleted,
		RequestId:                 id + "-reset",
	})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetRunId()
}
