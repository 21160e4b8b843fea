package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/pluginkit"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/tokenizer"
	"github.com/memagent/memagent/memclient"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
)

// syncBuffer is a bytes.Buffer that a watch writes to while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWatchReviewAndBatch starts a review of two questions and a batch of
// three items (one of them on a missing document) before any worker polls,
// follows both with `starter watch` from then to the end, and reads them
// with `starter status`: each is recognised by its workflow type, shows its
// own progress (from search attributes while no worker answers, then from
// its query) and ends with its own result.
func TestWatchReviewAndBatch(t *testing.T) {
	stack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	c, err := workerapp.Dial(ctx, cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	store, err := pluginkit.NewStore(ctx, cfg.Options)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.New(tokenizer.Qwen)
	if err != nil {
		t.Fatal(err)
	}
	facts := docgen.Facts()[2:4]
	text, _ := docgen.MultiNeedle(tok, 1700, facts, 9)
	opts := api.ModelOptions{ChunkTokens: 600}
	idx, err := memagent.PlanChunks(strings.NewReader(text), tok, opts.ChunkTokens)
	if err != nil {
		t.Fatal(err)
	}
	chunks := len(idx.Chunks)
	doc := s3store.Location{Bucket: cfg.Bucket, Key: "watch-e2e/doc.txt"}
	var manifest bytes.Buffer
	for _, f := range facts {
		line, _ := json.Marshal(map[string]any{"document": doc.String(), "question": f.Question, "answers": []string{f.Answer}})
		manifest.Write(append(line, '\n'))
	}
	manifest.WriteString(`{"document": "s3://` + cfg.Bucket + `/watch-e2e/missing.txt", "question": "Who?"}` + "\n")
	mloc := s3store.Location{Bucket: cfg.Bucket, Key: "watch-e2e/manifest.jsonl"}
	for loc, data := range map[s3store.Location][]byte{doc: []byte(text), mloc: manifest.Bytes()} {
		if err := store.Put(ctx, loc, data, "text/plain"); err != nil {
			t.Fatal(err)
		}
	}

	mc := memclient.New(c, memclient.Options{TaskQueue: cfg.TaskQueue})
	rin := api.ReviewInput{Document: doc.String(), Options: opts}
	for _, f := range facts {
		rin.Questions = append(rin.Questions, api.ReviewQuestion{Question: f.Question, GoldAnswers: []string{f.Answer}})
	}
	review, err := mc.StartReview(ctx, rin, memclient.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := mc.StartBatch(ctx, api.BatchQAInput{Manifest: mloc.String(), Name: "watch-e2e", Options: opts}, memclient.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}

	type watched struct {
		out syncBuffer
		err error
	}
	watches := map[string]*watched{review.ID: {}, batch.ID: {}}
	var wg sync.WaitGroup
	for id, w := range watches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var stderr bytes.Buffer
			w.err = run(ctx, []string{"watch", id}, &w.out, &stderr)
			if w.err != nil {
				w.err = fmt.Errorf("%w\nstderr: %s", w.err, stderr.String())
			}
		}()
	}
	// No worker yet: what the watches show comes from the search
	// attributes set at start.
	eventually(t, "both watches showing the stage set at start", func() (bool, string) {
		r, b := watches[review.ID].out.String(), watches[batch.ID].out.String()
		return strings.HasPrefix(r, api.StagePreparing+"\n") && strings.HasPrefix(b, api.BatchStageExpanding+"\n"),
			fmt.Sprintf("review %q, batch %q", r, b)
	})
	startWorker(t)
	wg.Wait()

	out, err := watches[review.ID].out.String(), watches[review.ID].err
	t.Logf("watch %s:\n%s", review.ID, out)
	if err != nil {
		t.Fatalf("watch review: %v", err)
	}
	for _, want := range []string{
		fmt.Sprintf("done: chunk %d/%d, 2/2 questions done", chunks, chunks),
		"ID  ANSWER", facts[0].Answer, facts[1].Answer,
		"Workflow: " + review.ID, "Grid:     s3://", "Report:   s3://",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("watch of the review lacks %q", want)
		}
	}

	out, err = watches[batch.ID].out.String(), watches[batch.ID].err
	t.Logf("watch %s:\n%s", batch.ID, out)
	if err != nil {
		t.Fatalf("watch batch: %v", err)
	}
	for _, want := range []string{
		"done: 3/3 items, 0 running, 1 failed, 0 reused",
		"Batch:     watch-e2e (" + batch.ID, "Items:     3: 2 answered, 0 reused, 1 failed",
		"Scores:    exact 1.000", "Report:    s3://", "/report.json", "Results:   s3://",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("watch of the batch lacks %q", want)
		}
	}
	for id, w := range watches {
		if lines := strings.Count(w.out.String(), "\n"); lines > 20 {
			t.Errorf("watch %s printed %d lines off a terminal, want a few", id, lines)
		}
	}

	st, stderr, err := runCLI(t, "status", review.ID)
	if err != nil || !strings.Contains(st, "questions: 2 (2 done)") || !strings.Contains(st, fmt.Sprintf("updates:   %d/%d memory updates", 2*chunks, 2*chunks)) {
		t.Errorf("status of the review: %v\n%s%s", err, st, stderr)
	}
	st, stderr, err = runCLI(t, "status", batch.ID, "--json")
	var bp struct {
		api.BatchProgress
		Type string `json:"workflow_type"`
	}
	if err != nil || json.Unmarshal([]byte(st), &bp) != nil || bp.Type != api.BatchQAName || bp.Done != 3 || bp.Failed != 1 || bp.Stage != api.BatchStageDone {
		t.Errorf("status --json of the batch: %v\n%s%s", err, st, stderr)
	}
	if _, _, err := runCLI(t, "status", review.ID, "--memory"); err == nil || !strings.Contains(err.Error(), "--memory shows the memory of a memagent.DocumentQA run") {
		t.Errorf("status --memory of a review: %v, want it refused", err)
	}
	if _, _, err := runCLI(t, "watch", "no-such-workflow"); err == nil || !strings.Contains(err.Error(), "no workflow no-such-workflow") {
		t.Errorf("watch of an unknown id: %v, want no workflow", err)
	}
}

// TestWatchQuestionEndsLikeAsk follows a question about a PDF with
// `starter watch` and checks that it ends with exactly the lines ask
// printed for it: the answer, the pages, the grounding and the result link.
func TestWatchQuestionEndsLikeAsk(t *testing.T) {
	stack(t)
	startWorker(t)
	pdf := filepath.Join(t.TempDir(), "agreement.pdf")
	if err := os.WriteFile(pdf, docconvtest.PDF(docconvtest.PDFOptions{Pages: 12, FactPage: 7, Fact: docgen.Fact, Seed: 5}), 0o644); err != nil {
		t.Fatal(err)
	}
	asked, stderr, err := runCLI(t, "ask", "--doc", pdf, "--question", docgen.Question, "--chunk-tokens", "800")
	if err != nil {
		t.Fatalf("ask: %v\n%s", err, stderr)
	}
	_, rest, _ := strings.Cut(asked, "Workflow: ")
	id, _, _ := strings.Cut(rest, " ")
	if id == "" {
		t.Fatalf("ask printed no workflow id:\n%s", asked)
	}
	watched, stderr, err := runCLI(t, "watch", id)
	if err != nil {
		t.Fatalf("watch: %v\n%s", err, stderr)
	}
	t.Logf("watch %s:\n%s", id, watched)
	if !strings.HasSuffix(watched, asked) {
		t.Errorf("watch does not end with what ask printed:\nwatch:\n%s\nask:\n%s", watched, asked)
	}
	for _, want := range []string{"Answer:   " + docgen.Answer, "Found on: p. 7", "Grounding: verbatim, p. 7: \"", "Result:   s3://"} {
		if !strings.Contains(watched, want) {
			t.Errorf("watch lacks %q", want)
		}
	}
}
