package memagent

import "testing"

func TestPageMapRef(t *testing.T) {
	pdf := &PageMap{Unit: UnitPage, Spans: []PageSpan{
		{Number: 1, Start: 0, End: 100}, {Number: 2, Start: 102, End: 200}, {Number: 4, Start: 202, End: 300},
	}}
	doc := &PageMap{Unit: UnitSection, Spans: []PageSpan{
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
		{"a section", doc, 60, 70, "§ 2 Payment terms"},
		{"two sections", doc, 60, 100, "§§ 2–3 Payment terms"},
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
	p := func(first, last int) *PageRef { return &PageRef{Unit: UnitPage, First: first, Last: last} }
	s := func(n int, label string) *PageRef {
		return &PageRef{Unit: UnitSection, First: n, Last: n, Label: label}
	}
	for _, tc := range []struct {
		name string
		refs []*PageRef
		want string
	}{
		{"none", nil, ""},
		{"one page", []*PageRef{p(17, 17)}, "p. 17"},
		{"repeated", []*PageRef{p(17, 17), p(17, 17)}, "p. 17"},
		{"sorted", []*PageRef{p(17, 17), p(3, 3)}, "pp. 3, 17"},
		{"a range", []*PageRef{p(16, 17)}, "pp. 16–17"},
		{"sections", []*PageRef{s(5, "Terms"), s(2, "Access"), nil}, "§ 2 Access; § 5 Terms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := JoinPageRefs(tc.refs); got != tc.want {
				t.Errorf("JoinPageRefs = %q, want %q", got, tc.want)
			}
		})
	}
}
