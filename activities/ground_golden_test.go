package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/memagent"
)

// TestGroundAnswerGolden pins what groundAnswer returns, writes and logs
// for a corpus with a page map and answers of every kind: no answer,
// found in a supporting passage, in a chunk, in the text beyond the
// evidence, normalised, not found, sharing evidence chunks, and result
// files of this run, of another run and missing; and the error of each
// refused input. Run with -update to rewrite the file.
func TestGroundAnswerGolden(t *testing.T) {
	h1, h2 := memagent.CorpusHeader(1, "guide.pdf"), memagent.CorpusHeader(2, "notes.html")
	body1 := "Chapter one. The valve opens at 40 bar. Operators log each opening.\n\n" +
		"Chapter two. The relief valve is grey. It closes at 35 bar.\n\n"
	body2 := "Notes. The relief valve was replaced in 2019. The Pressure Gauge reads in bar.\n\n" +
		"Appendix. Contact the harbor office for the access code 7391-ALPHA.\n"
	text := h1 + body1 + h2 + body2
	f := newFixture(t, []byte(text))
	p := f.prepare(t, api.ModelOptions{ChunkTokens: 100000})
	d2 := int64(len(h1 + body1))
	at := func(s string) (int64, int64) {
		i := strings.Index(text, s)
		if i < 0 {
			t.Fatalf("%q is not in the text", s)
		}
		return int64(i), int64(i + len(s))
	}
	p1s, _ := at("Chapter two.")
	// The same bytes read once as one paged document, once as a corpus.
	for _, corpus := range []bool{false, true} {
		f.setIndex(t, p.IndexURI, func(idx *memagent.ChunkIndex) {
			idx.PageMap = &memagent.PageMap{Version: memagent.PageMapVersion, Format: "pdf", Unit: api.UnitPage, Pages: 3,
				Spans: []memagent.PageSpan{{Number: 1, Start: 0, End: p1s}, {Number: 2, Start: p1s, End: d2},
					{Number: 3, Start: d2, End: int64(len(text)), PageLabel: "iii"}}}
			if corpus {
				idx.Corpus = &memagent.CorpusMap{Documents: []memagent.CorpusDocument{
					{Document: "s3://docs/guide.pdf", Name: "guide.pdf", Start: 0, End: d2},
					{Document: "s3://docs/notes.html", Name: "notes.html", Start: d2, End: int64(len(text))},
				}}
			}
		})
		f.acts.Store = f.store
		name := map[bool]string{false: "pages", true: "corpus"}[corpus]
		t.Run(name, func(t *testing.T) { groundGolden(t, f, p, text, name) })
	}
}

func groundGolden(t *testing.T, f *fixture, p actwire.PrepareOutput, text, name string) {
	at := func(s string) (int64, int64) {
		i := strings.Index(text, s)
		if i < 0 {
			t.Fatalf("%q is not in the text", s)
		}
		return int64(i), int64(i + len(s))
	}
	entry := func(chunkFrom, chunkTo, passage string, supports bool) actwire.GroundEvidence {
		cs, _ := at(chunkFrom)
		_, ce := at(chunkTo)
		e := actwire.GroundEvidence{Start: cs, End: ce, Supports: supports}
		if passage != "" {
			e.PassageStart, e.PassageEnd = at(passage)
		}
		return e
	}
	first := entry("Chapter one.", "closes at 35 bar.", "The valve opens at 40 bar.", true)
	second := entry("Notes.", "7391-ALPHA.", "The relief valve was replaced in 2019.", true)
	aside := entry("Chapter one.", "closes at 35 bar.", "It closes at 35 bar.", false)
	const thisRun = "run-1"
	result := func(name, runID string) string {
		uri := tracePrefix + name + "/result.json"
		if runID != "" {
			stored := StoredResult{DocumentQAResult: api.DocumentQAResult{RunID: runID, Answer: name, AnswerFound: true}, Completion: "c"}
			raw, _ := json.Marshal(stored)
			if err := f.store.Store.Put(t.Context(), mustLoc(t, uri), raw, "application/json"); err != nil {
				t.Fatal(err)
			}
		}
		return uri
	}
	in := actwire.GroundInput{Document: p.Document, ETag: p.ETag, IndexURI: p.IndexURI, RunID: thisRun, Answers: []actwire.GroundItem{
		{Answer: "", AnswerFound: false, Evidence: []actwire.GroundEvidence{first}, ResultURI: result("none", thisRun)},
		{Answer: "unknown", AnswerFound: true, Evidence: []actwire.GroundEvidence{first}},
		{Answer: "40 bar", AnswerFound: true, Evidence: []actwire.GroundEvidence{aside, first}, ResultURI: result("passage", thisRun)},
		{Answer: "relief valve", AnswerFound: true, Evidence: []actwire.GroundEvidence{first, second}},
		{Answer: "grey", AnswerFound: true, Evidence: []actwire.GroundEvidence{first, aside}, ResultURI: result("other", "run-0")},
		{Answer: "pressure gauge", AnswerFound: true, Evidence: []actwire.GroundEvidence{second}},
		{Answer: "7391-ALPHA", AnswerFound: true, Evidence: []actwire.GroundEvidence{first}, ResultURI: result("missing", "")},
		{Answer: "harbor office", AnswerFound: true},
		{Answer: "Document 2", AnswerFound: true},
		{Answer: "a purple valve", AnswerFound: true, Evidence: []actwire.GroundEvidence{first, second}},
	}}

	store := &recordingStore{Store: f.store.Store}
	f.acts.Store = store
	f.acts.Logger = goldenLog(store)
	out, err := f.acts.groundAnswer(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	store.transcript.WriteString("=== output\n")
	store.transcript.Write(raw)
	store.transcript.WriteString("\n")
	golden := bytes.Clone(store.transcript.Bytes())

	refused := []struct {
		name   string
		change func(*actwire.GroundInput)
	}{
		{"index uri", func(in *actwire.GroundInput) { in.IndexURI = "docs/indexes/x.json" }},
		{"index elsewhere", func(in *actwire.GroundInput) { in.IndexURI = "s3://docs/indexes/x.json" }},
		{"document uri", func(in *actwire.GroundInput) { in.Document = "docs/doc.txt" }},
		{"other document", func(in *actwire.GroundInput) { in.Document = "s3://docs/other.txt" }},
		{"other version", func(in *actwire.GroundInput) { in.ETag = `"other"` }},
		{"result outside", func(in *actwire.GroundInput) { in.Answers[1].ResultURI = "s3://elsewhere/r.json" }},
		{"evidence beyond", func(in *actwire.GroundInput) { in.Answers[2].Evidence[1].End = int64(len(text)) + 1 }},
		{"passage outside", func(in *actwire.GroundInput) { in.Answers[3].Evidence[0].PassageStart = 0 }},
		{"passage reversed", func(in *actwire.GroundInput) { in.Answers[3].Evidence[1].PassageEnd = 1 }},
		{"negative start", func(in *actwire.GroundInput) { in.Answers[5].Evidence[0].Start = -1 }},
	}
	f.acts.WritePrefixes = []string{"s3://memagent/"}
	defer func() { f.acts.WritePrefixes = []string{"s3://"} }()
	for _, tc := range refused {
		c := in
		c.Answers = make([]actwire.GroundItem, len(in.Answers))
		for i, it := range in.Answers {
			c.Answers[i] = it
			c.Answers[i].Evidence = append([]actwire.GroundEvidence(nil), it.Evidence...)
		}
		tc.change(&c)
		store.transcript.Reset()
		_, err := f.acts.groundAnswer(context.Background(), c)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if store.transcript.Len() > 0 {
			t.Errorf("%s: wrote or logged before refusing:\n%s", tc.name, store.transcript.Bytes())
		}
		golden = fmt.Appendf(golden, "=== refused %s\n%s: %v\n", tc.name, appError(t, err).Type(), err)
	}
	checkGolden(t, "ground/"+name+".golden", golden)
}
