package activities

import (
	"time"

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
	// Email's limits (docconv.Limits' MaxMessages, MaxMessageBytes,
	// MaxParts, MaxMIMEDepth, MaxPartBytes, MaxHeaderBytes): messages in
	// one mailbox (default 100,000; a mailbox with more is refused as
	// memagent.BadInput), and per message its bytes (256 MiB), its MIME
	// parts (1,000), its nesting of multiparts and forwarded messages
	// (16), one part's decoded bytes (64 MiB) and its header block's
	// bytes (256 KiB): a message over one is skipped and reported in the
	// text and the page map, the mailbox's other messages read. A
	// mailbox converted under limits other than the defaults is stored
	// apart (emailVariant), so that changed limits convert it again.
	EmailMaxMessages     int
	EmailMaxMessageBytes int64
	EmailMaxParts        int
	EmailMaxDepth        int
	EmailMaxPartBytes    int64
	EmailMaxHeaderBytes  int64
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

// ChunkTrace is the per-chunk record written to S3 (actwire's: the
// rollout export reads it without the activities).
type ChunkTrace = actwire.ChunkTrace

// StoredResult is result.json (actwire's).
type StoredResult = actwire.StoredResult
