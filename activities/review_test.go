package activities

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/memagent"
)

const reviewFact = "The north gate code is 7391-ALPHA."

// reviewDoc is makeDoc's layout (line N is chunk N at 100 words a chunk)
// with reviewFact ending line factLine.
func reviewDoc(lines, factLine int) string {
	var b strings.Builder
	for i := range lines {
		if i != factLine {
			fmt.Fprintf(&b, "w%03d%s\n", i, strings.Repeat(" filler", 99))
			continue
		}
		fmt.Fprintf(&b, "w%03d%s filler. %s\n", i, strings.Repeat(" filler", 92), reviewFact)
	}
	return b.String()
}

var (
	reviewSectionRE = regexp.MustCompile(`(?s)<section>\n?(.*?)\n?</section>`)
	reviewMemoryRE  = regexp.MustCompile(`(?s)<memory>\n?(.*?)\n?</memory>`)
)

// gateModel is extractive like the simulator: it keeps the memory's and
// the section's sentences that mention a gate.
func gateModel(req inference.Request) (string, error) {
	var kept []string
	mem := reviewMemoryRE.FindStringSubmatch(req.Prompt)[1]
	for _, s := range strings.SplitAfter(mem+" "+reviewSectionRE.FindStringSubmatch(req.Prompt)[1], ".") {
		if s = strings.TrimSpace(s); strings.Contains(s, "gate") {
			kept = append(kept, s)
		}
	}
	if len(kept) == 0 {
		return "No relevant information yet.", nil
	}
	return strings.Join(kept, " "), nil
}

func TestReviewUpdateRecordsEvidence(t *testing.T) {
	doc := reviewDoc(4, 2)
	f := newFixture(t, []byte(doc))
	f.model.Respond = gateModel
	p := f.prepare(t, api.ModelOptions{ChunkTokens: 100})
	if p.Chunks != 4 {
		t.Fatalf("chunks = %d, want 4", p.Chunks)
	}
	prefix := "s3://memagent/reviews/default-test-workflow-id/run/questions/q1/"
	memory := memagent.InitialMemory
	var outs []actwire.ReviewUpdateOutput
	for chunk := range p.Chunks {
		in := f.updateInput(p, chunk)
		in.Question, in.Memory, in.TracePrefix = "What is the gate code?", memory, prefix
		var out actwire.ReviewUpdateOutput
		if err := f.exec(t, ReviewUpdateName, in, &out); err != nil {
			t.Fatalf("chunk %d: %v", chunk, err)
		}
		outs = append(outs, out)
		memory = out.Memory
	}
	for chunk, out := range outs {
		if want := chunk == 2; out.Material != want {
			t.Errorf("chunk %d: material = %v, want %v (memory %q)", chunk, out.Material, want, out.Memory)
		}
		if chunk != 2 && (out.Passage != nil || out.Added != nil) {
			t.Errorf("chunk %d: passage %+v, added %q for an immaterial change", chunk, out.Passage, out.Added)
		}
	}
	ev := outs[2]
	if ev.Passage == nil || doc[ev.Passage.Start:ev.Passage.End] != reviewFact {
		t.Fatalf("passage = %+v, want the byte range of %q", ev.Passage, reviewFact)
	}
	if ev.Chunk != 2 || ev.Start > ev.Passage.Start || ev.End < ev.Passage.End {
		t.Errorf("chunk %d [%d,%d) does not hold its passage %+v", ev.Chunk, ev.Start, ev.End, ev.Passage)
	}
	if !strings.Contains(strings.Join(ev.Added, " "), "7391") {
		t.Errorf("added = %q, want the code among them", ev.Added)
	}
	// The shared UpdateMemory path wrote the per-chunk trace under the
	// question's prefix, and every chunk was read from the store once.
	if f.store.Object(mustLoc(t, prefix+"chunks/000002.json")) == nil {
		t.Error("no trace at questions/q1/chunks/000002.json")
	}
	if f.store.Ranges != p.Chunks {
		t.Errorf("%d ranged reads for %d chunks (the passage must come from the cache)", f.store.Ranges, p.Chunks)
	}
}

func reviewTestGrid(doc string) api.ReviewGrid {
	start := int64(strings.Index(doc, reviewFact))
	pass := &api.EvidencePassage{Start: start, End: start + int64(len(reviewFact))}
	prefix := "s3://memagent/reviews/default-test-workflow-id/run/"
	return api.ReviewGrid{
		Version: api.ReviewGridVersion, WorkflowID: "wf", RunID: "run", Document: testDocURI,
		Chunks: 4, Prefix: prefix, JSONURI: prefix + ReviewGridJSON, CSVURI: prefix + ReviewGridCSV, HTMLURI: prefix + ReviewHTML,
		Rows: []api.ReviewRow{
			{ID: "q1", Question: "What is the gate code?", Status: api.ReviewStatusDone, Answer: "7391-ALPHA", AnswerFound: true,
				Evidence: []api.Evidence{{Chunk: 2, Start: 200, End: 300, Passage: pass, Added: []string{"7391", "gate"}, SupportsAnswer: true}}},
			{ID: "q2", Question: "Which <b>gate</b>?", Status: api.ReviewStatusDone, Answer: "north",
				Evidence: []api.Evidence{{Chunk: 2, Start: 200, End: 300, Passage: pass, Added: []string{"north"}}}},
		},
	}
}

func TestWriteReviewWritesGridAndReport(t *testing.T) {
	doc := reviewDoc(4, 2)
	f := newFixture(t, []byte(doc))
	info, _ := f.store.Head(context.Background(), docLoc)
	g := reviewTestGrid(doc)
	var out actwire.WriteReviewOutput
	if err := f.exec(t, WriteReviewName, actwire.WriteReviewInput{Grid: g, ETag: info.ETag}, &out); err != nil {
		t.Fatal(err)
	}
	if out.JSONURI != g.JSONURI || out.CSVURI != g.CSVURI || out.HTMLURI != g.HTMLURI {
		t.Errorf("output = %+v", out)
	}
	// Two questions cite one passage: it is read once.
	if out.Passages != 1 || f.store.Ranges != 1 {
		t.Errorf("passages = %d, ranged reads = %d; want 1 and 1", out.Passages, f.store.Ranges)
	}
	var back api.ReviewGrid
	if err := json.Unmarshal(f.store.Object(mustLoc(t, g.JSONURI)), &back); err != nil {
		t.Fatalf("grid.json: %v", err)
	}
	for _, r := range back.Rows {
		if p := r.Evidence[0].Passage; p == nil || p.Text != reviewFact {
			t.Errorf("%s: passage %+v, want its text", r.ID, p)
		}
	}
	rows, err := csv.NewReader(strings.NewReader(string(f.store.Object(mustLoc(t, g.CSVURI))))).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Errorf("grid.csv: %d records, %v; want a header and 2 rows", len(rows), err)
	}
	page := string(f.store.Object(mustLoc(t, g.HTMLURI)))
	if !strings.Contains(page, "<mark>7391</mark>") || strings.Contains(page, "<b>gate") {
		t.Errorf("report.html lacks the marked passage or lets markup through")
	}
	// The grid handed in (workflow history) is not modified.
	if g.Rows[0].Evidence[0].Passage.Text != "" {
		t.Error("WriteReview modified its input")
	}
}

func TestWriteReviewWithoutTheDocument(t *testing.T) {
	doc := reviewDoc(4, 2)
	f := newFixture(t, nil) // the document is gone
	var out actwire.WriteReviewOutput
	if err := f.exec(t, WriteReviewName, actwire.WriteReviewInput{Grid: reviewTestGrid(doc), ETag: `"x"`}, &out); err != nil {
		t.Fatalf("a report whose passages cannot be read must still be written: %v", err)
	}
	if out.Passages != 0 || f.store.Object(mustLoc(t, out.HTMLURI)) == nil {
		t.Errorf("passages = %d, report written: %v", out.Passages, f.store.Object(mustLoc(t, out.HTMLURI)) != nil)
	}
}

func TestWriteReviewBadOutput(t *testing.T) {
	f := newFixture(t, nil)
	g := reviewTestGrid(reviewDoc(4, 2))
	g.HTMLURI = "/tmp/report.html"
	err := f.exec(t, WriteReviewName, actwire.WriteReviewInput{Grid: g}, &actwire.WriteReviewOutput{})
	if appErr := appError(t, err); appErr.Type() != api.ErrBadInput || !appErr.NonRetryable() {
		t.Errorf("error = %v, want non-retryable %s", err, api.ErrBadInput)
	}
}
