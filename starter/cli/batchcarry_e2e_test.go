package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/tokenizer"
)

// slowWorker starts the stack and a worker whose model is a simulator of
// its own that takes latency a call.
func slowWorker(t *testing.T, latency time.Duration) (memagent.Tokenizer, *simulator.Server) {
	t.Helper()
	stack(t)
	tok, _ := tokenizer.New(tokenizer.Qwen)
	sim := simulator.New(simulator.Options{Tokenizer: tok, Latency: latency})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	startWorker(t)
	return tok, sim
}

// putManifest uploads a manifest as starter batch does and returns its URI.
func putManifest(ctx context.Context, t *testing.T, s *session, data []byte) string {
	t.Helper()
	path := writeFile(t, t.TempDir(), "manifest.jsonl", data)
	uri, err := uploadManifest(ctx, s.store, s.cfg.Bucket, s.cfg.CreateBucket, path)
	if err != nil {
		t.Fatal(err)
	}
	return uri
}

// TestBatchCarriesWindowAcrossContinueAsNew: a batch of one long document
// and seven short ones, two items a run, continues as new at least three
// times while the long document's child is still reading: the child
// closes after the third run has started, so no run waited for it. Every
// item is answered once, and the model answers each chunk of each
// document once.
func TestBatchCarriesWindowAcrossContinueAsNew(t *testing.T) {
	tok, sim := slowWorker(t, 100*time.Millisecond)
	ctx, s := testSession(t, 4*time.Minute)
	cfg := s.cfg

	const chunkTokens = 300
	dir := t.TempDir()
	var manifest bytes.Buffer
	wantUpdates := 0
	for i := range 8 {
		tokens := 1_000
		if i == 0 {
			tokens = 12_000
		}
		doc := docgen.Needle(tok, tokens, 0.5, uint64(100+i))
		path := writeFile(t, dir, fmt.Sprintf("doc%d.txt", i), []byte(doc))
		uri, _, err := s.resolveDocument(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		wantUpdates += len(chunkHashes(t, doc, chunkTokens))
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("i%d", i), "document": uri,
			"question": fmt.Sprintf("%s (carry %d)", docgen.Question, i), "answers": []string{docgen.Answer}})
		manifest.Write(append(line, '\n'))
	}
	muri := putManifest(ctx, t, s, manifest.Bytes())
	id := fmt.Sprintf("carry-%d", time.Now().UnixNano())
	run, err := startBatch(ctx, s.temporal, cfg.TaskQueue, id, api.BatchQAInput{
		Manifest: muri, PageSize: 2, ItemsPerRun: 2, Concurrency: 4, Options: api.ModelOptions{ChunkTokens: chunkTokens},
		CarryAfterSeconds: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	var res api.BatchQAResult
	if err := s.temporal.GetWorkflow(ctx, run.GetID(), "").Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if res.Succeeded != 8 || res.Failed != 0 || res.Runs < 4 {
		t.Fatalf("batch: %+v; want 8 answered over at least 4 runs", res)
	}

	// The batch's runs, oldest first, and the long document's child.
	runs, err := s.temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Namespace: cfg.TemporalNamespace, Query: fmt.Sprintf("WorkflowId = '%s'", id)})
	if err != nil {
		t.Fatal(err)
	}
	var starts []time.Time
	for _, e := range runs.GetExecutions() {
		starts = append(starts, e.GetStartTime().AsTime())
	}
	if len(starts) < 3 {
		t.Fatalf("visibility lists %d runs of the batch", len(starts))
	}
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	third := starts[2]
	long, err := s.temporal.DescribeWorkflowExecution(ctx, api.BatchItemWorkflowID(id, 0, 0), "")
	if err != nil {
		t.Fatal(err)
	}
	closed := long.GetWorkflowExecutionInfo().GetCloseTime().AsTime()
	if !closed.After(third) {
		t.Errorf("the long document's child closed at %s, before the batch's third run started (%s): the runs waited for it", closed, third)
	}

	// Each chunk of each document paid once, each item answered once.
	updates, finals := paidOnce(t, sim)
	if finals != 8 || updates != wantUpdates {
		t.Errorf("%d memory updates and %d answers, want %d and 8", updates, finals, wantUpdates)
	}
}

// TestStopBatchReachesCarriedChildren: a child a batch carried over to a
// later run is not a child of that run, yet canceling the batch cancels
// it and terminating the batch terminates it.
func TestStopBatchReachesCarriedChildren(t *testing.T) {
	tok, _ := slowWorker(t, 300*time.Millisecond)
	ctx, s := testSession(t, 3*time.Minute)
	cfg := s.cfg
	dir := t.TempDir()
	var manifest bytes.Buffer
	for i := range 3 {
		tokens := 1_000
		if i == 0 {
			tokens = 20_000 // about 70 chunks of 300 tokens: 20 s at 300 ms a call
		}
		path := writeFile(t, dir, fmt.Sprintf("stop%d.txt", i), []byte(docgen.Needle(tok, tokens, 0.5, uint64(200+i))))
		uri, _, err := s.resolveDocument(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		line, _ := json.Marshal(map[string]any{"document": uri, "question": fmt.Sprintf("%s (stop %d)", docgen.Question, i)})
		manifest.Write(append(line, '\n'))
	}
	muri := putManifest(ctx, t, s, manifest.Bytes())
	for _, how := range []string{"cancel", "terminate"} {
		id := fmt.Sprintf("stop-%s-%d", how, time.Now().UnixNano())
		if _, err := startBatch(ctx, s.temporal, cfg.TaskQueue, id, api.BatchQAInput{
			Manifest: muri, PageSize: 1, ItemsPerRun: 1, Concurrency: 3, Options: api.ModelOptions{ChunkTokens: 300},
			CarryAfterSeconds: 1,
		}); err != nil {
			t.Fatal(err)
		}
		// Wait until the long document's child belongs to an earlier run.
		deadline := time.Now().Add(time.Minute)
		for {
			d, err := s.temporal.DescribeWorkflowExecution(ctx, id, "")
			if err == nil && d.GetWorkflowExecutionInfo().GetExecution().GetRunId() != d.GetWorkflowExecutionInfo().GetFirstRunId() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the batch did not continue as new within a minute", how)
			}
			time.Sleep(200 * time.Millisecond)
		}
		args := []string{how, id}
		if how == "terminate" {
			args = append(args, "--reason", "test")
		}
		if out, stderr, err := runCLI(t, args...); err != nil {
			t.Fatalf("%s: %v\n%s%s", how, err, out, stderr)
		}
		want := map[string]enumspb.WorkflowExecutionStatus{"cancel": enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED,
			"terminate": enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED}[how]
		deadline = time.Now().Add(time.Minute)
		for {
			d, err := s.temporal.DescribeWorkflowExecution(ctx, api.BatchItemWorkflowID(id, 0, 0), "")
			if err != nil {
				t.Fatal(err)
			}
			st := d.GetWorkflowExecutionInfo().GetStatus()
			if st == want {
				break
			}
			if st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING || time.Now().After(deadline) {
				t.Fatalf("%s the batch: its carried child is %s, want %s", how, st, want)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}
