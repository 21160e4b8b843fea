package activities

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/memagent/memagent/internal/contract"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/report"
)

// Activity names, registered explicitly so that renaming a Go method never
// breaks a running workflow history.
const (
	PrepareDocumentName = "memagent.PrepareDocument"
	UpdateMemoryName    = "memagent.UpdateMemory"
	AnswerName          = "memagent.Answer"
)

// Error types of the non-retryable (and a few retryable) ApplicationErrors
// the activities return. They are part of the wire format: callers match on
// them.
const (
	ErrBadInput         = "memagent.BadInput"
	ErrDocumentNotFound = "memagent.DocumentNotFound"
	ErrDocumentChanged  = "memagent.DocumentChanged"
	ErrPromptTooLong    = "memagent.PromptTooLong"
	ErrModelAuth        = "memagent.ModelAuth"
	ErrModelNotFound    = "memagent.ModelNotFound"
	ErrModelBadRequest  = "memagent.ModelBadRequest"
	// ErrForbidden is a document, manifest or output prefix outside what
	// the worker is configured to read or write, or an output prefix that
	// another workflow's outputs already occupy.
	ErrForbidden = "memagent.Forbidden"
	// ErrModelUnavailable is retryable: rate limits, 5xx, timeouts and
	// refused connections.
	ErrModelUnavailable = "memagent.ModelUnavailable"
)

// Defaults of ModelOptions, as in the MemAgent paper's setup.
const (
	DefaultChunkTokens     = 5000
	DefaultMemoryMaxTokens = 1024
	DefaultAnswerMaxTokens = 1024
	DefaultTemperature     = 0.7
	DefaultTopP            = 0.95
	// DefaultTokenizer is Qwen2.5's: the published MemAgent models are
	// Qwen2.5 models and the paper's chunk sizes are Qwen tokens.
	DefaultTokenizer = "qwen2.5"
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

// MaxQuestionBytes bounds a question; it is part of every prompt, so a long
// one eats the chunk budget.
const MaxQuestionBytes = 16 << 10

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

// CheckQuestion reports a question that can never be asked.
func CheckQuestion(q string) error {
	switch {
	case strings.TrimSpace(q) == "":
		return errors.New("question is empty: set question")
	case len(q) > MaxQuestionBytes:
		return fmt.Errorf("question is %d bytes, over the limit of %d: shorten it", len(q), MaxQuestionBytes)
	}
	return nil
}

// ModelOptions are the per-request knobs. Zero values mean the defaults; the
// pointers tell "not set" from an explicit zero.
type ModelOptions struct {
	// Model is the served model name; empty means the worker's default.
	Model string `json:"model,omitempty" contract:"maxlen=256"`
	// Tokenizer counts chunk tokens: "qwen2.5" (the default; also "qwen",
	// "qwen3"), "cl100k_base" (gpt-4, gpt-3.5) or "o200k_base" (gpt-4o,
	// gpt-4.1, gpt-5, the o-series).
	Tokenizer string `json:"tokenizer,omitempty"`
	// ChunkTokens is the size of one chunk in tokens; default 5000, at
	// least 64.
	ChunkTokens int `json:"chunk_tokens,omitempty" contract:"min=64,zero,max=1000000"`
	// MemoryMaxTokens bounds the memory (the update's max_tokens); default
	// 1024, at least 16.
	MemoryMaxTokens int `json:"memory_max_tokens,omitempty" contract:"min=16,zero,max=65536"`
	// AnswerMaxTokens is the final answer's max_tokens; default 1024.
	AnswerMaxTokens int `json:"answer_max_tokens,omitempty" contract:"min=0,max=65536"`
	// Temperature is the sampling temperature, within [0, 2]; default 0.7.
	Temperature *float32 `json:"temperature,omitempty" contract:"min=0,max=2"`
	// TopP is nucleus sampling's top_p, within (0, 1]; default 0.95.
	TopP *float32 `json:"top_p,omitempty" contract:"min=0,max=1"`
	// InvalidUTF8 is the policy for bytes that are not UTF-8: "reject"
	// (the default) fails the run before any model call; "replace" indexes
	// a copy with each invalid byte replaced by U+FFFD, and reports how many.
	InvalidUTF8 string `json:"invalid_utf8,omitempty" contract:"enum=reject|replace"`
}

// Policies for ModelOptions.InvalidUTF8.
const (
	InvalidUTF8Reject  = "reject"
	InvalidUTF8Replace = "replace"
)

// WithDefaults fills every unset field. It is deterministic and safe to call
// from workflow code.
func (o ModelOptions) WithDefaults() ModelOptions {
	if o.Tokenizer == "" {
		o.Tokenizer = DefaultTokenizer
	}
	if o.ChunkTokens == 0 {
		o.ChunkTokens = DefaultChunkTokens
	}
	if o.MemoryMaxTokens == 0 {
		o.MemoryMaxTokens = DefaultMemoryMaxTokens
	}
	if o.AnswerMaxTokens == 0 {
		o.AnswerMaxTokens = DefaultAnswerMaxTokens
	}
	if o.Temperature == nil {
		t := float32(DefaultTemperature)
		o.Temperature = &t
	}
	if o.TopP == nil {
		p := float32(DefaultTopP)
		o.TopP = &p
	}
	return o
}

// Validate reports the first option out of range, phrased as what to
// change: the ranges of the fields' contract tags (the schema's), then
// what the tags cannot say.
func (o ModelOptions) Validate() error {
	// workflowcheck flags the reflection contract.CheckIn walks the
	// options with; the check is a pure function of them.
	//workflowcheck:ignore
	if err := contract.CheckIn("options", o); err != nil {
		return err
	}
	if err := inference.CheckModelName(o.Model); err != nil {
		return fmt.Errorf("options.model: %w: name a model the server lists", err)
	}
	switch {
	case o.ChunkTokens < 0 || (o.ChunkTokens > 0 && o.ChunkTokens < 64):
		return fmt.Errorf("options.chunk_tokens (%d) must be at least 64: raise options.chunk_tokens", o.ChunkTokens)
	case o.MemoryMaxTokens < 0 || (o.MemoryMaxTokens > 0 && o.MemoryMaxTokens < 16):
		return fmt.Errorf("options.memory_max_tokens (%d) must be at least 16: raise options.memory_max_tokens", o.MemoryMaxTokens)
	case o.AnswerMaxTokens < 0:
		return fmt.Errorf("options.answer_max_tokens (%d) must be positive: raise options.answer_max_tokens", o.AnswerMaxTokens)
	case o.Temperature != nil && (*o.Temperature < 0 || *o.Temperature > 2):
		return fmt.Errorf("options.temperature (%g) must be within [0, 2]: set options.temperature within it, or leave it unset for %g", *o.Temperature, DefaultTemperature)
	case o.InvalidUTF8 != "" && o.InvalidUTF8 != InvalidUTF8Reject && o.InvalidUTF8 != InvalidUTF8Replace:
		return fmt.Errorf("options.invalid_utf8 (%q) must be %q or %q", o.InvalidUTF8, InvalidUTF8Reject, InvalidUTF8Replace)
	case o.TopP != nil && (*o.TopP <= 0 || *o.TopP > 1):
		return fmt.Errorf("options.top_p (%g) must be within (0, 1]: set options.top_p within it, or leave it unset for %g", *o.TopP, DefaultTopP)
	}
	return nil
}

// Usage sums the tokens the model server reported.
type Usage struct {
	Calls            int   `json:"calls"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	CachedTokens     int64 `json:"cached_tokens,omitempty"`
	// RepeatedCalls counts the calls (within Calls) that repeated one
	// already made: a retry whose earlier attempt's completion was lost
	// before it could be kept.
	RepeatedCalls int `json:"repeated_calls,omitempty"`
}

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		Calls:            u.Calls + v.Calls,
		PromptTokens:     u.PromptTokens + v.PromptTokens,
		CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		CachedTokens:     u.CachedTokens + v.CachedTokens,
		RepeatedCalls:    u.RepeatedCalls + v.RepeatedCalls,
	}
}

// PrepareInput asks for a document's chunk index.
type PrepareInput struct {
	// Document is an s3:// URI.
	Document string       `json:"document"`
	Question string       `json:"question"`
	Options  ModelOptions `json:"options"`
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
	Document string       `json:"document"`
	ETag     string       `json:"etag"`
	IndexURI string       `json:"index_uri"`
	Chunk    int          `json:"chunk"`
	Chunks   int          `json:"chunks"`
	Question string       `json:"question"`
	Memory   string       `json:"memory"`
	Options  ModelOptions `json:"options"`
	// TracePrefix is the s3:// prefix under which chunks/NNNNNN.json is written.
	TracePrefix string `json:"trace_prefix"`
}

// UpdateOutput is the new memory and what it cost.
type UpdateOutput struct {
	Memory       string `json:"memory"`
	Chunk        int    `json:"chunk"`
	Start        int64  `json:"start"`
	End          int64  `json:"end"`
	ChunkTokens  int    `json:"chunk_tokens"`
	Usage        Usage  `json:"usage"`
	FinishReason string `json:"finish_reason"`
	// MemoryKept is true when the model returned no usable memory and the
	// previous one was carried forward.
	MemoryKept bool  `json:"memory_kept,omitempty"`
	LatencyMS  int64 `json:"latency_ms"`
	// Pages are the pages (or sections) of a converted document the chunk
	// came from.
	Pages *memagent.PageRef `json:"pages,omitempty"`
	// Evidence is set when the chunk changed the memory materially
	// (report.ReviewMaterialChange): the chunk, its pages, and the
	// passage the change came from.
	Evidence *report.ReviewEvidence `json:"evidence,omitempty"`
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
	Pages *memagent.PageRef `json:"pages,omitempty"`
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
	QAResult
	Completion string          `json:"completion"`
	Kept       *KeptCompletion `json:"kept,omitempty"`
	// PromptSHA256 is the hex SHA-256 of the final prompt as sent, as in
	// ChunkTrace.
	PromptSHA256 string `json:"prompt_sha256,omitempty"`
}

// AnswerInput asks for the final answer and carries the run's summary so the
// activity can write the complete result object.
type AnswerInput struct {
	Question    string       `json:"question"`
	Memory      string       `json:"memory"`
	GoldAnswers []string     `json:"gold_answers,omitempty"`
	Options     ModelOptions `json:"options"`
	// ResultURI is where the result JSON is written.
	ResultURI string `json:"result_uri"`
	// Result is the run summary so far; Answer fills in the answer fields.
	Result QAResult `json:"result"`
}

// QAResult is the outcome of one DocumentQA run, returned by the workflow and
// written to S3 as JSON.
type QAResult struct {
	WorkflowID string `json:"workflow_id"`
	// RunID is the run that produced this result (after continue-as-new
	// or a reset, not the first); FirstRunID the first run of its chain,
	// which names the default output prefix.
	RunID          string           `json:"run_id"`
	FirstRunID     string           `json:"first_run_id,omitempty"`
	Document       string           `json:"document"`
	DocumentSHA256 string           `json:"document_sha256"`
	Question       string           `json:"question"`
	Model          string           `json:"model"`
	Options        ModelOptions     `json:"options"`
	Answer         string           `json:"answer"`
	AnswerFound    bool             `json:"answer_found"`
	AnswerMethod   string           `json:"answer_method,omitempty"`
	GoldAnswers    []string         `json:"gold_answers,omitempty"`
	Scores         *memagent.Scores `json:"scores,omitempty"`
	Chunks         int              `json:"chunks"`
	Tokens         int64            `json:"tokens"`
	Bytes          int64            `json:"bytes"`
	Usage          Usage            `json:"usage"`
	Runs           int              `json:"runs"`
	FinalMemory    string           `json:"final_memory"`
	IndexURI       string           `json:"index_uri"`
	TracePrefix    string           `json:"trace_prefix"`
	ResultURI      string           `json:"result_uri"`
	StartedAt      time.Time        `json:"started_at"`
	FinishedAt     time.Time        `json:"finished_at"`
	// Source is the PDF, DOCX or HTML document asked about when Document
	// is the text converted from it; Format is its format.
	Source string `json:"source,omitempty"`
	Format string `json:"format,omitempty"`
	// Evidence lists, in document order, the chunks at which the memory
	// changed materially, with their pages and passages (at most
	// MaxEvidence; see report.ReviewPruneEvidence); SupportsAnswer marks
	// those the final memory still holds.
	Evidence []report.ReviewEvidence `json:"evidence,omitempty"`
	// AnswerPages cites the pages (or sections) of the evidence that
	// supports the answer: "p. 17", "pp. 3, 17", "§ 2 Access".
	AnswerPages string `json:"answer_pages,omitempty"`
}
