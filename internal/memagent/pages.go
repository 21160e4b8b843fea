package memagent

import (
	"math"
	"sort"
	"strings"

	"github.com/memagent/memagent/api"
)

// PageMapVersion is the current [PageMap.Version]. Version 2 added
// [PageSpan.PageLabel]; a version 1 map reads as one without labels.
// Version 3 added [PageMap.OCR]; an older map has no scanned pages.
const PageMapVersion = 3

// PageMap says where each page (or section) of a converted document lies
// in its extracted text. Spans are in order, do not overlap and may leave
// gaps (the blank line between two pages); a page without text has no span.
type PageMap struct {
	Version int `json:"version"`
	// Format is the source's format: "pdf", "docx" or "html".
	Format string `json:"format"`
	// Unit is UnitPage, UnitSection or (email) UnitMessage.
	Unit string `json:"unit"`
	// Pages is the source's page count (PDF), or its section count.
	Pages int `json:"pages"`
	// Spans are the text's byte ranges by page or section.
	Spans []PageSpan `json:"spans"`
	// OCR records each page read by OCR, in page order: a PDF's scanned
	// pages (or every page, with OCR forced); for an email, its
	// attachments' scanned pages, numbered as the map's spans.
	OCR []OCRPage `json:"ocr,omitempty"`
	// Email describes an email's or a mailbox's messages, their families,
	// threads and duplicates (Format "email" or "mbox"); nil otherwise.
	Email *EmailIndex `json:"email,omitempty"`
}

// OCR reasons: why a page was read by OCR (OCRPage.Reason).
const (
	// OCRNoTextLayer: the page has no text layer and draws images.
	OCRNoTextLayer = "no_text_layer"
	// OCRImagesCover: images cover most of the page and its text layer
	// is a few words at most (a scan with a stamp or a Bates number).
	OCRImagesCover = "images_cover"
	// OCRForced: the document was asked about with OCR forced.
	OCRForced = "forced"
)

// OCRPage is what OCR made of one page, recorded in the page map.
type OCRPage struct {
	// Page is the page's number, from 1.
	Page int `json:"page"`
	// Reason is OCRNoTextLayer, OCRImagesCover or OCRForced.
	Reason string `json:"reason"`
	// Engine names the OCR engine and its version ("tesseract 5.3.0").
	Engine string `json:"engine"`
	// Languages are the engine's languages, as it takes them ("eng+deu").
	Languages string `json:"languages"`
	// DPI is the resolution the page was rasterised at.
	DPI int `json:"dpi"`
	// Words counts the words read; Confidence is their mean confidence,
	// in [0, 1]; LowConfidenceWords counts those under
	// OCRLowWordConfidence.
	Words              int     `json:"words"`
	Confidence         float64 `json:"confidence"`
	LowConfidenceWords int     `json:"low_confidence_words"`
	// Blank is set on a page with no ink: no engine was run on it.
	Blank bool `json:"blank,omitempty"`
	// Seconds is how long the engine took on the page.
	Seconds float64 `json:"seconds"`
	// Reused is set on a page an earlier conversion of the same document
	// read (another attempt, or another OCR mode): no engine ran on it.
	Reused bool `json:"reused,omitempty"`
	// Error says why the page could not be read (the engine timed out,
	// crashed or ran out of its memory on every attempt, or the
	// document's OCR budget ran out before it); it then has no text.
	Error string `json:"error,omitempty"`
	// NotRead is set on a page the engine never read because the
	// document's OCR budget (MEMAGENT_OCR_BUDGET) ran out first: the
	// converted text holds, in its place, a line saying so (Error's).
	NotRead bool `json:"not_read,omitempty"`
}

// OCRLowWordConfidence is the confidence under which a word counts in
// OCRPage.LowConfidenceWords.
const OCRLowWordConfidence = 0.60

// Check reports whether a human should read the page: its OCR failed,
// or its confidence is under api.OCRCheckConfidence. A blank page needs
// no check.
func (o OCRPage) Check() bool {
	if o.Error != "" {
		return true
	}
	return !o.Blank && o.Words > 0 && o.Confidence < api.OCRCheckConfidence
}

// OCRPages counts the pages read by OCR, and the seconds the engine took.
func (m *PageMap) OCRPages() (pages int, seconds float64) {
	if m == nil {
		return 0, 0
	}
	for _, o := range m.OCR {
		seconds += o.Seconds
	}
	return len(m.OCR), seconds
}

// scan is the PageScan of pages first..last, or nil when OCR read none.
func (m *PageMap) scan(first, last int) *api.PageScan {
	i := sort.Search(len(m.OCR), func(i int) bool { return m.OCR[i].Page >= first })
	var s *api.PageScan
	for ; i < len(m.OCR) && m.OCR[i].Page <= last; i++ {
		o := m.OCR[i]
		if s == nil {
			s = &api.PageScan{Confidence: 1}
		}
		s.Pages++
		if o.Blank {
			continue
		}
		s.Confidence = min(s.Confidence, math.Round(o.Confidence*100)/100)
		s.Check = s.Check || o.Check()
	}
	return s
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
		LabelRepeats: m.labelRepeats(m.Spans[i]) || m.labelRepeats(m.Spans[j]),
		Scan:         m.scan(m.Spans[i].Number, m.Spans[j].Number)}
}

// SpanRanges returns the byte ranges of the spans that [start, end)
// touches, in order; nil when m is nil or the range lies in no span.
func (m *PageMap) SpanRanges(start, end int64) [][2]int64 {
	if m == nil || end <= start {
		return nil
	}
	var out [][2]int64
	for i := sort.Search(len(m.Spans), func(i int) bool { return m.Spans[i].End > start }); i < len(m.Spans) && m.Spans[i].Start < end; i++ {
		out = append(out, [2]int64{m.Spans[i].Start, m.Spans[i].End})
	}
	return out
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
		if r.Unit != api.UnitPage {
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
