package memagent

import (
	"sort"
	"strings"

	"github.com/memagent/memagent/api"
)

// PageMapVersion is the current [PageMap.Version]. Version 2 added
// [PageSpan.PageLabel]; a version 1 map reads as one without labels.
const PageMapVersion = 2

// PageMap says where each page (or section) of a converted document lies
// in its extracted text. Spans are in order, do not overlap and may leave
// gaps (the blank line between two pages); a page without text has no span.
type PageMap struct {
	Version int `json:"version"`
	// Format is the source's format: "pdf", "docx" or "html".
	Format string `json:"format"`
	// Unit is UnitPage or UnitSection.
	Unit string `json:"unit"`
	// Pages is the source's page count (PDF), or its section count.
	Pages int `json:"pages"`
	// Spans are the text's byte ranges by page or section.
	Spans []PageSpan `json:"spans"`
}

// PageSpan is one page's (or section's) byte range [Start, End) of the text.
type PageSpan struct {
	// Number is the page number, from 1, or the section's ordinal.
	Number int `json:"number"`
	// Label is a section's heading, when it has one.
	Label string `json:"label,omitempty"`
	// PageLabel is the label printed on a PDF page ("xii", "13"), when
	// the PDF has page labels; Number stays the physical page index.
	PageLabel string `json:"page_label,omitempty"`
	Start     int64  `json:"start"`
	End       int64  `json:"end"`
}

// Ref returns the pages (or sections) that the byte range [start, end) of
// the text touches, or nil when m is nil or the range lies in no span.
func (m *PageMap) Ref(start, end int64) *api.PageRef {
	if m == nil || len(m.Spans) == 0 || end <= start {
		return nil
	}
	// The first span that ends after start.
	i := sort.Search(len(m.Spans), func(i int) bool { return m.Spans[i].End > start })
	if i == len(m.Spans) || m.Spans[i].Start >= end {
		return nil
	}
	j := i
	for j+1 < len(m.Spans) && m.Spans[j+1].Start < end {
		j++
	}
	return &api.PageRef{Unit: m.Unit, First: m.Spans[i].Number, Last: m.Spans[j].Number, Label: m.Spans[i].Label,
		FirstLabel: m.Spans[i].PageLabel, LastLabel: m.Spans[j].PageLabel,
		LabelRepeats: m.labelRepeats(m.Spans[i]) || m.labelRepeats(m.Spans[j])}
}

// labelRepeats reports whether s's page label is printed on another page
// of the map too.
func (m *PageMap) labelRepeats(s PageSpan) bool {
	if s.PageLabel == "" {
		return false
	}
	for _, o := range m.Spans {
		if o.PageLabel == s.PageLabel && o.Number != s.Number {
			return true
		}
	}
	return false
}

// JoinPageRefs renders refs as one citation, in order of first page, with
// duplicates dropped: "p. 17", "pp. 3, 17", "p. 13 (PDF p. 17)",
// "pp. 3, 13 (PDF p. 17)", "§ 2 Access; § 5 Terms".
func JoinPageRefs(refs []*api.PageRef) string {
	return JoinPageRefsFirst(nil, refs)
}

// JoinPageRefsFirst renders first and then refs as one citation: first
// leads, the others follow in order of first page, duplicates dropped:
// "pp. 6 (PDF p. 30), 3, 17".
func JoinPageRefsFirst(first *api.PageRef, refs []*api.PageRef) string {
	var pages []string
	var sections []string
	anyRange := false
	seen := map[string]bool{}
	sorted := make([]*api.PageRef, 0, len(refs)+1)
	for _, r := range refs {
		if r != nil && r.First > 0 {
			sorted = append(sorted, r)
		}
	}
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].First < sorted[j].First })
	if first != nil && first.First > 0 {
		sorted = append([]*api.PageRef{first}, sorted...)
	}
	for _, r := range sorted {
		if r.Unit == api.UnitSection {
			s := r.String()
			if !seen[s] {
				seen[s] = true
				sections = append(sections, s)
			}
			continue
		}
		s, ranged := r.Pages()
		if !seen[s] {
			seen[s] = true
			pages = append(pages, s)
			anyRange = anyRange || ranged
		}
	}
	var out []string
	switch {
	case len(pages) == 1 && !anyRange:
		out = append(out, "p. "+pages[0])
	case len(pages) > 0:
		out = append(out, "pp. "+strings.Join(pages, ", "))
	}
	out = append(out, sections...)
	return strings.Join(out, "; ")
}
