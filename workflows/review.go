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
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/report"
)

// reviewRunInput is what a ReviewDocument run decodes: the published input
// and, on a run the workflow continued as new itself, the state its
// previous run handed over. The state is not part of the contract;
// checkCarry refuses one a caller sent.
type reviewRunInput struct {
	api.ReviewInput
	State *reviewState `json:"state,omitempty"`
}

// reviewState is what one ReviewDocument run hands to the next.
type reviewState struct {
	// From is the run id of the run that handed this state over.
	From     string                `json:"from,omitempty"`
	Prepared actwire.PrepareOutput `json:"prepared"`
	// Prefix is the output prefix, ending in '/'.
	Prefix string `json:"prefix"`
	// Questions are in the order of ReviewInput.Questions.
	Questions []reviewQuestionState `json:"questions"`
	Runs      int                   `json:"runs"`
	StartedAt time.Time             `json:"started_at"`
	// Checkpoints is DocumentQA's: the questions keep memory checkpoints
	// (CheckpointsChange). Provenance is DocumentQA's too
	// (ProvenanceChange).
	Checkpoints bool `json:"checkpoints,omitempty"`
	Provenance  bool `json:"provenance,omitempty"`
	// AnswerReuse says the answers are kept beside the checkpoints and a
	// question that reused every chunk takes the kept answer
	// (AnswerReuseChange).
	AnswerReuse bool `json:"answer_reuse,omitempty"`
}

// reviewQuestionState is one question's memory, cursor and outcome.
type reviewQuestionState struct {
	// Cursor is the next chunk to read.
	Cursor     int       `json:"cursor"`
	Memory     string    `json:"memory"`
	TokensDone int64     `json:"tokens_done"`
	Usage      api.Usage `json:"usage"`
	// Evidence are the chunks at which the memory changed materially,
	// without SupportsAnswer (known at the end), at most MaxEvidence.
	Evidence        []api.Evidence `json:"evidence,omitempty"`
	EvidenceDropped int            `json:"evidence_dropped,omitempty"`
	Answered        bool           `json:"answered,omitempty"`
	Answer          string         `json:"answer,omitempty"`
	AnswerFound     bool           `json:"answer_found,omitempty"`
	AnswerMethod    string         `json:"answer_method,omitempty"`
	Scores          *api.Scores    `json:"scores,omitempty"`
	ResultURI       string         `json:"result_uri,omitempty"`
	// Error and ErrorType are set when the question failed; it is then
	// left out of the rest of the review.
	Error     string `json:"error,omitempty"`
	ErrorType string `json:"error_type,omitempty"`
	// ReusedFrom says where the question started, TokensReused how many
	// tokens it took from there (TokensDone counts those it read).
	ReusedFrom   *api.ReusedFrom `json:"reused_from,omitempty"`
	TokensReused int64           `json:"tokens_reused,omitempty"`
	// AnswerReused says the answer was the kept one: no call was made.
	AnswerReused bool `json:"answer_reused,omitempty"`
}

func (q reviewQuestionState) failed() bool { return q.Error != "" }

// ReviewResult is ReviewDocument's result: the grid it wrote, without the
// passages' text (which grid.json has).
type ReviewResult = api.ReviewGrid

// ReviewDocument asks many questions of one document, reading it once:
// each question keeps its own MemAgent memory, and at each chunk the
// memory updates of all questions run in parallel (bounded by
// Parallelism), each its own ReviewUpdate activity with its own retries,
// reading the chunk through the worker's chunk cache so that S3 serves it
// once. Then each question is answered (Answer): a question that started
// from a checkpoint covering every chunk takes the answer an earlier
// reading kept for the memory it reached, with no call (AnswerReuseChange).
// WriteReview writes the grid (JSON, CSV) and the HTML report. A question that fails for good
// (a non-retryable error) is reported as failed in the grid and the others
// go on; the review fails only if every question does. The run
// continues-as-new, at chunk boundaries, every ActivitiesPerRun activities
// or when Temporal suggests it, carrying memories, cursors, usage and
// bounded evidence.
//
// Its one argument is a ReviewInput as JSON, decoded strictly like
// DocumentQA's; start it by name (ReviewDocumentName).
//
// A run goes through four stages, each a method of reviewRun that owns its
// version gates: start, prepare (a first run only), read (until every
// question is answered or the run continues as new) and finish.
func ReviewDocument(ctx workflow.Context, input converter.RawValue) (_ *ReviewResult, err error) {
	r := &reviewRun{ctx: ctx, edge: newBoundary(ctx), vis: newVisibility(ctx, 1), stage: api.StagePreparing}
	defer func() { r.close(err) }()
	if err := r.start(input); err != nil {
		return nil, err
	}
	if err := r.prepare(); err != nil {
		return nil, err
	}
	if err := r.read(); err != nil {
		return nil, err
	}
	return r.finish()
}

// close runs as the run closes with err: a run that did not finish shows
// how it closed.
func (r *reviewRun) close(err error) {
	if s := r.edge.closedStatus(err); s != "" && s != api.StageDone {
		r.stage = s
		r.publish(api.StatusKey.ValueSet(s))
	}
}

// start decodes the input, takes over the previous run's state (or makes
// a first one), installs the handlers and shows the run. The query answers
// from the start, so a caller polling it sees "failed" even for input that
// does not decode, as DocumentQA's does.
func (r *reviewRun) start(input converter.RawValue) error {
	if err := workflow.SetQueryHandler(r.ctx, api.ProgressQuery, func() (api.ReviewProgress, error) {
		if r.st == nil {
			return api.ReviewProgress{Stage: r.stage}, nil
		}
		return r.progress(), nil
	}); err != nil {
		return err
	}
	var run reviewRunInput
	if err := r.edge.decode(input, &run); err != nil {
		return err
	}
	in := run.ReviewInput.WithDefaults()
	if err := in.Validate(); err != nil {
		return badInput(err)
	}
	r.in = in
	r.info = workflow.GetInfo(r.ctx)
	r.prio = taskPriority(r.ctx, in.Scheduling(), api.PriorityReview)
	r.hb = DefaultHeartbeatTimeout
	if in.HeartbeatTimeoutSeconds > 0 {
		r.hb = time.Duration(in.HeartbeatTimeoutSeconds) * time.Second
	}
	st, err := r.takeState(run.State)
	if err != nil {
		return err
	}
	r.st = st
	r.st.Runs++
	r.inflight = make([]bool, len(in.Questions))
	if err := r.acceptRaises(); err != nil {
		return err
	}
	r.publishStart()
	return nil
}

// takeState checks the state the previous run handed over, or makes the
// state of a review's first run.
func (r *reviewRun) takeState(st *reviewState) (*reviewState, error) {
	if st != nil {
		if err := checkCarry(r.ctx, st.From); err != nil {
			return nil, err
		}
		if len(st.Questions) != len(r.in.Questions) {
			return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("state holds %d questions, the input %d: start the review without a state",
				len(st.Questions), len(r.in.Questions)), api.ErrBadInput, nil)
		}
		return st, nil
	}
	st = &reviewState{StartedAt: workflow.Now(r.ctx), Questions: make([]reviewQuestionState, len(r.in.Questions))}
	for i := range st.Questions {
		st.Questions[i].Memory = memagent.InitialMemory
	}
	st.Prefix = r.in.OutputPrefix
	if st.Prefix != "" && !strings.HasSuffix(st.Prefix, "/") {
		st.Prefix += "/"
	}
	return st, nil
}

// acceptRaises installs the raise-budget Update: the budget can be raised
// while the review reads, and must be to let a paused review go on.
func (r *reviewRun) acceptRaises() error {
	return workflow.SetUpdateHandlerWithOptions(r.ctx, api.RaiseBudgetUpdate, func(ctx workflow.Context, b api.Budget) (api.Budget, error) {
		r.in.Budget = &b
		return b, nil
	}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, b api.Budget) error {
		return checkOwnRaise(b, r.spent())
	}})
}

// publishStart sets the run's stage and all its search attributes.
func (r *reviewRun) publishStart() {
	prepared := r.st.Prepared.IndexURI != ""
	if prepared {
		r.stage = api.StageReading
		if r.chunksDone() >= r.st.Prepared.Chunks {
			r.stage = api.StageAnswering
		}
	}
	start := api.ReviewStatusUpdates(r.in, r.stage)
	if prepared {
		start = append(start, api.ChunksDoneKey.ValueSet(int64(r.chunksDone())), api.ChunksTotalKey.ValueSet(int64(r.st.Prepared.Chunks)))
		if r.in.Options.Model == "" && r.st.Prepared.Model != "" {
			start = append(start, api.ModelKey.ValueSet(api.KeywordValue(r.st.Prepared.Model)))
		}
	}
	r.publish(start...)
}

// prepare has the document indexed on a review's first run only
// (prepareDocument), then checks that the budget the run started with
// covers reading it once per question.
func (r *reviewRun) prepare() error {
	if r.st.Prepared.IndexURI != "" {
		return nil
	}
	b := r.in.Budget // before a raise during prepareDocument
	if err := r.prepareDocument(); err != nil {
		return err
	}
	if b != nil && b.MaxTokens > 0 && r.st.Prepared.Tokens*int64(len(r.in.Questions)) > b.MaxTokens {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"budget.max_tokens (%d) is below the %d tokens that reading the document (%d tokens) once per question (%d) sends: raise budget.max_tokens (starter estimate says what the review takes)",
			b.MaxTokens, r.st.Prepared.Tokens*int64(len(r.in.Questions)), r.st.Prepared.Tokens, len(r.in.Questions)), api.ErrOverBudget, nil)
	}
	return nil
}

// read runs the memory updates and answers (schedule) and continues as new
// when any is left for the next run.
func (r *reviewRun) read() error {
	r.opts = r.in.Options
	if r.opts.Model == "" {
		r.opts.Model = r.st.Prepared.Model
	}
	r.vis.coalesceChunks()
	r.schedule()
	if r.canceled != nil {
		return r.canceled
	}
	if !r.remaining() {
		return nil
	}
	if r.launched == 0 && !r.continuing {
		return errors.New("review scheduler made no progress: this is a bug in ReviewDocument")
	}
	r.st.From = r.info.WorkflowExecution.RunID
	// r.in: it holds a budget raised during this run.
	return continueAsNew(r.ctx, api.ReviewDocumentName, reviewRunInput{ReviewInput: r.in, State: r.st})
}

// finish fails the review if every question failed, else writes the grid.
func (r *reviewRun) finish() (*ReviewResult, error) {
	if err := r.allFailed(); err != nil {
		return nil, err
	}
	return r.write()
}

// reviewRun is one run of ReviewDocument.
type reviewRun struct {
	ctx  workflow.Context
	edge boundary
	in   api.ReviewInput
	info *workflow.Info
	st   *reviewState
	opts api.ModelOptions
	hb   time.Duration
	prio temporal.Priority
	vis  *visibility

	stage     string
	inflight  []bool
	running   int
	launched  int
	published int // the chunks_done last upserted
	canceled  error
	// continuing says the run continues as new at its next chunk
	// boundary, whatever it has launched: its target version changed
	// (moved), or it woke paused to continue as new (pause).
	continuing bool
}

// moved reports whether the run should launch nothing more and continue
// as new, because its target version changed (targetMoved).
func (r *reviewRun) moved() bool {
	if !r.continuing && targetMoved(r.ctx) {
		r.continuing = true
	}
	return r.continuing
}

func (r *reviewRun) activityOptions(summary string) workflow.Context {
	return workflow.WithActivityOptions(r.ctx, activityOptions(15*time.Minute, r.hb, r.prio, summary))
}

// prepareDocument indexes the document once, checking the budget with the
// longest question.
func (r *reviewRun) prepareDocument() error {
	longest := r.in.Questions[0].Question
	for _, q := range r.in.Questions[1:] {
		if len(q.Question) > len(longest) {
			longest = q.Question
		}
	}
	actx := workflow.WithActivityOptions(r.ctx, activityOptions(30*time.Minute, r.hb, r.prio, "prepare document"))
	prep := actwire.PrepareInput{
		Document: r.in.Document, Question: longest, Options: r.in.Options,
		OutputPrefix: ownPrefix(r.in.OutputPrefix, r.st.Prefix), WorkflowID: r.info.WorkflowExecution.ID,
		FirstRunID: chainID(r.info),
	}
	r.st.Checkpoints = workflow.GetVersion(r.ctx, CheckpointsChange, workflow.DefaultVersion, 1) >= 1
	if len(r.in.Documents) > 0 {
		if !r.st.Checkpoints {
			return badInput(errors.New("documents: this run's history predates corpora"))
		}
		if err := assembleCorpus(r.ctx, r.hb, r.prio, r.in.Documents, r.in.Options, &prep); err != nil {
			return err
		}
	} else if err := convertFirst(r.ctx, r.hb, r.prio, &prep); err != nil {
		return err
	}
	if err := actwire.PrepareDocument.Execute(actx, prep).Get(r.ctx, &r.st.Prepared); err != nil {
		return stageError("prepare document", err)
	}
	r.st.Provenance = r.st.Checkpoints && workflow.GetVersion(r.ctx, ProvenanceChange, workflow.DefaultVersion, 1) >= 1
	r.st.AnswerReuse = r.st.Checkpoints && workflow.GetVersion(r.ctx, AnswerReuseChange, workflow.DefaultVersion, 1) >= 1
	if r.st.Checkpoints && r.in.Reuse != api.ReuseNone {
		// Each question starts from its own deepest checkpoint; the
		// questions are found together.
		futures := make([]actwire.Future[actwire.FindCheckpointOutput], len(r.in.Questions))
		for i, q := range r.in.Questions {
			futures[i] = findCheckpointAsync(r.ctx, r.hb, r.prio, r.st.Prepared, q.Question, r.in.Options, 0, provenanceChain(r.st.Provenance, r.info))
		}
		for i, f := range futures {
			var cp actwire.FindCheckpointOutput
			if err := f.Get(r.ctx, &cp); err != nil {
				return stageError("find checkpoint", err)
			}
			if cp.Chunks > 0 {
				qs := &r.st.Questions[i]
				qs.Cursor, qs.Memory = cp.Chunks, cp.Memory
				qs.Evidence, qs.EvidenceDropped = cp.Evidence, cp.EvidenceDropped
				qs.ReusedFrom = &api.ReusedFrom{WorkflowID: cp.WorkflowID, RunID: cp.RunID, Chunk: cp.Chunks}
				qs.TokensReused = tokensReused(cp, r.st.Prepared.Chunks, r.st.Prepared.Tokens)
			}
		}
	}
	if r.st.Prefix == "" {
		r.st.Prefix = fmt.Sprintf("s3://%s/reviews/%s/%s/", bucketOf(r.st.Prepared.IndexURI), r.info.WorkflowExecution.ID, chainID(r.info))
	}
	r.stage = api.StageReading
	u := []temporal.SearchAttributeUpdate{api.StatusKey.ValueSet(api.StageReading), api.ChunksDoneKey.ValueSet(0),
		api.ChunksTotalKey.ValueSet(int64(r.st.Prepared.Chunks))}
	if r.in.Options.Model == "" && r.st.Prepared.Model != "" {
		u = append(u, api.ModelKey.ValueSet(api.KeywordValue(r.st.Prepared.Model)))
	}
	r.publish(u...)
	return nil
}

// schedule runs memory updates and answers until all are done, the run's
// activity budget is spent, Temporal suggests continuing as new or the
// run's target version changed; then it waits for what is in flight, so
// the run ends at a chunk boundary of every question.
func (r *reviewRun) schedule() {
	sel := workflow.NewSelector(r.ctx)
	r.published = r.chunksDone()
	for {
		for r.running < r.in.Parallelism && r.launched < r.in.ActivitiesPerRun && r.canceled == nil &&
			!(r.launched > 0 && workflow.GetInfo(r.ctx).GetContinueAsNewSuggested()) && !r.moved() && r.budgetRoom() {
			if !r.launchNext(sel) {
				break
			}
		}
		if r.running == 0 {
			if r.canceled == nil && !r.continuing && r.remaining() && !r.budgetRoom() && r.launched < r.in.ActivitiesPerRun {
				r.pause()
				continue
			}
			return
		}
		sel.Select(r.ctx)
		r.afterCompletion()
	}
}

// spent is what the review's questions have spent so far.
func (r *reviewRun) spent() api.Usage {
	var u api.Usage
	for _, q := range r.st.Questions {
		u = u.Add(q.Usage)
	}
	return u
}

// budgetRoom reports whether the budget lets one more call start: the
// calls spent and in flight stay below max_calls, the tokens spent below
// max_tokens.
func (r *reviewRun) budgetRoom() bool {
	b := r.in.Budget
	if b == nil {
		return true
	}
	u := r.spent()
	u.Calls += r.running
	return !overBudget(b, u)
}

// pause shows the review paused at its budget and waits until the
// raise-budget Update makes room (or the review is canceled); everything
// done is kept.
func (r *reviewRun) pause() {
	stage := r.stage
	r.stage = api.StagePaused
	r.publish(api.StatusKey.ValueSet(api.StagePaused))
	u := r.spent()
	workflow.GetLogger(r.ctx).Info("paused at the budget", "calls", u.Calls, "tokens", u.PromptTokens+u.CompletionTokens)
	if err := awaitRoom(r.ctx, true, r.budgetRoom); errors.Is(err, errContinueAsNew) {
		r.continuing = true
		return
	} else if err != nil {
		r.canceled = err
		return
	}
	r.stage = stage
	r.publish(api.StatusKey.ValueSet(stage))
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
	f := actwire.ReviewUpdate.Execute(r.activityOptions(fmt.Sprintf("%s · chunk %d/%d", q.ID, chunk+1, chunks)), actwire.UpdateInput{
		Document: r.st.Prepared.Document, ETag: r.st.Prepared.ETag, IndexURI: r.st.Prepared.IndexURI,
		Chunk: chunk, Chunks: chunks, Question: q.Question, Memory: qs.Memory,
		Options: r.opts, TracePrefix: r.questionPrefix(i), Checkpoint: r.st.Checkpoints,
		EvidenceChunks: evidenceChunks(r.st.Checkpoints, qs.Evidence), EvidenceDropped: qs.EvidenceDropped,
		FirstRunID: provenanceChain(r.st.Provenance, r.info),
	})
	r.started(i)
	sel.AddFuture(f.Future, func(workflow.Future) {
		r.finished(i)
		var out actwire.ReviewUpdateOutput
		if err := f.Get(r.ctx, &out); err != nil {
			r.fail(i, fmt.Sprintf("update memory at chunk %d", chunk), err)
			return
		}
		qs.Memory = out.Memory
		qs.TokensDone += int64(out.ChunkTokens)
		qs.Usage = qs.Usage.Add(out.Usage)
		qs.Cursor = chunk + 1
		if out.Material {
			qs.Evidence = append(qs.Evidence, api.Evidence{
				Chunk: out.Chunk, Start: out.Start, End: out.End, Passage: out.Passage, Added: out.Added,
				Pages: out.Pages, Document: out.Document,
			})
			var dropped int
			qs.Evidence, dropped = report.PruneEvidence(qs.Evidence, qs.Memory, api.MaxEvidence)
			qs.EvidenceDropped += dropped
		}
	})
}

func (r *reviewRun) launchAnswer(sel workflow.Selector, i int) {
	q, qs := r.in.Questions[i], &r.st.Questions[i]
	p := r.st.Prepared
	in := actwire.AnswerInput{
		Question: q.Question, Memory: qs.Memory, GoldAnswers: q.GoldAnswers, Options: r.opts,
		ResultURI: r.questionPrefix(i) + "result.json",
		Result: api.DocumentQAResult{
			WorkflowID: r.info.WorkflowExecution.ID, RunID: r.info.WorkflowExecution.RunID, FirstRunID: r.info.FirstRunID,
			Document: p.Document, DocumentSHA256: p.SHA256, Question: q.Question, Model: r.opts.Model,
			Options: r.opts.WithDefaults(), Chunks: p.Chunks, Tokens: p.Tokens, Bytes: p.Bytes,
			Usage: qs.Usage, Runs: r.st.Runs, IndexURI: p.IndexURI,
			TracePrefix: r.questionPrefix(i) + "chunks/", StartedAt: r.st.StartedAt,
		},
	}
	if r.st.AnswerReuse {
		// AnswerReuseChange: every answer is kept for later readings; one
		// whose every chunk was reused takes the kept answer.
		in.KeepAnswer = true
		in.Result.ChunksReused = chunksReused(qs.ReusedFrom)
		in.ReuseAnswer = r.in.Reuse != api.ReuseNone && p.Chunks > 0 && in.Result.ChunksReused >= p.Chunks
	}
	f := actwire.Answer.Execute(r.activityOptions(q.ID+" · final answer"), in)
	r.started(i)
	sel.AddFuture(f.Future, func(workflow.Future) {
		r.finished(i)
		var res api.DocumentQAResult
		if err := f.Get(r.ctx, &res); err != nil {
			r.fail(i, "answer", err)
			return
		}
		qs.Answered, qs.Answer, qs.AnswerFound, qs.AnswerMethod = true, res.Answer, res.AnswerFound, res.AnswerMethod
		qs.Scores, qs.ResultURI, qs.Usage = res.Scores, res.ResultURI, res.Usage
		qs.AnswerReused = res.AnswerReused
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
	answering := r.stage == api.StageReading && r.chunksDone() >= r.st.Prepared.Chunks
	if done := r.chunksDone(); done != r.published && (answering || r.vis.chunksDue()) {
		r.published = done
		u = append(u, api.ChunksDoneKey.ValueSet(int64(done)))
	}
	if answering {
		r.stage = api.StageAnswering
		u = append(u, api.StatusKey.ValueSet(api.StageAnswering))
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

func (r *reviewRun) progress() api.ReviewProgress {
	p := api.ReviewProgress{
		Stage: r.stage, ChunksDone: r.chunksDone(), ChunksTotal: r.st.Prepared.Chunks,
		TokensTotal: r.st.Prepared.Tokens, Run: r.st.Runs, InFlight: r.running,
		UpdatesTotal: len(r.st.Questions) * r.st.Prepared.Chunks,
	}
	first := true
	for i, q := range r.st.Questions {
		status := api.QuestionReading
		switch {
		case q.failed():
			status = api.QuestionFailed
		case q.Answered:
			status = api.QuestionDone
		case q.Cursor >= r.st.Prepared.Chunks && r.st.Prepared.Chunks > 0:
			status = api.QuestionAnswering
		}
		if passed := q.TokensDone + q.TokensReused; !q.failed() && (first || passed < p.TokensDone) {
			p.TokensDone, first = passed, false
		}
		reused := chunksReused(q.ReusedFrom)
		p.UpdatesDone += q.Cursor
		p.ChunksRead += q.Cursor - reused
		p.ChunksReused += reused
		p.TokensRead += q.TokensDone
		p.TokensReused += q.TokensReused
		if q.AnswerReused {
			p.AnswersReused++
		}
		p.Usage = p.Usage.Add(q.Usage)
		p.Questions = append(p.Questions, api.ReviewQuestionProgress{
			ID: r.in.Questions[i].ID, Status: status, ChunksDone: q.Cursor, Evidence: len(q.Evidence),
			Answer: q.Answer, AnswerFound: q.AnswerFound, ErrorType: q.ErrorType,
			ChunksReused: reused, TokensRead: q.TokensDone, TokensReused: q.TokensReused, AnswerReused: q.AnswerReused,
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
	p := api.Progress{Stage: r.stage, ChunksTotal: chunks, TokensTotal: tokens}
	var pr api.ReviewProgress
	if r.st != nil {
		pr = r.progress()
		p.ChunksDone, p.TokensDone, p.Run = pr.ChunksDone, pr.TokensDone, pr.Run
	}
	r.vis.publish(p, updates...)
	if n := len(r.in.Questions); n > 0 {
		line := details(p) + fmt.Sprintf(" · %d questions", n)
		if pr.ChunksReused > 0 {
			line += fmt.Sprintf(" · chunk readings: %d read, %d reused", pr.ChunksRead, pr.ChunksReused)
			if pr.AnswersReused > 0 {
				line += fmt.Sprintf(" · %d answers reused", pr.AnswersReused)
			}
		}
		workflow.SetCurrentDetails(r.ctx, line)
	}
}

// write assembles the grid, has WriteReview write it with the report, and
// returns it.
func (r *reviewRun) write() (*ReviewResult, error) {
	r.stage = api.StageWriting
	r.publish(api.StatusKey.ValueSet(api.StageWriting), api.ChunksDoneKey.ValueSet(int64(r.st.Prepared.Chunks)))
	p := r.st.Prepared
	g := &api.ReviewGrid{
		Version: api.ReviewGridVersion, WorkflowID: r.info.WorkflowExecution.ID,
		RunID: r.info.WorkflowExecution.RunID, FirstRunID: r.info.FirstRunID,
		Document: p.Document, DocumentSHA256: p.SHA256, Bytes: p.Bytes, Tokens: p.Tokens, Chunks: p.Chunks,
		InvalidBytesReplaced: p.InvalidBytesReplaced, Model: r.opts.Model, Tokenizer: p.Tokenizer,
		Source: p.Source, Format: p.Format, Documents: r.in.Documents,
		ChunkTokens: p.ChunkTokens, MemoryMaxTokens: r.opts.WithDefaults().MemoryMaxTokens,
		EvidenceRule: report.EvidenceRule, Runs: r.st.Runs, StartedAt: r.st.StartedAt,
		Prefix: r.st.Prefix, JSONURI: r.st.Prefix + activities.ReviewGridJSON,
		CSVURI: r.st.Prefix + activities.ReviewGridCSV, HTMLURI: r.st.Prefix + activities.ReviewHTML,
	}
	var total api.Usage
	for i, q := range r.in.Questions {
		qs := r.st.Questions[i]
		row := api.ReviewRow{
			ID: q.ID, Question: q.Question, GoldAnswers: q.GoldAnswers, Status: api.ReviewStatusDone,
			Answer: qs.Answer, AnswerFound: qs.AnswerFound, AnswerMethod: qs.AnswerMethod, Scores: qs.Scores,
			Evidence: make([]api.Evidence, 0, len(qs.Evidence)), EvidenceDropped: qs.EvidenceDropped,
			ChunksRead: qs.Cursor, Usage: api.ReviewUsage(qs.Usage), ResultURI: qs.ResultURI,
			TracePrefix: r.questionPrefix(i) + "chunks/", Error: qs.Error, ErrorType: qs.ErrorType,
			ChunksReused: chunksReused(qs.ReusedFrom), AnswerReused: qs.AnswerReused, ReusedFrom: namedReuse(qs.ReusedFrom),
			ReusedReading: reusedReading(r.st.Provenance, qs.ReusedFrom),
		}
		if qs.failed() {
			row.Status = api.ReviewStatusFailed
		}
		for _, e := range qs.Evidence {
			e.SupportsAnswer = !qs.failed() && report.EvidenceSupports(e.Added, qs.Memory)
			row.Evidence = append(row.Evidence, e)
		}
		if qs.AnswerFound {
			row.AnswerSources = report.AnswerSources(row.Evidence)
		}
		total = total.Add(qs.Usage)
		g.Rows = append(g.Rows, row)
	}
	g.Usage = api.ReviewUsage(total)
	if err := r.ground(g); err != nil {
		return nil, err
	}
	g.FinishedAt = workflow.Now(r.ctx)
	var out actwire.WriteReviewOutput
	if err := actwire.WriteReview.Execute(r.activityOptions("write grid and report"),
		actwire.WriteReviewInput{Grid: *g, ETag: p.ETag}).Get(r.ctx, &out); err != nil {
		return nil, stageError("write review", err)
	}
	if out.JSONURI != "" {
		// A grid kept from an earlier run moves this one to runs/<run id>/.
		g.JSONURI, g.CSVURI, g.HTMLURI = out.JSONURI, out.CSVURI, out.HTMLURI
		g.Prefix = strings.TrimSuffix(out.JSONURI, activities.ReviewGridJSON)
	}
	r.stage = api.StageDone
	r.publish(api.StatusKey.ValueSet(api.StageDone))
	return g, nil
}

// ground grounds the answers of the grid's done rows in one reading of
// the document.
func (r *reviewRun) ground(g *api.ReviewGrid) error {
	var items []actwire.GroundItem
	var rows []int
	for i, row := range g.Rows {
		if row.Status == api.ReviewStatusDone {
			items = append(items, actwire.GroundItem{Answer: row.Answer, AnswerFound: row.AnswerFound, ResultURI: row.ResultURI,
				Evidence: actwire.GroundEvidenceOf(row.Evidence)})
			rows = append(rows, i)
		}
	}
	gs, err := groundAnswers(r.ctx, r.st.Prepared, r.info.WorkflowExecution.RunID, r.hb, r.prio, items)
	for k, gr := range gs {
		row := &g.Rows[rows[k]]
		row.Grounding = gr.Grounding
		if c := gr.Citation; c != nil && row.AnswerFound {
			row.AnswerPages, row.AnswerSources = c.AnswerPages, c.AnswerSources
			row.ContextPages, row.ContextSources = c.ContextPages, c.ContextSources
		}
	}
	return err
}
