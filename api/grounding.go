package api

import (
	"path"
	"strings"
)

// Grounding statuses: whether an answer's text is in the source.
const (
	// GroundingVerbatim: the answer's text occurs in the document's text,
	// byte for byte, starting and ending at word boundaries.
	GroundingVerbatim = "verbatim"
	// GroundingNormalized: the answer occurs once both are normalised as
	// scoring does (lowercase, ASCII punctuation and the articles a, an,
	// the dropped, whitespace collapsed), as whole words.
	GroundingNormalized = "normalized"
	// GroundingNotFound: the answer is nowhere in the text, even
	// normalised (a paraphrase, or invented), or too long to search.
	GroundingNotFound = "not_found"
	// GroundingNoAnswer: there is no answer to look for (no \boxed{}
	// answer, or one that says it cannot answer; see docs/API.md).
	GroundingNoAnswer = "no_answer"
)

// Where a found answer was found (Grounding.FoundIn): GroundAnswer looks
// first where the memory took the answer from, then in the rest of the
// text.
const (
	// GroundingInPassage: in the passage of an evidence entry, the sentence
	// of a chunk that changed the memory.
	GroundingInPassage = "evidence_passage"
	// GroundingInChunk: in an evidence entry's chunk, outside its passage.
	GroundingInChunk = "evidence_chunk"
	// GroundingInText: in no evidence chunk, elsewhere in the text.
	GroundingInText = "text"
)

// MaxGroundingQuoteBytes bounds Grounding.Quote.
const MaxGroundingQuoteBytes = 240

// Grounding says whether, and where, an answer occurs in the text the
// document was read as. It is computed from the document's bytes by the
// GroundAnswer activity, never by the model. It looks where the memory
// took the answer from first: the passages of the evidence entries that
// still support the answer, latest first, then the other entries'
// passages, then those entries' chunks in the same order, and only then
// the whole text, from its start. The first of these places that holds
// the answer verbatim, else normalised, is the one reported (FoundIn says
// which). In a corpus, no occurrence and no quote crosses the header that
// opens a document (`=== Document N: name ===`), nor includes it.
type Grounding struct {
	// Status is GroundingVerbatim, GroundingNormalized, GroundingNotFound
	// or GroundingNoAnswer.
	Status string `json:"status"`
	// Start and End are the byte range [Start, End) of the occurrence in
	// the text (the converted text for a PDF, DOCX or HTML document); for
	// a normalised match, from the start of its first word to the end of
	// its last, punctuation attached to them included.
	Start int64 `json:"start,omitempty"`
	End   int64 `json:"end,omitempty"`
	// Pages are the page (or pages, or section) of a converted document
	// the occurrence is on.
	Pages *PageRef `json:"pages,omitempty"`
	// Document is the corpus document the occurrence is in, as the
	// caller named it; empty for a single document.
	Document string `json:"document,omitempty"`
	// FoundIn is where the occurrence was found: GroundingInPassage,
	// GroundingInChunk or GroundingInText; empty when not found, and on
	// groundings made before evidence was searched first.
	FoundIn string `json:"found_in,omitempty"`
	// Quote is the text around the occurrence, at most
	// MaxGroundingQuoteBytes of valid UTF-8: the occurrence with as much
	// context on either side as fits (its first bytes when it is longer),
	// all of it from the occurrence's document in a corpus, and from its
	// page (or section) of a converted document: a quote never crosses a
	// page boundary. Its context is cut at white space, so it starts and
	// ends on whole words. When the occurrence crosses a page boundary,
	// Quote is its part on the first page (Pages.First) and QuoteParts
	// holds every page's part.
	Quote string `json:"quote,omitempty"`
	// QuoteParts is set only when the occurrence crosses a page (or
	// section) boundary: one part a page it is on, in order, each cut
	// like Quote from its own page and citing that page. Quote is the
	// first part's text. Groundings made before parts existed have none.
	QuoteParts []QuotePart `json:"quote_parts,omitempty"`
}

// QuotePart is one page's part of a grounding quote that crosses a page
// boundary.
type QuotePart struct {
	// Text is the occurrence's part on the page with context from that
	// page only, at most MaxGroundingQuoteBytes of valid UTF-8, starting
	// and ending on whole words.
	Text string `json:"text"`
	// Pages is the page (or section) the part is on.
	Pages *PageRef `json:"pages,omitempty"`
}

// Found reports whether the answer occurs in the text.
func (g *Grounding) Found() bool {
	return g != nil && (g.Status == GroundingVerbatim || g.Status == GroundingNormalized)
}

// String renders g as the text output prints it, the quote on one line:
// `verbatim, p. 4: "the code is 7391-ALPHA."`, `not_found`; "" for nil.
func (g *Grounding) String() string {
	if g == nil {
		return ""
	}
	s := g.Status
	if g.Document != "" {
		s += ", " + SourceRef{Document: g.Document, Name: path.Base(g.Document), Pages: g.Pages}.String()
	} else if p := g.Pages.String(); p != "" {
		s += ", " + p
	}
	if len(g.QuoteParts) > 1 {
		s += ":"
		for _, p := range g.QuoteParts {
			s += ` "` + quoteLine(p.Text) + `"`
			if c := p.Pages.String(); c != "" {
				s += " (" + c + ")"
			}
		}
		return s
	}
	if g.Quote != "" {
		s += `: "` + quoteLine(g.Quote) + `"`
	}
	return s
}

// QuoteByPage is the quote as a cell of a table shows it: Quote, or for
// an occurrence across pages its parts a line each, each with the page it
// is on: "…the answer begins [p. 16]\nright here… [p. 17]"; "" for nil.
func (g *Grounding) QuoteByPage() string {
	if g == nil {
		return ""
	}
	if len(g.QuoteParts) < 2 {
		return g.Quote
	}
	lines := make([]string, len(g.QuoteParts))
	for i, p := range g.QuoteParts {
		lines[i] = p.Text
		if c := p.Pages.String(); c != "" {
			lines[i] += " [" + c + "]"
		}
	}
	return strings.Join(lines, "\n")
}

// quoteLine puts a quote on one line: runs of whitespace become one space.
func quoteLine(q string) string {
	out := make([]rune, 0, len(q))
	space := false
	for _, r := range q {
		switch r {
		case ' ', '\t', '\n', '\r', '\v', '\f':
			if !space && len(out) > 0 {
				out = append(out, ' ')
			}
			space = true
			continue
		}
		space = false
		out = append(out, r)
	}
	if len(out) > 0 && out[len(out)-1] == ' ' {
		out = out[:len(out)-1]
	}
	return string(out)
}

// Citation is where an answer is cited from, as GroundAnswer works it out
// from the answer's grounding and evidence: the places that hold the
// answer, the grounded one first, and apart from them the evidence that
// does not.
type Citation struct {
	// AnswerPages cites the pages (or sections) that hold the answer: the
	// grounding's first, then those of the evidence passages that hold
	// every content word of the answer (every word, for an answer that has
	// only stopwords), in document order. Empty for a text document.
	AnswerPages string `json:"answer_pages,omitempty"`
	// AnswerSources cites the same places by document, for a corpus.
	AnswerSources []SourceRef `json:"answer_sources,omitempty"`
	// ContextPages cites the pages of the evidence that supports the
	// answer (SupportsAnswer) without holding its words: what the memory
	// read on the way, not where the answer is.
	ContextPages string `json:"context_pages,omitempty"`
	// ContextSources cites the same places by document, for a corpus.
	ContextSources []SourceRef `json:"context_sources,omitempty"`
}
