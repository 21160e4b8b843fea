package batch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/tokenizer"
	"github.com/memagent/memagent/starter/cli/clitest"
)

// corpusJSON is the part of `starter ask --json` the corpus tests read.
type corpusJSON struct {
	clitest.ConvertedJSON
	Documents     []string        `json:"documents"`
	AnswerSources []api.SourceRef `json:"answer_sources"`
	Evidence      []api.Evidence  `json:"evidence"`
	ChunksReused  int             `json:"chunks_reused"`
	ReusedFrom    *api.ReusedFrom `json:"reused_from"`
	ReusedReading string          `json:"reused_reading"`
	Chunks        int             `json:"chunks"`
	Usage         api.Usage       `json:"usage"`
}

// TestAskCorpusEndToEnd is the first done-means of corpora: a text file, a
// PDF and a DOCX asked as one corpus through the CLI, and through a raw
// JSON client with documents; the answer comes from the PDF's page 17,
// and every evidence entry names its document.
func TestAskCorpusEndToEnd(t *testing.T) {
	clitest.Stack(t)
	clitest.StartWorker(t)
	dir := t.TempDir()
	a := clitest.WriteFile(t, dir, "notes.txt", clitest.FillerText(1, 12))
	b := clitest.WriteFile(t, dir, "agreement.pdf", docconvtest.PDF(docconvtest.PDFOptions{Pages: 30, FactPage: 17, Fact: docgen.Fact, Seed: 3}))
	c := clitest.WriteFile(t, dir, "annex.docx", docconvtest.DOCX("Annex", docconvtest.Sections(4, 0, "", 9)))

	out, stderr, err := clitest.RunCLI(t, "ask", "--doc", a, "--doc", b, "--doc", c, "--question", docgen.Question,
		"--answer", docgen.Answer, "--chunk-tokens", "800", "--json")
	if err != nil {
		t.Fatalf("ask: %v\nstderr: %s", err, stderr)
	}
	var res corpusJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("ask --json printed %q: %v", out, err)
	}
	if res.Answer != docgen.Answer {
		t.Errorf("answer %q, want %q", res.Answer, docgen.Answer)
	}
	if len(res.Documents) != 3 || !strings.HasSuffix(res.Documents[1], "/agreement.pdf") {
		t.Errorf("documents %q, want the three uploads in order", res.Documents)
	}
	if got := api.CiteSources(res.AnswerSources); got != "agreement.pdf p. 17" {
		t.Errorf("answer_sources cite %q, want agreement.pdf p. 17 (%+v)", got, res.AnswerSources)
	}
	if g := res.Grounding; g == nil || !strings.HasPrefix(g.String(), "verbatim, agreement.pdf p. 17: ") {
		t.Errorf("grounding %q, want verbatim on agreement.pdf p. 17", g)
	}
	if len(res.Evidence) == 0 {
		t.Fatal("no evidence")
	}
	for _, e := range res.Evidence {
		if e.Document == "" || !strings.Contains(strings.Join(res.Documents, " "), e.Document) {
			t.Errorf("evidence entry at chunk %d names document %q, not one of the corpus", e.Chunk, e.Document)
		}
	}
	human, _, err := clitest.RunCLI(t, "ask", "--doc", a, "--doc", b, "--doc", c, "--question", docgen.Question, "--chunk-tokens", "800")
	if err != nil || !strings.Contains(human, "Found on: agreement.pdf p. 17") || !strings.Contains(human, "Corpus:   3 documents") {
		t.Errorf("ask (text): %v\n%s", err, human)
	}

	// An s3:// prefix stands for its objects in name order.
	cfg, store := clitest.Store(t)
	for i, p := range []string{c, a} { // written out of order
		data, _ := os.ReadFile(p)
		loc := s3store.Location{Bucket: cfg.Bucket, Key: fmt.Sprintf("matters/%s/%d-%s", t.Name(), 2-i, filepath.Base(p))}
		if err := store.Put(context.Background(), loc, data, ""); err != nil {
			t.Fatal(err)
		}
	}
	out, stderr, err = clitest.RunCLI(t, "ask", "--doc", "s3://"+cfg.Bucket+"/matters/"+t.Name()+"/", "--question", docgen.Question, "--chunk-tokens", "800", "--json")
	if err != nil {
		t.Fatalf("ask of a prefix: %v\nstderr: %s", err, stderr)
	}
	var prefixed corpusJSON
	if err := json.Unmarshal([]byte(out), &prefixed); err != nil {
		t.Fatal(err)
	}
	if len(prefixed.Documents) != 2 || !strings.HasSuffix(prefixed.Documents[0], "/1-notes.txt") || !strings.HasSuffix(prefixed.Documents[1], "/2-annex.docx") {
		t.Errorf("documents of the prefix: %q, want 1-notes.txt then 2-annex.docx", prefixed.Documents)
	}

	// A raw JSON client: the input is a plain JSON object with documents.
	c2, err := client.Dial(client.Options{HostPort: cfg.TemporalAddress, Namespace: cfg.TemporalNamespace})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	raw := map[string]any{"documents": res.Documents, "question": docgen.Question, "options": map[string]any{"chunk_tokens": 800}}
	run, err := c2.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{TaskQueue: cfg.TaskQueue}, api.DocumentQAName, raw)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := run.Get(context.Background(), &got); err != nil {
		t.Fatal(err)
	}
	if got["answer"] != docgen.Answer {
		t.Errorf("raw client: answer %v, want %q", got["answer"], docgen.Answer)
	}
	ev, _ := got["evidence"].([]any)
	for _, e := range ev {
		if m, _ := e.(map[string]any); m["document"] == nil || m["document"] == "" {
			t.Errorf("raw client: evidence entry without a document: %v", m)
		}
	}

	// Both of document and documents, or neither, is bad input naming them.
	for _, in := range []map[string]any{
		{"document": res.Documents[0], "documents": res.Documents, "question": "q"},
		{"question": "q"},
	} {
		run, err := c2.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{TaskQueue: cfg.TaskQueue}, api.DocumentQAName, in)
		if err != nil {
			t.Fatal(err)
		}
		err = run.Get(context.Background(), nil)
		if err == nil || !strings.Contains(err.Error(), "document") || !strings.Contains(err.Error(), "documents") || !strings.Contains(err.Error(), api.ErrBadInput) {
			t.Errorf("input %v: %v, want memagent.BadInput naming document and documents", in, err)
		}
	}
}

// chainWorker starts a worker against a simulator of its own whose answer
// is a hash of every chunk read, in order (simulator.PolicyChain).
func chainWorker(t *testing.T) *simulator.Server {
	t.Helper()
	clitest.Stack(t)
	tok, err := tokenizer.New(tokenizer.Qwen)
	if err != nil {
		t.Fatal(err)
	}
	sim := simulator.New(simulator.Options{Tokenizer: tok, Policy: simulator.PolicyChain})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	clitest.StartWorker(t)
	return sim
}

// askCorpus asks the chain question of the local documents docs and
// returns the result and the model calls it made.
func askCorpus(t *testing.T, sim *simulator.Server, docs []string, extra ...string) (corpusJSON, int) {
	t.Helper()
	args := []string{"ask", "--question", "What does the chain of chunks hash to?", "--chunk-tokens", "1000", "--json"}
	for _, d := range docs {
		args = append(args, "--doc", d)
	}
	before := sim.Stats().Latency.Count
	out, stderr, err := clitest.RunCLI(t, append(args, extra...)...)
	if err != nil {
		t.Fatalf("ask: %v\nstderr: %s", err, stderr)
	}
	var res corpusJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("ask --json printed %q: %v", out, err)
	}
	return res, sim.Stats().Latency.Count - before
}

// TestCorpusReuseEqualsFreshReading is the second done-means: a
// five-document corpus asked once, then with a sixth appended, then with
// one edited in the middle. The later readings start from the first
// reading's checkpoints, make at most (new chunks + 2) calls, and answer
// exactly as a fresh full reading (--reuse none --fresh) does, with a
// simulator whose answer depends on every chunk read, in order.
func TestCorpusReuseEqualsFreshReading(t *testing.T) {
	sim := chainWorker(t)
	dir := t.TempDir()
	var docs []string
	for i := range 5 {
		docs = append(docs, clitest.WriteFile(t, dir, fmt.Sprintf("doc-%d.txt", i+1), clitest.FillerText(uint64(10+i), 10)))
	}
	first, calls := askCorpus(t, sim, docs)
	if first.ChunksReused != 0 || calls != first.Chunks+1 || !strings.HasPrefix(first.Answer, "chain-") {
		t.Fatalf("first reading: %d chunks reused, %d calls for %d chunks, answer %q", first.ChunksReused, calls, first.Chunks, first.Answer)
	}
	t.Logf("first reading: %d chunks, %d calls", first.Chunks, calls)

	check := func(name string, docs []string) {
		t.Helper()
		resumed, calls := askCorpus(t, sim, docs)
		fresh, freshCalls := askCorpus(t, sim, docs, "--reuse", "none", "--fresh")
		t.Logf("%s: %d chunks, %d reused (from %s), %d calls; fresh: %d calls", name, resumed.Chunks, resumed.ChunksReused, resumed.ReusedReading, calls, freshCalls)
		newChunks := resumed.Chunks - resumed.ChunksReused
		switch {
		case resumed.ChunksReused == 0 || resumed.ReusedReading != api.ReusedEarlierReading:
			t.Errorf("%s: %d chunks reused from %q, want some from %q", name, resumed.ChunksReused, resumed.ReusedReading, api.ReusedEarlierReading)
		case resumed.ReusedFrom != nil:
			t.Errorf("%s: the result names the earlier reading %+v, another workflow", name, resumed.ReusedFrom)
		case calls > newChunks+2 || calls != resumed.Usage.Calls:
			t.Errorf("%s: %d calls (usage says %d) for %d new chunks, want at most %d", name, calls, resumed.Usage.Calls, newChunks, newChunks+2)
		case fresh.ChunksReused != 0 || freshCalls != fresh.Chunks+1:
			t.Errorf("%s: the fresh reading reused %d chunks and made %d calls for %d chunks", name, fresh.ChunksReused, freshCalls, fresh.Chunks)
		case resumed.Answer != fresh.Answer:
			t.Errorf("%s: resumed answer %q, fresh reading's %q", name, resumed.Answer, fresh.Answer)
		case fmt.Sprint(evidenceAt(resumed.Evidence)) != fmt.Sprint(evidenceAt(fresh.Evidence)):
			t.Errorf("%s: resumed evidence at chunks %v, fresh reading's at %v", name, evidenceAt(resumed.Evidence), evidenceAt(fresh.Evidence))
		}
	}
	grown := append(append([]string{}, docs...), clitest.WriteFile(t, dir, "doc-6.txt", clitest.FillerText(99, 3)))
	check("appended", grown)

	// An edit in the third of five documents: the chunks before it are
	// reused, the rest read again.
	edited := append([]string{}, grown...)
	edited[2] = clitest.WriteFile(t, t.TempDir(), filepath.Base(docs[2]), append(clitest.FillerText(12, 10)[:2000], clitest.FillerText(77, 4)...))
	check("edited", edited)

	// The same corpus asked again reads nothing: one call, the answer.
	again, calls := askCorpus(t, sim, edited, "--fresh")
	if calls != 1 || again.ChunksReused != again.Chunks {
		t.Errorf("asked again: %d calls, %d of %d chunks reused; want 1 call", calls, again.ChunksReused, again.Chunks)
	}
}

// TestReviewCorpusThenAsk reviews a corpus with two questions, then asks
// one of them alone: the review's rows cite the corpus document, and the
// question asked alone starts from the review's last checkpoint (one
// call, the answer), answering as the review did.
func TestReviewCorpusThenAsk(t *testing.T) {
	clitest.Stack(t)
	clitest.StartWorker(t)
	dir := t.TempDir()
	a := clitest.WriteFile(t, dir, "minutes.txt", clitest.FillerText(5, 8))
	b := clitest.WriteFile(t, dir, "agreement.pdf", docconvtest.PDF(docconvtest.PDFOptions{Pages: 20, FactPage: 12, Fact: docgen.Fact, Seed: 4}))
	out, stderr, err := clitest.RunCLI(t, "review", "--doc", a, "--doc", b, "--question", docgen.Question, "--question", "Who signed the minutes?",
		"--chunk-tokens", "800", "--json")
	if err != nil {
		t.Fatalf("review: %v\nstderr: %s", err, stderr)
	}
	var grid api.ReviewGrid
	if err := json.Unmarshal([]byte(out), &grid); err != nil {
		t.Fatalf("review --json printed %q: %v", out, err)
	}
	if len(grid.Documents) != 2 || len(grid.Rows) != 2 {
		t.Fatalf("grid: %d documents, %d rows", len(grid.Documents), len(grid.Rows))
	}
	row := grid.Rows[0]
	if row.Answer != docgen.Answer || api.CiteSources(row.AnswerSources) != "agreement.pdf p. 12" {
		t.Errorf("row 1: answer %q cited %q, want %q on agreement.pdf p. 12", row.Answer, api.CiteSources(row.AnswerSources), docgen.Answer)
	}
	for _, e := range row.Evidence {
		if e.Document == "" {
			t.Errorf("row 1: evidence at chunk %d names no document", e.Chunk)
		}
	}
	out, stderr, err = clitest.RunCLI(t, "ask", "--doc", a, "--doc", b, "--question", docgen.Question, "--chunk-tokens", "800", "--json")
	if err != nil {
		t.Fatalf("ask: %v\nstderr: %s", err, stderr)
	}
	var res corpusJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.ChunksReused != res.Chunks || res.Usage.Calls != 1 || res.ReusedFrom != nil || res.ReusedReading != api.ReusedEarlierReading {
		t.Errorf("ask after the review: %d of %d chunks reused from %+v (%q) with %d calls; want all, from an earlier reading not named, 1 call",
			res.ChunksReused, res.Chunks, res.ReusedFrom, res.ReusedReading, res.Usage.Calls)
	}
	if strings.Contains(out, grid.WorkflowID) {
		t.Errorf("ask after the review names the review's workflow %s", grid.WorkflowID)
	}
	if res.Answer != row.Answer || api.CiteSources(res.AnswerSources) != "agreement.pdf p. 12" {
		t.Errorf("ask after the review: %q cited %q", res.Answer, api.CiteSources(res.AnswerSources))
	}
}

// evidenceAt lists the chunks and documents of evidence entries.
func evidenceAt(ev []api.Evidence) []string {
	var at []string
	for _, e := range ev {
		at = append(at, fmt.Sprintf("%d:%s", e.Chunk, filepath.Base(e.Document)))
	}
	return at
}
