package api

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/internal/contract"
)

// ReviewDocumentName is the registered name of ReviewDocument.
const ReviewDocumentName = "memagent.ReviewDocument"

// Bounds and defaults of a review.
const (
	// MaxReviewQuestions bounds the questions of one review.
	MaxReviewQuestions = 100
	// MaxReviewQuestionBytes bounds all questions together: they travel
	// in every continue-as-new.
	MaxReviewQuestionBytes = 256 << 10
	// MaxReviewMemoryTokens bounds questions × memory_max_tokens: every
	// memory travels in every continue-as-new, whose input must stay well
	// under Temporal's 2 MB payload limit.
	MaxReviewMemoryTokens = 200_000
	// MaxReviewIDBytes bounds a question id, which names an S3 prefix.
	MaxReviewIDBytes = 64
	// DefaultReviewParallelism caps the default parallelism, which is
	// otherwise one memory update in flight per question.
	DefaultReviewParallelism = 16
	MaxReviewParallelism     = 256
	// DefaultReviewChunksAhead is how many chunks the fastest question may
	// read ahead of the slowest.
	DefaultReviewChunksAhead = 4
	// DefaultReviewActivitiesPerRun is how many activities one run starts
	// before it continues-as-new, unless Temporal suggests it earlier.
	DefaultReviewActivitiesPerRun = 200
	MaxReviewActivitiesPerRun     = 1000
)

// StageWriting is the stage in which a review writes its grid and report.
const StageWriting = "writing"

// Statuses of one question in ReviewProgress.
const (
	QuestionReading   = "reading"
	QuestionAnswering = "answering"
	QuestionDone      = "done"
	QuestionFailed    = "failed"
)

// ReviewQuestion is one question of a review.
type ReviewQuestion struct {
	// ID names the question in the grid and in S3 keys
	// (questions/<id>/...): at most 64 letters, digits, '.', '_' and '-',
	// not starting with '.'; default q1, q2, ... by position.
	ID string `json:"id,omitempty" contract:"pattern=^$|^[A-Za-z0-9_-][A-Za-z0-9._-]*$,maxlen=64"`
	// Question is asked of the document; at most 16 KiB.
	Question string `json:"question" contract:"required,maxlen=16384"`
	// GoldAnswers, when given, score the answer.
	GoldAnswers []string `json:"gold_answers,omitempty" contract:"alias=answers"`
}

// ReviewInput starts a ReviewDocument run. It is JSON on the wire.
type ReviewInput struct {
	// Document is an s3:// URI of UTF-8 text, or of a PDF, DOCX or HTML
	// document, converted to text first (see docs/DOCUMENTS.md). Exactly
	// one of Document and Documents is set.
	Document string `json:"document,omitempty" contract:"maxlen=1024"`
	// Documents is a corpus read as one stream, as DocumentQAInput's.
	Documents []string         `json:"documents,omitempty" contract:"maxitems=1000"`
	Questions []ReviewQuestion `json:"questions" contract:"required,maxitems=100"`
	// Reuse is DocumentQAInput's, for every question: each starts from
	// its own deepest checkpoint.
	Reuse   string       `json:"reuse,omitempty" contract:"enum=auto|none"`
	Options ModelOptions `json:"options"`
	// Parallelism is the most memory updates (and answers) in flight at
	// once; default min(questions, DefaultReviewParallelism).
	Parallelism int `json:"parallelism,omitempty" contract:"min=0,max=256"`
	// MaxChunksAhead is how far, in chunks, a question may read ahead of
	// the slowest one, so that one slow call does not hold all the others
	// while the chunks they share stay in the workers' caches; default
	// DefaultReviewChunksAhead, 1 reads in lockstep.
	MaxChunksAhead int `json:"max_chunks_ahead,omitempty" contract:"min=0,max=100000"`
	// ActivitiesPerRun is how many activities a run starts before it
	// continues-as-new; default DefaultReviewActivitiesPerRun.
	ActivitiesPerRun int `json:"activities_per_run,omitempty" contract:"min=0,max=1000"`
	// OutputPrefix overrides the s3:// prefix of traces, results, grid and
	// report (default s3://<worker bucket>/reviews/<workflow id>/<first run id>/).
	OutputPrefix string `json:"output_prefix,omitempty" contract:"maxlen=1024"`
	// HeartbeatTimeoutSeconds is how soon a worker that died mid-activity is
	// noticed; default 15.
	HeartbeatTimeoutSeconds int `json:"heartbeat_timeout_seconds,omitempty" contract:"min=0,max=3600"`
	// Priority orders this run's tasks on a shared task queue that is
	// backed up: 1 highest … 5 lowest; 0 means the priority the run was
	// started with, else 3.
	Priority int `json:"priority,omitempty" contract:"min=0,max=5"`
	// FairnessKey shares the task queue fairly between keys of the same
	// priority (a tenant, a client, a matter); default the key the run was
	// started with. At most 64 bytes.
	FairnessKey string `json:"fairness_key,omitempty" contract:"maxlen=64"`
	// FairnessWeight is the key's share relative to other keys (default 1,
	// at most 1000): a key of weight 2 gets twice the tasks of a key of 1.
	FairnessWeight float64 `json:"fairness_weight,omitempty" contract:"min=0,max=1000"`
	// Budget bounds what the whole review may spend, over all its
	// questions. A review whose reading alone (the document's tokens times
	// its questions) exceeds max_tokens fails at once as
	// memagent.OverBudget; a review that reaches max_calls starts no call
	// that would pass it, lets the calls in flight finish, shows the
	// status paused, and goes on when the raise-budget Update raises it
	// (or ends when canceled). max_tokens is checked against the tokens
	// spent before each call, so the calls in flight (at most parallelism)
	// may pass it.
	Budget *Budget `json:"budget,omitempty"`
}

// ReviewProgress is what the progress query of a review returns. Its first
// fields are those of Progress, so tools that follow a DocumentQA run
// (starter watch, status) follow a review too.
type ReviewProgress struct {
	Stage string `json:"stage"`
	// ChunksDone and TokensDone are how far every question still going
	// has come, read in this review or reused from a checkpoint. (A
	// worker from before TokensReused counted only tokens read.)
	ChunksDone  int   `json:"chunks_done"`
	ChunksTotal int   `json:"chunks_total"`
	TokensDone  int64 `json:"tokens_done"`
	TokensTotal int64 `json:"tokens_total"`
	Run         int   `json:"run"`
	Usage       Usage `json:"usage"`
	// UpdatesDone counts memory updates done over all questions, of
	// UpdatesTotal (questions × chunks); InFlight the activities running.
	UpdatesDone  int `json:"updates_done"`
	UpdatesTotal int `json:"updates_total"`
	InFlight     int `json:"in_flight"`
	// ChunksRead and ChunksReused split UpdatesDone, summed over the
	// questions: the chunks a question's memory read in this review (a
	// call each) and those it took from a memory checkpoint of an earlier
	// reading (no call). TokensRead and TokensReused are their tokens, of
	// TokensTotal × questions.
	ChunksRead   int   `json:"chunks_read,omitempty"`
	ChunksReused int   `json:"chunks_reused,omitempty"`
	TokensRead   int64 `json:"tokens_read,omitempty"`
	TokensReused int64 `json:"tokens_reused,omitempty"`
	// AnswersReused counts the questions whose answer was reused with
	// their whole reading (ReviewRow.AnswerReused).
	AnswersReused int                      `json:"answers_reused,omitempty"`
	Questions     []ReviewQuestionProgress `json:"questions"`
}

// ReviewQuestionProgress is one question's part of ReviewProgress.
type ReviewQuestionProgress struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	ChunksDone  int    `json:"chunks_done"`
	Evidence    int    `json:"evidence"`
	Answer      string `json:"answer,omitempty"`
	AnswerFound bool   `json:"answer_found,omitempty"`
	ErrorType   string `json:"error_type,omitempty"`
	// ChunksReused of ChunksDone came from a memory checkpoint;
	// TokensRead and TokensReused are the tokens read and reused.
	ChunksReused int   `json:"chunks_reused,omitempty"`
	TokensRead   int64 `json:"tokens_read,omitempty"`
	TokensReused int64 `json:"tokens_reused,omitempty"`
	// AnswerReused says the answer was reused with the whole reading.
	AnswerReused bool `json:"answer_reused,omitempty"`
}

// WithDefaults fills the question ids and the numeric defaults. It is
// deterministic and safe to call from workflow code.
func (in ReviewInput) WithDefaults() ReviewInput {
	qs := make([]ReviewQuestion, len(in.Questions))
	for i, q := range in.Questions {
		if q.ID == "" {
			q.ID = fmt.Sprintf("q%d", i+1)
		}
		qs[i] = q
	}
	in.Questions = qs
	if in.Parallelism == 0 {
		in.Parallelism = max(1, min(len(in.Questions), DefaultReviewParallelism))
	}
	if in.MaxChunksAhead == 0 {
		in.MaxChunksAhead = DefaultReviewChunksAhead
	}
	if in.ActivitiesPerRun == 0 {
		in.ActivitiesPerRun = DefaultReviewActivitiesPerRun
	}
	return in
}

// Validate reports input that can never succeed, phrased as what to change.
// Question ids are checked after WithDefaults.
func (in ReviewInput) Validate() error {
	// workflowcheck flags the reflection contract.Check walks the
	// input with; the check is a pure function of the input.
	//workflowcheck:ignore
	if err := contract.Check(in); err != nil {
		return err
	}
	if err := CheckDocuments(in.Document, in.Documents); err != nil {
		return err
	}
	if in.OutputPrefix != "" {
		if rest, ok := strings.CutPrefix(in.OutputPrefix, "s3://"); !ok || strings.HasPrefix(rest, "/") || rest == "" {
			return fmt.Errorf("output_prefix %q is not an s3://bucket/prefix URI", in.OutputPrefix)
		}
	}
	switch n := len(in.Questions); {
	case n == 0:
		return errors.New("questions is empty: give at least one question")
	case n > MaxReviewQuestions:
		return fmt.Errorf("%d questions, over the limit of %d: split them into several reviews", n, MaxReviewQuestions)
	}
	in = in.WithDefaults()
	seen := make(map[string]int, len(in.Questions))
	total := 0
	for i, q := range in.Questions {
		if err := CheckQuestion(q.Question); err != nil {
			return fmt.Errorf("questions[%d] (%s): %w", i, q.ID, err)
		}
		if err := checkReviewID(q.ID); err != nil {
			return fmt.Errorf("questions[%d].%w", i, err)
		}
		if j, dup := seen[q.ID]; dup {
			return fmt.Errorf("questions[%d] and questions[%d] both have id %q: give each question its own id", j, i, q.ID)
		}
		seen[q.ID] = i
		total += len(q.Question)
	}
	if total > MaxReviewQuestionBytes {
		return fmt.Errorf("the questions total %d bytes, over the limit of %d: shorten them or split the review", total, MaxReviewQuestionBytes)
	}
	if mem := len(in.Questions) * in.Options.WithDefaults().MemoryMaxTokens; mem > MaxReviewMemoryTokens {
		return fmt.Errorf("%d questions × memory_max_tokens (%d) = %d memory tokens, over the limit of %d: lower options.memory_max_tokens or split the review",
			len(in.Questions), in.Options.WithDefaults().MemoryMaxTokens, mem, MaxReviewMemoryTokens)
	}
	switch {
	case in.Parallelism < 0 || in.Parallelism > MaxReviewParallelism:
		return fmt.Errorf("parallelism (%d) must be within [1, %d]", in.Parallelism, MaxReviewParallelism)
	case in.MaxChunksAhead < 0:
		return fmt.Errorf("max_chunks_ahead (%d) must be at least 1", in.MaxChunksAhead)
	case in.ActivitiesPerRun < 0 || in.ActivitiesPerRun > MaxReviewActivitiesPerRun:
		return fmt.Errorf("activities_per_run (%d) must be within [1, %d]", in.ActivitiesPerRun, MaxReviewActivitiesPerRun)
	case in.HeartbeatTimeoutSeconds < 0:
		return fmt.Errorf("heartbeat_timeout_seconds (%d) must not be negative", in.HeartbeatTimeoutSeconds)
	}
	if err := in.Scheduling().Validate(); err != nil {
		return err
	}
	return in.Options.Validate()
}

// Scheduling returns the input's priority, fairness key and weight.
func (in ReviewInput) Scheduling() Scheduling {
	return Scheduling{Priority: in.Priority, FairnessKey: in.FairnessKey, FairnessWeight: in.FairnessWeight}
}

// checkReviewID accepts ids that are safe as one S3 key segment and as
// CSV and HTML text.
func checkReviewID(id string) error {
	ok := len(id) <= MaxReviewIDBytes && !strings.HasPrefix(id, ".")
	for _, r := range id {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '.' || r == '_' || r == '-') {
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("id %q must be 1 to %d letters, digits, '.', '_' or '-', not starting with '.'", id, MaxReviewIDBytes)
	}
	return nil
}

// ReviewStartSearchAttributes are the search attributes a review has from
// its start: what a client passes in StartWorkflowOptions so the run is
// findable by its document before a worker takes it.
func ReviewStartSearchAttributes(in ReviewInput) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(ReviewStatusUpdates(in, StagePreparing)...)
}

// ReviewStatusUpdates are the search attributes a review upserts at the
// start of every run, with status as its MemagentStatus.
func ReviewStatusUpdates(in ReviewInput, status string) []temporal.SearchAttributeUpdate {
	u := []temporal.SearchAttributeUpdate{DocumentKey.ValueSet(KeywordValue(LeadDocument(in.Document, in.Documents))), StatusKey.ValueSet(status)}
	if in.Options.Model != "" {
		u = append(u, ModelKey.ValueSet(KeywordValue(in.Options.Model)))
	}
	return u
}

// ReviewGridVersion is the current ReviewGrid.Version.
const ReviewGridVersion = 1

// Statuses of a ReviewRow.
const (
	ReviewStatusDone   = "done"
	ReviewStatusFailed = "failed"
)

// ReviewGrid is the outcome of a ReviewDocument run: one row per question,
// with its answer, the evidence of where in the document its memory
// changed, and what it cost. It is the workflow's result and, as grid.json,
// the file a program reads. It is JSON on the wire: fields are added, never
// renamed.
type ReviewGrid struct {
	Version    int    `json:"version"`
	WorkflowID string `json:"workflow_id"`
	// RunID is the run that wrote the grid (after continue-as-new or a
	// reset, not the first); FirstRunID is the first run of its chain, the
	// one whose id names the default output prefix.
	RunID      string `json:"run_id"`
	FirstRunID string `json:"first_run_id,omitempty"`
	// Document is the s3:// URI the byte ranges refer to (a cleaned copy
	// when invalid UTF-8 was replaced; see InvalidBytesReplaced).
	Document       string `json:"document"`
	DocumentSHA256 string `json:"document_sha256"`
	Bytes          int64  `json:"bytes"`
	Tokens         int64  `json:"tokens"`
	Chunks         int    `json:"chunks"`
	// InvalidBytesReplaced counts the bytes replaced under the "replace"
	// UTF-8 policy.
	InvalidBytesReplaced int64 `json:"invalid_bytes_replaced,omitempty"`
	// Documents is the corpus asked about, when the input named one.
	Documents []string `json:"documents,omitempty"`
	// Source is the PDF, DOCX or HTML document Document was converted
	// from, and Format its format; empty for text.
	Source          string `json:"source,omitempty"`
	Format          string `json:"format,omitempty"`
	Model           string `json:"model"`
	Tokenizer       string `json:"tokenizer"`
	ChunkTokens     int    `json:"chunk_tokens"`
	MemoryMaxTokens int    `json:"memory_max_tokens"`
	// EvidenceRule is the rule that decided material changes
	// (the worker's rule when the grid was made, such as "content-words/v1").
	EvidenceRule string `json:"evidence_rule"`
	// Runs is how many runs (continue-as-new generations) the review took.
	Runs       int         `json:"runs"`
	StartedAt  time.Time   `json:"started_at"`
	FinishedAt time.Time   `json:"finished_at"`
	Usage      ReviewUsage `json:"usage"`
	Rows       []ReviewRow `json:"rows"`
	// Prefix is the s3:// prefix everything was written under; JSONURI,
	// CSVURI and HTMLURI are grid.json, grid.csv and report.html there.
	Prefix  string `json:"prefix"`
	JSONURI string `json:"json_uri"`
	CSVURI  string `json:"csv_uri"`
	HTMLURI string `json:"html_uri"`
}

// ReviewRow is one question of a review.
type ReviewRow struct {
	ID          string   `json:"id"`
	Question    string   `json:"question"`
	GoldAnswers []string `json:"gold_answers,omitempty"`
	// Status is ReviewStatusDone or ReviewStatusFailed.
	Status       string  `json:"status"`
	Answer       string  `json:"answer"`
	AnswerFound  bool    `json:"answer_found"`
	AnswerMethod string  `json:"answer_method,omitempty"`
	Scores       *Scores `json:"scores,omitempty"`
	// Evidence lists, in document order, the chunks at which the
	// question's memory changed materially.
	Evidence []Evidence `json:"evidence"`
	// EvidenceDropped counts entries dropped to keep the evidence bounded
	// (those the memory had forgotten since, first).
	EvidenceDropped int `json:"evidence_dropped,omitempty"`
	// ChunksRead is how many chunks the question's memory read, of them
	// ChunksReused from a checkpoint of an earlier reading.
	ChunksRead   int `json:"chunks_read"`
	ChunksReused int `json:"chunks_reused,omitempty"`
	// AnswerReused says the answer too came from that earlier reading:
	// every chunk was reused and the answer kept with the memory it gave
	// was taken, so no call was made for the question in this review
	// (Usage is zero). Absent on a grid from before answers were reused.
	AnswerReused bool `json:"answer_reused,omitempty"`
	// ReusedFrom names that reading only when it was an earlier run of
	// this review (reused_reading "own_run"), as DocumentQAResult's does.
	ReusedFrom *ReusedFrom `json:"reused_from,omitempty"`
	// ReusedReading is DocumentQAResult's: "own_run" or
	// "earlier_reading", an earlier reading of the same text that nothing
	// names.
	ReusedReading string `json:"reused_reading,omitempty" contract:"enum=own_run|earlier_reading"`
	// AnswerSources cites, for a corpus, the documents and pages that hold
	// the answer, as DocumentQA's result does.
	AnswerSources []SourceRef `json:"answer_sources,omitempty"`
	// AnswerPages, ContextPages and ContextSources are the answer's
	// citation, as DocumentQA's result has it (api.Citation); a grid from
	// before them has none.
	AnswerPages    string      `json:"answer_pages,omitempty"`
	ContextPages   string      `json:"context_pages,omitempty"`
	ContextSources []SourceRef `json:"context_sources,omitempty"`
	Usage          ReviewUsage `json:"usage"`
	// ResultURI is the question's result.json; TracePrefix holds its
	// per-chunk traces (NNNNNN.json).
	ResultURI   string `json:"result_uri,omitempty"`
	TracePrefix string `json:"trace_prefix"`
	// Error and ErrorType say why a failed question failed.
	Error     string `json:"error,omitempty"`
	ErrorType string `json:"error_type,omitempty"`
	// Grounding says whether and where the answer occurs in the
	// document's text (a done row of a review from before grounding has
	// none).
	Grounding *Grounding `json:"grounding,omitempty"`
}

// ReviewUsage sums the tokens the model server reported. It has the fields
// and JSON of Usage, so either converts to the other.
type ReviewUsage struct {
	Calls            int   `json:"calls"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	CachedTokens     int64 `json:"cached_tokens,omitempty"`
	// RepeatedCalls counts calls that repeated one already paid for.
	RepeatedCalls int `json:"repeated_calls,omitempty"`
}

// ReviewResult is ReviewDocument's result: the grid it wrote, without the
// passages' text (which grid.json has).
type ReviewResult = ReviewGrid
