package activities

import (
	"time"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// Activity names, registered explicitly so that renaming a Go method never
// breaks a running workflow history.
const (
	PrepareDocumentName = actwire.PrepareDocumentName
	UpdateMemoryName    = actwire.UpdateMemoryName
	AnswerName          = actwire.AnswerName
)

// Limits bound what one request may ask for. Zero fields mean the defaults.
type Limits struct {
	// MaxDocumentBytes bounds the document object; default 4 GiB.
	MaxDocumentBytes int64
	// MaxChunks bounds the chunk count of one document; default 1,000,000
	// (5 billion tokens at the default chunk size).
	MaxChunks int
	// MaxConvertedBytes bounds the text converted from one PDF, DOCX or
	// HTML document; default 64 MiB.
	MaxConvertedBytes int64
	// PDFMemoryBytes bounds the WebAssembly memory of each PDFium instance
	// (a page whose layout needs more fails); default 64 MiB, enough for
	// the 2,415 pages of R's reference manual.
	PDFMemoryBytes int64
	// ConvertTimeout bounds one conversion; default 10 minutes, plus a
	// share of 30 s for each page read by OCR.
	ConvertTimeout time.Duration
	// OCRWorkers bounds the pages read by OCR at once, one engine process
	// each, across all documents; default GOMAXPROCS (the worker's share
	// of CPUs), at most 4. OCRPageTimeout bounds the engine on one page (default 2
	// minutes), OCRMemoryBytes its address space (default 512 MiB).
	OCRWorkers     int
	OCRPageTimeout time.Duration
	OCRMemoryBytes int64
	// OCRMaxPages bounds the pages of one document read by OCR (default
	// 500): a document with more is refused as memagent.BadInput before
	// any is read. OCRBudget bounds the time OCR spends on one document
	// (default 30 minutes): the pages not read by then are marked not
	// read in the converted text and the page map
	// (ConvertOutput.OCRNotRead).
	OCRMaxPages int
	OCRBudget   time.Duration
}

// withDefaults fills the zero fields.
func (l Limits) withDefaults() Limits {
	if l.MaxDocumentBytes <= 0 {
		l.MaxDocumentBytes = 4 << 30
	}
	if l.MaxChunks <= 0 {
		l.MaxChunks = 1_000_000
	}
	return l
}

// ChunkTrace is the per-chunk record written to S3. A retry overwrites it.
type ChunkTrace struct {
	Chunk            int       `json:"chunk"`
	Chunks           int       `json:"chunks"`
	Start            int64     `json:"start"`
	End              int64     `json:"end"`
	ChunkTokens      int       `json:"chunk_tokens"`
	Model            string    `json:"model"`
	PromptTokens     int       `json:"prompt_tokens"`
	CompletionTokens int       `json:"completion_tokens"`
	CachedTokens     int       `json:"cached_tokens,omitempty"`
	LatencyMS        int64     `json:"latency_ms"`
	FinishReason     string    `json:"finish_reason"`
	Attempt          int32     `json:"attempt"`
	MemoryKept       bool      `json:"memory_kept,omitempty"`
	MemoryAfter      string    `json:"memory_after"`
	WrittenAt        time.Time `json:"written_at"`
	// Pages are the pages (or sections) of a converted document the chunk
	// came from.
	Pages *api.PageRef `json:"pages,omitempty"`
	// Sources are the corpus documents the chunk spans, each with its
	// pages, when the run reads a corpus.
	Sources []api.SourceRef `json:"sources,omitempty"`
	// Calls is how many model calls this chunk's update took (more than 1
	// when a completion was lost and paid for again).
	Calls int `json:"calls,omitempty"`
	// Kept is the completion and the input it answered: a retry of the
	// same update reuses it instead of calling the model again.
	Kept *KeptCompletion `json:"kept,omitempty"`
	// PromptSHA256 is the hex SHA-256 of the prompt as sent (the one user
	// message's content), so that a prompt rebuilt from the template, the
	// question, the memory before this chunk and the chunk's bytes can be
	// proved equal to it (the rollout export does).
	PromptSHA256 string `json:"prompt_sha256,omitempty"`
}

// StoredResult is result.json: the result, the raw final completion, and
// the completion as kept for a retry of the same run, which reuses it
// instead of calling the model again.
type StoredResult struct {
	api.DocumentQAResult
	Completion string          `json:"completion"`
	Kept       *KeptCompletion `json:"kept,omitempty"`
	// PromptSHA256 is the hex SHA-256 of the final prompt as sent, as in
	// ChunkTrace.
	PromptSHA256 string `json:"prompt_sha256,omitempty"`
}
