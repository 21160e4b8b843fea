package actwire

import (
	"time"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/memagent"
)

// ExpandInput asks ExpandManifest to check a manifest and cut it into pages.
type ExpandInput struct {
	// Manifest is the manifest's s3:// URI.
	Manifest string `json:"manifest"`
	// Format is "jsonl", "memagent" or empty (detected from the content).
	Format string `json:"format,omitempty"`
	// ReportPrefix is the report's s3:// prefix; empty means
	// s3://<worker bucket>/batches/<WorkflowID>/.
	ReportPrefix string `json:"report_prefix,omitempty"`
	// Dated, when set, is appended to the prefix as a folder (the batch's
	// UTC start time, 2006-01-02T150405Z).
	Dated string `json:"dated,omitempty"`
	// WorkflowID names the default report prefix; RunKey (the batch's first
	// run id) separates the working files of two batches that share a prefix.
	WorkflowID string `json:"workflow_id"`
	RunKey     string `json:"run_key"`
	// ScheduleID is the Temporal Schedule that started the batch (its
	// TemporalScheduledById, which only Temporal sets), "" otherwise: such
	// a run claims its dated prefix inside the schedule's report prefix,
	// and compares with the schedule's earlier reports there.
	ScheduleID string `json:"schedule_id,omitempty"`
	// PageSize is how many items go in one page; default 100.
	PageSize int `json:"page_size,omitempty"`
	// Options are the batch's model options; the worker resolves the model.
	Options api.ModelOptions `json:"options"`
	// Samples is how many times each item is answered (0 means 1); pages
	// hold proportionally fewer items, so that a page's runs stay as small
	// in history as without samples.
	Samples int `json:"samples,omitempty"`
	// CompareWith is the input's compare_with, checked against the
	// worker's read prefixes before any item runs.
	CompareWith string `json:"compare_with,omitempty"`
}

// ExpandOutput describes an expanded manifest. The items themselves stay
// in S3, in pages <WorkPrefix>items/000000.jsonl, …; only counts and
// locations enter workflow history.
type ExpandOutput struct {
	Format string `json:"format"`
	Items  int    `json:"items"`
	Pages  int    `json:"pages"`
	// Contexts counts the distinct contexts of a MemAgent manifest and
	// ContextsWritten those that were not in the bucket yet.
	Contexts        int `json:"contexts,omitempty"`
	ContextsWritten int `json:"contexts_written,omitempty"`
	// ReportPrefix is the resolved report prefix (ending in /), WorkPrefix
	// the prefix of the batch's working files (pages and result parts).
	ReportPrefix string `json:"report_prefix"`
	WorkPrefix   string `json:"work_prefix"`
	// Model is the model the items are answered with: the options' model,
	// or the worker's default.
	Model string `json:"model"`
	// PoolCapacity is how many model requests the expanding worker's pool
	// serves at once (endpoints × in-flight cap), 0 when unknown; a batch
	// without a concurrency sizes its window from it.
	PoolCapacity int `json:"pool_capacity,omitempty"`
}

// ResolvePageInput asks ResolveBatchPage which items of a page need a run.
type ResolvePageInput struct {
	WorkPrefix string `json:"work_prefix"`
	Page       int    `json:"page"`
	// Options carry the resolved model.
	Options api.ModelOptions `json:"options"`
	// Samples is how many times each item is answered (0 means 1).
	Samples int `json:"samples,omitempty"`
	// Whole says that no earlier answer is reused: every item and sample
	// is returned to run (api.BatchQAInput.ReadsWhole).
	Whole bool `json:"whole,omitempty"`
}

// BatchRunItem is a batch item that needs a DocumentQA run.
type BatchRunItem struct {
	Seq int `json:"seq"`
	// Sample is which of the item's samples this run is, from 0.
	Sample   int    `json:"sample,omitempty"`
	ID       string `json:"id"`
	Document string `json:"document"`
	// Documents is the item's corpus, set instead of Document; the child's
	// DocumentQAInput.Documents.
	Documents   []string          `json:"documents,omitempty"`
	Question    string            `json:"question"`
	GoldAnswers []string          `json:"gold_answers,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	// OutputPrefix is the item's place in the answer cache,
	// s3://<bucket>/answers/<answer key>/, where a later batch finds the
	// answer (the key of a sample after the first includes its index, so
	// samples never reuse each other's answers). The batch writes the
	// entry once it has settled the item from its own child; the child
	// writes under its own run's prefix (workers from before this wrote
	// the child's outputs here).
	OutputPrefix string `json:"output_prefix"`
	// Bytes is the item's size as JSON, for the workflow to bound the
	// outcomes it buffers.
	Bytes int `json:"bytes,omitempty"`
	// FairnessKey is the manifest item's own fairness key, if any.
	FairnessKey string `json:"fairness_key,omitempty"`
	// DocumentBytes is the document's size (a corpus's, the sum of its
	// documents' sizes); a page's items to run come
	// longest first, so the long documents do not make the batch's tail.
	DocumentBytes int64 `json:"document_bytes,omitempty"`
}

// ResolvePageOutput splits a page: the items that need a run, and the
// counts of those settled at once (reused answers, missing documents), whose
// outcomes were written to Part.
type ResolvePageOutput struct {
	Run    []BatchRunItem `json:"run,omitempty"`
	Reused int            `json:"reused"`
	Failed int            `json:"failed"`
	// Part is the s3:// URI of the settled items' outcomes (JSON Lines of
	// BatchItemResult), or empty when there were none.
	Part string `json:"part,omitempty"`
}

// WriteResultsInput asks WriteBatchResults to store outcomes as one part.
type WriteResultsInput struct {
	// URI is the part's s3:// URI; a retry overwrites it.
	URI     string                `json:"uri"`
	Results []api.BatchItemResult `json:"results"`
	// Answers are the answer-cache entries of the answered outcomes: the
	// batch settled each from its own child, so only a batch writes the
	// cache.
	Answers []AnswerEntry `json:"answers,omitempty"`
}

// AnswerEntry puts an answer a batch settled in the answer cache: the
// child's result.json, copied to Prefix (s3://<bucket>/answers/<key>/)
// unless an entry is there already.
type AnswerEntry struct {
	Prefix    string `json:"prefix"`
	ResultURI string `json:"result_uri"`
}

// ReportInput asks WriteBatchReport to assemble the report from the parts.
type ReportInput struct {
	Name       string           `json:"name"`
	WorkflowID string           `json:"workflow_id"`
	Manifest   string           `json:"manifest"`
	Model      string           `json:"model"`
	Options    api.ModelOptions `json:"options"`
	StartedAt  time.Time        `json:"started_at"`
	// ReportPrefix is where the report goes (ending in /).
	ReportPrefix string `json:"report_prefix"`
	// RunID is the batch run writing the report. A report.json of another
	// run already under ReportPrefix (a reset, or a re-run of the same id)
	// is kept, and this report goes under ReportPrefix + runs/<RunID>/.
	RunID string `json:"run_id,omitempty"`
	// Parts are the s3:// URIs of the outcome parts, in any order.
	Parts []string `json:"parts"`
	// Items is how many items the manifest has; an item missing from the
	// parts fails the activity.
	Items int `json:"items"`
	// Samples is how many times each item was answered (0 means 1); every
	// sample of every item must have an outcome.
	Samples int `json:"samples,omitempty"`
	// CompareWith compares the report with an earlier one (changes.json):
	// an s3:// report prefix, or api.CompareWithPrevious for the latest
	// earlier dated folder beside ReportPrefix. Empty compares with none.
	CompareWith string `json:"compare_with,omitempty"`
	// CompareAuto says the batch compares because a Schedule started it,
	// not because its caller asked: an earlier report it may not read (or
	// a store that cannot list) then means no comparison, not a failure.
	CompareAuto bool `json:"compare_auto,omitempty"`
	// Validation, the batch's validation gate, writes the report
	// provisional (BatchReport.Validation).
	Validation *api.ValidationGate `json:"validation,omitempty"`
}

// NotifyInput is a batch's change notification and where to POST it.
type NotifyInput struct {
	// URL is the input's notify_url; it may hold a token, so it is never
	// logged.
	URL          string                 `json:"url"`
	Notification api.ChangeNotification `json:"notification"`
	// IdempotencyKey is the POST's Idempotency-Key header; empty, the
	// batch's own "<workflow id>/<run id>". A gated report's marking is
	// notified under GateNotifyKey, so that a receiver that drops repeats
	// by key keeps both.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// BatchNotification is the notification of run runID of the batch whose
// result is res: the batch's own as it completes, and a gated report's
// once a validation marks it (res.Validation then the marked state).
func BatchNotification(res api.BatchQAResult, runID string) api.ChangeNotification {
	return api.ChangeNotification{
		Name: res.Name, WorkflowID: res.WorkflowID, RunID: runID,
		ReportURI: res.ReportURI, HTMLURI: res.HTMLURI, Items: res.Items,
		Succeeded: res.Succeeded, Failed: res.Failed, Skipped: res.Skipped, Changes: res.Changes, Validation: res.Validation,
	}
}

// GateNotifyKey is the Idempotency-Key of the notification of a gated
// report's marking: one a batch run, whichever validation marks it and
// however often the POST is tried.
func GateNotifyKey(n api.ChangeNotification) string {
	return n.WorkflowID + "/" + n.RunID + "/validation"
}

// CorpusInput asks AssembleCorpus for one stream of text made of
// documents, in order.
type CorpusInput struct {
	Documents []string `json:"documents"`
	// InvalidUTF8 is the run's option of that name: "replace" replaces a
	// text document's invalid bytes instead of refusing it.
	InvalidUTF8 string `json:"invalid_utf8,omitempty"`
	// OCR and OCRLanguages are the run's options of those names, for
	// each document.
	OCR          string `json:"ocr,omitempty"`
	OCRLanguages string `json:"ocr_languages,omitempty"`
}

// FormatCorpus is the ConvertOutput.Format of a corpus assembled into one
// stream; its PageMapURI is then the corpus map.
const FormatCorpus = "corpus"

// ConvertInput asks for a document as text.
type ConvertInput struct {
	// Document is the s3:// URI asked about.
	Document string `json:"document"`
	// OCR and OCRLanguages are the run's options of those names
	// (api.ModelOptions): which pages of a PDF OCR reads, in which
	// languages. Empty (as from a workflow before them) is auto in eng.
	OCR          string `json:"ocr,omitempty"`
	OCRLanguages string `json:"ocr_languages,omitempty"`
	// Survey asks only how many pages OCR would read (for Estimate):
	// unless the document was converted already, its scanned pages are
	// counted, not read, and the text is that of its other pages, stored
	// apart from conversions (ConvertOutput.OCRPending).
	Survey bool `json:"survey,omitempty"`
}

// ConvertProgress is what ConvertDocument heartbeats: pages laid out of
// the document's, then pages read by OCR of those to read.
type ConvertProgress struct {
	PagesRead int64 `json:"pages_read"`
	Pages     int64 `json:"pages"`
	OCRDone   int   `json:"ocr_done,omitempty"`
	OCRPages  int   `json:"ocr_pages,omitempty"`
}

// ConvertOutput says what to index. For a text document it names the
// document itself and nothing is written.
type ConvertOutput struct {
	// Document is what to index: the converted text, or the document
	// itself when it is text.
	Document string `json:"document"`
	// Format is the document's format by content: "text", "pdf", "docx"
	// or "html".
	Format string `json:"format"`
	// Source and SourceETag are the converted document and the version
	// converted; empty for text.
	Source     string `json:"source,omitempty"`
	SourceETag string `json:"source_etag,omitempty"`
	// PageMapURI is the stored ConvertedDocument, with the page map.
	PageMapURI string `json:"page_map_uri,omitempty"`
	// Unit is "page" (PDF) or "section" (DOCX, HTML); Pages counts them.
	Unit  string `json:"unit,omitempty"`
	Pages int    `json:"pages,omitempty"`
	// Bytes is the length of the converted text.
	Bytes int64 `json:"bytes,omitempty"`
	// Reused is true when an earlier conversion of the same version was
	// found and nothing was converted.
	Reused bool `json:"reused,omitempty"`
	// OCRPages counts the pages read by OCR, OCRSeconds the engine's time
	// on them, OCRCheckPages those a human should check (low confidence,
	// or unreadable).
	OCRPages      int     `json:"ocr_pages,omitempty"`
	OCRSeconds    float64 `json:"ocr_seconds,omitempty"`
	OCRCheckPages []int   `json:"ocr_check_pages,omitempty"`
	// OCRNotRead are the pages OCR did not read because the document's
	// OCR budget (MEMAGENT_OCR_BUDGET) ran out first: the text says so in
	// their place. They are among OCRCheckPages too.
	OCRNotRead []int `json:"ocr_not_read,omitempty"`
	// OCRPending counts, for a survey (ConvertInput.Survey), the pages
	// OCR would read, whose text is not in Document; OCRCached those of
	// them an earlier conversion read already; OCRSecondsExpected the
	// time the others would take on the surveying worker.
	OCRPending         int     `json:"ocr_pending,omitempty"`
	OCRCached          int     `json:"ocr_cached,omitempty"`
	OCRSecondsExpected float64 `json:"ocr_seconds_expected,omitempty"`
}

// ConvertedDocument is pages.json, written beside the converted text
// once the text is in place: its presence means the conversion is done.
type ConvertedDocument struct {
	Source      string           `json:"source"`
	SourceETag  string           `json:"source_etag"`
	SourceSize  int64            `json:"source_size"`
	Converter   string           `json:"converter"`
	Text        string           `json:"text"`
	TextETag    string           `json:"text_etag"`
	Bytes       int64            `json:"bytes"`
	Dropped     int              `json:"dropped_lines"`
	PageMap     memagent.PageMap `json:"page_map"`
	ConvertedAt time.Time        `json:"converted_at"`
}

// ReviewUpdateOutput is UpdateMemory's output and how the memory changed.
type ReviewUpdateOutput struct {
	UpdateOutput
	// Material reports that the chunk changed the memory materially
	// (report.MaterialChange, rule report.EvidenceRule).
	Material bool `json:"material"`
	// Added are the new content words, when Material: the evidence
	// entry's fingerprint.
	Added []string `json:"added,omitempty"`
	// Passage is the chunk's sentence that best accounts for the change,
	// as a byte range of the document, when Material and one was found.
	Passage *api.EvidencePassage `json:"passage,omitempty"`
	// Document is the corpus document of the change, when Material.
	Document string `json:"document,omitempty"`
}

// WriteReviewInput asks for a review's grid and report.
type WriteReviewInput struct {
	// Grid is written as it is, with each evidence passage's text added;
	// its JSONURI, CSVURI and HTMLURI say where.
	Grid api.ReviewGrid `json:"grid"`
	// ETag pins the passage reads to the document version the review read.
	ETag string `json:"etag"`
}

// WriteReviewOutput says where the grid and report were written.
type WriteReviewOutput struct {
	JSONURI string `json:"json_uri"`
	CSVURI  string `json:"csv_uri"`
	HTMLURI string `json:"html_uri"`
	// Passages is how many distinct passages were read for the report.
	Passages int `json:"passages"`
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
	// BatchChild is set by a DocumentQA run that has a parent workflow. It
	// grants nothing: no run writes into the answer cache (a batch writes
	// its entries itself, from the answers it settled).
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
	// Checkpoint asks for the memory after the chunk to be kept as a
	// checkpoint for later runs (FindCheckpoint), keyed with Sample.
	Checkpoint bool `json:"checkpoint,omitempty"`
	Sample     int  `json:"sample,omitempty"`
	// EvidenceChunks are the chunks of the run's evidence entries before
	// this chunk, and EvidenceDropped how many it dropped: kept in the
	// checkpoint, so that a run starting there rebuilds its evidence from
	// those chunks' checkpoints alone.
	EvidenceChunks  []int `json:"evidence_chunks,omitempty"`
	EvidenceDropped int   `json:"evidence_dropped,omitempty"`
	// FirstRunID is the reading workflow's chain (its first run id), kept
	// in the checkpoint: FindCheckpoint names the reading that wrote a
	// checkpoint only to the same chain.
	FirstRunID string `json:"first_run_id,omitempty"`
}

// FindCheckpointInput asks for the deepest memory checkpoint of the
// chunks of a prepared document (its PrepareOutput's document, ETag and
// index) for a question.
type FindCheckpointInput struct {
	Document string           `json:"document"`
	ETag     string           `json:"etag"`
	IndexURI string           `json:"index_uri"`
	Question string           `json:"question"`
	Options  api.ModelOptions `json:"options"`
	Sample   int              `json:"sample,omitempty"`
	// FirstRunID is the reading workflow's chain (its first run id).
	FirstRunID string `json:"first_run_id,omitempty"`
}

// FindCheckpointOutput is where a run can start: after Chunks chunks, with
// Memory and the evidence of those chunks, cited in the reader's own
// document or corpus; Chunks is 0 when there is no checkpoint. WorkflowID
// and RunID name the run that wrote it only when it is of the reader's own
// chain (FindCheckpointInput.FirstRunID): another reading of the same text
// may be another caller's.
type FindCheckpointOutput struct {
	Chunks          int            `json:"chunks"`
	Memory          string         `json:"memory,omitempty"`
	WorkflowID      string         `json:"workflow_id,omitempty"`
	RunID           string         `json:"run_id,omitempty"`
	Evidence        []api.Evidence `json:"evidence,omitempty"`
	EvidenceDropped int            `json:"evidence_dropped,omitempty"`
	// Tokens is how many tokens the reused chunks hold (0 from a worker
	// from before it was told).
	Tokens int64 `json:"tokens,omitempty"`
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
	// (report.MaterialChange): the chunk, its pages, and the
	// passage the change came from.
	Evidence *api.Evidence `json:"evidence,omitempty"`
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
	// KeepAnswer asks Answer to keep the answer beside the memory
	// checkpoints, for a later reading that reaches the same memory;
	// ReuseAnswer to take such a kept answer, when there is one, instead
	// of calling the model (the result then has AnswerReused and no
	// call). A run sets ReuseAnswer only when it reused every chunk.
	KeepAnswer  bool `json:"keep_answer,omitempty"`
	ReuseAnswer bool `json:"reuse_answer,omitempty"`
}

// EstimateCostInput asks the EstimateCost activity to price the questions
// over a prepared document: the prompts' fixed part is counted with the
// worker's templates and tokenizer.
type EstimateCostInput struct {
	Questions []string         `json:"questions"`
	Options   api.ModelOptions `json:"options"`
	Samples   int              `json:"samples,omitempty"`
	Chunks    int              `json:"chunks"`
	Tokens    int64            `json:"tokens"`
	PriceIn   float64          `json:"price_in,omitempty"`
	PriceOut  float64          `json:"price_out,omitempty"`
	// Reuse is the estimate's reuse mode; with ReuseAuto and the prepared
	// document named (Document, ETag, IndexURI and the model it resolved
	// to), EstimateCost looks for checkpoints as the runs would.
	Reuse    string `json:"reuse,omitempty"`
	Document string `json:"document,omitempty"`
	ETag     string `json:"etag,omitempty"`
	IndexURI string `json:"index_uri,omitempty"`
	Model    string `json:"model,omitempty"`
	// OCRPending counts the document's pages that OCR has still to read
	// (ConvertOutput.OCRPending): their tokens are estimated at
	// api.OCRTokensPerPage each.
	OCRPending int `json:"ocr_pending,omitempty"`
}

// GroundInput asks GroundAnswer where answers occur in the text a run
// read: the document and index of its PrepareOutput.
type GroundInput struct {
	Document string `json:"document"`
	ETag     string `json:"etag"`
	IndexURI string `json:"index_uri"`
	// Answers are grounded in one reading of the document.
	Answers []GroundItem `json:"answers"`
	// RunID is the run whose result.json objects get the grounding: one
	// that names another run is left as it is.
	RunID string `json:"run_id,omitempty"`
}

// GroundItem is one answer to ground.
type GroundItem struct {
	Answer      string `json:"answer"`
	AnswerFound bool   `json:"answer_found"`
	// ResultURI, when set, is the answer's result.json, which gets the
	// grounding too (so that a batch reusing the answer has it).
	ResultURI string `json:"result_uri,omitempty"`
	// Evidence is where the answer's memory took it from: its evidence
	// entries, in document order. GroundAnswer looks there first, and
	// cites the answer from them.
	Evidence []GroundEvidence `json:"evidence,omitempty"`
}

// GroundEvidence is one evidence entry of an answer, by its byte ranges
// alone (the entry's pages come from the index again).
type GroundEvidence struct {
	// Start and End are the chunk's range; PassageStart and PassageEnd
	// its passage's, both 0 when it has none.
	Start        int64 `json:"start"`
	End          int64 `json:"end"`
	PassageStart int64 `json:"passage_start,omitempty"`
	PassageEnd   int64 `json:"passage_end,omitempty"`
	// Supports is the entry's SupportsAnswer.
	Supports bool `json:"supports,omitempty"`
}

// GroundEvidenceOf is the GroundEvidence of entries.
func GroundEvidenceOf(entries []api.Evidence) []GroundEvidence {
	out := make([]GroundEvidence, 0, len(entries))
	for _, e := range entries {
		g := GroundEvidence{Start: e.Start, End: e.End, Supports: e.SupportsAnswer}
		if e.Passage != nil {
			g.PassageStart, g.PassageEnd = e.Passage.Start, e.Passage.End
		}
		out = append(out, g)
	}
	return out
}

// GroundOutput is one grounding per answer, in order, and as many
// citations (none from a worker that predates them).
type GroundOutput struct {
	Groundings []api.Grounding `json:"groundings"`
	Citations  []api.Citation  `json:"citations,omitempty"`
}

// VerifyRunInput asks VerifyContinuedRun whether the run the calling run
// continued from is memagent's own: PreviousRunID is the calling run's
// ContinuedExecutionRunID, as Temporal set it. Who asks (workflow id,
// type, task queue) comes from the activity's own info, never the input.
type VerifyRunInput struct {
	PreviousRunID string `json:"previous_run_id"`
}

// PrepareReadingInput asks PrepareReading for the steps before a reading's
// first chunk, back to back in one activity (LeanItemChange): the document
// converted (ConvertDocument's step) or the corpus assembled
// (AssembleCorpus's), then indexed (PrepareDocument's), then the deepest
// checkpoint found (FindCheckpoint's). Each step does what its own
// activity does, with the input the workflow would have given it.
type PrepareReadingInput struct {
	// Prepare is PrepareDocument's input; its Document and Converted are
	// replaced by the conversion's, as the workflow would.
	Prepare PrepareInput `json:"prepare"`
	// Convert asks for ConvertDocument's step first (a single document,
	// with Prepare's document and OCR options).
	Convert bool `json:"convert,omitempty"`
	// Corpus, when set, asks for AssembleCorpus's step first instead.
	Corpus *CorpusInput `json:"corpus,omitempty"`
	// Find, when set, asks for FindCheckpoint's step last: its question,
	// options, sample and chain; the document, ETag and index are the
	// index step's, and the model the one it resolved when Options name
	// none.
	Find *FindCheckpointInput `json:"find,omitempty"`
}

// PrepareReadingOutput is what each step returned: the conversion (nil
// when none ran), the prepared document, and the checkpoint (nil when
// Find was not asked).
type PrepareReadingOutput struct {
	Converted  *ConvertOutput        `json:"converted,omitempty"`
	Prepared   PrepareOutput         `json:"prepared"`
	Checkpoint *FindCheckpointOutput `json:"checkpoint,omitempty"`
}

// AnswerGroundInput asks AnswerAndGround for the final answer (Answer's
// step) and then its grounding in the text the run read (GroundAnswer's
// step, for the one answer), in one activity (LeanItemChange).
type AnswerGroundInput struct {
	Answer AnswerInput `json:"answer"`
	// Document, ETag and IndexURI are the run's PrepareOutput's; the
	// grounding is written into the result of Answer.Result.RunID.
	Document string `json:"document"`
	ETag     string `json:"etag"`
	IndexURI string `json:"index_uri"`
}

// AnswerGroundOutput is the result, as Answer returns it, and the
// grounding of its answer, as GroundAnswer returns it; Ground is nil when
// grounding failed for good (the answer stands without it, as a run
// whose GroundAnswer failed keeps its answer).
type AnswerGroundOutput struct {
	Result api.DocumentQAResult `json:"result"`
	Ground *GroundOutput        `json:"ground,omitempty"`
}
