package desk

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/signoff"
	"github.com/memagent/memagent/internal/testdeps"
)

// TestQuoteAcrossPagesHighlightedPageByPage: a grounding quote that runs
// from the bottom of one page of a real manual onto the top of the next
// (asymptote's Texinfo PDF, PDF pages 24 and 25, printed 19 and 20:
// "…Here, name is the name" / "of the file to include…") is shown as
// both pages, each with its own part highlighted on it and cited by its
// own page; the first page, the one the desk showed alone before, no
// longer stands for the whole quote. A part that names a page outside the
// grounding's is not believed: the quote is shown as one, on the first.
func TestQuoteAcrossPagesHighlightedPageByPage(t *testing.T) {
	path := testdeps.Manual(t, "asymptote-doc", "usr/share/doc/asymptote/asymptote.pdf")
	pdf, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := testDesk(t, 30*time.Second, 1)
	d.cfg.Store, d.cfg.Checks, d.cfg.Logger = oneDoc{pdf}, readAnything{}, discard()
	d.cfg.MaxDocumentBytes = 64 << 20
	d.docs = map[string][]byte{}
	g := &api.SignOffGrid{Subject: api.SignOffSubject{Kind: api.SubjectReview, Source: "s3://docs/asymptote.pdf"}}
	page := func(n int, label string) *api.PageRef {
		return &api.PageRef{Unit: api.UnitPage, First: n, Last: n, FirstLabel: label, LastLabel: label}
	}
	first := "returns a string that can be used to include an encapsulated PostScript (EPS) file. Here, name is the name"
	second := "of the file to include and options is a string containing a comma-separated list of optional bounding box"
	gr := &api.Grounding{Status: api.GroundingNormalized, Quote: first,
		Pages:      &api.PageRef{Unit: api.UnitPage, First: 24, Last: 25, FirstLabel: "19", LastLabel: "20"},
		QuoteParts: []api.QuotePart{{Text: first, Pages: page(24, "19")}, {Text: second, Pages: page(25, "20")}}}
	row := signoff.Row{Cell: "q1", ModelAnswer: "name is the name of the file to include", Grounding: gr}
	ctx := context.Background()

	p := d.page(ctx, g, row, "review-1")
	if p == nil || p.Error != "" {
		t.Fatalf("page view %+v", p)
	}
	if p.Number != 24 || p.Highlight != "quote" || p.From != "text" || len(p.QuoteBoxes) == 0 || p.Cite != page(24, "19").String() {
		t.Errorf("first page: number %d, cite %q, highlight %q from %q, %d quote boxes; want PDF page 24 cited alone, its part highlighted from the text layer",
			p.Number, p.Cite, p.Highlight, p.From, len(p.QuoteBoxes))
	}
	// The first part ends the page: its last box is in the page's lower
	// part; the second opens the next page.
	if n := len(p.QuoteBoxes); n > 0 && p.QuoteBoxes[n-1].Top < 0.6 {
		t.Errorf("first part's last line is boxed at %+v, want it near the page's foot", p.QuoteBoxes[n-1])
	}
	if len(p.More) != 1 {
		t.Fatalf("%d more pages, want 1 (page 25)", len(p.More))
	}
	m := p.More[0]
	if m.Number != 25 || m.Highlight != "quote" || m.From != "text" || len(m.QuoteBoxes) == 0 || m.Cite != page(25, "20").String() ||
		m.Image != p.Image+"&page=25" || len(m.More) != 0 {
		t.Errorf("second page: %+v, want PDF page 25 cited alone, the second part highlighted, its image asked for by page", m)
	}
	if len(m.QuoteBoxes) > 0 && m.QuoteBoxes[0].Top > 0.4 {
		t.Errorf("second part's first line is boxed at %+v, want it near the page's head", m.QuoteBoxes[0])
	}

	// A forged part outside the grounding's pages: one quote, one page.
	forged := *gr
	forged.QuoteParts = []api.QuotePart{{Text: first, Pages: page(24, "19")}, {Text: second, Pages: page(90, "85")}}
	row.Grounding = &forged
	if p := d.page(ctx, g, row, "review-1"); p == nil || p.Number != 24 || len(p.More) != 0 || p.Highlight != "quote" {
		t.Errorf("forged part: %+v, want page 24 alone with the quote", p)
	}
}
