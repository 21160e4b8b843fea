package report

import (
	"reflect"
	"testing"

	"github.com/memagent/memagent/api"
)

func TestAnswerWords(t *testing.T) {
	for _, tc := range []struct {
		answer string
		want   []string
	}{
		{"added new chapters", []string{"added", "new", "chapters"}},
		{"Perl", []string{"perl"}},
		{"The Perl and perl scripts", []string{"perl", "scripts"}},
		{"yes", []string{"yes"}},
		{"it is", []string{"it", "is"}},
		{"7391-ALPHA", []string{"7391", "alpha"}},
		{"—", nil},
	} {
		if got := AnswerWords(tc.answer); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("AnswerWords(%q) = %q, want %q", tc.answer, got, tc.want)
		}
	}
	if !HoldsWords("In version four Frank Added new Chapters.", AnswerWords("added new chapters")) {
		t.Error("a passage with the words in another case does not hold them")
	}
	if HoldsWords("Frank added chapters.", AnswerWords("added new chapters")) || HoldsWords("anything", nil) {
		t.Error("a passage missing a word holds the answer")
	}
	if HoldsWords("Perlmutter", AnswerWords("Perl")) {
		t.Error("a word inside another counts")
	}
}

func TestCite(t *testing.T) {
	page := func(n int) *api.PageRef { return &api.PageRef{Unit: api.UnitPage, First: n, Last: n} }
	entries := []CiteEntry{
		{Pages: page(1), Passage: "Frank converted the document from SGML to yodl.", Supports: true},
		{Pages: page(2), Passage: "A major rewrite.", Supports: false},
		{Pages: page(7), Passage: "He added new chapters on templates.", Supports: true},
		{Pages: page(5), Supports: true}, // no passage
	}
	found := &api.Grounding{Status: api.GroundingVerbatim, Pages: page(30)}
	for _, tc := range []struct {
		name   string
		answer string
		g      *api.Grounding
		want   api.Citation
	}{
		{"grounded page first", "added new chapters", found, api.Citation{AnswerPages: "pp. 30, 7", ContextPages: "pp. 1, 5"}},
		{"grounded on an evidence page", "added new chapters", &api.Grounding{Status: api.GroundingVerbatim, Pages: page(7)},
			api.Citation{AnswerPages: "p. 7", ContextPages: "pp. 1, 5"}},
		{"not grounded", "added new chapters", &api.Grounding{Status: api.GroundingNotFound}, api.Citation{AnswerPages: "p. 7", ContextPages: "pp. 1, 5"}},
		{"nowhere", "Perl", &api.Grounding{Status: api.GroundingNotFound}, api.Citation{ContextPages: "pp. 1, 5, 7"}},
		{"a non-supporting passage that holds it", "a major rewrite", nil, api.Citation{AnswerPages: "p. 2", ContextPages: "pp. 1, 5, 7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Cite(tc.answer, tc.g, entries); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Cite = %+v, want %+v", got, tc.want)
			}
		})
	}
	// A corpus: sources name the document, the grounded one first.
	corpus := []CiteEntry{
		{Pages: page(3), Document: "s3://d/a.pdf", Passage: "PostgreSQL is a database.", Supports: true},
		{Pages: page(9), Document: "s3://d/b.pdf", Passage: "gnuplot draws.", Supports: true},
	}
	got := Cite("PostgreSQL", &api.Grounding{Status: api.GroundingVerbatim, Document: "s3://d/a.pdf", Pages: page(4)}, corpus)
	if s := FoundOn(got.AnswerPages, got.AnswerSources); s != "a.pdf p. 4; a.pdf p. 3" {
		t.Errorf("found on %q", s)
	}
	if s := FoundOn(got.ContextPages, got.ContextSources); s != "b.pdf p. 9" {
		t.Errorf("context %q", s)
	}
}

func TestReviewCitation(t *testing.T) {
	old := api.ReviewRow{AnswerFound: true, Evidence: []api.Evidence{
		{SupportsAnswer: true, Pages: &api.PageRef{Unit: api.UnitPage, First: 3, Last: 3}},
		{Pages: &api.PageRef{Unit: api.UnitPage, First: 4, Last: 4}},
	}}
	if f, c := ReviewCitation(old); f != "p. 3" || c != "" {
		t.Errorf("a grid from before citations: found on %q, context %q", f, c)
	}
	cited := old
	cited.AnswerPages, cited.ContextPages = "p. 9", "p. 3"
	if f, c := ReviewCitation(cited); f != "p. 9" || c != "p. 3" {
		t.Errorf("a cited row: found on %q, context %q", f, c)
	}
	grounded := old
	grounded.Grounding = &api.Grounding{Status: api.GroundingVerbatim, FoundIn: api.GroundingInText}
	if f, c := ReviewCitation(grounded); f != "" || c != "" {
		t.Errorf("a row grounded in a text document: found on %q, context %q", f, c)
	}
}

func TestScanMark(t *testing.T) {
	text := &api.PageRef{Unit: api.UnitPage, First: 3, Last: 3}
	scan := &api.PageRef{Unit: api.UnitPage, First: 12, Last: 12, Scan: &api.PageScan{Pages: 1, Confidence: 0.91}}
	low := &api.PageRef{Unit: api.UnitPage, First: 14, Last: 14, Scan: &api.PageScan{Pages: 1, Confidence: 0.62, Check: true}}
	for _, tc := range []struct {
		refs []*api.PageRef
		want string
	}{
		{nil, ""},
		{[]*api.PageRef{nil, text}, ""},
		{[]*api.PageRef{text, scan}, ScanRead},
		{[]*api.PageRef{scan, low, text}, ScanCheck},
	} {
		if got := ScanMark(tc.refs...); got != tc.want {
			t.Errorf("ScanMark(%v) = %q, want %q", tc.refs, got, tc.want)
		}
	}
	if got := scan.String(); got != "p. 12 (scan, confidence 0.91)" {
		t.Errorf("a scanned page cites as %q", got)
	}
	if got := low.String(); got != "p. 14 (scan, confidence 0.62, check the page)" {
		t.Errorf("a flagged page cites as %q", got)
	}
	labelled := &api.PageRef{Unit: api.UnitPage, First: 17, Last: 17, FirstLabel: "13", LastLabel: "13", Scan: scan.Scan}
	if got := labelled.String(); got != "p. 13 (PDF p. 17; scan, confidence 0.91)" {
		t.Errorf("a labelled scanned page cites as %q", got)
	}
	r := api.BatchItemResult{AnswerPages: low.String(), Grounding: &api.Grounding{Status: api.GroundingVerbatim, Pages: low}}
	if got := BatchCSVExtra(r); got[2] != ScanCheck || got[1] != "p. 14 (scan, confidence 0.62, check the page)" {
		t.Errorf("results.csv extra cells %q", got)
	}
}
