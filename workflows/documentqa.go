package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/memagent"
)

// DefaultHeartbeatTimeout is how soon a worker lost mid-activity is
// noticed. The model activities heartbeat for their whole life (model
// calls and S3 alike) every third of it, and the SDK sends at most one
// heartbeat per 0.8 of it: one small RPC per 12 s per running activity.
const DefaultHeartbeatTimeout = 15 * time.Second

// DefaultChunksPerRun is how many chunks one run processes before it
// continues-as-new, unless Temporal suggests it earlier.
const DefaultChunksPerRun = 200

// qaRunInput is what a DocumentQA run decodes: the published input and, on a
// run the workflow continued as new itself, the state its previous run
// handed over ("state" beside the input's members). The state is not part
// of the contract; checkCarry refuses one a caller sent.
type qaRunInput struct {
	api.DocumentQAInput
	State *qaState `json:"state,omitempty"`
}

// qaState is what one run hands to the next.
type qaState struct {
	// From is the run id of the run that handed this state over.
	From        string                `json:"from,omitempty"`
	Prepared    actwire.PrepareOutput `json:"prepared"`
	Cursor      int                   `json:"cursor"`
	Memory      string                `json:"memory"`
	TokensDone  int64                 `json:"tokens_done"`
	Usage       api.Usage             `json:"usage"`
	Runs        int                   `json:"runs"`
	StartedAt   time.Time             `json:"started_at"`
	TracePrefix string                `json:"trace_prefix"`
	// Evidence are the chunks at which the memory changed materially
	// (see qaState.noteEvidence), at most MaxEvidence.
	Evidence        []api.Evidence `json:"evidence,omitempty"`
	EvidenceDropped int            `json:"evidence_dropped,omitempty"`
	// Carried says the run's batch carried it over a continue-as-new of
	// its own: the run tells the batch when it closes (ItemDoneSignal).
	Carried bool `json:"carried,omitempty"`
	// Checkpoints says the run keeps a memory checkpoint after each chunk
	// (CheckpointsChange); ReusedFrom says where it started.
	Checkpoints bool            `json:"checkpoints,omitempty"`
	ReusedFrom  *api.ReusedFrom `json:"reused_from,omitempty"`
	// TokensReused is how many tokens the chunks taken from that
	// checkpoint hold; TokensDone counts only the tokens read.
	TokensReused int64 `json:"tokens_reused,omitempty"`
	// Provenance says the run keeps its chain in its checkpoints and
	// results name only its own (ProvenanceChange).
	Provenance bool `json:"provenance,omitempty"`
}

// DocumentQAResult is the workflow's result.
type DocumentQAResult = api.DocumentQAResult

// SearchAttributesChange gates DocumentQA's search attribute upserts
// (gate: see VERSIONS.md, search-attributes).
const SearchAttributesChange = "search-attributes"

// CoalesceUpsertsChange gates upserting the chunk count at most every
// progressUpsertEvery (gate: see VERSIONS.md, coalesce-progress-upserts).
const CoalesceUpsertsChange = "coalesce-progress-upserts"

// progressUpsertEvery is the least time between two upserts of a run's
// chunk count.
const progressUpsertEvery = 5 * time.Second

// quietProgressUpsertEvery is progressUpsertEvery for a run at
// QuietProgressChange. A chunk update takes seconds on a GPU, so at 5 s a
// run upserted after nearly every chunk (15 upserts an item of 21 chunks
// in BENCHMARKS.md's long-document run): each is a history event and a
// visibility write. An operator's list of runs lags by at most this much;
// the progress query and the current details still move with every chunk,
// and stage changes are upserted at once.
const quietProgressUpsertEvery = 30 * time.Second

// ReportToBatchChange gates tellBatch: a child its batch carried
// (CarriedSignal) signals ItemDoneSignal as it closes (gate: see
// VERSIONS.md, report-to-batch).
const ReportToBatchChange = "report-to-batch"

// tellBatch signals the batch that started this run that the run is
// closing, unless it continues as new. A failed signal (the batch is gone)
// changes nothing: the batch also checks its children from time to time.
func tellBatch(ctx workflow.Context, err error) {
	if workflow.IsContinueAsNewError(err) {
		return
	}
	sctx := ctx
	if ctx.Err() != nil {
		sctx, _ = workflow.NewDisconnectedContext(ctx)
	}
	info := workflow.GetInfo(ctx)
	done := api.ItemDone{WorkflowID: info.WorkflowExecution.ID}
	// Waited for: a signal still pending when the run closes is dropped.
	_ = workflow.SignalExternalWorkflow(sctx, info.ParentWorkflowExecution.ID, "", api.ItemDoneSignal, done).Get(sctx, nil)
}

// DocumentQA is the memagent.DocumentQA workflow: it answers one question
// about one document with MemAgent. Its one argument is a DocumentQAInput
// as JSON, decoded strictly (an unknown member or a wrong type fails the
// run at once as memagent.BadInput, naming the JSON path); start it by name
// (DocumentQAName) from any Temporal client. It returns a DocumentQAResult.
//
// A run goes through four stages, each a method of qaRun that owns its
// version gates: start, prepare (a first run only), read (until the
// document is read or the run continues as new) and finish.
func DocumentQA(ctx workflow.Context, input converter.RawValue) (_ *DocumentQAResult, err error) {
	r := newQARun(ctx)
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

// qaRun is one run of DocumentQA. in holds the input as it stands (the
// raise-budget Update and a batch's grants change its budget), st the
// state the run hands over, progress what the query and the UI show.
type qaRun struct {
	ctx      workflow.Context
	gates    gates
	info     *workflow.Info
	vis      *visibility
	edge     boundary
	progress api.Progress
	in       api.DocumentQAInput
	st       *qaState
	budget   childBudget
	prio     temporal.Priority
	hb       time.Duration
	// carriedCh receives the batch's CarriedSignal on a batch child that
	// reports to its batch (ReportToBatchChange), else it is nil; carried
	// says the batch carried the run over a continue-as-new of its own.
	carriedCh workflow.ReceiveChannel
	carried   bool
}

// newQARun makes the first calls of the run, before any command: a
// history without the markers replays as DefaultVersion, with no upserts,
// whatever else the run did. LeanItemChange is asked first: a run at it
// asks no other gate (gates).
func newQARun(ctx workflow.Context) *qaRun {
	r := &qaRun{ctx: ctx, progress: api.Progress{Stage: api.StagePreparing}}
	r.gates = askLean(ctx)
	r.vis = newVisibility(ctx, r.gates.version(ctx, SearchAttributesChange))
	r.edge = newBoundaryAt(ctx, r.gates)
	return r
}

// close runs as the run closes with err: a run its batch carried tells
// the batch, then a run that did not finish shows how it closed.
func (r *qaRun) close(err error) {
	if r.carriedCh != nil {
		for r.carriedCh.ReceiveAsync(nil) {
			r.carried = true
		}
		if r.carried {
			tellBatch(r.ctx, err)
		}
	}
	if s := r.edge.closedStatus(err); s != "" && s != api.StageDone {
		r.progress.Stage = s
		r.vis.publish(r.progress, api.StatusKey.ValueSet(s))
	}
}

// start decodes the input, takes over the previous run's state (or makes
// a first one), installs the handlers and shows the run.
func (r *qaRun) start(input converter.RawValue) error {
	// The query answers from the start, so a caller polling it sees
	// "failed" even for input that does not decode.
	if err := workflow.SetQueryHandler(r.ctx, api.ProgressQuery, func() (api.Progress, error) { return r.progress, nil }); err != nil {
		return err
	}
	var run qaRunInput
	if err := r.edge.decode(input, &run); err != nil {
		return err
	}
	r.in = run.DocumentQAInput
	if err := r.in.Validate(); err != nil {
		return badInput(err)
	}
	// A batch that continues as new while this run reads carries it over
	// and says so (CarriedSignal); the run then tells the batch when it
	// closes. A run its batch never carried closes as the batch's own
	// child, which the batch sees without a signal.
	r.carried = run.State != nil && run.State.Carried
	if r.in.BatchID != "" && workflow.GetInfo(r.ctx).ParentWorkflowExecution != nil &&
		r.gates.at(r.ctx, ReportToBatchChange) {
		r.carriedCh = workflow.GetSignalChannel(r.ctx, api.CarriedSignal)
	}
	r.info = workflow.GetInfo(r.ctx)
	r.st = run.State
	if r.st != nil {
		if err := checkCarryAt(r.ctx, r.gates, r.st.From); err != nil {
			return err
		}
	} else {
		r.st = newQAState(r.ctx, r.in)
	}
	if err := r.acceptRaises(); err != nil {
		return err
	}
	r.budget.take(r.ctx, r.gates, &r.in)
	r.prio = taskPriority(r.ctx, r.in.Scheduling(), api.PriorityQuestion)
	r.hb = DefaultHeartbeatTimeout
	if r.in.HeartbeatTimeoutSeconds > 0 {
		r.hb = time.Duration(r.in.HeartbeatTimeoutSeconds) * time.Second
	}
	r.st.Runs++
	r.progress.Stage, r.progress.Run = api.StageReading, r.st.Runs
	if r.st.Prepared.IndexURI == "" {
		r.progress.Stage = api.StagePreparing
	}
	r.refresh()
	r.publishStart()
	return nil
}

// newQAState is the state of a reading's first run.
func newQAState(ctx workflow.Context, in api.DocumentQAInput) *qaState {
	st := &qaState{Memory: memagent.InitialMemory, StartedAt: workflow.Now(ctx)}
	st.TracePrefix = in.OutputPrefix
	if st.TracePrefix != "" && !strings.HasSuffix(st.TracePrefix, "/") {
		st.TracePrefix += "/"
	}
	return st
}

// acceptRaises installs the raise-budget Update: the budget lives in the
// input, which continue-as-new carries, and only the run's own budget is
// raised so (childBudget.checkRaise).
func (r *qaRun) acceptRaises() error {
	return workflow.SetUpdateHandlerWithOptions(r.ctx, api.RaiseBudgetUpdate, func(ctx workflow.Context, b api.Budget) (api.Budget, error) {
		r.in.Budget = &b
		return b, nil
	}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, b api.Budget) error {
		return r.budget.checkRaise(ctx, r.in, b, r.st.Usage)
	}})
}

// refresh copies the state into the progress the query shows.
func (r *qaRun) refresh() {
	st, p := r.st, &r.progress
	p.ChunksDone, p.ChunksTotal = st.Cursor, st.Prepared.Chunks
	p.TokensDone, p.TokensTotal = st.TokensDone+st.TokensReused, st.Prepared.Tokens
	p.ChunksReused, p.TokensReused = chunksReused(st.ReusedFrom), st.TokensReused
	p.Usage, p.Memory = st.Usage, st.Memory
}

// publishStart sets all the run's search attributes: they carry over a
// continue-as-new, but a run continued from one at DefaultVersion starts
// without them.
func (r *qaRun) publishStart() {
	st := r.st
	start := api.StatusUpdates(r.in, r.progress.Stage)
	if r.in.Options.Model == "" && st.Prepared.Model != "" {
		start = append(start, api.ModelKey.ValueSet(api.KeywordValue(st.Prepared.Model)))
	}
	start = append(start, api.ChunksDoneKey.ValueSet(int64(st.Cursor)))
	if st.Prepared.Chunks > 0 {
		start = append(start, api.ChunksTotalKey.ValueSet(int64(st.Prepared.Chunks)))
	}
	r.vis.publish(r.progress, start...)
}

// prepare has the document (or corpus) converted and indexed, on a
// reading's first run only, and starts from the deepest checkpoint of an
// earlier reading unless the input says reuse "none": one activity a step
// (prepareSteps), or all in one (prepareReading) at LeanItemChange.
func (r *qaRun) prepare() error {
	st, info := r.st, r.info
	if st.Prepared.IndexURI != "" {
		return nil
	}
	prep := actwire.PrepareInput{
		Document: r.in.Document, Question: r.in.Question, Options: r.in.Options,
		OutputPrefix: ownPrefix(r.in.OutputPrefix, st.TracePrefix), WorkflowID: info.WorkflowExecution.ID,
		FirstRunID: chainID(info), BatchChild: info.ParentWorkflowExecution != nil,
	}
	st.Checkpoints = r.gates.at(r.ctx, CheckpointsChange)
	prepare := r.prepareSteps
	if r.gates.lean {
		prepare = r.prepareReading
	}
	if err := prepare(prep); err != nil {
		return err
	}
	if st.TracePrefix == "" {
		// The worker's bucket is only known to the worker: derive the
		// prefix from the index location, which lives in that bucket.
		st.TracePrefix = fmt.Sprintf("s3://%s/runs/%s/%s/", bucketOf(st.Prepared.IndexURI), info.WorkflowExecution.ID, chainID(info))
	}
	r.progress.Stage = api.StageReading
	r.refresh()
	prepared := []temporal.SearchAttributeUpdate{api.StatusKey.ValueSet(api.StageReading),
		api.ChunksDoneKey.ValueSet(int64(st.Cursor)), api.ChunksTotalKey.ValueSet(int64(st.Prepared.Chunks))}
	if r.in.Options.Model == "" && st.Prepared.Model != "" {
		prepared = append(prepared, api.ModelKey.ValueSet(api.KeywordValue(st.Prepared.Model)))
	}
	r.vis.publish(r.progress, prepared...)
	return nil
}

// prepareSteps runs the steps one activity each, asking each gate:
// ConvertDocument (or AssembleCorpus), PrepareDocument, FindCheckpoint.
func (r *qaRun) prepareSteps(prep actwire.PrepareInput) error {
	st := r.st
	if len(r.in.Documents) > 0 {
		if !st.Checkpoints {
			return badInput(errors.New("documents: this run's history predates corpora"))
		}
		if err := assembleCorpus(r.ctx, r.hb, r.prio, r.in.Documents, r.in.Options, &prep); err != nil {
			return err
		}
	} else if err := convertFirstAt(r.ctx, r.gates, r.hb, r.prio, &prep); err != nil {
		return err
	}
	actx := workflow.WithActivityOptions(r.ctx, activityOptions(30*time.Minute, r.hb, r.prio, "prepare document"))
	if err := actwire.PrepareDocument.Execute(actx, prep).Get(r.ctx, &st.Prepared); err != nil {
		return stageError("prepare document", err)
	}
	st.Provenance = st.Checkpoints && r.gates.at(r.ctx, ProvenanceChange)
	if !st.Checkpoints || r.in.Reuse == api.ReuseNone {
		return nil
	}
	cp, err := findCheckpoint(r.ctx, r.hb, r.prio, st.Prepared, r.in.Question, r.in.Options, r.in.Sample, provenanceChain(st.Provenance, r.info))
	if err != nil {
		return err
	}
	r.startFrom(cp)
	return nil
}

// prepareReading runs the same steps with the same inputs as one activity
// (PrepareReading), for a run at LeanItemChange, where every gate is at
// version 1 (corpora, checkpoints, provenance, conversion), and leaves the
// same state.
func (r *qaRun) prepareReading(prep actwire.PrepareInput) error {
	st := r.st
	st.Provenance = st.Checkpoints
	in := actwire.PrepareReadingInput{Prepare: prep, Convert: len(r.in.Documents) == 0}
	if len(r.in.Documents) > 0 {
		opts := r.in.Options
		in.Corpus = &actwire.CorpusInput{Documents: r.in.Documents, InvalidUTF8: opts.InvalidUTF8, OCR: opts.OCR, OCRLanguages: opts.OCRLanguages}
	}
	if r.in.Reuse != api.ReuseNone {
		in.Find = &actwire.FindCheckpointInput{Question: r.in.Question, Options: r.in.Options, Sample: r.in.Sample,
			FirstRunID: provenanceChain(st.Provenance, r.info)}
	}
	// As long as its steps' bounds together: a conversion can take hours.
	actx := workflow.WithActivityOptions(r.ctx, activityOptions(convertTimeout+40*time.Minute, r.hb, r.prio, "prepare document"))
	var out actwire.PrepareReadingOutput
	if err := actwire.PrepareReading.Execute(actx, in).Get(r.ctx, &out); err != nil {
		return stepError("prepare document", err)
	}
	st.Prepared = out.Prepared
	if out.Checkpoint != nil {
		r.startFrom(*out.Checkpoint)
	}
	return nil
}

// startFrom starts the reading from cp, the deepest checkpoint of an
// earlier reading of the same chunks (FindCheckpoint), if it holds any.
func (r *qaRun) startFrom(cp actwire.FindCheckpointOutput) {
	st := r.st
	if cp.Chunks > 0 {
		st.Cursor, st.Memory = cp.Chunks, cp.Memory
		st.Evidence, st.EvidenceDropped = cp.Evidence, cp.EvidenceDropped
		st.ReusedFrom = &api.ReusedFrom{WorkflowID: cp.WorkflowID, RunID: cp.RunID, Chunk: cp.Chunks}
		st.TokensReused = tokensReused(cp, st.Prepared.Chunks, st.Prepared.Tokens)
		workflow.GetLogger(r.ctx).Info("starting from a checkpoint", "chunks_reused", cp.Chunks, "chunks", st.Prepared.Chunks)
	}
}

// read updates the memory chunk by chunk until the document is read, or
// the run continues as new (after ChunksPerRun chunks, when Temporal
// suggests it, when the run's target version moved, or paused at the
// budget), which it returns as its error.
func (r *qaRun) read() error {
	st := r.st
	// A batch child's budget is a grant, raised on request: only a budget
	// of the run's own must cover the whole document.
	if b := r.in.Budget; b != nil && b.MaxTokens > 0 && st.Prepared.Tokens > b.MaxTokens && !grantedByBatch(r.ctx, r.in) {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"budget.max_tokens (%d) is below the document's own %d tokens, which every reading sends: raise budget.max_tokens (starter estimate says what the run takes)",
			b.MaxTokens, st.Prepared.Tokens), api.ErrOverBudget, nil)
	}
	chunksPerRun := r.in.ChunksPerRun
	if chunksPerRun == 0 {
		chunksPerRun = DefaultChunksPerRun
	}
	// Chunk counts go to the search attributes at most every
	// progressUpsertEvery (the query and the current details still move
	// with every chunk): an upsert is a visibility write per chunk.
	r.vis.coalesceChunksAt(r.gates)
	for done := 0; st.Cursor < st.Prepared.Chunks; done++ {
		if done >= chunksPerRun || (done > 0 && workflow.GetInfo(r.ctx).GetContinueAsNewSuggested()) || targetMoved(r.ctx) {
			return r.handOver()
		}
		if err := r.awaitBudget(); err != nil {
			return err
		}
		if err := r.updateMemory(); err != nil {
			return err
		}
	}
	return nil
}

// updateMemory reads the chunk at the cursor (UpdateMemory) and moves
// the cursor past it.
func (r *qaRun) updateMemory() error {
	st := r.st
	actx := workflow.WithActivityOptions(r.ctx, activityOptions(15*time.Minute, r.hb, r.prio, fmt.Sprintf("chunk %d/%d · %s/%s tokens",
		st.Cursor+1, st.Prepared.Chunks, humanTokens(st.TokensDone), humanTokens(st.Prepared.Tokens))))
	var out actwire.UpdateOutput
	err := actwire.UpdateMemory.Execute(actx, actwire.UpdateInput{
		Document: st.Prepared.Document, ETag: st.Prepared.ETag, IndexURI: st.Prepared.IndexURI,
		Chunk: st.Cursor, Chunks: st.Prepared.Chunks, Question: r.in.Question, Memory: st.Memory,
		Options: r.modelOptions(), TracePrefix: st.TracePrefix, Checkpoint: st.Checkpoints, Sample: r.in.Sample,
		EvidenceChunks: evidenceChunks(st.Checkpoints, st.Evidence), EvidenceDropped: st.EvidenceDropped,
		FirstRunID: provenanceChain(st.Provenance, r.info),
	}).Get(r.ctx, &out)
	if err != nil {
		return stageError(fmt.Sprintf("update memory at chunk %d", st.Cursor), err)
	}
	st.Memory = out.Memory
	st.noteEvidence(out)
	st.TokensDone += int64(out.ChunkTokens)
	st.Usage = st.Usage.Add(out.Usage)
	st.Cursor++
	r.refresh()
	switch {
	case st.Cursor >= st.Prepared.Chunks:
		// The last chunk's count goes with the answering status below,
		// in the same upsert.
	case r.vis.chunksDue():
		r.vis.publish(r.progress, api.ChunksDoneKey.ValueSet(int64(st.Cursor)))
	default:
		r.vis.publish(r.progress)
	}
	return nil
}

// modelOptions are the input's model options, naming the model the
// worker resolved when the input names none.
func (r *qaRun) modelOptions() api.ModelOptions {
	opts := r.in.Options
	if opts.Model == "" {
		opts.Model = r.st.Prepared.Model
	}
	return opts
}

// awaitBudget waits, paused, until the budget covers the next model call
// (see awaitBudget); a run that should continue as new paused does.
func (r *qaRun) awaitBudget() error {
	err := r.budget.await(r.ctx, &r.in, r.st, &r.progress, r.vis)
	if errors.Is(err, errContinueAsNew) {
		return r.handOver()
	}
	return err
}

// handOver continues the run as new with its state, saying whether its
// batch carried it.
func (r *qaRun) handOver() error {
	st := r.st
	st.From = r.info.WorkflowExecution.RunID
	for r.carriedCh != nil && r.carriedCh.ReceiveAsync(nil) {
		r.carried = true
	}
	st.Carried = r.carried
	next := qaRunInput{DocumentQAInput: r.in, State: st}
	workflow.GetLogger(r.ctx).Info("continuing as new", "chunks_done", st.Cursor, "chunks", st.Prepared.Chunks, "run", st.Runs)
	return continueAsNew(r.ctx, api.DocumentQAName, next)
}

// finish asks for the answer from the memory (Answer), grounds it in the
// document and shows the run done.
func (r *qaRun) finish() (*DocumentQAResult, error) {
	if err := r.awaitBudget(); err != nil {
		return nil, err
	}
	r.progress.Stage = api.StageAnswering
	r.vis.publish(r.progress, api.StatusKey.ValueSet(api.StageAnswering), api.ChunksDoneKey.ValueSet(int64(r.st.Cursor)))
	answer := r.answerThenGround
	if r.gates.lean {
		answer = r.answerAndGround
	}
	res, err := answer()
	if err != nil {
		return nil, err
	}
	r.progress.Stage, r.progress.Answer, r.progress.Usage = api.StageDone, res.Answer, res.Usage
	r.vis.publish(r.progress, api.StatusKey.ValueSet(api.StageDone))
	workflow.GetLogger(r.ctx).Info("answered", "chunks", res.Chunks, "runs", res.Runs, "model_calls", res.Usage.Calls,
		"repeated_calls", res.Usage.RepeatedCalls, "answer_found", res.AnswerFound)
	return res, nil
}

// answerThenGround runs Answer, which writes the result beside the
// traces, then GroundAnswer (ground).
func (r *qaRun) answerThenGround() (*DocumentQAResult, error) {
	actx := workflow.WithActivityOptions(r.ctx, activityOptions(15*time.Minute, r.hb, r.prio, "final answer"))
	var res DocumentQAResult
	if err := actwire.Answer.Execute(actx, r.answerInput()).Get(r.ctx, &res); err != nil {
		return nil, stageError("answer", err)
	}
	if err := r.ground(&res); err != nil {
		return nil, err
	}
	return &res, nil
}

// answerAndGround runs both steps of answerThenGround as one activity
// (AnswerAndGround), for a run at LeanItemChange: the same answer, and
// the same grounding (none when it failed for good).
func (r *qaRun) answerAndGround() (*DocumentQAResult, error) {
	// As long as its steps' bounds together.
	actx := workflow.WithActivityOptions(r.ctx, activityOptions(45*time.Minute, r.hb, r.prio, "final answer"))
	p := r.st.Prepared
	var out actwire.AnswerGroundOutput
	if err := actwire.AnswerAndGround.Execute(actx, actwire.AnswerGroundInput{
		Answer: r.answerInput(), Document: p.Document, ETag: p.ETag, IndexURI: p.IndexURI,
	}).Get(r.ctx, &out); err != nil {
		return nil, stepError("answer", err)
	}
	res := out.Result
	if out.Ground == nil {
		workflow.GetLogger(r.ctx).Warn("answers not grounded")
	}
	applyGrounding(&res, groundedOf(out.Ground, 1))
	return &res, nil
}

// answerInput is what Answer is asked, the run's summary so far with it.
func (r *qaRun) answerInput() actwire.AnswerInput {
	st, in, info, opts := r.st, r.in, r.info, r.modelOptions()
	return actwire.AnswerInput{
		Question: in.Question, Memory: st.Memory, GoldAnswers: in.GoldAnswers, Options: opts,
		ResultURI: st.TracePrefix + "result.json",
		Result: api.DocumentQAResult{
			WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID, FirstRunID: info.FirstRunID,
			Document: st.Prepared.Document, DocumentSHA256: st.Prepared.SHA256,
			Question: in.Question, Model: opts.Model, Options: opts.WithDefaults(),
			Chunks: st.Prepared.Chunks, Tokens: st.Prepared.Tokens, Bytes: st.Prepared.Bytes,
			Usage: st.Usage, Runs: st.Runs, IndexURI: st.Prepared.IndexURI,
			TracePrefix: st.TracePrefix + "chunks/", StartedAt: st.StartedAt,
			Source: st.Prepared.Source, Format: st.Prepared.Format, Evidence: st.Evidence,
			Documents: in.Documents, ChunksReused: chunksReused(st.ReusedFrom), ReusedFrom: namedReuse(st.ReusedFrom),
			ReusedReading: reusedReading(st.Provenance, st.ReusedFrom),
		},
	}
}

// ground finds where in the document the answer and its evidence are
// (GroundAnswer, GroundingChange) and adds the pages or sections to res.
func (r *qaRun) ground(res *DocumentQAResult) error {
	gs, err := groundAnswersAt(r.ctx, r.gates, r.st.Prepared, r.info.WorkflowExecution.RunID, r.hb, r.prio,
		[]actwire.GroundItem{{Answer: res.Answer, AnswerFound: res.AnswerFound, ResultURI: res.ResultURI,
			Evidence: actwire.GroundEvidenceOf(res.Evidence)}})
	if err != nil {
		return err
	}
	applyGrounding(res, gs)
	return nil
}

// applyGrounding adds the answer's grounding and, from a worker that works
// it out, its citation, to res; gs is one grounded answer, or none.
func applyGrounding(res *DocumentQAResult, gs []grounded) {
	if len(gs) == 1 {
		res.Grounding = gs[0].Grounding
		if c := gs[0].Citation; c != nil && res.AnswerFound {
			res.AnswerPages, res.AnswerSources = c.AnswerPages, c.AnswerSources
			res.ContextPages, res.ContextSources = c.ContextPages, c.ContextSources
		}
	}
}

// stepError fails the workflow with the error of an activity that runs
// several steps and names in its message the one that failed
// (activities' stepFailure), keeping its type and non-retryable flag at
// the top of the chain as stageError does; an error that is no
// activity's own (a timeout, a cancellation) names stage.
func stepError(stage string, err error) error {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return temporal.NewApplicationErrorWithOptions(appErr.Message(), appErr.Type(),
			temporal.ApplicationErrorOptions{NonRetryable: appErr.NonRetryable(), Cause: err})
	}
	return fmt.Errorf("%s: %w", stage, err)
}

// stageError fails the workflow with the stage that failed in the message,
// keeping the activity's error type and non-retryable flag at the top of the
// chain, where callers and the UI look for them.
func stageError(stage string, err error) error {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		// Message, not Error: the top-level message stays one short line,
		// and the activity's error (with its own causes) is the cause.
		return temporal.NewApplicationErrorWithOptions(stage+": "+appErr.Message(), appErr.Type(),
			temporal.ApplicationErrorOptions{NonRetryable: appErr.NonRetryable(), Cause: err})
	}
	return fmt.Errorf("%s: %w", stage, err)
}

func bucketOf(uri string) string {
	rest := strings.TrimPrefix(uri, "s3://")
	b, _, _ := strings.Cut(rest, "/")
	return b
}

// humanTokens renders 85000 as "85K" and 3500000 as "3.5M".
func humanTokens(n int64) string {
	switch {
	case n >= 1_000_000:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e6), ".0") + "M"
	case n >= 1_000:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e3), ".0") + "K"
	}
	return fmt.Sprint(n)
}

// ownPrefix is the output prefix PrepareDocument checks and claims: the
// caller's (normalized to end in '/'), or "" for the run's default one.
func ownPrefix(callers, normalized string) string {
	if callers == "" {
		return ""
	}
	return normalized
}
