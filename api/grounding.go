package api

import "path"

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

// MaxGroundingQuoteBytes bounds Grounding.Quote.
const MaxGroundingQuoteBytes = 240

// Grounding says whether, and where, an answer occurs in the text the
// document was read as. It is computed from the document's bytes by the
// GroundAnswer activity, never by the model: the first verbatim
// occurrence if there is one, else the first normalised one.
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
	// Quote is the text around the occurrence, at most
	// MaxGroundingQuoteBytes of valid UTF-8: the occurrence with as much
	// context on either side as fits (its first bytes when it is longer).
	Quote string `json:"quote,omitempty"`
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
	if g.Quote != "" {
		s += `: "` + quoteLine(g.Quote) + `"`
	}
	return s
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
