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
	// The quote is page 2's text alone: the context stops at the page's
	// start.
	if s := g.String(); s != `verbatim, p. 2: "page two has 7391-ALPHA in it."` || g.QuoteParts != nil {
		t.Errorf("String() = %s (parts %+v), want the quote from page 2 only", s, g.QuoteParts)
	}
	// An answer across the page boundary is quoted a part a page.
	if err := f.exec(t, GroundAnswerName, actwire.GroundInput{Document: p.Document, ETag: p.ETag, IndexURI: p.IndexURI, RunID: "run-1",
		Answers: []actwire.GroundItem{{Answer: "text, page two", AnswerFound: true}}}, &out); err != nil {
		t.Fatalf("GroundAnswer: %v", err)
	}
	g = out.Groundings[0]
	if s := g.String(); g.Status != api.GroundingNormalized || g.Pages.String() != "pp. 1–2" || len(g.QuoteParts) != 2 ||
		g.Quote != g.QuoteParts[0].Text || s != `normalized, pp. 1–2: "page one text." (p. 1) "page two has 7391-ALPHA in it." (p. 2)` {
		t.Errorf("grounding across pages: %s (%+v), want a part a page", s, g)
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
				Evidence: []api.Evidence{{Chunk: 0, Added: []string{"nothing"}, Pages: &api.PageRef{Unit: api.UnitPage, First: 3, Last: 3}}}},
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

// setIndex rewrites the index at uri with change applied, as conversion
// or corpus assembly would have made it.
func (f *fixture) setIndex(t *testing.T, uri string, change func(*memagent.ChunkIndex)) {
	t.Helper()
	idx := f.index(t, uri)
	change(&idx)
	raw, _ := json.Marshal(idx)
	if err := f.store.Store.Put(t.Context(), mustLoc(t, uri), raw, "application/json"); err != nil {
		t.Fatal(err)
	}
	f.acts.indexes = nil // the index as prepared is cached
}

// pagesOf is a page map with one page per element of pages, which are
// the text in order, each followed by a blank line.
func pagesOf(pages ...string) (string, *memagent.PageMap) {
	m := &memagent.PageMap{Version: memagent.PageMapVersion, Format: "pdf", Unit: api.UnitPage, Pages: len(pages)}
	var b strings.Builder
	for i, p := range pages {
		start := int64(b.Len())
		b.WriteString(p)
		m.Spans = append(m.Spans, memagent.PageSpan{Number: i + 1, Start: start, End: int64(b.Len())})
		b.WriteString("\n\n")
	}
	return b.String(), m
}

// passageOf is an evidence entry over the whole text whose passage is the
// first occurrence of sentence.
func passageOf(t *testing.T, text, sentence string, supports bool) actwire.GroundEvidence {
	t.Helper()
	at := strings.Index(text, sentence)
	if at < 0 {
		t.Fatalf("%q is not in the text", sentence)
	}
	e := actwire.GroundEvidence{Start: 0, End: int64(len(text)), Supports: supports}
	e.PassageStart, e.PassageEnd = int64(at), int64(at+len(sentence))
	return e
}

// TestGroundAnswerEvidenceFirst: an answer is grounded where its memory
// took it from (the evidence's passage, else its chunk) before the first
// place it occurs in the text, and FoundIn says which.
func TestGroundAnswerEvidenceFirst(t *testing.T) {
	text, pm := pagesOf(
		"std::error_code: operator bool returns true when an error is set.",
		"Unrelated filler about lambdas and captures.",
		"count_if counts the elements for which the predicate returns true. It takes two iterators.",
		"The predicate is called once per element.")
	f := newFixture(t, []byte(text))
	p := f.prepare(t, api.ModelOptions{ChunkTokens: 100000})
	f.setIndex(t, p.IndexURI, func(idx *memagent.ChunkIndex) { idx.PageMap = pm })
	inPassage := passageOf(t, text, "count_if counts the elements for which the predicate returns true.", true)
	notInPassage := passageOf(t, text, "It takes two iterators.", true)
	// A chunk of its own: pages 3 and 4 only.
	chunk := actwire.GroundEvidence{Start: pm.Spans[2].Start, End: pm.Spans[3].End, Supports: true}
	chunk.PassageStart, chunk.PassageEnd = notInPassage.PassageStart, notInPassage.PassageEnd
	in := actwire.GroundInput{Document: p.Document, ETag: p.ETag, IndexURI: p.IndexURI, Answers: []actwire.GroundItem{
		{Answer: "returns true", AnswerFound: true, Evidence: []actwire.GroundEvidence{inPassage}},
		{Answer: "returns true", AnswerFound: true, Evidence: []actwire.GroundEvidence{chunk}},
		{Answer: "returns true", AnswerFound: true},
		{Answer: "Returns TRUE", AnswerFound: true, Evidence: []actwire.GroundEvidence{inPassage}},
	}}
	var out actwire.GroundOutput
	if err := f.exec(t, GroundAnswerName, in, &out); err != nil {
		t.Fatalf("GroundAnswer: %v", err)
	}
	for i, want := range []struct{ status, in, pages string }{
		{api.GroundingVerbatim, api.GroundingInPassage, "p. 3"},
		{api.GroundingVerbatim, api.GroundingInChunk, "p. 3"},
		{api.GroundingVerbatim, api.GroundingInText, "p. 1"},
		{api.GroundingNormalized, api.GroundingInPassage, "p. 3"},
	} {
		g := out.Groundings[i]
		if g.Status != want.status || g.FoundIn != want.in || g.Pages.String() != want.pages {
			t.Errorf("answer %d: %s in %q on %q, want %s in %q on %q", i, g.Status, g.FoundIn, g.Pages.String(), want.status, want.in, want.pages)
		}
		if !strings.Contains(strings.ToLower(g.Quote), "returns true") {
			t.Errorf("answer %d: quote %q", i, g.Quote)
		}
	}
	if len(out.Citations) != len(in.Answers) {
		t.Fatalf("%d citations for %d answers", len(out.Citations), len(in.Answers))
	}
	if c := out.Citations[0]; c.AnswerPages != "p. 3" || c.ContextPages != "" {
		t.Errorf("citation of the answer in its passage: %+v", c)
	}
	// The passage of the second entry does not hold the answer: the
	// grounded page leads, the passage's page is context.
	if c := out.Citations[1]; c.AnswerPages != "p. 3" {
		t.Errorf("citation of the answer in its chunk: %+v", c)
	}
}

// TestGroundAnswerCitation: Found on leads with the grounded page and
// lists only the pages whose passages hold the answer's words; supporting
// evidence without them is context; an evidence page whose label is also
// printed on another page names its physical page.
func TestGroundAnswerCitation(t *testing.T) {
	text, pm := pagesOf(
		"Frank converted the document from SGML to yodl. Perl scripts did the conversion.",
		"Version four was a major rewrite of the annotations.",
		"In version four Frank added new chapters on templates.",
		"Later on, Frank added new chapters about concurrency.",
		"Nothing here.")
	// Front matter and body both numbered from 1.
	for i, l := range []string{"i", "ii", "1", "2", "3"} {
		pm.Spans[i].PageLabel = l
	}
	pm.Spans[0].PageLabel = "1"
	f := newFixture(t, []byte(text))
	p := f.prepare(t, api.ModelOptions{ChunkTokens: 100000})
	f.setIndex(t, p.IndexURI, func(idx *memagent.ChunkIndex) { idx.PageMap = pm })
	ev := []actwire.GroundEvidence{
		passageOf(t, text, "Frank converted the document from SGML to yodl.", true),
		passageOf(t, text, "Version four was a major rewrite of the annotations.", false),
		passageOf(t, text, "In version four Frank added new chapters on templates.", true),
		passageOf(t, text, "Later on, Frank added new chapters about concurrency.", true),
	}
	in := actwire.GroundInput{Document: p.Document, ETag: p.ETag, IndexURI: p.IndexURI, Answers: []actwire.GroundItem{
		{Answer: "added new chapters", AnswerFound: true, Evidence: ev},
		{Answer: "Perl", AnswerFound: true, Evidence: ev},
		{Answer: "unknown", AnswerFound: true, Evidence: ev},
	}}
	var out actwire.GroundOutput
	if err := f.exec(t, GroundAnswerName, in, &out); err != nil {
		t.Fatalf("GroundAnswer: %v", err)
	}
	// The latest supporting passage holds it: page 4, printed 2, leads.
	if g := out.Groundings[0]; g.FoundIn != api.GroundingInPassage || g.Pages.String() != "p. 2 (PDF p. 4)" {
		t.Errorf("grounding %+v", g)
	}
	want := api.Citation{AnswerPages: "pp. 2 (PDF p. 4), 1 (PDF p. 3)", ContextPages: "p. 1 (PDF p. 1)"}
	if c := out.Citations[0]; c.AnswerPages != want.AnswerPages || c.ContextPages != want.ContextPages {
		t.Errorf("citation %+v, want %+v", c, want)
	}
	// Perl is in no passage: the grounded page alone, found in a chunk.
	if g, c := out.Groundings[1], out.Citations[1]; g.FoundIn != api.GroundingInChunk || c.AnswerPages != "p. 1 (PDF p. 1)" ||
		c.ContextPages != "pp. 1 (PDF p. 3), 2 (PDF p. 4)" {
		t.Errorf("Perl: grounding %+v, citation %+v", g, c)
	}
	if c := out.Citations[2]; c.AnswerPages != "" || c.ContextPages != "" {
		t.Errorf("no answer has a citation: %+v", c)
	}
}

// TestGroundAnswerCorpusBoundary: in a corpus no match spans a document
// header or lies in one, and a quote stays inside its document.
func TestGroundAnswerCorpusBoundary(t *testing.T) {
	h1, h2 := memagent.CorpusHeader(1, "psql.html"), memagent.CorpusHeader(2, "gnuplot.pdf")
	body1 := "The psql program is the terminal front end to PostgreSQL\n\n"
	body2 := "index of commands\n\nPostgreSQL is not mentioned further in this manual.\n"
	text := h1 + body1 + h2 + body2
	f := newFixture(t, []byte(text))
	p := f.prepare(t, api.ModelOptions{ChunkTokens: 100000})
	d2 := int64(len(h1 + body1))
	f.setIndex(t, p.IndexURI, func(idx *memagent.ChunkIndex) {
		idx.Corpus = &memagent.CorpusMap{Documents: []memagent.CorpusDocument{
			{Document: "s3://docs/psql.html", Name: "psql.html", Start: 0, End: d2},
			{Document: "s3://docs/gnuplot.pdf", Name: "gnuplot.pdf", Start: d2, End: int64(len(text))},
		}}
	})
	in := actwire.GroundInput{Document: p.Document, ETag: p.ETag, IndexURI: p.IndexURI, Answers: []actwire.GroundItem{
		{Answer: "PostgreSQL index of commands", AnswerFound: true},
		{Answer: "Document 2", AnswerFound: true},
		{Answer: "index of commands", AnswerFound: true},
		{Answer: "PostgreSQL", AnswerFound: true, Evidence: []actwire.GroundEvidence{{Start: 0, End: int64(len(text)), Supports: true,
			PassageStart: d2 + int64(len(h2)+len("index of commands\n\n")), PassageEnd: int64(len(text))}}},
	}}
	var out actwire.GroundOutput
	if err := f.exec(t, GroundAnswerName, in, &out); err != nil {
		t.Fatalf("GroundAnswer: %v", err)
	}
	for i, want := range []string{api.GroundingNotFound, api.GroundingNotFound, api.GroundingVerbatim, api.GroundingVerbatim} {
		if g := out.Groundings[i]; g.Status != want {
			t.Errorf("answer %d %q: %+v, want %s", i, in.Answers[i].Answer, g, want)
		}
	}
	for _, i := range []int{2, 3} {
		g := out.Groundings[i]
		if g.Document != "s3://docs/gnuplot.pdf" || strings.Contains(g.Quote, "===") || strings.Contains(g.Quote, "psql") {
			t.Errorf("answer %d: %s in %s, quote %q crosses into another document", i, g.Status, g.Document, g.Quote)
		}
	}
	if c := out.Citations[3]; len(c.AnswerSources) != 1 || c.AnswerSources[0].Name != "gnuplot.pdf" {
		t.Errorf("sources %+v, want gnuplot.pdf alone", c.AnswerSources)
	}
}
