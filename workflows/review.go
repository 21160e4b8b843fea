package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/internal/contract"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/report"
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
	// MaxReviewEvidence bounds the evidence kept per question; see
	// report.ReviewPruneEvidence for which entries go first.
	MaxReviewEvidence = 32
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
	// document, converted to text first (see docs/DOCUMENTS.md).
	Document  string                  `json:"document" contract:"required,maxlen=1024"`
	Questions []ReviewQuestion        `json:"questions" contract:"required,maxitems=100"`
	Options   activities.ModelOptions `json:"options"`
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
}

// reviewRunInput is what a ReviewDocument run decodes: the published input
// and, on a run the workflow continued as new itself, the state its
// previous run handed over. The state is not part of the contract;
// checkCarry refuses one a caller sent.
type reviewRunInput struct {
	ReviewInput
	State *ReviewState `json:"state,omitempty"`
}

// ReviewState is what one ReviewDocument run hands to the next.
type ReviewState struct {
	// From is the run id of the run that handed this state over.
	From     string                   `json:"from,omitempty"`
	Prepared activities.PrepareOutput `json:"prepared"`
	// Prefix is the output prefix, ending in '/'.
	Prefix string `json:"prefix"`
	// Questions are in the order of ReviewInput.Questions.
	Questions []ReviewQuestionState `json:"questions"`
	Runs      int                   `json:"runs"`
	StartedAt time.Time             `json:"started_at"`
}

// ReviewQuestionState is one question's memory, cursor and outcome.
type ReviewQuestionState struct {
	// Cursor is the next chunk to read.
	Cursor     int              `json:"cursor"`
	Memory     string           `json:"memory"`
	TokensDone int64            `json:"tokens_done"`
	Usage      activities.Usage `json:"usage"`
	// Evidence are the chunks at which the memory changed materially,
	// without SupportsAnswer (known at the end), at most MaxReviewEvidence.
	Evidence        []report.ReviewEvidence `json:"evidence,omitempty"`
	EvidenceDropped int                     `json:"evidence_dropped,omitempty"`
	Answered        bool                    `json:"answered,omitempty"`
	Answer          string                  `json:"answer,omitempty"`
	AnswerFound     bool                    `json:"answer_found,omitempty"`
	AnswerMethod    string                  `json:"answer_method,omitempty"`
	Scores          *memagent.Scores        `json:"scores,omitempty"`
	ResultURI       string                  `json:"result_uri,omitempty"`
	// Error and ErrorType are set when the question failed; it is then
	// left out of the rest of the review.
	Error     string `json:"error,omitempty"`
	ErrorType string `json:"error_type,omitempty"`
}

func (q ReviewQuestionState) failed() bool { return q.Error != "" }

// ReviewResult is ReviewDocument's result: the grid it wrote, without the
// passages' text (which grid.json has).
type ReviewResult = report.ReviewGrid

// ReviewProgress is what the progress query of a review returns. Its first
// fields are those of Progress, so tools that follow a DocumentQA run
// (starter watch, status) follow a review too.
type ReviewProgress struct {
	Stage string `json:"stage"`
	// ChunksDone and TokensDone are what every question still going has
	// read.
	ChunksDone  int              `json:"chunks_done"`
	ChunksTotal int              `json:"chunks_total"`
	TokensDone  int64            `json:"tokens_done"`
	TokensTotal int64            `json:"tokens_total"`
	Run         int              `json:"run"`
	Usage       activities.Usage `json:"usage"`
	// UpdatesDone counts memory updates done over all questions, of
	// UpdatesTotal (questions × chunks); InFlight the activities running.
	UpdatesDone  int                      `json:"updates_done"`
	UpdatesTotal int                      `json:"updates_total"`
	InFlight     int                      `json:"in_flight"`
	Questions    []ReviewQuestionProgress `json:"questions"`
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
	if strings.TrimSpace(in.Document) == "" {
		return errors.New("document is empty: set document to an s3:// URI")
	}
	if !strings.HasPrefix(in.Document, "s3://") {
		return fmt.Errorf("document %q is not an s3:// URI", in.Document)
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
		if err := activities.CheckQuestion(q.Question); err != nil {
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
	if err := in.scheduling().validate(); err != nil {
		return err
	}
	return in.Options.Validate()
}

func (in ReviewInput) scheduling() scheduling {
	return scheduling{Priority: in.Priority, FairnessKey: in.FairnessKey, FairnessWeight: in.FairnessWeight}
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
	return temporal.NewSearchAttributes(reviewStartUpdates(in, StagePreparing)...)
}

func reviewStartUpdates(in ReviewInput, status string) []temporal.SearchAttributeUpdate {
	u := []temporal.SearchAttributeUpdate{DocumentKey.ValueSet(KeywordValue(in.Document)), StatusKey.ValueSet(status)}
	if in.Options.Model != "" {
		u = append(u, ModelKey.ValueSet(KeywordValue(in.Options.Model)))
	}
	return u
}

// ReviewDocument asks many questions of one document, reading it once:
// each question keeps its own MemAgent memory, and at each chunk the
// memory updates of all questions run in parallel (bounded by
// Parallelism), each its own ReviewUpdate activity with its own retries,
// reading the chunk through the worker's chunk cache so that S3 serves it
// once. Then each question is answered (Answer), and WriteReview writes the
// grid (JSON, CSV) and the HTML report. A question that fails for good
// (a non-retryable error) is reported as failed in the grid and the others
// go on; the review fails only if every question does. The run
// continues-as-new, at chunk boundaries, every ActivitiesPerRun activities
// or when Temporal suggests it, carrying memories, cursors, usage and
// bounded evidence.
//
// Its one argument is a ReviewInput as JSON, decoded strictly like
// DocumentQA's; start it by name (ReviewDocumentName).
func ReviewDocument(ctx workflow.Context, input converter.RawValue) (_ *ReviewResult, err error) {
	edge := newBoundary(ctx)
	r := &reviewRun{ctx: ctx, vis: newVisibility(ctx, 1), stage: StagePreparing}
	defer func() {
		if s := edge.closedStatus(err); s != "" && s != StageDone {
			r.stage = s
			r.publish(StatusKey.ValueSet(s))
		}
	}()
	// The query answers from the start, so a caller polling it sees
	// "failed" even for input that does not decode, as DocumentQA's does.
	if err := workflow.SetQueryHandler(ctx, ProgressQuery, func() (ReviewProgress, error) {
		if r.st == nil {
			return ReviewProgress{Stage: r.stage}, nil
		}
		return r.progress(), nil
	}); err != nil {
		return nil, err
	}
	var run reviewRunInput
	if err := edge.decode(input, &run); err != nil {
		return nil, err
	}
	in := run.ReviewInput.WithDefaults()
	if err := in.Validate(); err != nil {
		return nil, badInput(err)
	}
	r.in = in
	r.info = workflow.GetInfo(ctx)
	r.prio = in.scheduling().taskPriority(ctx, PriorityReview)
	r.hb = DefaultHeartbeatTimeout
	if in.HeartbeatTimeoutSeconds > 0 {
		r.hb = time.Duration(in.HeartbeatTimeoutSeconds) * time.Second
	}
	if run.State != nil {
		if err := checkCarry(ctx, run.State.From); err != nil {
			return nil, err
		}
		if len(run.State.Questions) != len(in.Questions) {
			return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("state holds %d questions, the input %d: start the review without a state",
				len(run.State.Questions), len(in.Questions)), activities.ErrBadInput, nil)
		}
	}
	r.st = run.State
	if r.st == nil {
		r.st = &ReviewState{StartedAt: workflow.Now(ctx), Questions: make([]ReviewQuestionState, len(in.Questions))}
		for i := range r.st.Questions {
			r.st.Questions[i].Memory = memagent.InitialMemory
		}
		r.st.Prefix = in.OutputPrefix
		if r.st.Prefix != "" && !strings.HasSuffix(r.st.Prefix, "/") {
			r.st.Prefix += "/"
		}
	}
	r.st.Runs++
	r.inflight = make([]bool, len(in.Questions))

	prepared := r.st.Prepared.IndexURI != ""
	if prepared {
		r.stage = StageReading
		if r.chunksDone() >= r.st.Prepared.Chunks {
			r.stage = StageAnswering
		}
	}
	start := reviewStartUpdates(in, r.stage)
	if prepared {
		start = append(start, ChunksDoneKey.ValueSet(int64(r.chunksDone())), ChunksTotalKey.ValueSet(int64(r.st.Prepared.Chunks)))
		if in.Options.Model == "" && r.st.Prepared.Model != "" {
			start = append(start, ModelKey.ValueSet(KeywordValue(r.st.Prepared.Model)))
		}
	}
	r.publish(start...)
	if !prepared {
		if err := r.prepare(); err != nil {
			return nil, err
		}
	}
	r.opts = in.Options
	if r.opts.Model == "" {
		r.opts.Model = r.st.Prepared.Model
	}

	r.schedule()
	if r.canceled != nil {
		return nil, r.canceled
	}
	if r.remaining() {
		if r.launched == 0 {
			return nil, errors.New("review scheduler made no progress: this is a bug in ReviewDocument")
		}
		r.st.From = r.info.WorkflowExecution.RunID
		return nil, workflow.NewContinueAsNewError(ctx, ReviewDocumentName, reviewRunInput{ReviewInput: in, State: r.st})
	}
	if err := r.allFailed(); err != nil {
		return nil, err
	}
	return r.write()
}

// reviewRun is one run of ReviewDocument.
type reviewRun struct {
	ctx  workflow.Context
	in   ReviewInput
	info *workflow.Info
	st   *ReviewState
	opts activities.ModelOptions
	hb   time.Duration
	prio temporal.Priority
	vis  *visibility

	stage     string
	inflight  []bool
	running   int
	launched  int
	published int // the chunks_done last upserted
	canceled  error
}

func (r *reviewRun) activityOptions(summary string) workflow.Context {
	return workflow.WithActivityOptions(r.ctx, workflow.ActivityOptions{
		StartToCloseTimeout:   15 * time.Minute,
		HeartbeatTimeout:      r.hb,
		RetryPolicy:           retryPolicy(),
		Priority:              r.prio,
		DisableEagerExecution: skipsEagerExecution(r.prio),
		Summary:               summary,
	})
}

// prepare indexes the document once, checking the budget with the
// longest question.
func (r *reviewRun) prepare() error {
	longest := r.in.Questions[0].Question
	for _, q := range r.in.Questions[1:] {
		if len(q.Question) > len(longest) {
			longest = q.Question
		}
	}
	actx := workflow.WithActivityOptions(r.ctx, workflow.ActivityOptions{
		StartToCloseTimeout:   30 * time.Minute,
		HeartbeatTimeout:      r.hb,
		RetryPolicy:           retryPolicy(),
		Priority:              r.prio,
		DisableEagerExecution: skipsEagerExecution(r.prio),
		Summary:               "prepare document",
	})
	prep := activities.PrepareInput{
		Document: r.in.Document, Question: longest, Options: r.in.Options,
		OutputPrefix: ownPrefix(r.in.OutputPrefix, r.st.Prefix), WorkflowID: r.info.WorkflowExecution.ID,
		FirstRunID: chainID(r.info),
	}
	if err := convertFirst(r.ctx, r.hb, r.prio, &prep); err != nil {
		return err
	}
	if err := workflow.ExecuteActivity(actx, activities.PrepareDocumentName, prep).Get(r.ctx, &r.st.Prepared); err != nil {
		return stageError("prepare document", err)
	}
	if r.st.Prefix == "" {
		r.st.Prefix = fmt.Sprintf("s3://%s/reviews/%s/%s/", bucketOf(r.st.Prepared.IndexURI), r.info.WorkflowExecution.ID, chainID(r.info))
	}
	r.stage = StageReading
	u := []temporal.SearchAttributeUpdate{StatusKey.ValueSet(StageReading), ChunksDoneKey.ValueSet(0),
		ChunksTotalKey.ValueSet(int64(r.st.Prepared.Chunks))}
	if r.in.Options.Model == "" && r.st.Prepared.Model != "" {
		u = append(u, ModelKey.ValueSet(KeywordValue(r.st.Prepared.Model)))
	}
	r.publish(u...)
	return nil
}

// schedule runs memory updates and answers until all are done, the run's
// activity budget is spent or Temporal suggests continuing as new; then it
// waits for what is in flight, so the run ends at a chunk boundary of
// every question.
func (r *reviewRun) schedule() {
	sel := workflow.NewSelector(r.ctx)
	r.published = r.chunksDone()
	for {
		for r.running < r.in.Parallelism && r.launched < r.in.ActivitiesPerRun && r.canceled == nil &&
			!(r.launched > 0 && workflow.GetInfo(r.ctx).GetContinueAsNewSuggested()) {
			if !r.launchNext(sel) {
				break
			}
		}
		if r.running == 0 {
			return
		}
		sel.Select(r.ctx)
		r.afterCompletion()
	}
}

// launchNext starts the most urgent task: the memory update of the
// question furthest behind (the first on a tie), within MaxChunksAhead of
// the slowest; else an answer. It reports whether it started one.
func (r *reviewRun) launchNext(sel workflow.Selector) bool {
	chunks := r.st.Prepared.Chunks
	slowest := chunks
	for _, q := range r.st.Questions {
		if !q.failed() && q.Cursor < slowest {
			slowest = q.Cursor
		}
	}
	next := -1
	for i, q := range r.st.Questions {
		if r.inflight[i] || q.failed() || q.Cursor >= chunks || q.Cursor >= slowest+r.in.MaxChunksAhead {
			continue
		}
		if next < 0 || q.Cursor < r.st.Questions[next].Cursor {
			next = i
		}
	}
	if next >= 0 {
		r.launchUpdate(sel, next)
		return true
	}
	for i, q := range r.st.Questions {
		if !r.inflight[i] && !q.failed() && q.Cursor >= chunks && !q.Answered {
			r.launchAnswer(sel, i)
			return true
		}
	}
	return false
}

func (r *reviewRun) questionPrefix(i int) string {
	return r.st.Prefix + "questions/" + r.in.Questions[i].ID + "/"
}

func (r *reviewRun) launchUpdate(sel workflow.Selector, i int) {
	q, qs := r.in.Questions[i], &r.st.Questions[i]
	chunk, chunks := qs.Cursor, r.st.Prepared.Chunks
	f := workflow.ExecuteActivity(r.activityOptions(fmt.Sprintf("%s · chunk %d/%d", q.ID, chunk+1, chunks)),
		activities.ReviewUpdateName, activities.UpdateInput{
			Document: r.st.Prepared.Document, ETag: r.st.Prepared.ETag, IndexURI: r.st.Prepared.IndexURI,
			Chunk: chunk, Chunks: chunks, Question: q.Question, Memory: qs.Memory,
			Options: r.opts, TracePrefix: r.questionPrefix(i),
		})
	r.started(i)
	sel.AddFuture(f, func(f workflow.Future) {
		r.finished(i)
		var out activities.ReviewUpdateOutput
		if err := f.Get(r.ctx, &out); err != nil {
			r.fail(i, fmt.Sprintf("update memory at chunk %d", chunk), err)
			return
		}
		qs.Memory = out.Memory
		qs.TokensDone += int64(out.ChunkTokens)
		qs.Usage = qs.Usage.Add(out.Usage)
		qs.Cursor = chunk + 1
		if out.Material {
			qs.Evidence = append(qs.Evidence, report.ReviewEvidence{
				Chunk: out.Chunk, Start: out.Start, End: out.End, Passage: out.Passage, Added: out.Added,
				Pages: out.Pages,
			})
			var dropped int
			qs.Evidence, dropped = report.ReviewPruneEvidence(qs.Evidence, qs.Memory, MaxReviewEvidence)
			qs.EvidenceDropped += dropped
		}
	})
}

func (r *reviewRun) launchAnswer(sel workflow.Selector, i int) {
	q, qs := r.in.Questions[i], &r.st.Questions[i]
	p := r.st.Prepared
	f := workflow.ExecuteActivity(r.activityOptions(q.ID+" · final answer"), activities.AnswerName, activities.AnswerInput{
		Question: q.Question, Memory: qs.Memory, GoldAnswers: q.GoldAnswers, Options: r.opts,
		ResultURI: r.questionPrefix(i) + "result.json",
		Result: activities.QAResult{
			WorkflowID: r.info.WorkflowExecution.ID, RunID: r.info.WorkflowExecution.RunID, FirstRunID: r.info.FirstRunID,
			Document: p.Document, DocumentSHA256: p.SHA256, Question: q.Question, Model: r.opts.Model,
			Options: r.opts.WithDefaults(), Chunks: p.Chunks, Tokens: p.Tokens, Bytes: p.Bytes,
			Usage: qs.Usage, Runs: r.st.Runs, IndexURI: p.IndexURI,
			TracePrefix: r.questionPrefix(i) + "chunks/", StartedAt: r.st.StartedAt,
		},
	})
	r.started(i)
	sel.AddFuture(f, func(f workflow.Future) {
		r.finished(i)
		var res activities.QAResult
		if err := f.Get(r.ctx, &res); err != nil {
			r.fail(i, "answer", err)
			return
		}
		qs.Answered, qs.Answer, qs.AnswerFound, qs.AnswerMethod = true, res.Answer, res.AnswerFound, res.AnswerMethod
		qs.Scores, qs.ResultURI, qs.Usage = res.Scores, res.ResultURI, res.Usage
	})
}

func (r *reviewRun) started(i int) {
	r.inflight[i] = true
	r.running++
	r.launched++
}

func (r *reviewRun) finished(i int) {
	r.inflight[i] = false
	r.running--
}

// fail records a question's permanent failure; a cancellation of the
// workflow ends the run instead.
func (r *reviewRun) fail(i int, stage string, err error) {
	if temporal.IsCanceledError(err) {
		if r.canceled == nil {
			r.canceled = err
		}
		return
	}
	qs := &r.st.Questions[i]
	qs.Error, qs.ErrorType = stage+": "+err.Error(), "error"
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		qs.Error = stage + ": " + appErr.Message()
		if appErr.Type() != "" {
			qs.ErrorType = appErr.Type()
		}
	}
	workflow.GetLogger(r.ctx).Warn("review question failed", "question_id", r.in.Questions[i].ID, "stage", stage, "error_type", qs.ErrorType)
}

// afterCompletion moves the stage on and publishes chunk progress.
func (r *reviewRun) afterCompletion() {
	var u []temporal.SearchAttributeUpdate
	if done := r.chunksDone(); done != r.published {
		r.published = done
		u = append(u, ChunksDoneKey.ValueSet(int64(done)))
	}
	if r.stage == StageReading && r.chunksDone() >= r.st.Prepared.Chunks {
		r.stage = StageAnswering
		u = append(u, StatusKey.ValueSet(StageAnswering))
	}
	if len(u) > 0 {
		r.publish(u...)
	}
}

// remaining reports whether a question still has work.
func (r *reviewRun) remaining() bool {
	for _, q := range r.st.Questions {
		if !q.failed() && !q.Answered {
			return true
		}
	}
	return false
}

// allFailed returns the failure of the review when every question failed.
func (r *reviewRun) allFailed() error {
	for _, q := range r.st.Questions {
		if !q.failed() {
			return nil
		}
	}
	q := r.st.Questions[0]
	msg := fmt.Sprintf("all %d questions failed; %s: %s", len(r.st.Questions), r.in.Questions[0].ID, q.Error)
	return temporal.NewNonRetryableApplicationError(msg, q.ErrorType, nil)
}

// chunksDone is the least cursor of the questions that have not failed:
// the chunks every question still going has read.
func (r *reviewRun) chunksDone() int {
	done, any := r.st.Prepared.Chunks, false
	for _, q := range r.st.Questions {
		if !q.failed() {
			done, any = min(done, q.Cursor), true
		}
	}
	if !any {
		return 0
	}
	return done
}

func (r *reviewRun) progress() ReviewProgress {
	p := ReviewProgress{
		Stage: r.stage, ChunksDone: r.chunksDone(), ChunksTotal: r.st.Prepared.Chunks,
		TokensTotal: r.st.Prepared.Tokens, Run: r.st.Runs, InFlight: r.running,
		UpdatesTotal: len(r.st.Questions) * r.st.Prepared.Chunks,
	}
	first := true
	for i, q := range r.st.Questions {
		status := QuestionReading
		switch {
		case q.failed():
			status = QuestionFailed
		case q.Answered:
			status = QuestionDone
		case q.Cursor >= r.st.Prepared.Chunks && r.st.Prepared.Chunks > 0:
			status = QuestionAnswering
		}
		if !q.failed() && (first || q.TokensDone < p.TokensDone) {
			p.TokensDone, first = q.TokensDone, false
		}
		p.UpdatesDone += q.Cursor
		p.Usage = p.Usage.Add(q.Usage)
		p.Questions = append(p.Questions, ReviewQuestionProgress{
			ID: r.in.Questions[i].ID, Status: status, ChunksDone: q.Cursor, Evidence: len(q.Evidence),
			Answer: q.Answer, AnswerFound: q.AnswerFound, ErrorType: q.ErrorType,
		})
	}
	return p
}

// publish sets the run's current details and upserts updates.
func (r *reviewRun) publish(updates ...temporal.SearchAttributeUpdate) {
	chunks, tokens := 0, int64(0)
	if r.st != nil {
		chunks, tokens = r.st.Prepared.Chunks, r.st.Prepared.Tokens
	}
	p := Progress{Stage: r.stage, ChunksTotal: chunks, TokensTotal: tokens}
	if r.st != nil {
		pr := r.progress()
		p.ChunksDone, p.TokensDone, p.Run = pr.ChunksDone, pr.TokensDone, pr.Run
	}
	r.vis.publish(p, updates...)
	if n := len(r.in.Questions); n > 0 {
		workflow.SetCurrentDetails(r.ctx, details(p)+fmt.Sprintf(" · %d questions", n))
	}
}

// write assembles the grid, has WriteReview write it with the report, and
// returns it.
func (r *reviewRun) write() (*ReviewResult, error) {
	r.stage = StageWriting
	r.publish(StatusKey.ValueSet(StageWriting), ChunksDoneKey.ValueSet(int64(r.st.Prepared.Chunks)))
	p := r.st.Prepared
	g := &report.ReviewGrid{
		Version: report.ReviewGridVersion, WorkflowID: r.info.WorkflowExecution.ID,
		RunID: r.info.WorkflowExecution.RunID, FirstRunID: r.info.FirstRunID,
		Document: p.Document, DocumentSHA256: p.SHA256, Bytes: p.Bytes, Tokens: p.Tokens, Chunks: p.Chunks,
		InvalidBytesReplaced: p.InvalidBytesReplaced, Model: r.opts.Model, Tokenizer: p.Tokenizer,
		Source: p.Source, Format: p.Format,
		ChunkTokens: p.ChunkTokens, MemoryMaxTokens: r.opts.WithDefaults().MemoryMaxTokens,
		EvidenceRule: report.ReviewEvidenceRule, Runs: r.st.Runs, StartedAt: r.st.StartedAt,
		Prefix: r.st.Prefix, JSONURI: r.st.Prefix + activities.ReviewGridJSON,
		CSVURI: r.st.Prefix + activities.ReviewGridCSV, HTMLURI: r.st.Prefix + activities.ReviewHTML,
	}
	var total activities.Usage
	for i, q := range r.in.Questions {
		qs := r.st.Questions[i]
		row := report.ReviewRow{
			ID: q.ID, Question: q.Question, GoldAnswers: q.GoldAnswers, Status: report.ReviewStatusDone,
			Answer: qs.Answer, AnswerFound: qs.AnswerFound, AnswerMethod: qs.AnswerMethod, Scores: qs.Scores,
			Evidence: make([]report.ReviewEvidence, 0, len(qs.Evidence)), EvidenceDropped: qs.EvidenceDropped,
			ChunksRead: qs.Cursor, Usage: report.ReviewUsage(qs.Usage), ResultURI: qs.ResultURI,
			TracePrefix: r.questionPrefix(i) + "chunks/", Error: qs.Error, ErrorType: qs.ErrorType,
		}
		if qs.failed() {
			row.Status = report.ReviewStatusFailed
		}
		for _, e := range qs.Evidence {
			e.SupportsAnswer = !qs.failed() && report.ReviewSupports(e.Added, qs.Memory)
			row.Evidence = append(row.Evidence, e)
		}
		total = total.Add(qs.Usage)
		g.Rows = append(g.Rows, row)
	}
	g.Usage = report.ReviewUsage(total)
	g.FinishedAt = workflow.Now(r.ctx)
	var out activities.WriteReviewOutput
	if err := workflow.ExecuteActivity(r.activityOptions("write grid and report"), activities.WriteReviewName,
		activities.WriteReviewInput{Grid: *g, ETag: p.ETag}).Get(r.ctx, &out); err != nil {
		return nil, stageError("write review", err)
	}
	if out.JSONURI != "" {
		// A grid kept from an earlier run moves this one to runs/<run id>/.
		g.JSONURI, g.CSVURI, g.HTMLURI = out.JSONURI, out.CSVURI, out.HTMLURI
		g.Prefix = strings.TrimSuffix(out.JSONURI, activities.ReviewGridJSON)
	}
	r.stage = StageDone
	r.publish(StatusKey.ValueSet(StageDone))
	return g, nil
}
