package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/tokenizer"
	"github.com/memagent/memagent/starter/cli"
	"github.com/memagent/memagent/starter/cli/clitest"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
	"github.com/memagent/memagent/workflows"
)

// TestBatchEndToEnd is the done-means of BatchQA: a 1,000-item batch at a
// concurrency of 16 on the real clitest.Stack and the simulator, one item of which
// names a missing document and fails alone, with a report whose aggregates
// match the per-item results in S3; then the same manifest again, reusing
// every answer.
func TestBatchEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000-item batch")
	}
	d := clitest.Stack(t)
	clitest.StartWorker(t)
	cfg, store := clitest.Store(t)

	// 25 distinct documents of 1.2K or 1.8K tokens (2 or 3 chunks of 600
	// tokens), 40 questions each.
	tok, _ := tokenizer.New(tokenizer.Qwen)
	const docs, questions = 25, 40
	var uris []string
	for i := range docs {
		loc := s3store.Location{Bucket: cfg.Bucket, Key: fmt.Sprintf("batch-e2e/doc-%02d.txt", i)}
		text := docgen.Needle(tok, clitest.DocTokens(i), float64(i%5)/5, uint64(100+i))
		if err := store.Put(context.Background(), loc, []byte(text), "text/plain"); err != nil {
			t.Fatal(err)
		}
		uris = append(uris, loc.String())
	}
	const missingSeq = 437
	var manifest bytes.Buffer
	for i := range docs * questions {
		doc, q := i%docs, i/docs
		uri := uris[doc]
		if i == missingSeq {
			uri = "s3://" + cfg.Bucket + "/batch-e2e/missing.txt"
		}
		line, _ := json.Marshal(map[string]any{
			"id": fmt.Sprintf("d%02d-q%02d", doc, q), "document": uri,
			"question": fmt.Sprintf("%s (variant %d)", docgen.Question, q),
			"answers":  []string{docgen.Answer},
			"labels":   map[string]string{"length": fmt.Sprint(clitest.DocTokens(doc)), "depth": fmt.Sprint(doc % 5)},
		})
		manifest.Write(append(line, '\n'))
	}
	path := filepath.Join(t.TempDir(), "manifest.jsonl")
	if err := os.WriteFile(path, manifest.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	d.Simulator.Reset()
	cpu := processCPU()
	first, took := clitest.RunBatch(t, "--manifest", path, "--concurrency", "16", "--name", "e2e-1000", "--chunk-tokens", "600", "--json")
	calls := len(d.Simulator.Calls())
	// The CPU time of the whole process (Temporal, S3, simulator, worker
	// and CLI) says what the batch costs whatever else the machine runs.
	t.Logf("1,000 items at concurrency 16: %s wall, %s CPU, %d runs, %d simulator calls",
		took.Round(time.Millisecond), (processCPU() - cpu).Round(time.Millisecond), first.Result.Runs, calls)
	res, rep := first.Result, first.Report
	if res.Items != 1000 || res.Succeeded != 999 || res.Failed != 1 || res.Skipped != 0 {
		t.Errorf("result = %+v", res)
	}
	if res.Runs < 2 {
		t.Errorf("runs = %d: 1,000 items should continue-as-new at least once", res.Runs)
	}

	items := clitest.ReadResults(t, store, rep.ResultsURI)
	if len(items) != 1000 {
		t.Fatalf("results.jsonl has %d items, want 1000", len(items))
	}
	for i, r := range items {
		switch {
		case r.Seq != i:
			t.Fatalf("results line %d has seq %d", i, r.Seq)
		case i == missingSeq:
			if r.Status != api.ItemFailed || r.ErrorType != api.ErrDocumentNotFound || !strings.Contains(r.Error, "missing.txt") {
				t.Errorf("missing document item = %+v", r)
			}
		case r.Status != api.ItemAnswered || r.Scores == nil || r.Chunks < 2 || r.Tokens == 0:
			t.Errorf("item %d = status %s scores %+v chunks %d: %s", i, r.Status, r.Scores, r.Chunks, r.Error)
		}
	}
	// One update per chunk and one answer per answered item, nothing more.
	wantCalls := 0
	for _, r := range items {
		if r.Status == api.ItemAnswered {
			wantCalls += r.Chunks + 1
		}
	}
	if calls != wantCalls {
		t.Errorf("simulator calls = %d, want %d", calls, wantCalls)
	}
	checkAggregates(t, &rep, items)

	// The other report files are there.
	for _, uri := range []string{rep.CSVURI, rep.SVGURI, rep.HTMLURI, res.ReportURI} {
		loc, _ := s3store.ParseURI(uri)
		if info, err := store.Head(context.Background(), loc); err != nil || info.Size == 0 {
			t.Errorf("%s: %v (%d bytes)", uri, err, info.Size)
		}
	}

	replayBatch(t, cfg, res.WorkflowID)

	// The children are listed by the batch's name.
	rows, _, err := clitest.RunCLI(t, "runs", "--batch", "e2e-1000", "--json", "--limit", "5")
	if err != nil || strings.Count(rows, `"workflow_id"`) != 5 {
		t.Errorf("runs --batch: %v\n%s", err, rows)
	}

	// The same manifest again: every answered item is reused, no model call.
	d.Simulator.Reset()
	htmlPath := filepath.Join(t.TempDir(), "report.html")
	second, took2 := clitest.RunBatch(t, "--manifest", path, "--concurrency", "16", "--name", "e2e-1000-again", "--chunk-tokens", "600", "--json", "--html", htmlPath)
	t.Logf("re-run of the same manifest: %s wall", took2.Round(time.Millisecond))
	if r := second.Result; r.Skipped != 999 || r.Failed != 1 || r.Succeeded != 0 {
		t.Errorf("re-run = %+v, want 999 reused and the missing document failed again", r)
	}
	if n := len(d.Simulator.Calls()); n != 0 {
		t.Errorf("re-run made %d simulator calls, want 0", n)
	}
	again := clitest.ReadResults(t, store, second.Report.ResultsURI)
	for i, r := range again {
		if i != missingSeq && (r.Answer != items[i].Answer || r.Status != api.ItemReused) {
			t.Errorf("re-run item %d: status %s answer %q, first run answered %q", i, r.Status, r.Answer, items[i].Answer)
			break
		}
	}
	checkAggregates(t, &second.Report, again)
	if page, err := os.ReadFile(htmlPath); err != nil || !bytes.Contains(page, []byte("e2e-1000-again")) {
		t.Errorf("--html: %v", err)
	}
}

// replayBatch replays every run of a finished batch against the current
// workflow code (a nondeterminism there fails the test) and logs each run's
// history length.
func replayBatch(t *testing.T, cfg config.Config, id string) {
	t.Helper()
	c := clitest.Dial(t)
	ctx := context.Background()
	runs, err := workerapp.ListRuns(ctx, c, cfg.TemporalNamespace, id)
	if err != nil {
		t.Fatal(err)
	}
	replayer := worker.NewWorkflowReplayer()
	workflows.Register(replayer)
	for _, r := range runs {
		var hist historypb.History
		iter := c.GetWorkflowHistory(ctx, id, r.GetExecution().GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			e, err := iter.Next()
			if err != nil {
				t.Fatal(err)
			}
			hist.Events = append(hist.Events, e)
		}
		// Child ids derive from the workflow id: replay under the real one.
		err := replayer.ReplayWorkflowHistoryWithOptions(nil, &hist, worker.ReplayWorkflowHistoryOptions{
			OriginalExecution: workflow.Execution{ID: id, RunID: r.GetExecution().GetRunId()},
		})
		if err != nil {
			t.Errorf("replay of batch run %s: %v", r.GetExecution().GetRunId(), err)
		}
		t.Logf("batch run %s: %d events, %d bytes of history", r.GetExecution().GetRunId(), len(hist.Events), r.GetHistorySizeBytes())
	}
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// checkAggregates recomputes the report's aggregates from the per-item
// results, overall and by every label.
func checkAggregates(t *testing.T, rep *api.BatchReport, items []api.BatchItemResult) {
	t.Helper()
	type sums struct {
		items, answered, reused, failed, scored int
		em, sub, f1, recall                     float64
		calls                                   int
	}
	add := func(s *sums, r api.BatchItemResult) {
		s.items++
		s.calls += r.Usage.Calls
		switch r.Status {
		case api.ItemAnswered:
			s.answered++
		case api.ItemReused:
			s.reused++
		default:
			s.failed++
		}
		if r.Status != api.ItemFailed && r.Scores != nil {
			s.scored++
			if r.Scores.ExactMatch {
				s.em++
			}
			if r.Scores.SubstringMatch {
				s.sub++
			}
			s.f1 += r.Scores.F1
			s.recall += r.Scores.Recall
		}
	}
	check := func(what string, got api.ScoreAggregate, s sums) {
		mean := func(x float64) float64 {
			if s.scored == 0 {
				return 0
			}
			return x / float64(s.scored)
		}
		if got.Items != s.items || got.Answered != s.answered || got.Reused != s.reused || got.Failed != s.failed ||
			got.Scored != s.scored || got.Usage.Calls != s.calls ||
			math.Abs(got.ExactMatch-mean(s.em)) > 1e-9 || math.Abs(got.SubstringMatch-mean(s.sub)) > 1e-9 || math.Abs(got.F1-mean(s.f1)) > 1e-9 ||
			math.Abs(got.Recall-mean(s.recall)) > 1e-9 {
			t.Errorf("%s: report %+v, recomputed %+v", what, got, s)
		}
	}
	var all sums
	by := map[string]map[string]*sums{}
	for _, r := range items {
		add(&all, r)
		for k, v := range r.Labels {
			if by[k] == nil {
				by[k] = map[string]*sums{}
			}
			if by[k][v] == nil {
				by[k][v] = &sums{}
			}
			add(by[k][v], r)
		}
	}
	check("overall", rep.Overall, all)
	if len(rep.ByLabel) != len(by) {
		t.Errorf("report has %d labels, items have %d", len(rep.ByLabel), len(by))
	}
	for k, vals := range by {
		if len(rep.ByLabel[k]) != len(vals) {
			t.Errorf("label %s: report has %d values, items have %d", k, len(rep.ByLabel[k]), len(vals))
		}
		for v, s := range vals {
			check(k+"="+v, rep.ByLabel[k][v], *s)
		}
	}
}

// TestBatchUploadsLocalDocuments: a local JSON Lines manifest may name
// local documents, relative to its folder or absolute; starter batch
// uploads each once, as ask does (a corpus's documents too), and the
// batch answers them.
func TestBatchUploadsLocalDocuments(t *testing.T) {
	clitest.Stack(t)
	clitest.StartWorker(t)
	doc, _ := clitest.WriteDoc(t, 3_000)
	dir := t.TempDir()
	if err := os.Rename(doc, filepath.Join(dir, "doc.txt")); err != nil {
		t.Fatal(err)
	}
	var manifest bytes.Buffer
	for i, d := range []string{"doc.txt", filepath.Join(dir, "doc.txt")} {
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("local-%d", i), "document": d,
			"question": fmt.Sprintf("%s (%d)", docgen.Question, i), "answers": []string{docgen.Answer}})
		manifest.Write(append(line, '\n'))
	}
	// A corpus of local documents, one relative and one absolute.
	notes := clitest.WriteFile(t, t.TempDir(), "notes.txt", clitest.FillerText(7, 2))
	line, _ := json.Marshal(map[string]any{"id": "local-corpus", "documents": []string{"doc.txt", notes},
		"question": docgen.Question + " (corpus)"})
	manifest.Write(append(line, '\n'))
	path := filepath.Join(dir, "manifest.jsonl")
	if err := os.WriteFile(path, manifest.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := clitest.RunBatch(t, "--manifest", path, "--name", "local-docs", "--chunk-tokens", "1000", "--json")
	if r := out.Result; r.Items != 3 || r.Succeeded != 3 || r.Failed != 0 || r.Overall.ExactMatch != 1 {
		t.Errorf("result %+v, want the three items answered, the two scored exactly", r)
	}
	_, store := clitest.Store(t)
	items := clitest.ReadResults(t, store, out.Report.ResultsURI)
	if c := items[len(items)-1]; len(c.Documents) != 2 || !strings.HasPrefix(c.Documents[0], "s3://") ||
		!strings.HasSuffix(c.Documents[0], "/doc.txt") || !strings.HasSuffix(c.Documents[1], "/notes.txt") {
		t.Errorf("corpus item documents %q, want the two uploads in order", c.Documents)
	}
	if _, _, err := clitest.RunCLI(t, "batch", "--manifest", clitest.WriteManifest(t, `{"id":"x","document":"nope.txt","question":"q"}`)); cli.ExitCode(err) != cli.ExitBadInput {
		t.Errorf("a manifest naming a missing local file: %v (exit %d), want exit %d", err, cli.ExitCode(err), cli.ExitBadInput)
	}
}
