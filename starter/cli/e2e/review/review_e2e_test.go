package review

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/pluginkit"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/tokenizer"
	"github.com/memagent/memagent/starter/cli/clitest"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
)

// rangeCounter counts the worker's ranged S3 reads by object and range,
// between the activities and the real S3 client.
type rangeCounter struct {
	activities.ObjectStore
	mu    sync.Mutex
	reads map[string]map[[2]int64]int // key → [start, end) → reads
}

func (s *rangeCounter) ReadRange(ctx context.Context, loc s3store.Location, start, end int64, etag string) ([]byte, error) {
	s.mu.Lock()
	if s.reads[loc.Key] == nil {
		s.reads[loc.Key] = map[[2]int64]int{}
	}
	s.reads[loc.Key][[2]int64{start, end}]++
	s.mu.Unlock()
	return s.ObjectStore.ReadRange(ctx, loc, start, end, etag)
}

func (s *rangeCounter) of(key string) map[[2]int64]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[[2]int64]int{}
	for r, n := range s.reads[key] {
		out[r] = n
	}
	return out
}

// startCountingWorker runs an in-process worker, like clitest.StartWorker, whose
// S3 reads are counted.
func startCountingWorker(t *testing.T) (*rangeCounter, *activities.Activities, client.Client) {
	t.Helper()
	ctx := context.Background()
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	opts := workerapp.Options{Logger: clitest.Logger(t)}
	acts, pool, err := pluginkit.NewActivities[*activities.Activities](ctx, workerapp.PluginOptions(cfg, opts))
	if err != nil {
		t.Fatal(err)
	}
	counter := &rangeCounter{ObjectStore: acts.Store, reads: map[string]map[[2]int64]int{}}
	acts.Store = counter
	pool.Start(ctx)
	c, err := workerapp.Dial(ctx, cfg, opts.Logger)
	if err != nil {
		pool.Close()
		t.Fatal(err)
	}
	w := workerapp.NewWorker(c, cfg, acts, pool.Capacity(), opts)
	if err := w.Start(); err != nil {
		c.Close()
		pool.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(); c.Close(); pool.Close() })
	return counter, acts, c
}

// TestReviewEndToEnd is the review's definition of done: 10 questions over a
// 500K-token document on the real clitest.Stack and the simulator read each chunk
// from S3 exactly once, make 10 × chunks memory updates, and produce a grid
// whose evidence points at the planted facts.
func TestReviewEndToEnd(t *testing.T) {
	d := clitest.Stack(t)
	counter, acts, c := startCountingWorker(t)
	const tokens, chunkTokens = 500_000, api.DefaultChunkTokens
	tok, err := tokenizer.New(tokenizer.Qwen)
	if err != nil {
		t.Fatal(err)
	}
	facts := docgen.Facts()[:10]
	doc, placed := docgen.MultiNeedle(tok, tokens, facts, 42)
	dir := t.TempDir()
	docPath := filepath.Join(dir, "facts.txt")
	if err := os.WriteFile(docPath, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	type item struct {
		ID       string   `json:"id"`
		Question string   `json:"question"`
		Answers  []string `json:"answers"`
	}
	var items []item
	asked := map[string]string{} // question → id
	for i, f := range facts {
		id := "fact" + string(rune('a'+i))
		items = append(items, item{ID: id, Question: f.Question, Answers: []string{f.Answer}})
		asked[f.Question] = id
	}
	qPath := filepath.Join(dir, "questions.json")
	qData, _ := json.Marshal(items)
	if err := os.WriteFile(qPath, qData, 0o644); err != nil {
		t.Fatal(err)
	}
	idx, err := memagent.PlanChunks(strings.NewReader(doc), tok, chunkTokens)
	if err != nil {
		t.Fatal(err)
	}
	chunks := len(idx.Chunks)
	chunkOf := map[string]int{} // chunk SHA-256 → index
	for i, c := range idx.Chunks {
		h := sha256.Sum256([]byte(doc[c.Start:c.End]))
		chunkOf[hex.EncodeToString(h[:])] = i
	}
	d.Simulator.Reset()

	htmlPath := filepath.Join(dir, "report.html")
	began := time.Now()
	out, stderr, err := clitest.RunCLI(t, "review", "--doc", docPath, "--questions", qPath, "--json", "--html", htmlPath)
	wall := time.Since(began)
	if err != nil {
		t.Fatalf("review: %v\nstderr: %s", err, stderr)
	}
	var res api.ReviewResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("review --json printed %q: %v", out, err)
	}
	if res.Chunks != chunks || len(res.Rows) != len(facts) {
		t.Fatalf("grid: %d chunks, %d rows; want %d and %d", res.Chunks, len(res.Rows), chunks, len(facts))
	}

	// S3: each chunk range of the document read once, by one worker
	// through its cache; then one small read per evidence passage for the
	// report.
	docLoc, _ := s3store.ParseURI(res.Document)
	reads := counter.of(docLoc.Key)
	chunkReads := 0
	for i, c := range idx.Chunks {
		n := reads[[2]int64{c.Start, c.End}]
		if n != 1 {
			t.Errorf("chunk %d [%d,%d) read %d times from S3, want 1", i, c.Start, c.End, n)
		}
		chunkReads += n
		delete(reads, [2]int64{c.Start, c.End})
	}
	passages := map[[2]int64]bool{}
	for _, r := range res.Rows {
		for _, e := range r.Evidence {
			if e.Passage != nil {
				passages[[2]int64{e.Passage.Start, e.Passage.End}] = true
			}
		}
	}
	// ConvertDocument reads the first bytes once to tell the format.
	if n := reads[[2]int64{0, docconv.SniffBytes}]; n == 1 {
		delete(reads, [2]int64{0, docconv.SniffBytes})
	} else {
		t.Errorf("the format sniff [0,%d) read %d times, want 1", docconv.SniffBytes, n)
	}
	// GroundAnswer streams the document once (unranged) and reads the
	// quote around each answer it finds: every planted fact's answer is
	// in the document as it is.
	for _, r := range res.Rows {
		g := r.Grounding
		if g == nil || g.Status != api.GroundingVerbatim || !strings.Contains(g.Quote, r.Answer) {
			t.Errorf("%s: answer %q grounding %+v, want verbatim with a quote holding it", r.ID, r.Answer, g)
			continue
		}
		q := [2]int64{max(0, g.Start-api.MaxGroundingQuoteBytes), min(res.Bytes, g.End+api.MaxGroundingQuoteBytes)}
		if reads[q] > 0 {
			reads[q]--
			if reads[q] == 0 {
				delete(reads, q)
			}
		}
	}
	for r, n := range reads {
		if !passages[r] || n != 1 {
			t.Errorf("read [%d,%d) %d times: not a chunk, a quote, nor a passage read once for the report", r[0], r[1], n)
		}
	}

	// The simulator: each question's memory read each chunk once, then
	// the question was answered once.
	updates, finals := 0, 0
	perQuestion := map[string]map[int]int{}
	for _, c := range d.Simulator.Calls() {
		if _, ok := asked[c.Question]; !ok {
			continue
		}
		switch c.Kind {
		case simulator.KindUpdate:
			updates++
			if perQuestion[c.Question] == nil {
				perQuestion[c.Question] = map[int]int{}
			}
			i, ok := chunkOf[c.ChunkSHA256]
			if !ok {
				t.Errorf("an update for %s was sent a section that is no chunk of the document", asked[c.Question])
			}
			perQuestion[c.Question][i]++
		case simulator.KindFinal:
			finals++
		}
	}
	if updates != len(facts)*chunks || finals != len(facts) {
		t.Errorf("simulator: %d memory updates and %d answers, want %d × %d = %d and %d", updates, finals, len(facts), chunks, len(facts)*chunks, len(facts))
	}
	for q, seen := range perQuestion {
		if len(seen) != chunks {
			t.Errorf("%s: updates over %d distinct chunks, want %d", asked[q], len(seen), chunks)
		}
		for i, n := range seen {
			if n != 1 {
				t.Errorf("%s: chunk %d sent %d times", asked[q], i, n)
			}
		}
	}

	// The grid: right answers, and evidence at the planted facts.
	for i, row := range res.Rows {
		p := placed[i]
		if row.ID != items[i].ID || row.Status != "done" || row.Answer != p.Answer || row.Scores == nil || !row.Scores.ExactMatch {
			t.Errorf("%s: %s, answer %q (scores %+v), want %q", row.ID, row.Status, row.Answer, row.Scores, p.Answer)
		}
		found := false
		for _, e := range row.Evidence {
			if e.Start <= p.Start && p.End <= e.End {
				found = e.Passage != nil && e.Passage.Start == p.Start && e.Passage.End == p.End && e.SupportsAnswer
				if !found {
					t.Errorf("%s: evidence chunk %d holds the fact at [%d,%d) but its passage is %+v (supports %v)", row.ID, e.Chunk, p.Start, p.End, e.Passage, e.SupportsAnswer)
				}
			}
		}
		if !found {
			t.Errorf("%s: evidence %+v has no chunk holding the fact at [%d,%d)", row.ID, row.Evidence, p.Start, p.End)
		}
		if row.ChunksRead != chunks || row.Usage.Calls != chunks+1 {
			t.Errorf("%s: %d chunks read, %d calls; want %d and %d", row.ID, row.ChunksRead, row.Usage.Calls, chunks, chunks+1)
		}
	}
	for _, uri := range []string{res.JSONURI, res.CSVURI, res.HTMLURI, res.Prefix + "questions/facta/result.json", res.Prefix + "questions/factj/chunks/000000.json"} {
		loc, _ := s3store.ParseURI(uri)
		if _, err := acts.Store.Head(context.Background(), loc); err != nil {
			t.Errorf("%s: %v", uri, err)
		}
	}
	page, err := os.ReadFile(htmlPath)
	if err != nil || !strings.Contains(string(page), "<mark>7391</mark>") {
		t.Errorf("--html saved %d bytes (%v), want the report with the first fact's passage marked", len(page), err)
	}
	if res.Runs < 2 {
		t.Errorf("runs = %d: %d activities in runs of %d should have continued as new", res.Runs, updates+finals, api.DefaultReviewActivitiesPerRun)
	}
	// Each run's history is bounded by the activities it ran, not by the
	// document.
	var maxEvents, maxBytes int64
	clitest.Eventually(t, "every run listed as closed", func() (bool, string) {
		runs, err := workerapp.ListRuns(context.Background(), c, d.Stack.Namespace, res.WorkflowID)
		if err != nil {
			return false, err.Error()
		}
		maxEvents, maxBytes = 0, 0
		closed := 0
		for _, r := range runs {
			if r.GetCloseTime() != nil {
				closed++
			}
			maxEvents, maxBytes = max(maxEvents, r.GetHistoryLength()), max(maxBytes, r.GetHistorySizeBytes())
		}
		return closed == res.Runs, fmt.Sprintf("%d of %d runs closed", closed, res.Runs)
	})
	if maxBytes > 4<<20 {
		t.Errorf("largest run history %d bytes, want it well under Temporal's limits", maxBytes)
	}
	stats := acts.Chunks.Stats()
	t.Logf("review of %d tokens: %d chunks, %d questions, %d memory updates, %d answers, %d S3 chunk reads (cache: %d reads, %d hits, %d shared), %d passage reads, %d runs (largest history %d events, %d bytes), wall %s",
		idx.Tokens, chunks, len(facts), updates, finals, chunkReads, stats.Reads, stats.Hits, stats.Shared, len(reads), res.Runs, maxEvents, maxBytes, wall.Round(time.Millisecond))

	// The same request again joins the finished run: no new model call.
	before := len(d.Simulator.Calls())
	out2, stderr, err := clitest.RunCLI(t, "review", "--doc", docPath, "--questions", qPath, "--json", "--parallelism", "3")
	if err != nil {
		t.Fatalf("second review: %v\n%s", err, stderr)
	}
	var res2 api.ReviewResult
	if err := json.Unmarshal([]byte(out2), &res2); err != nil || res2.WorkflowID != res.WorkflowID || len(d.Simulator.Calls()) != before {
		t.Errorf("asking again: workflow %q (first %q), %d new model calls; want the same run and none", res2.WorkflowID, res.WorkflowID, len(d.Simulator.Calls())-before)
	}
}

func TestReviewRejectsBadInputBeforeStarting(t *testing.T) {
	d := clitest.Stack(t)
	// A prompt over the model's context is refused by the worker
	// (PrepareDocument), before any model call.
	clitest.StartWorker(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.txt", "The sky is blue.")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no questions", []string{"--doc", good}, "no questions"},
		{"answer before any question", []string{"--doc", good, "--answer", "blue", "--question", "q"}, "belongs to the --question before it"},
		{"both question sources", []string{"--doc", good, "--question", "q", "--questions", write("q.txt", "Why?\n")}, "not both"},
		{"empty questions file", []string{"--doc", good, "--questions", write("empty.txt", "# nothing\n\n")}, "has no questions"},
		{"duplicate ids", []string{"--doc", good, "--questions", write("dup.json", `[{"id":"a","question":"x?"},{"id":"a","question":"y?"}]`)}, `both have id "a"`},
		{"misspelt field", []string{"--doc", good, "--questions", write("typo.json", `[{"questoin":"x?"}]`)}, `[0].questoin: unknown field; did you mean [0].question?`},
		{"empty question", []string{"--doc", good, "--question", "What?", "--question", " "}, "questions[1] (q2): question is empty"},
		{"no document", []string{"--question", "q"}, "no document"},
		{"missing file", []string{"--doc", filepath.Join(dir, "nope.txt"), "--question", "q"}, "does not exist: check the path"},
		{"too parallel", []string{"--doc", good, "--question", "q", "--parallelism", "1000"}, "parallelism (1000)"},
		{"over the model context", []string{"--doc", good, "--question", "q", "--chunk-tokens", "40000"}, "exceed the model's context (32768)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d.Simulator.Reset()
			_, _, err := clitest.RunCLI(t, append([]string{"review"}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("review %v: error %v, want it to contain %q", tt.args, err, tt.want)
			}
			if n := len(d.Simulator.Calls()); n != 0 {
				t.Errorf("%d model calls before the error, want 0", n)
			}
		})
	}
}
