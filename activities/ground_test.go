package activities

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/memagent"
)

const groundFact = "The access code for the north gate of the Halvorsen observatory is 7391-ALPHA."

// groundDoc is a document larger than one read window, with the planted
// fact straddling the first window boundary.
func groundDoc() []byte {
	filler := strings.Repeat("The ferry carried copper lanterns across the harbor. ", groundWindow/50)
	cut := groundWindow - strings.Index(groundFact, "7391") - 3
	return []byte(filler[:cut] + " " + groundFact + "\n\n" + filler + "Ende: Zürich Größe.\n")
}

func TestGroundAnswer(t *testing.T) {
	doc := groundDoc()
	f := newFixture(t, doc)
	p := f.prepare(t, api.ModelOptions{ChunkTokens: 100000})
	in := actwire.GroundInput{Document: p.Document, ETag: p.ETag, IndexURI: p.IndexURI, Answers: []actwire.GroundItem{
		{Answer: "7391-ALPHA", AnswerFound: true},
		{Answer: "Halvorsen Observatory.", AnswerFound: true},
		{Answer: "the Bremen observatory", AnswerFound: true},
		{Answer: "unknown", AnswerFound: true},
		{Answer: "", AnswerFound: false},
		{Answer: "Zürich Größe", AnswerFound: true},
	}}
	var out actwire.GroundOutput
	if err := f.exec(t, GroundAnswerName, in, &out); err != nil {
		t.Fatalf("GroundAnswer: %v", err)
	}
	g := out.Groundings
	want := []string{api.GroundingVerbatim, api.GroundingNormalized, api.GroundingNotFound, api.GroundingNoAnswer, api.GroundingNoAnswer, api.GroundingVerbatim}
	for i, w := range want {
		if g[i].Status != w {
			t.Errorf("answer %d %q: status %q, want %q", i, in.Answers[i].Answer, g[i].Status, w)
		}
	}
	at := int64(strings.Index(string(doc), "7391-ALPHA"))
	if g[0].Start != at || g[0].End != at+10 || !strings.Contains(g[0].Quote, "7391-ALPHA") || len(g[0].Quote) > api.MaxGroundingQuoteBytes {
		t.Errorf("planted fact: %+v, want [%d,%d) and a quote with it", g[0], at, at+10)
	}
	if at >= groundWindow || at+10 <= groundWindow {
		t.Fatalf("the fact [%d,%d) does not straddle the window boundary %d", at, at+10, groundWindow)
	}
	if got := string(doc[g[1].Start:g[1].End]); got != "Halvorsen observatory" {
		t.Errorf("normalised match covers %q", got)
	}
	if g[2].Quote != "" || g[2].Start != 0 || g[3].Quote != "" {
		t.Errorf("not found / no answer carry a place: %+v %+v", g[2], g[3])
	}
	if !strings.Contains(g[5].Quote, "Zürich Größe") {
		t.Errorf("multi-byte quote %q", g[5].Quote)
	}
}

func TestGroundAnswerPagesAndResult(t *testing.T) {
	f := newFixture(t, []byte("page one text.\n\npage two has 7391-ALPHA in it.\n"))
	p := f.prepare(t, api.ModelOptions{ChunkTokens: 1000})
	// Give the index a page map, as a converted document's has.
	idx := f.index(t, p.IndexURI)
	idx.PageMap = &memagent.PageMap{Version: 1, Format: "pdf", Unit: api.UnitPage, Pages: 2,
		Spans: []memagent.PageSpan{{Number: 1, Start: 0, End: 14}, {Number: 2, Start: 16, End: 47}}}
	raw, _ := json.Marshal(idx)
	if err := f.store.Store.Put(t.Context(), mustLoc(t, p.IndexURI), raw, "application/json"); err != nil {
		t.Fatal(err)
	}
	f.acts.indexes = nil // the index as prepared is cached
	resultURI := tracePrefix + "result.json"
	stored := StoredResult{DocumentQAResult: api.DocumentQAResult{RunID: "run-1", Answer: "7391-ALPHA", AnswerFound: true}, Completion: "c"}
	raw, _ = json.Marshal(stored)
	if err := f.store.Store.Put(t.Context(), mustLoc(t, resultURI), raw, "application/json"); err != nil {
		t.Fatal(err)
	}
	var out actwire.GroundOutput
	if err := f.exec(t, GroundAnswerName, actwire.GroundInput{Document: p.Document, ETag: p.ETag, IndexURI: p.IndexURI, RunID: "run-1",
		Answers: []actwire.GroundItem{{Answer: "7391-ALPHA", AnswerFound: true, ResultURI: resultURI}}}, &out); err != nil {
		t.Fatalf("GroundAnswer: %v", err)
	}
	g := out.Groundings[0]
	if g.Status != api.GroundingVerbatim || g.Pages.String() != "p. 2" {
		t.Errorf("grounding %+v, want verbatim on p. 2", g)
	}
	if s := g.String(); !strings.HasPrefix(s, `verbatim, p. 2: "page one text. page two`) || !strings.Contains(s, "7391-ALPHA") {
		t.Errorf("String() = %s", s)
	}
	var back StoredResult
	if err := json.Unmarshal(f.store.Object(mustLoc(t, resultURI)), &back); err != nil {
		t.Fatal(err)
	}
	if back.Grounding == nil || back.Grounding.Status != api.GroundingVerbatim || back.Completion != "c" {
		t.Errorf("result.json after grounding: %+v", back)
	}
}

func TestGroundAnswerReadBoundary(t *testing.T) {
	f := newFixture(t, []byte("some text with 7391 in it\n"))
	p := f.prepare(t, api.ModelOptions{ChunkTokens: 1000})
	for _, tc := range []struct {
		name string
		in   actwire.GroundInput
		typ  string
	}{
		{"another document through this index", actwire.GroundInput{Document: "s3://docs/other.txt", ETag: p.ETag, IndexURI: p.IndexURI}, api.ErrForbidden},
		{"an index this worker did not make", actwire.GroundInput{Document: p.Document, ETag: p.ETag, IndexURI: "s3://docs/indexes/x.json"}, api.ErrForbidden},
		{"another version", actwire.GroundInput{Document: p.Document, ETag: "\"other\"", IndexURI: p.IndexURI}, api.ErrForbidden},
		{"no etag", actwire.GroundInput{Document: p.Document, IndexURI: p.IndexURI}, api.ErrBadInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Answers = []actwire.GroundItem{{Answer: "7391", AnswerFound: true}}
			var out actwire.GroundOutput
			err := f.exec(t, GroundAnswerName, tc.in, &out)
			if err == nil {
				t.Fatalf("GroundAnswer read %s", tc.in.Document)
			}
			if got := appError(t, err).Type(); got != tc.typ {
				t.Errorf("error type %q, want %q (%v)", got, tc.typ, err)
			}
		})
	}
	// Outside the worker's read prefixes.
	f.acts.ReadPrefixes = []string{"s3://elsewhere/"}
	var out actwire.GroundOutput
	err := f.exec(t, GroundAnswerName, actwire.GroundInput{Document: p.Document, ETag: p.ETag, IndexURI: p.IndexURI,
		Answers: []actwire.GroundItem{{Answer: "7391", AnswerFound: true}}}, &out)
	if err == nil || appError(t, err).Type() != api.ErrForbidden {
		t.Errorf("read outside the read prefixes: %v", err)
	}
}

func TestAnswerUnknownIsNoAnswer(t *testing.T) {
	for _, completion := range []string{`The memory does not hold the answer, so the answer is \boxed{unknown}.`, `\boxed{Not mentioned in the text.}`} {
		f := newFixture(t, nil)
		f.model.Respond = func(inference.Request) (string, error) { return completion, nil }
		in := actwire.AnswerInput{
			Question: testQuestion, Memory: "nothing", GoldAnswers: []string{"unknown"},
			ResultURI: tracePrefix + "result.json",
			Result: api.DocumentQAResult{WorkflowID: "wf-1", RunID: "run-1", StartedAt: time.Now(),
				Evidence: []api.ReviewEvidence{{Chunk: 0, Added: []string{"nothing"}, Pages: &api.PageRef{Unit: api.UnitPage, First: 3, Last: 3}}}},
		}
		var res api.DocumentQAResult
		if err := f.exec(t, AnswerName, in, &res); err != nil {
			t.Fatalf("Answer: %v", err)
		}
		if res.AnswerFound || res.AnswerPages != "" || res.Answer == "" {
			t.Errorf("%s: answer %q found %v pages %q, want the text kept, not found, no pages", completion, res.Answer, res.AnswerFound, res.AnswerPages)
		}
		if res.Scores == nil || res.Scores.ExactMatch || res.Scores.F1 != 0 {
			t.Errorf("%s: scores %+v, want those of an empty answer", completion, fmt.Sprint(res.Scores))
		}
	}
}
