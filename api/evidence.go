package api

// MaxEvidence bounds the evidence kept per question, of a DocumentQA run
// or of a review: past it, the entry the current memory holds least (the
// oldest on a tie) goes.
const MaxEvidence = 32

// Evidence is one chunk at which a question's memory changed materially,
// in a DocumentQA result or a review's row.
type Evidence struct {
	// Chunk is the chunk's index among the chunks the run read, from 0,
	// in reading order.
	Chunk int `json:"chunk"`
	// Document is the corpus document the entry's passage (else its
	// chunk's start) is in, as the caller named it; empty for a single
	// document.
	Document string `json:"document,omitempty"`
	// Start and End are the chunk's byte range [Start, End) in the
	// document.
	Start int64 `json:"start"`
	End   int64 `json:"end"`
	// Passage is the sentence of the chunk that best accounts for the
	// change, when one was found. A sentence ends at a line break at the
	// latest, so a passage is on one page; one over 1 KiB is narrowed
	// around its first new word at white space, to whole words.
	Passage *EvidencePassage `json:"passage,omitempty"`
	// Added are new content words the chunk brought into the memory:
	// words of the memory after the chunk that the memory before it
	// lacked, stopwords and case aside, distinct and lowercased, those
	// with a digit or capitalised inside a sentence first, a few at most.
	// They are the entry's fingerprint.
	Added []string `json:"added,omitempty"`
	// SupportsAnswer reports that the final memory, from which the answer
	// was given, still holds at least half of Added.
	SupportsAnswer bool `json:"supports_answer"`
	// Pages are the pages (or sections) of a converted document the chunk
	// came from.
	Pages *PageRef `json:"pages,omitempty"`
}

// EvidencePassage is a byte range [Start, End) of the document and, in the
// written report only, its text.
type EvidencePassage struct {
	Start int64  `json:"start"`
	End   int64  `json:"end"`
	Text  string `json:"text,omitempty"`
	// Pages are the page (or pages, or section) of a converted document
	// the passage is on.
	Pages *PageRef `json:"pages,omitempty"`
}

// Cite is where an evidence entry is in the source: its passage's pages,
// or else its chunk's; "" for a text document.
func (e Evidence) Cite() string {
	if e.Passage != nil && e.Passage.Pages != nil {
		return e.Passage.Pages.String()
	}
	return e.Pages.String()
}
