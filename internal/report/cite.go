package report

import (
	"path"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/memagent"
)

// CiteEntry is one evidence entry of an answer as Cite reads it.
type CiteEntry struct {
	// Pages are the entry's passage's pages, else its chunk's; nil for a
	// text document.
	Pages *api.PageRef
	// Document is the corpus document of the entry's passage (else of its
	// chunk's start); empty for a single document.
	Document string
	// Passage is the passage's text, empty when the entry has none.
	Passage string
	// Supports is the entry's SupportsAnswer.
	Supports bool
}

// AnswerWords are the words a passage must hold to hold an answer: its
// content words, lowercased and distinct, or all its words when it has
// only stopwords ("yes", "it is"); nil for an answer without a letter or
// digit.
func AnswerWords(answer string) []string {
	var content, all []string
	seen := map[string]bool{}
	for _, w := range reviewWords(answer) {
		if seen[w.text] {
			continue
		}
		seen[w.text] = true
		all = append(all, w.text)
		if w.content {
			content = append(content, w.text)
		}
	}
	if len(content) > 0 {
		return content
	}
	return all
}

// HoldsWords reports whether text has every one of words (AnswerWords),
// as whole words, case aside; false for no words.
func HoldsWords(text string, words []string) bool {
	if len(words) == 0 {
		return false
	}
	have := map[string]bool{}
	for _, w := range reviewWords(text) {
		have[w.text] = true
	}
	for _, w := range words {
		if !have[w] {
			return false
		}
	}
	return true
}

// Cite works out an answer's citation (api.Citation) from where it was
// grounded and from its evidence: the grounded place leads the answer's
// pages, followed by those of the entries whose passage holds the answer's
// words (AnswerWords); the entries that support the answer without them
// are its context. Entries without a passage hold nothing.
func Cite(answer string, g *api.Grounding, entries []CiteEntry) api.Citation {
	words := AnswerWords(answer)
	var lead *api.PageRef
	var leadSource *api.SourceRef
	if g.Found() {
		lead = g.Pages
		if g.Document != "" {
			leadSource = &api.SourceRef{Document: g.Document, Name: path.Base(g.Document), Pages: g.Pages}
		}
	}
	var answerRefs, contextRefs []*api.PageRef
	var answerSources, contextSources []api.SourceRef
	if leadSource != nil {
		answerSources = append(answerSources, *leadSource)
	}
	holding := map[string]bool{}
	if lead != nil {
		holding[lead.String()] = true
	}
	for _, e := range entries {
		if e.Passage == "" || !HoldsWords(e.Passage, words) {
			continue
		}
		answerRefs = append(answerRefs, e.Pages)
		holding[e.Pages.String()] = true
		if e.Document != "" {
			answerSources = addSource(answerSources, api.SourceRef{Document: e.Document, Name: path.Base(e.Document), Pages: e.Pages})
		}
	}
	for _, e := range entries {
		if !e.Supports || (e.Passage != "" && HoldsWords(e.Passage, words)) {
			continue
		}
		if e.Document != "" {
			s := api.SourceRef{Document: e.Document, Name: path.Base(e.Document), Pages: e.Pages}
			if !containsSource(answerSources, s) {
				contextSources = addSource(contextSources, s)
			}
		}
		if e.Pages != nil && !holding[e.Pages.String()] {
			contextRefs = append(contextRefs, e.Pages)
		}
	}
	return api.Citation{
		AnswerPages: memagent.JoinPageRefsFirst(lead, answerRefs), AnswerSources: answerSources,
		ContextPages: memagent.JoinPageRefs(contextRefs), ContextSources: contextSources,
	}
}

// addSource appends s unless a source that cites alike is there already.
func addSource(list []api.SourceRef, s api.SourceRef) []api.SourceRef {
	if containsSource(list, s) {
		return list
	}
	return append(list, s)
}

func containsSource(list []api.SourceRef, s api.SourceRef) bool {
	for _, o := range list {
		if o.String() == s.String() {
			return true
		}
	}
	return false
}

// Scan marks of a citation (ScanMark), as the CSVs' scan column and the
// HTML pages print them.
const (
	// ScanRead: a cited page was read by OCR (a scan).
	ScanRead = "scan"
	// ScanCheck: a cited page was read by OCR under
	// api.OCRCheckConfidence, or could not be: a human should read it.
	ScanCheck = "check"
)

// ScanMark says whether refs cite a scanned page: ScanCheck when one of
// them is flagged for a human, ScanRead when one is a scan, else "".
func ScanMark(refs ...*api.PageRef) string {
	mark := ""
	for _, r := range refs {
		if r == nil || r.Scan == nil {
			continue
		}
		if r.Scan.Check {
			return ScanCheck
		}
		mark = ScanRead
	}
	return mark
}
