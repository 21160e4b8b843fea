package memclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/devenv"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/pluginkit"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/tokenizer"
	"github.com/memagent/memagent/memclient"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
)

// TestReviewAndBatchEndToEnd drives a review of two questions and a batch
// of three items through the typed client, on the embedded stack (real
// Temporal server, real S3 server, the simulator over HTTP) and a worker
// assembled the way the worker command does it.
func TestReviewAndBatchEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded Temporal server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	d, err := devenv.Start(ctx, devenv.Options{FreePorts: true, Simulator: true, DisableUI: true, Logger: logger})
	if err != nil {
		t.Fatalf("StartDev: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	cfg := config.Default().AtDevStack(d.Addresses())
	cfg.TaskQueue = "client-e2e"
	cfg.LogLevel = slog.LevelError
	w, err := workerapp.Start(ctx, cfg, workerapp.Options{Logger: logger})
	if err != nil {
		t.Fatalf("start worker: %v", err)
	}
	t.Cleanup(w.Stop)
	mc := memclient.New(w.Client, memclient.Options{TaskQueue: cfg.TaskQueue})

	// One document of about 2.8K tokens with two planted facts: 3 chunks of
	// 1,000 tokens.
	tok, err := tokenizer.New(tokenizer.Qwen)
	if err != nil {
		t.Fatal(err)
	}
	facts := docgen.Facts()[:2]
	text, _ := docgen.MultiNeedle(tok, 2800, facts, 5)
	doc := s3store.Location{Bucket: cfg.Bucket, Key: "client-e2e/doc.txt"}
	store, err := pluginkit.NewStore(ctx, cfg.Options)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, doc, []byte(text), "text/plain"); err != nil {
		t.Fatal(err)
	}
	opts := api.ModelOptions{ChunkTokens: 1000}
	idx, err := memagent.PlanChunks(strings.NewReader(text), tok, opts.ChunkTokens)
	if err != nil || len(idx.Chunks) != 3 {
		t.Fatalf("the document has %d chunks (%v), want 3", len(idx.Chunks), err)
	}

	t.Run("review", func(t *testing.T) {
		in := api.ReviewInput{Document: doc.String(), Options: opts}
		for _, f := range facts {
			in.Questions = append(in.Questions, api.ReviewQuestion{Question: f.Question, GoldAnswers: []string{f.Answer}})
		}
		run, err := mc.StartReview(ctx, in, memclient.StartOptions{Memo: map[string]any{"document_sha256": "test"}})
		if err != nil {
			t.Fatalf("StartReview: %v", err)
		}
		if run.ID != memclient.ReviewWorkflowID(in) || run.Existing {
			t.Errorf("run %s (existing %v), want a new run under the derived id %s", run.ID, run.Existing, memclient.ReviewWorkflowID(in))
		}
		g, err := run.Get(ctx)
		if err != nil {
			t.Fatalf("review: %v", err)
		}
		if len(g.Rows) != 2 || g.WorkflowID != run.ID || g.Chunks != 3 {
			t.Fatalf("grid of %s: %d rows over %d chunks, want 2 rows over 3 chunks", g.WorkflowID, len(g.Rows), g.Chunks)
		}
		for i, r := range g.Rows {
			if r.ID != []string{"q1", "q2"}[i] || r.Answer != facts[i].Answer || r.Scores == nil || !r.Scores.ExactMatch {
				t.Errorf("row %d: %s answered %q (scores %+v), want %q", i, r.ID, r.Answer, r.Scores, facts[i].Answer)
			}
		}
		if !strings.HasPrefix(g.HTMLURI, "s3://") || !strings.HasPrefix(g.JSONURI, "s3://") {
			t.Errorf("report URIs %q, %q", g.HTMLURI, g.JSONURI)
		}

		// The same review again is the finished run; the scheduling knobs
		// are not part of the request.
		again := in
		again.Parallelism = 1
		joined, err := mc.StartReview(ctx, again, memclient.StartOptions{})
		if err != nil {
			t.Fatalf("StartReview again: %v", err)
		}
		if !joined.Existing || joined.ID != run.ID || joined.RunID != run.RunID {
			t.Errorf("second start = %s/%s existing %v, want the finished %s/%s", joined.ID, joined.RunID, joined.Existing, run.ID, run.RunID)
		}
		if g2, err := mc.GetReview(ctx, run.ID, "").Get(ctx); err != nil || g2.RunID != g.RunID {
			t.Errorf("GetReview: %v, run %v; want the grid of %s", err, g2, g.RunID)
		}

		p, err := mc.ReviewProgress(ctx, run.ID)
		if err != nil {
			t.Fatalf("ReviewProgress: %v", err)
		}
		if p.Stage != api.StageDone || p.ChunksDone != 3 || p.UpdatesDone != 6 || len(p.Questions) != 2 || p.Questions[1].Status != api.QuestionDone {
			t.Errorf("progress = %+v, want done, 3 chunks, 6 updates, both questions done", p)
		}
		checkType(ctx, t, mc, run.ID, api.ReviewDocumentName)
		desc, err := w.Client.DescribeWorkflow(ctx, run.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		var sha string
		var n int
		if err := decodeMemo(desc.Memo.GetFields()["document_sha256"].GetData(), &sha); err != nil || sha != "test" {
			t.Errorf("memo document_sha256 = %q (%v), want the caller's entry", sha, err)
		}
		if err := decodeMemo(desc.Memo.GetFields()["questions"].GetData(), &n); err != nil || n != 2 {
			t.Errorf("memo questions = %d (%v), want 2", n, err)
		}
	})

	t.Run("batch", func(t *testing.T) {
		var manifest bytes.Buffer
		for i, f := range facts {
			line, _ := json.Marshal(map[string]any{"id": []string{"a", "b"}[i], "document": doc.String(), "question": f.Question, "answers": []string{f.Answer}})
			manifest.Write(append(line, '\n'))
		}
		manifest.WriteString(`{"id": "gone", "document": "s3://` + cfg.Bucket + `/client-e2e/missing.txt", "question": "Who?"}` + "\n")
		mloc := s3store.Location{Bucket: cfg.Bucket, Key: "client-e2e/manifest.jsonl"}
		if err := store.Put(ctx, mloc, manifest.Bytes(), "application/x-ndjson"); err != nil {
			t.Fatal(err)
		}
		in := api.BatchQAInput{Manifest: mloc.String(), Name: "client e2e", Options: opts, Concurrency: 2}
		run, err := mc.StartBatch(ctx, in, memclient.StartOptions{})
		if err != nil {
			t.Fatalf("StartBatch: %v", err)
		}
		if !strings.HasPrefix(run.ID, "memagent-batch-client_e2e-") {
			t.Errorf("batch id %s, want it derived from the name", run.ID)
		}
		res, err := run.Get(ctx)
		if err != nil {
			t.Fatalf("batch: %v", err)
		}
		if res.Items != 3 || res.Succeeded != 2 || res.Failed != 1 || res.Skipped != 0 || res.Name != in.Name || res.WorkflowID != run.ID {
			t.Errorf("result = %+v, want 3 items: 2 answered, 1 failed", res)
		}
		if res.Overall.Scored != 2 || res.Overall.ExactMatch != 1 || !strings.HasSuffix(res.ReportURI, "/report.json") {
			t.Errorf("overall = %+v, report %s; want both answered items exact", res.Overall, res.ReportURI)
		}
		p, err := mc.BatchProgress(ctx, run.ID)
		if err != nil {
			t.Fatalf("BatchProgress: %v", err)
		}
		if p.Stage != api.BatchStageDone || p.Done != 3 || p.Answered != 2 || p.Failed != 1 || p.Running != 0 {
			t.Errorf("progress = %+v, want done with 3 items settled", p)
		}
		checkType(ctx, t, mc, run.ID, api.BatchQAName)
		checkType(ctx, t, mc, api.BatchItemWorkflowID(run.ID, 0, 0), api.DocumentQAName)

		// A batch is never joined: its id taken is an error.
		_, err = mc.StartBatch(ctx, in, memclient.StartOptions{ID: run.ID})
		var taken *serviceerror.WorkflowExecutionAlreadyStarted
		if !errors.As(err, &taken) || !strings.Contains(err.Error(), "pick another id") {
			t.Errorf("StartBatch with a taken id: %v, want WorkflowExecutionAlreadyStarted and advice", err)
		}

		// Again under another id: the answered items are reused.
		again, err := mc.Batch(ctx, api.BatchQAInput{Manifest: mloc.String(), Options: opts})
		if err != nil {
			t.Fatalf("Batch: %v", err)
		}
		if again.Skipped != 2 || again.Failed != 1 || again.Succeeded != 0 || again.Name != again.WorkflowID {
			t.Errorf("second batch = %+v, want 2 reused, 1 failed, named after its id", again)
		}
	})
}

func checkType(ctx context.Context, t *testing.T, mc *memclient.Client, id, want string) {
	t.Helper()
	if got, err := mc.WorkflowType(ctx, id); err != nil || got != want {
		t.Errorf("WorkflowType(%s) = %q, %v; want %q", id, got, err, want)
	}
}

// decodeMemo reads a memo entry written by the default JSON converter.
func decodeMemo(data []byte, v any) error { return json.Unmarshal(data, v) }
