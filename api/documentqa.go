package api

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/memagent/memagent/internal/contract"
)

// DocumentQAResult is the outcome of one DocumentQA run, returned by the workflow and
// written to S3 as JSON.
type DocumentQAResult struct {
	WorkflowID string `json:"workflow_id"`
	// RunID is the run that produced this result (after continue-as-new
	// or a reset, not the first); FirstRunID the first run of its chain,
	// which names the default output prefix.
	RunID          string       `json:"run_id"`
	FirstRunID     string       `json:"first_run_id,omitempty"`
	Document       string       `json:"document"`
	DocumentSHA256 string       `json:"document_sha256"`
	Question       string       `json:"question"`
	Model          string       `json:"model"`
	Options        ModelOptions `json:"options"`
	Answer         string       `json:"answer"`
	AnswerFound    bool         `json:"answer_found"`
	AnswerMethod   string       `json:"answer_method,omitempty"`
	GoldAnswers    []string     `json:"gold_answers,omitempty"`
	Scores         *Scores      `json:"scores,omitempty"`
	Chunks         int          `json:"chunks"`
	Tokens         int64        `json:"tokens"`
	Bytes          int64        `json:"bytes"`
	Usage          Usage        `json:"usage"`
	Runs           int          `json:"runs"`
	FinalMemory    string       `json:"final_memory"`
	IndexURI       string       `json:"index_uri"`
	TracePrefix    string       `json:"trace_prefix"`
	ResultURI      string       `json:"result_uri"`
	StartedAt      time.Time    `json:"started_at"`
	FinishedAt     time.Time    `json:"finished_at"`
	// Source is the PDF, DOCX or HTML document asked about when Document
	// is the text converted from it; Format is its format.
	Source string `json:"source,omitempty"`
	Format string `json:"format,omitempty"`
	// Evidence lists, in document order, the chunks at which the memory
	// changed materially, with their pages and passages (at most
	// MaxEvidence: past it, the entry the current memory holds least
	// is dropped); SupportsAnswer marks those the final memory still holds.
	Evidence []Evidence `json:"evidence,omitempty"`
	// AnswerPages cites the pages (or sections) that hold the answer, the
	// grounding's first (Citation.AnswerPages): "p. 17", "pp. 3, 17",
	// "p. 13 (PDF p. 17)" where the printed page label differs from the
	// physical page, "§ Access". A result from before grounding cites the
	// evidence that supports the answer instead.
	AnswerPages string `json:"answer_pages,omitempty"`
	// ContextPages cites the evidence that supports the answer without
	// holding its words (Citation.ContextPages).
	ContextPages string `json:"context_pages,omitempty"`
	// Grounding says whether and where the answer occurs in the
	// document's text; absent on results of runs from before grounding.
	Grounding *Grounding `json:"grounding,omitempty"`
	// Documents is the corpus asked about, in reading order, when the
	// input named documents; Document is then the stream read.
	Documents []string `json:"documents,omitempty"`
	// AnswerSources cites the places that hold the answer by document and
	// page, the grounding's first (Citation.AnswerSources); set for a
	// corpus only.
	AnswerSources []SourceRef `json:"answer_sources,omitempty"`
	// ContextSources cites ContextPages by document, for a corpus.
	ContextSources []SourceRef `json:"context_sources,omitempty"`
	// ChunksReused is how many chunks the run did not read because it
	// started from a memory checkpoint of an earlier reading of the same
	// chunks (see DocumentQAInput.Reuse). The evidence, pages and
	// answer_sources of the reused chunks cite this run's own document or
	// corpus. Usage counts only the calls this run made.
	ChunksReused int `json:"chunks_reused,omitempty"`
	// AnswerReused says the answer came with the reading too: every chunk
	// was reused and the answer an earlier reading gave from the same
	// memory was taken, with no call (ReviewDocument asks for it).
	AnswerReused bool `json:"answer_reused,omitempty"`
	// ReusedFrom names the reading the reused chunks come from only when
	// it was an earlier run of this workflow (reused_reading "own_run"):
	// another reading of the same text may be another caller's, whose
	// workflow id is not this caller's to learn.
	ReusedFrom *ReusedFrom `json:"reused_from,omitempty"`
	// ReusedReading says whose reading the reused chunks come from:
	// "own_run", an earlier run of this workflow, which ReusedFrom names,
	// or "earlier_reading", an earlier reading of the same text, which
	// nothing names. Absent when nothing was reused, and on results of
	// runs from before it.
	ReusedReading string `json:"reused_reading,omitempty" contract:"enum=own_run|earlier_reading"`
}

// Values of ReusedReading: whose reading a run's reused chunks come from.
const (
	// ReusedOwnRun is an earlier run of the same workflow (its chain),
	// which ReusedFrom names.
	ReusedOwnRun = "own_run"
	// ReusedEarlierReading is an earlier reading of the same text, by any
	// workflow, which nothing names.
	ReusedEarlierReading = "earlier_reading"
)

// ReusedReadingText says ReusedReading in words, for people.
func ReusedReadingText(reading string, from *ReusedFrom) string {
	if reading == ReusedOwnRun && from != nil {
		return fmt.Sprintf("this workflow's earlier run %s", from.RunID)
	}
	return "an earlier reading of the same text"
}

// ReusedFrom names the run of the reader's own workflow whose memory
// checkpoint a run started from.
type ReusedFrom struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	// Chunk is how many chunks the checkpoint had read.
	Chunk int `json:"chunk"`
}

// Reuse modes (DocumentQAInput.Reuse).
const (
	ReuseAuto = "auto"
	ReuseNone = "none"
)

// LeadDocument is the document a run is found by (MemagentDocument):
// document, or a corpus's first document.
func LeadDocument(document string, documents []string) string {
	if document == "" && len(documents) > 0 {
		return documents[0]
	}
	return document
}

// DocumentSubject names what a run reads, for summaries and tables:
// document, or a corpus's first document and how many follow
// ("s3://m/a.txt (+2 documents)").
func DocumentSubject(document string, documents []string) string {
	if document != "" || len(documents) <= 1 {
		return LeadDocument(document, documents)
	}
	return fmt.Sprintf("%s (+%d documents)", documents[0], len(documents)-1)
}

// MaxCorpusDocuments bounds DocumentQAInput.Documents.
const MaxCorpusDocuments = 1000

// CheckDocuments checks that exactly one of document and documents is set,
// and that each names an s3:// object.
func CheckDocuments(document string, documents []string) error {
	switch {
	case strings.TrimSpace(document) == "" && len(documents) == 0:
		return errors.New("document is empty and so is documents: set document to an s3:// URI, or documents to a list of them for a corpus")
	case document != "" && len(documents) > 0:
		return errors.New("document and documents are both set: set exactly one (documents for a corpus read as one stream)")
	case len(documents) > MaxCorpusDocuments:
		return fmt.Errorf("documents has %d entries, over %d: split the corpus", len(documents), MaxCorpusDocuments)
	}
	uris := documents
	field := "documents[%d]"
	if document != "" {
		uris, field = []string{document}, "document"
	}
	for i, u := range uris {
		name := field
		if document == "" {
			name = fmt.Sprintf(field, i)
		}
		rest, ok := strings.CutPrefix(u, "s3://")
		bucket, key, _ := strings.Cut(rest, "/")
		if len(u) > 1024 {
			return fmt.Errorf("%s is %d bytes, over the limit of 1024: shorten it", name, len(u))
		}
		if !ok || bucket == "" || key == "" || strings.HasSuffix(key, "/") {
			return fmt.Errorf("%s %q is not an s3:// URI of one object (s3://bucket/key)", name, u)
		}
	}
	return nil
}

// Names under which workflows, queries and the default task queue are
// registered. They are part of the wire format.
const (
	DocumentQAName   = "memagent.DocumentQA"
	ProgressQuery    = "progress"
	DefaultTaskQueue = "memagent"
)

// DocumentQAInput starts a DocumentQA run. It is JSON on the wire, so any
// Temporal client can start one.
type DocumentQAInput struct {
	// Document is an s3:// URI of UTF-8 text, or of a PDF, DOCX or HTML
	// document, converted to text first (see docs/DOCUMENTS.md). Exactly
	// one of Document and Documents is set.
	Document string `json:"document,omitempty" contract:"maxlen=1024"`
	// Documents is a corpus: s3:// URIs of documents (each text, PDF, DOCX
	// or HTML) read in this order as one stream, each opened by a header
	// line that names it; chunks may span documents, and citations name
	// the document (docs/CORPORA.md). At most MaxCorpusDocuments.
	Documents []string `json:"documents,omitempty" contract:"maxitems=1000"`
	// Reuse is ReuseAuto (the default: start from the deepest memory
	// checkpoint of an earlier reading of the same chunks with the same
	// question, prompts, model and options) or ReuseNone (read from the
	// first chunk; the run still leaves checkpoints for later runs).
	Reuse string `json:"reuse,omitempty" contract:"enum=auto|none"`
	// Sample is which independent sample of a rollout group this run is
	// (a batch sets it for samples > 1): checkpoints are kept per sample,
	// so that sample 2 never starts from sample 1's memory.
	Sample int `json:"sample,omitempty" contract:"min=0,max=64"`
	// Question is asked of the document; at most 16 KiB.
	Question string `json:"question" contract:"required,maxlen=16384"`
	// GoldAnswers, when given, are used to score the answer.
	GoldAnswers []string     `json:"gold_answers,omitempty" contract:"alias=answers"`
	Options     ModelOptions `json:"options"`
	// ChunksPerRun overrides DefaultChunksPerRun.
	ChunksPerRun int `json:"chunks_per_run,omitempty" contract:"min=0,max=10000"`
	// OutputPrefix overrides the s3:// prefix of traces and result
	// (default s3://<worker bucket>/runs/<workflow id>/<first run id>/).
	OutputPrefix string `json:"output_prefix,omitempty" contract:"maxlen=1024"`
	// HeartbeatTimeoutSeconds is how soon a worker that died mid-activity is
	// noticed and its activity retried elsewhere; default 15.
	HeartbeatTimeoutSeconds int `json:"heartbeat_timeout_seconds,omitempty" contract:"min=0,max=3600"`
	// BatchID, when set, labels the run as one of a batch: it becomes the
	// MemagentBatch search attribute, so a batch's runs can be listed.
	BatchID string `json:"batch_id,omitempty" contract:"maxlen=255"`
	// Priority orders this run's tasks on a shared task queue that is
	// backed up: 1 highest … 5 lowest; 0 means the priority the run was
	// started with, else 2 (a batch passes its own).
	Priority int `json:"priority,omitempty" contract:"min=0,max=5"`
	// FairnessKey shares the task queue fairly between keys of the same
	// priority (a tenant, a client, a matter); default the key the run was
	// started with. At most 64 bytes.
	FairnessKey string `json:"fairness_key,omitempty" contract:"maxlen=64"`
	// FairnessWeight is the key's share relative to other keys (default 1,
	// at most 1000): a key of weight 2 gets twice the tasks of a key of 1.
	FairnessWeight float64 `json:"fairness_weight,omitempty" contract:"min=0,max=1000"`
	// Budget bounds what the run may spend. A run whose document alone
	// exceeds max_tokens fails at once as memagent.OverBudget; a run that
	// reaches its budget stops before the call that would pass it,
	// keeping all it did, shows the status paused, and goes on when the
	// raise-budget Update raises it (or ends when canceled).
	Budget *Budget `json:"budget,omitempty"`
}

// Budget bounds a run's model calls and tokens (prompt and completion
// together); a zero field is no bound.
type Budget struct {
	// MaxCalls is the most model calls (memory updates and final
	// answers) the run may make; 0 is no bound.
	MaxCalls int `json:"max_calls,omitempty" contract:"min=0,max=100000000"`
	// MaxTokens is the most prompt and completion tokens, together, the
	// run may spend; 0 is no bound.
	MaxTokens int64 `json:"max_tokens,omitempty" contract:"min=0,max=1000000000000"`
}

// RaiseBudgetUpdate is the name of the Update that replaces a paused (or
// running) DocumentQA run's budget; its argument is the new Budget, which
// must not be below what the run has spent.
const RaiseBudgetUpdate = "raise-budget"

// BudgetRequestUpdate is the Update through which a batch's DocumentQA
// child that has spent its grant asks its batch for more (the activity
// memagent.RequestBatchBudget sends it, to the batch's own chain of runs);
// its argument is a BudgetRequest, its reply the child's grant. The batch
// reads the child's usage from the child run it started, never from the
// request, and answers only its own running children: a request from
// anyone else can neither raise a budget nor move one.
const BudgetRequestUpdate = "memagent.request-budget"

// BudgetRequestSignal and BudgetGrantSignal pass between memagent's own
// workflows and change nothing by their content. A batch takes
// BudgetRequestSignal (sent by children of workers from before
// BudgetRequestUpdate) as a wake-up: it reads the child's usage itself. A
// batch sends BudgetGrantSignal to a child that waited once it has granted
// it more; the child then asks again (BudgetRequestUpdate) and takes the
// grant from the reply, never from the signal (its argument, the grant, is
// for children of older workers).
const (
	BudgetRequestSignal = "memagent.budget-request"
	BudgetGrantSignal   = "memagent.budget-grant"
)

// BudgetRequest is a batch child's request for more budget: its workflow id
// and what it says it has spent (the batch reads the figure itself).
type BudgetRequest struct {
	WorkflowID string `json:"workflow_id"`
	Usage      Usage  `json:"usage"`
}

// StagePaused is the status of a run that reached its budget and waits
// for the raise-budget Update.
const StagePaused = "paused"

// Progress is what the progress query returns.
type Progress struct {
	Stage string `json:"stage"`
	// ChunksDone and TokensDone are how far the memory has come: the
	// chunks and tokens read in this reading or reused. Of them,
	// ChunksReused and TokensReused were taken from a memory checkpoint
	// of an earlier reading (DocumentQAInput.Reuse) and cost no call;
	// the rest were read. A worker from before TokensReused counted only
	// the tokens read in TokensDone.
	ChunksDone   int    `json:"chunks_done"`
	ChunksTotal  int    `json:"chunks_total"`
	TokensDone   int64  `json:"tokens_done"`
	TokensTotal  int64  `json:"tokens_total"`
	ChunksReused int    `json:"chunks_reused,omitempty"`
	TokensReused int64  `json:"tokens_reused,omitempty"`
	Run          int    `json:"run"`
	Usage        Usage  `json:"usage"`
	Memory       string `json:"memory"`
	Answer       string `json:"answer,omitempty"`
}

// Stages reported by Progress and, as the MemagentStatus search attribute,
// to visibility queries.
const (
	StagePreparing = "preparing"
	StageReading   = "reading"
	StageAnswering = "answering"
	StageDone      = "done"
	StageFailed    = "failed"
)

// Validate reports input that can never succeed.
func (in DocumentQAInput) Validate() error {
	// workflowcheck flags the reflection contract.Check walks the
	// input with; the check is a pure function of the input.
	//workflowcheck:ignore
	if err := contract.Check(in); err != nil {
		return err
	}
	if err := CheckDocuments(in.Document, in.Documents); err != nil {
		return err
	}
	if err := CheckQuestion(in.Question); err != nil {
		return err
	}
	if in.OutputPrefix != "" {
		if rest, ok := strings.CutPrefix(in.OutputPrefix, "s3://"); !ok || strings.HasPrefix(rest, "/") || rest == "" {
			return fmt.Errorf("output_prefix %q is not an s3://bucket/prefix URI", in.OutputPrefix)
		}
	}
	if in.HeartbeatTimeoutSeconds < 0 {
		return fmt.Errorf("heartbeat_timeout_seconds (%d) must not be negative", in.HeartbeatTimeoutSeconds)
	}
	if in.ChunksPerRun < 0 {
		return fmt.Errorf("chunks_per_run (%d) must not be negative", in.ChunksPerRun)
	}
	if err := in.Scheduling().Validate(); err != nil {
		return err
	}
	return in.Options.Validate()
}

// Scheduling returns the input's priority, fairness key and weight.
func (in DocumentQAInput) Scheduling() Scheduling {
	return Scheduling{Priority: in.Priority, FairnessKey: in.FairnessKey, FairnessWeight: in.FairnessWeight}
}

// Closed statuses, the MemagentStatus of a run that has ended. Every
// workflow uses them; the stages before them are each workflow's own.
const (
	// StageCanceled is a run that was canceled.
	StageCanceled = "canceled"
	// StageContinued is a run that continued as new: its work goes on in
	// the next run of the same workflow id.
	StageContinued = "continued"
)
