package api

import (
	"fmt"
	"strings"
)

// Scores compares one prediction with a set of reference answers. Exact
// match, substring match and F1 treat the references as aliases and keep the
// best over them (any one right answer is enough, as in SQuAD or HotpotQA);
// Recall treats them as a list whose members are all expected (as RULER's
// multi-value, multi-query, variable-tracking and word-frequency tasks do).
type Scores struct {
	// ExactMatch reports whether the normalized prediction equals a
	// normalized reference.
	ExactMatch bool `json:"exact_match"`
	// SubstringMatch reports whether, for some reference, one normalized
	// string contains the other. An empty normalized string matches nothing.
	SubstringMatch bool `json:"substring_match"`
	// F1 is the best token-level F1 over the references, in [0, 1].
	F1 float64 `json:"f1"`
	// BestGold is the reference that scored best: an exact match if there is
	// one, else the highest F1, else a substring match, else the first
	// reference. Ties go to the earlier reference.
	BestGold string `json:"best_gold"`
	// Recall is the fraction of the distinct normalized references that the
	// normalized prediction contains, in [0, 1]: RULER's string_match_all
	// for one item. References that normalize to the same string count
	// once, and ones that normalize to "" not at all; with no reference left,
	// or an empty prediction, Recall is 0.
	Recall float64 `json:"recall"`
}

// PageRef names where a byte range of a converted document came from: a
// page or a range of pages, or a section or a range of sections.
type PageRef struct {
	// Unit is UnitPage or UnitSection.
	Unit  string `json:"unit"`
	First int    `json:"first"`
	Last  int    `json:"last"`
	// Label is the heading of section First, when it has one.
	Label string `json:"label,omitempty"`
	// FirstLabel and LastLabel are the page labels printed on pages First
	// and Last ("xii", "13"), when the PDF has page labels (/PageLabels);
	// First and Last stay the physical page indexes, from 1.
	FirstLabel string `json:"first_label,omitempty"`
	LastLabel  string `json:"last_label,omitempty"`
	// LabelRepeats reports that the label of First or Last is printed on
	// another page of the same document too (a book that numbers its
	// front matter and its body both from 1): the citation then always
	// names the physical page, "1 (PDF p. 1)", so that it cannot be taken
	// for the other.
	LabelRepeats bool `json:"label_repeats,omitempty"`
	// Scan is set when a page of First..Last was read by OCR (a scanned
	// page, no text layer): the citation then says so with the OCR's
	// confidence, "p. 12 (scan, confidence 0.91)".
	Scan *PageScan `json:"scan,omitempty"`
}

// PageScan says that pages of a PageRef were read by OCR, and how
// surely: a reader should check a scanned page's words against the page
// itself before relying on them, and must when Check is set.
type PageScan struct {
	// Pages counts the scanned pages of First..Last.
	Pages int `json:"pages"`
	// Confidence is the OCR's mean word confidence on the least sure of
	// those pages, in [0, 1].
	Confidence float64 `json:"confidence"`
	// Check is set when that confidence is under OCRCheckConfidence, or
	// the OCR of one of the pages failed: a human should read the page.
	Check bool `json:"check,omitempty"`
}

// OCRCheckConfidence is the mean word confidence under which a scanned
// page is flagged for a human (PageScan.Check): below it, about one word
// in ten or more is likely misread.
const OCRCheckConfidence = 0.80

// String renders s as a citation's note: "scan, confidence 0.91", with
// ", check the page" when flagged; "" for nil.
func (s *PageScan) String() string {
	if s == nil {
		return ""
	}
	out := fmt.Sprintf("scan, confidence %.2f", s.Confidence)
	if s.Check {
		out += ", check the page"
	}
	return out
}

// String renders r as a reader cites it: "p. 17", "pp. 16–17",
// "p. 13 (PDF p. 17)" where the printed page label differs from the
// physical page, "p. 12 (scan, confidence 0.91)" for a page read by OCR,
// "§ 3 Payment terms" (a section by its heading, "§ 3"
// when it has none), "§ 3 Payment terms and following" for a range of
// sections, and a part of an email by its label (UnitMessage):
// `msg 12 "Re: Lease" › lease.pdf p. 4`. A nil ref renders as "".
func (r *PageRef) String() string {
	if r == nil || r.First <= 0 {
		return ""
	}
	if r.Unit == UnitMessage {
		out := r.Label
		if out == "" {
			out = fmt.Sprintf("part %d", r.First)
		}
		if r.Last > r.First {
			out += " and following"
		}
		if note := r.Scan.String(); note != "" {
			out += " (" + note + ")"
		}
		return out
	}
	if r.Unit == UnitSection {
		if r.Label != "" {
			if r.Last > r.First {
				return "§ " + r.Label + " and following"
			}
			return "§ " + r.Label
		}
		if r.Last > r.First {
			return fmt.Sprintf("§§ %d–%d", r.First, r.Last)
		}
		return fmt.Sprintf("§ %d", r.First)
	}
	pages, ranged := r.Pages()
	if ranged {
		return "pp. " + pages
	}
	return "p. " + pages
}

// Pages renders r's pages without the "p." in front: "17", "16–17",
// "13 (PDF p. 17)", "12–13 (PDF pp. 16–17)", and "1 (PDF p. 1)" when
// the label 1 is printed on another page too, and "12 (scan, confidence
// 0.91)" or "13 (PDF p. 17; scan, confidence 0.91)" when OCR read a page
// of them; ranged reports a range.
func (r *PageRef) Pages() (text string, ranged bool) {
	text, ranged = r.pages()
	if note := r.Scan.String(); note != "" {
		if strings.HasSuffix(text, ")") {
			text = text[:len(text)-1] + "; " + note + ")"
		} else {
			text += " (" + note + ")"
		}
	}
	return text, ranged
}

func (r *PageRef) pages() (text string, ranged bool) {
	physical := fmt.Sprint(r.First)
	if r.Last > r.First {
		physical = fmt.Sprintf("%d–%d", r.First, r.Last)
	}
	first, last := r.FirstLabel, r.LastLabel
	if first == "" {
		first = fmt.Sprint(r.First)
	}
	if last == "" {
		last = fmt.Sprint(r.Last)
	}
	printed := first
	if r.Last > r.First {
		printed = first + "–" + last
	}
	switch {
	case printed == physical && !r.LabelRepeats:
		return physical, r.Last > r.First
	case r.Last > r.First:
		return printed + " (PDF pp. " + physical + ")", true
	default:
		return printed + " (PDF p. " + physical + ")", false
	}
}

// Units of a PageRef: pages of a paginated format (PDF), sections
// opened by headings where a format has no pages (DOCX, HTML), or the
// parts of an email's families (a message's body, each page or section
// of its attachments), cited by their label as a whole:
// `msg 12 "Re: Lease" › lease.pdf p. 4`.
const (
	UnitPage    = "page"
	UnitSection = "section"
	UnitMessage = "message"
)

// SourceRef cites a place in a corpus (DocumentQAInput.Documents): the
// document and, for a PDF, DOCX or HTML one, its pages or sections.
type SourceRef struct {
	// Document is the document's s3:// URI as the caller named it, Name
	// the last element of its key, as citations print it.
	Document string   `json:"document"`
	Name     string   `json:"name,omitempty"`
	Pages    *PageRef `json:"pages,omitempty"`
}

// String renders r as a reader cites it: "exhibit-3.docx § 2",
// "deposition-12.pdf p. 4", or the name alone for a text document.
func (r SourceRef) String() string {
	name := r.Name
	if name == "" {
		name = r.Document
	}
	if p := r.Pages.String(); p != "" {
		return name + " " + p
	}
	return name
}

// CiteSources renders sources as one citation, "deposition-12.pdf p. 4;
// exhibit-3.docx § 2", merging the pages of one document that appear more
// than once in a row.
func CiteSources(sources []SourceRef) string {
	parts := make([]string, 0, len(sources))
	for _, s := range sources {
		if c := s.String(); c != "" && (len(parts) == 0 || parts[len(parts)-1] != c) {
			parts = append(parts, c)
		}
	}
	return strings.Join(parts, "; ")
}
