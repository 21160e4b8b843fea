package activities

import (
	"time"

	"github.com/memagent/memagent/api"
)

// Activity names, registered explicitly so that renaming a Go method never
// breaks a running workflow history.
const (
	PrepareDocumentName = "memagent.PrepareDocument"
	UpdateMemoryName    = "memagent.UpdateMemory"
	AnswerName          = "memagent.Answer"
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
	// ConvertTimeout bounds one conversion; default 10 minutes.
	ConvertTimeout time.Duration
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

// PrepareInput asks for a document's chunk index.
type PrepareInput struct {
	// Document is an s3:// URI.
	Document string           `json:"document"`
	Question string           `json:"question"`
	Options  api.ModelOptions `json:"options"`
	// OutputPrefix is the caller's output_prefix, if any: it is checked
	// against the worker's write prefixes and claimed for WorkflowID
	// before any model call.
	OutputPrefix string `json:"output_prefix,omitempty"`
	WorkflowID   string `json:"workflow_id,omitempty"`
	// FirstRunID is the first run of the workflow's chain: a claim is the
	// chain's, not every later workflow's that reuses the id.
	FirstRunID string `json:"first_run_id,omitempty"`
	// BatchChild is set by a DocumentQA run that a BatchQA started (the
	// workflow knows it from Temporal): only those write into the shared
	// answer cache.
	BatchChild bool `json:"batch_child,omitempty"`
	// Converted is set when Document is the text ConvertDocument made:
	// the index then keeps the page map, and the read check applies to
	// the converted source.
	Converted *ConvertOutput `json:"converted,omitempty"`
}

// PrepareOutput describes the prepared document. The chunk byte ranges stay
// in the index object; only its location enters workflow history.
type PrepareOutput struct {
	Document    string `json:"document"`
	ETag        string `json:"etag"`
	IndexURI    string `json:"index_uri"`
	SHA256      string `json:"sha256"`
	Bytes       int64  `json:"bytes"`
	Tokens      int64  `json:"tokens"`
	Chunks      int    `json:"chunks"`
	Tokenizer   string `json:"tokenizer"`
	ChunkTokens int    `json:"chunk_tokens"`
	// Model is the model name the worker resolved (the request's, or the
	// worker's default).
	Model string `json:"model"`
	// InvalidBytesReplaced counts the bytes replaced under the "replace"
	// UTF-8 policy; Document is then the cleaned copy.
	InvalidBytesReplaced int64 `json:"invalid_bytes_replaced,omitempty"`
	// Reused is true when an existing index for the same object version,
	// tokenizer and chunk size was found.
	Reused bool `json:"reused"`
	// Source is the PDF, DOCX or HTML document that Document was
	// converted from, Format its format, and Pages how many pages (Unit
	// "page") or sections (Unit "section") it has; empty for text.
	Source string `json:"source,omitempty"`
	Format string `json:"format,omitempty"`
	Unit   string `json:"unit,omitempty"`
	Pages  int    `json:"pages,omitempty"`
}

// UpdateInput asks for one chunk's memory update.
type UpdateInput struct {
	Document string           `json:"document"`
	ETag     string           `json:"etag"`
	IndexURI string           `json:"index_uri"`
	Chunk    int              `json:"chunk"`
	Chunks   int              `json:"chunks"`
	Question string           `json:"question"`
	Memory   string           `json:"memory"`
	Options  api.ModelOptions `json:"options"`
	// TracePrefix is the s3:// prefix under which chunks/NNNNNN.json is written.
	TracePrefix string `json:"trace_prefix"`
}

// UpdateOutput is the new memory and what it cost.
type UpdateOutput struct {
	Memory       string    `json:"memory"`
	Chunk        int       `json:"chunk"`
	Start        int64     `json:"start"`
	End          int64     `json:"end"`
	ChunkTokens  int       `json:"chunk_tokens"`
	Usage        api.Usage `json:"usage"`
	FinishReason string    `json:"finish_reason"`
	// MemoryKept is true when the model returned no usable memory and the
	// previous one was carried forward.
	MemoryKept bool  `json:"memory_kept,omitempty"`
	LatencyMS  int64 `json:"latency_ms"`
	// Pages are the pages (or sections) of a converted document the chunk
	// came from.
	Pages *api.PageRef `json:"pages,omitempty"`
	// Evidence is set when the chunk changed the memory materially
	// (report.ReviewMaterialChange): the chunk, its pages, and the
	// passage the change came from.
	Evidence *api.ReviewEvidence `json:"evidence,omitempty"`
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

// AnswerInput asks for the final answer and carries the run's summary so the
// activity can write the complete result object.
type AnswerInput struct {
	Question    string           `json:"question"`
	Memory      string           `json:"memory"`
	GoldAnswers []string         `json:"gold_answers,omitempty"`
	Options     api.ModelOptions `json:"options"`
	// ResultURI is where the result JSON is written.
	ResultURI string `json:"result_uri"`
	// Result is the run summary so far; Answer fills in the answer fields.
	Result api.DocumentQAResult `json:"result"`
}
