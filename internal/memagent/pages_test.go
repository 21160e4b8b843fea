package memagent

import (
	"encoding/json"
	"testing"

	"github.com/memagent/memagent/api"
)

func TestPageMapRef(t *testing.T) {
	pdf := &PageMap{Unit: api.UnitPage, Spans: []PageSpan{
		{Number: 1, Start: 0, End: 100}, {Number: 2, Start: 102, End: 200}, {Number: 4, Start: 202, End: 300},
	}}
	book := &PageMap{Unit: api.UnitPage, Spans: []PageSpan{
		{Number: 4, PageLabel: "iv", Start: 0, End: 100}, {Number: 5, PageLabel: "1", Start: 102, End: 200},
		{Number: 17, PageLabel: "13", Start: 202, End: 300}, {Number: 18, PageLabel: "18", Start: 302, End: 400},
	}}
	// Front matter and body both numbered from 1: "1" is on PDF pages 1
	// and 3, "2" on page 4 alone.
	twice := &PageMap{Unit: api.UnitPage, Spans: []PageSpan{
		{Number: 1, PageLabel: "1", Start: 0, End: 100}, {Number: 2, PageLabel: "ii", Start: 102, End: 200},
		{Number: 3, PageLabel: "1", Start: 202, End: 300}, {Number: 4, PageLabel: "2", Start: 302, End: 400},
	}}
	doc := &PageMap{Unit: api.UnitSection, Spans: []PageSpan{
		{Number: 1, Start: 0, End: 50}, {Number: 2, Label: "Payment terms", Start: 52, End: 90},
		{Number: 3, Label: "Termination", Start: 92, End: 120},
	}}
	for _, tc := range []struct {
		name       string
		m          *PageMap
		start, end int64
		want       string
	}{
		{"inside a page", pdf, 10, 20, "p. 1"},
		{"across pages", pdf, 90, 150, "pp. 1–2"},
		{"in the gap before a page", pdf, 100, 110, "p. 2"},
		{"skips a page without text", pdf, 150, 250, "pp. 2–4"},
		{"past the end", pdf, 300, 310, ""},
		{"empty range", pdf, 10, 10, ""},
		{"nil map", nil, 0, 10, ""},
		{"a labelled page", book, 210, 220, "p. 13 (PDF p. 17)"},
		{"a label equal to the index", book, 310, 320, "p. 18"},
		{"labelled pages", book, 0, 150, "pp. iv–1 (PDF pp. 4–5)"},
		{"a repeated label on its own page", twice, 10, 20, "p. 1 (PDF p. 1)"},
		{"a repeated label elsewhere", twice, 210, 220, "p. 1 (PDF p. 3)"},
		{"a unique label", twice, 310, 320, "p. 2 (PDF p. 4)"},
		{"a range ending on a repeated label", twice, 150, 250, "pp. ii–1 (PDF pp. 2–3)"},
		{"a section", doc, 60, 70, "§ Payment terms"},
		{"two sections", doc, 60, 100, "§ Payment terms and following"},
		{"unlabelled sections", doc, 0, 60, "§§ 1–2"},
		{"an unlabelled section", doc, 0, 10, "§ 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.m.Ref(tc.start, tc.end).String(); got != tc.want {
				t.Errorf("Ref(%d, %d) = %q, want %q", tc.start, tc.end, got, tc.want)
			}
		})
	}
}

func TestJoinPageRefs(t *testing.T) {
	p := func(first, last int) *api.PageRef { return &api.PageRef{Unit: api.UnitPage, First: first, Last: last} }
	s := func(n int, label string) *api.PageRef {
		return &api.PageRef{Unit: api.UnitSection, First: n, Last: n, Label: label}
	}
	for _, tc := range []struct {
		name string
		refs []*api.PageRef
		want string
	}{
		{"none", nil, ""},
		{"one page", []*api.PageRef{p(17, 17)}, "p. 17"},
		{"repeated", []*api.PageRef{p(17, 17), p(17, 17)}, "p. 17"},
		{"sorted", []*api.PageRef{p(17, 17), p(3, 3)}, "pp. 3, 17"},
		{"a range", []*api.PageRef{p(16, 17)}, "pp. 16–17"},
		{"sections", []*api.PageRef{s(5, "Terms"), s(2, "Access"), nil}, "§ Access; § Terms"},
		{"a labelled page", []*api.PageRef{{Unit: api.UnitPage, First: 17, Last: 17, FirstLabel: "13", LastLabel: "13"}}, "p. 13 (PDF p. 17)"},
		{"labelled and not", []*api.PageRef{{Unit: api.UnitPage, First: 17, Last: 17, FirstLabel: "13", LastLabel: "13"}, p(3, 3)}, "pp. 3, 13 (PDF p. 17)"},
		{"email families", []*api.PageRef{
			{Unit: api.UnitMessage, First: 9, Last: 9, Label: `msg 12 "Re: Lease" › lease.pdf p. 4`},
			{Unit: api.UnitMessage, First: 3, Last: 5, Label: `msg 2 "Lease"`},
			{Unit: api.UnitMessage, First: 14, Last: 14, Label: `msg 13 "Scan" › scan.png`, Scan: &api.PageScan{Pages: 1, Confidence: 0.91}},
		}, `msg 2 "Lease" and following; msg 12 "Re: Lease" › lease.pdf p. 4; msg 13 "Scan" › scan.png (scan, confidence 0.91)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := JoinPageRefs(tc.refs); got != tc.want {
				t.Errorf("JoinPageRefs = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestPageMapVersion1 reads a page map written before page labels: it
// loads, and cites physical pages.
func TestPageMapVersion1(t *testing.T) {
	const v1 = `{"version":1,"format":"pdf","unit":"page","pages":20,"spans":[{"number":17,"start":0,"end":100}]}`
	var m PageMap
	if err := json.Unmarshal([]byte(v1), &m); err != nil {
		t.Fatal(err)
	}
	if got, want := m.Ref(10, 20).String(), "p. 17"; got != want {
		t.Errorf("Ref = %q, want %q", got, want)
	}
}

// TestPageMapRefScan: a range that touches a page read by OCR says
// "scan" with the least sure page's confidence; a page under
// api.OCRCheckConfidence, or one OCR failed on, is flagged; blank pages
// count as scanned but not for the confidence.
func TestPageMapRefScan(t *testing.T) {
	m := &PageMap{Unit: api.UnitPage, Spans: []PageSpan{
		{Number: 1, Start: 0, End: 100}, {Number: 2, Start: 102, End: 200},
		{Number: 3, PageLabel: "iii", Start: 202, End: 300}, {Number: 5, Start: 302, End: 400},
	}, OCR: []OCRPage{
		{Page: 2, Words: 300, Confidence: 0.914}, {Page: 3, Words: 250, Confidence: 0.62, LowConfidenceWords: 40},
		{Page: 4, Blank: true}, {Page: 6, Error: "timed out"},
	}}
	for _, tc := range []struct {
		name       string
		start, end int64
		want       string
	}{
		{"a text page", 10, 20, "p. 1"},
		{"a scanned page", 110, 120, "p. 2 (scan, confidence 0.91)"},
		{"a flagged page with a label", 210, 220, "p. iii (PDF p. 3; scan, confidence 0.62, check the page)"},
		{"a range over text and scans", 50, 150, "pp. 1–2 (scan, confidence 0.91)"},
		{"over a blank scanned page", 210, 350, "pp. iii–5 (PDF pp. 3–5; scan, confidence 0.62, check the page)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := m.Ref(tc.start, tc.end).String(); got != tc.want {
				t.Errorf("Ref(%d, %d) = %q, want %q", tc.start, tc.end, got, tc.want)
			}
		})
	}
	if r := m.Ref(210, 350); r.Scan.Pages != 2 {
		t.Errorf("scanned pages of 3–5 = %d, want 2 (3 and the blank 4)", r.Scan.Pages)
	}
	for _, o := range m.OCR {
		want := o.Page == 3 || o.Page == 6
		if o.Check() != want {
			t.Errorf("page %d: Check() = %v, want %v", o.Page, o.Check(), want)
		}
	}
	if pages, _ := m.OCRPages(); pages != 4 {
		t.Errorf("OCRPages = %d, want 4", pages)
	}
}
