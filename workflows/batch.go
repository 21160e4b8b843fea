package workflows

import (
	"errors"
	"fmt"

	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// partBytes bounds the outcomes buffered for one part (and so one activity
// input in history), whatever their count.
const partBytes = 512 << 10

// batchRunInput is what a BatchQA run decodes: the published input and, on
// a run the workflow continued as new itself, the state its previous run
// handed over. The state is not part of the contract; checkCarry refuses
// one a caller sent.
type batchRunInput struct {
	api.BatchQAInput
	State *batchState `json:"state,omitempty"`
}

// batchState is what one BatchQA run hands to the next. Items never enter
// it: they stay in S3 pages, and the state holds counts and locations.
type batchState struct {
	// From is the run id of the run that handed this state over.
	From string `json:"from,omitempty"`
	// StartedAt is the first run's start; it names a dated report.
	StartedAt time.Time `json:"started_at"`
	Name      string    `json:"name"`
	// Expanded is ExpandManifest's output; empty until the manifest is
	// expanded.
	Expanded actwire.ExpandOutput `json:"expanded"`
	// NextPage is the first page not yet resolved. Every item of the
	// pages before it has an outcome in one of Parts or a child in
	// Carried (before BatchCarryChange a run drained its children before
	// it continued as new).
	NextPage int `json:"next_page"`
	Started  int `json:"started"`
	Answered int `json:"answered"`
	Reused   int `json:"reused"`
	Failed   int `json:"failed"`
	// Usage sums the model usage of the children that answered.
	Usage api.Usage `json:"usage"`
	// The budget's ledger: what finished children were charged, the
	// running children's grants and those waiting for one (ledger.go).
	grantLedger
	// Parts are the outcome parts, relative to Expanded.WorkPrefix.
	Parts []string `json:"parts,omitempty"`
	Runs  int      `json:"runs"`
	// Carried are the children still running when the run continued as
	// new (BatchCarryChange): the next run keeps them in its window and
	// settles them when they close (children.go).
	Carried []carriedChild `json:"carried,omitempty"`
	// Finishing are carried children that said they are closing.
	Finishing []string `json:"finishing,omitempty"`
	// Asking are children whose request for budget came as a signal as
	// the run handed over (BatchLedgerChange): the next run reads them.
	Asking []string `json:"asking,omitempty"`
	// Changes says the first run took BatchChangesChange at version 1:
	// the report compares with CompareWith (when set) and the batch
	// notifies its notify_url. CompareAuto says a Schedule implied the
	// comparison (decideChanges).
	Changes     bool   `json:"changes,omitempty"`
	CompareWith string `json:"compare_with,omitempty"`
	CompareAuto bool   `json:"compare_auto,omitempty"`
	// HTTPIDs says the first run took HTTPIDsChange at version 1: the
	// children are <batch id>.<seq>, else <batch id>/<seq>. Decided once,
	// so that a batch keeps one form through every run.
	HTTPIDs bool `json:"http_ids,omitempty"`
}

// BatchQA answers the questions of a manifest, one DocumentQA child per item.
//
// The first run expands the manifest into pages in S3 (ExpandManifest).
// Each page is then resolved (ResolveBatchPage): items already answered
// with the same document version, question, model and options are reused,
// items whose document is missing fail at once, and the rest run as
// DocumentQA children, at most Concurrency at a time, in a sliding window.
// A child's failure is the item's outcome, never the batch's. Outcomes are
// written to S3 in parts; a run continues-as-new at a page boundary after
// ItemsPerRun items (or when Temporal suggests it) without waiting for its
// children: the next run carries them in its window (BatchCarryChange; see
// batchcarry.go). The last run waits for the children still running and
// writes the report (WriteBatchReport).
//
// Its one argument is a BatchQAInput as JSON, decoded strictly like
// DocumentQA's; start it by name (BatchQAName).
//
// A run goes through four stages, each a method of batchRun that owns its
// version gates: start, expand (a first run only), items (until the pages
// are done or the run continues as new) and report (the last run only).
func BatchQA(ctx workflow.Context, input converter.RawValue) (_ *api.BatchQAResult, err error) {
	b, err := startBatch(ctx, input)
	if err != nil {
		return nil, err
	}
	defer func() { b.close(err) }()
	b.publish(b.progress.Stage, api.BatchKey.ValueSet(api.KeywordValue(b.st.Name)))
	if err := b.expand(); err != nil {
		return nil, err
	}
	if err := b.items(); err != nil {
		return nil, err
	}
	if st := b.st; st.NextPage < st.Expanded.Pages || len(st.Carried) > 0 {
		st.From = workflow.GetInfo(ctx).WorkflowExecution.RunID
		// b.in: it holds a budget raised during this run.
		return nil, continueAsNew(ctx, api.BatchQAName, batchRunInput{BatchQAInput: b.in, State: st})
	}
	return b.report()
}

// startBatch decodes the input, takes over the previous run's state (or
// makes a first one) and installs the query and the Update handlers. The
// query answers from the start, so a caller polling it sees "failed" even
// for input that does not decode, as DocumentQA's does.
func startBatch(ctx workflow.Context, input converter.RawValue) (*batchRun, error) {
	edge := newBoundary(ctx)
	var b *batchRun
	early := api.BatchStageExpanding
	if err := workflow.SetQueryHandler(ctx, api.ProgressQuery, func() (api.BatchProgress, error) {
		if b == nil {
			return api.BatchProgress{Stage: early}, nil
		}
		b.refresh()
		return b.progress, nil
	}); err != nil {
		return nil, err
	}
	refuse := func(err error) error {
		early = api.StageFailed
		if edge.lifecycle {
			_ = workflow.UpsertTypedSearchAttributes(ctx, api.StatusKey.ValueSet(api.StageFailed))
		}
		return err
	}
	var run batchRunInput
	if err := edge.decode(input, &run); err != nil {
		return nil, refuse(err)
	}
	in := run.BatchQAInput
	if err := in.Validate(); err != nil {
		return nil, refuse(badInput(err))
	}
	in = in.WithDefaults()
	st, err := takeBatchState(ctx, in, run.State)
	if err != nil {
		return nil, refuse(err)
	}
	b = &batchRun{ctx: ctx, edge: edge, in: in, st: st, workflowID: workflow.GetInfo(ctx).WorkflowExecution.ID,
		prio: taskPriority(ctx, in.Scheduling(), api.PriorityBatch)}
	b.kids, b.out = newBatchChildren(), newBatchOutbox()
	b.ledger = &st.grantLedger
	b.raised = workflow.NewBufferedChannel(ctx, 1)
	if err := b.acceptUpdates(); err != nil {
		return nil, refuse(err)
	}
	b.progress.Stage = api.BatchStageRunning
	if st.Expanded.WorkPrefix == "" {
		b.progress.Stage = api.BatchStageExpanding
	}
	return b, nil
}

// takeBatchState checks the state the previous run handed over, or makes
// the state of a batch's first run, and counts this run.
func takeBatchState(ctx workflow.Context, in api.BatchQAInput, st *batchState) (*batchState, error) {
	if st != nil {
		if err := checkCarry(ctx, st.From); err != nil {
			return nil, err
		}
	} else {
		st = &batchState{StartedAt: workflow.Now(ctx), Name: in.Name}
		if st.Name == "" {
			st.Name = workflow.GetInfo(ctx).WorkflowExecution.ID
		}
		st.HTTPIDs = workflow.GetVersion(ctx, HTTPIDsChange, workflow.DefaultVersion, 1) >= 1
	}
	st.Runs++
	return st, nil
}

// acceptUpdates installs the raise-budget Update and, for children that
// have spent their grant, the budget-request Update (BatchLedgerChange).
// The raise writes the run's input, which continue-as-new carries: a raise
// is never undone by the next run.
func (b *batchRun) acceptUpdates() error {
	if err := workflow.SetUpdateHandlerWithOptions(b.ctx, api.RaiseBudgetUpdate, func(ctx workflow.Context, nb api.Budget) (api.Budget, error) {
		b.in.Budget = &nb
		if b.raised.Len() == 0 {
			b.raised.Send(ctx, true)
		}
		b.probe("raise")
		return nb, nil
	}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, nb api.Budget) error {
		return b.ledger.checkRaise(b.in.Budget, nb)
	}}); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(b.ctx, api.BudgetRequestUpdate, func(ctx workflow.Context, req api.BudgetRequest) (api.Budget, error) {
		g, err := b.askFor(ctx, req.WorkflowID)
		b.probe("budget request")
		return g, err
	}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req api.BudgetRequest) error {
		return b.checkRequest(req)
	}})
}

// close runs as the run closes with err: a canceled run that carries its
// children cancels them, the last run awaits what it sent (a send pending
// when a run closes is dropped), and a run that did not finish shows how
// it closed.
func (b *batchRun) close(err error) {
	if b.kids.carryOver && temporal.IsCanceledError(err) {
		b.cancelLive()
	}
	if b.out.awaits() && err == nil {
		_ = b.out.quiesce(b.ctx)
	}
	if err == nil || workflow.IsContinueAsNewError(err) {
		b.probe("closing")
	}
	if s := b.edge.closedStatus(err); s != "" && s != api.StageDone {
		b.publish(s)
	}
}

// expand has the manifest expanded into pages in S3, on a batch's first
// run only, after deciding whether the report compares with an earlier one
// (BatchChangesChange).
func (b *batchRun) expand() error {
	st := b.st
	if st.Expanded.WorkPrefix != "" {
		return nil
	}
	decideChanges(b.ctx, b.in, st)
	dated := ""
	if b.in.DatedReport {
		dated = st.StartedAt.UTC().Format(api.DatedReportLayout)
	}
	info := workflow.GetInfo(b.ctx)
	actx := workflow.WithActivityOptions(b.ctx, activityOptions(12*time.Hour, 2*time.Minute, b.prio, "expand manifest"))
	if err := actwire.ExpandManifest.Execute(actx, actwire.ExpandInput{
		Manifest: b.in.Manifest, Format: b.in.Format, ReportPrefix: b.in.ReportPrefix, Dated: dated,
		WorkflowID: info.WorkflowExecution.ID, RunKey: chainID(info), ScheduleID: scheduleOf(b.ctx), PageSize: b.in.PageSize,
		Options: b.in.Options, Samples: b.in.Samples, CompareWith: st.explicitCompare(),
	}).Get(b.ctx, &st.Expanded); err != nil {
		return stageError("expand manifest", err)
	}
	updates := []temporal.SearchAttributeUpdate{}
	if st.Expanded.Model != "" {
		updates = append(updates, api.ModelKey.ValueSet(api.KeywordValue(st.Expanded.Model)))
	}
	b.publish(api.BatchStageRunning, updates...)
	return nil
}

// items takes the run's mode (BatchCarryChange: children run on across
// continue-as-new; BatchLedgerChange: children pull their grants) and runs
// the items (runItems).
func (b *batchRun) items() error {
	b.kids.carryOver = workflow.GetVersion(b.ctx, BatchCarryChange, workflow.DefaultVersion, 1) >= 1
	if b.kids.carryOver {
		b.out.pull = workflow.GetVersion(b.ctx, BatchLedgerChange, workflow.DefaultVersion, 1) >= 1
		b.restore()
	}
	return b.runItems()
}

// report, on the last run, writes the report (WriteBatchReport) and, when
// the first run took BatchChangesChange, shows and notifies the changes
// since the report compared with.
func (b *batchRun) report() (*api.BatchQAResult, error) {
	st, info := b.st, workflow.GetInfo(b.ctx)
	b.publish(api.BatchStageReporting)
	actx := workflow.WithActivityOptions(b.ctx, activityOptions(2*time.Hour, 2*time.Minute, b.prio, "write report"))
	parts := make([]string, len(st.Parts))
	for i, p := range st.Parts {
		parts[i] = st.Expanded.WorkPrefix + p
	}
	var rep api.BatchReport
	if err := actwire.WriteBatchReport.Execute(actx, actwire.ReportInput{
		Name: st.Name, WorkflowID: info.WorkflowExecution.ID, Manifest: b.in.Manifest,
		Model: st.Expanded.Model, Options: b.in.Options, StartedAt: st.StartedAt,
		ReportPrefix: st.Expanded.ReportPrefix, Parts: parts, Items: st.Expanded.Items,
		RunID: info.WorkflowExecution.RunID, Samples: b.in.Samples,
		CompareWith: st.CompareWith, CompareAuto: st.CompareAuto, Validation: b.in.Validation,
	}).Get(b.ctx, &rep); err != nil {
		return nil, stageError("write report", err)
	}
	// A report kept from an earlier run moves this one to runs/<run id>/.
	reportPrefix := st.Expanded.ReportPrefix
	if p, ok := strings.CutSuffix(rep.ReportURI, "report.json"); ok && p != "" {
		reportPrefix = p
	}
	res := &api.BatchQAResult{
		Name: st.Name, Items: st.Expanded.Items, Succeeded: st.Answered, Failed: st.Failed, Skipped: st.Reused,
		ReportPrefix: reportPrefix, ReportURI: reportPrefix + "report.json",
		HTMLURI: rep.HTMLURI, WorkflowID: info.WorkflowExecution.ID, Runs: st.Runs, Model: st.Expanded.Model,
		Overall: rep.Overall, Samples: rep.Samples, Groups: rep.Groups, Validation: rep.Validation,
	}
	if st.Changes {
		res.Changes = rep.Changes
		if rep.Changes != nil {
			// Findable before the notification, which may take its time.
			b.publish(api.BatchStageReporting, api.ChangedItemsKey.ValueSet(int64(rep.Changes.Differences())))
		}
		if b.in.NotifyURL != "" {
			res.Notify = b.notifyChanges(res)
		}
	}
	b.startValidation(res)
	b.publish(api.BatchStageDone)
	return res, nil
}

// batchRun is one run of BatchQA: its state and the window of children.
type batchRun struct {
	ctx        workflow.Context
	edge       boundary
	in         api.BatchQAInput
	st         *batchState
	workflowID string
	// prio is what the batch's activities and children carry; an item's
	// own fairness key replaces the batch's for its child.
	prio     temporal.Priority
	progress api.BatchProgress
	// status is the MemagentStatus last upserted.
	status string

	// The protocols, each a type with its invariants: the running
	// children and the carried-child protocol (children.go), the wait at
	// the boundary (batchcarry.go), what the run sent and the budget
	// requests it serves (outbox.go), and the budget's ledger, in the
	// state (ledger.go), with raised, which wakes the window when the
	// raise-budget Update gives it room.
	kids   batchChildren
	grace  carryGrace
	out    batchOutbox
	ledger *grantLedger
	raised workflow.Channel

	buffer   []api.BatchItemResult
	bufBytes int
	// answers are the answer-cache entries of the answered outcomes in
	// buffer, written with them.
	answers []actwire.AnswerEntry
	parts   int // parts written by this run
}

// window is how many children run at once: the input's concurrency, else
// twice the pool capacity the expanding worker reported (at most
// MaxDefaultWindow), else DefaultBatchConcurrency.
func (b *batchRun) window() int {
	switch c := b.st.Expanded.PoolCapacity; {
	case b.in.Concurrency > 0:
		return b.in.Concurrency
	case c > 0:
		return min(2*c, api.MaxDefaultWindow)
	}
	return api.DefaultBatchConcurrency
}

// refresh copies the state into the progress.
func (b *batchRun) refresh() {
	st := b.st
	p := &b.progress
	p.Name, p.Items, p.Pages, p.PagesResolved = st.Name, st.Expanded.Items, st.Expanded.Pages, st.NextPage
	if b.in.Samples > 1 {
		p.Samples = b.in.Samples
	}
	p.Started, p.Running, p.Answered, p.Reused, p.Failed = st.Started, b.kids.running(), st.Answered, st.Reused, st.Failed
	p.Done = st.Answered + st.Reused + st.Failed
	p.Run, p.Usage, p.ReportPrefix = st.Runs, st.Usage, st.Expanded.ReportPrefix
	p.Budget = nil
	if b.in.Budget != nil {
		calls, tokens := b.ledger.committed()
		p.Budget = &api.BatchBudget{Limit: *b.in.Budget, Committed: api.Budget{MaxCalls: calls, MaxTokens: tokens}, Waiting: len(b.ledger.Waiting)}
	}
}

// publish sets the stage, the current details and, with it, search
// attribute updates. A rejected upsert is logged: what operators see must
// never fail the batch.
func (b *batchRun) publish(stage string, updates ...temporal.SearchAttributeUpdate) {
	b.progress.Stage = stage
	b.refresh()
	workflow.SetCurrentDetails(b.ctx, batchDetails(b.progress))
	if stage != b.status {
		updates = append(updates, api.StatusKey.ValueSet(stage))
		b.status = stage
	}
	if len(updates) == 0 {
		return
	}
	if err := workflow.UpsertTypedSearchAttributes(b.ctx, updates...); err != nil {
		workflow.GetLogger(b.ctx).Warn("upsert search attributes", "err", err)
	}
}

// batchDetails renders progress as one markdown line, such as
// "**running** · 340/1000 items · 16 running · 2 failed · 10 reused".
func batchDetails(p api.BatchProgress) string {
	line := fmt.Sprintf("**%s**", p.Stage)
	switch {
	case p.Items > 0 && p.Samples > 1:
		line += fmt.Sprintf(" · %d/%d samples (%d items × %d) · %d running", p.Done, p.Items*p.Samples, p.Items, p.Samples, p.Running)
	case p.Items > 0:
		line += fmt.Sprintf(" · %d/%d items · %d running", p.Done, p.Items, p.Running)
	}
	if p.Failed > 0 {
		line += fmt.Sprintf(" · %d failed", p.Failed)
	}
	if p.Reused > 0 {
		line += fmt.Sprintf(" · %d reused", p.Reused)
	}
	if p.Run > 1 {
		line += fmt.Sprintf(" · run %d", p.Run)
	}
	return line
}

// pageFuture is a ResolveBatchPage call in flight.
type pageFuture struct {
	page int
	f    actwire.Future[actwire.ResolvePageOutput]
}

// itemPass is what runItems keeps while it runs the items: the selector
// its children and signals report to, the items of the page in hand not
// started yet, the next page resolving ahead, how many items it started
// or settled (handled), and whether it stops at this page boundary.
type itemPass struct {
	sel      workflow.Selector
	queue    []actwire.BatchRunItem
	ahead    *pageFuture
	handled  int
	stopping bool
}

// runItems runs the items of the pages from st.NextPage on, until they are
// all done or this run has handled enough of them; it returns with every
// outcome written and the children still running handed over (carry) or
// none running.
func (b *batchRun) runItems() error {
	p := &itemPass{sel: workflow.NewSelector(b.ctx)}
	b.listen(p.sel)
	for {
		if err := b.fillWindow(p); err != nil {
			return err
		}
		more, err := b.awaitItems(p)
		if err != nil {
			return err
		}
		if !more {
			break
		}
	}
	if p.ahead != nil {
		// Let a look-ahead that will not be used finish, so it never writes
		// while the next run resolves the same page.
		_ = p.ahead.f.Future.Get(b.ctx, nil)
	}
	if b.kids.carryOver {
		return b.handOver()
	}
	return b.flush()
}

// listen has sel serve the signals the batch takes while its items run.
func (b *batchRun) listen(sel workflow.Selector) {
	ctx := b.ctx
	if b.in.Budget != nil {
		// Children that ran out of their grant ask for more (children of
		// older workers by this signal; see askedForBudget); a raised
		// budget serves the ones waiting.
		sel.AddReceive(workflow.GetSignalChannel(ctx, api.BudgetRequestSignal), func(c workflow.ReceiveChannel, _ bool) {
			var req api.BudgetRequest
			c.Receive(ctx, &req)
			b.request(req)
		})
		sel.AddReceive(b.raised, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, nil)
			b.serveWaiting()
		})
	}
	if b.kids.carryOver {
		// A carried child says it is closing; its outcome is then read
		// from Temporal (CheckBatchChildren), never taken from the signal.
		sel.AddReceive(workflow.GetSignalChannel(ctx, api.ItemDoneSignal), func(c workflow.ReceiveChannel, _ bool) {
			var done api.ItemDone
			c.Receive(ctx, &done)
			b.kids.noteDone(done.WorkflowID)
		})
	}
}

// fillWindow starts children, resolving pages as it needs them, until the
// window is full, the budget has no room, the pages are done or the run
// stops at this page boundary.
func (b *batchRun) fillWindow(p *itemPass) error {
	st := b.st
	for b.kids.running() < b.window() && !p.stopping && b.room() {
		if len(p.queue) > 0 {
			b.startChild(p.sel, p.queue[0])
			p.queue = p.queue[1:]
			p.handled++
			continue
		}
		// A run whose target version changed stops at this page
		// boundary, the last page's included: the next run, on the
		// target build, carries its children and writes the report.
		if b.kids.carryOver && targetMoved(b.ctx) {
			p.stopping = true
			b.grace.start(b.ctx, p.sel, b.in.CarryAfterSeconds)
			return nil
		}
		if st.NextPage >= st.Expanded.Pages {
			return nil
		}
		// A run ends at a page boundary, so the next one starts at a
		// fresh page and no item is carried in the state.
		if p.handled >= b.in.ItemsPerRun || workflow.GetInfo(b.ctx).GetContinueAsNewSuggested() {
			p.stopping = true
			if b.kids.carryOver {
				b.grace.start(b.ctx, p.sel, b.in.CarryAfterSeconds)
			}
			return nil
		}
		if err := b.nextPage(p); err != nil {
			return err
		}
	}
	return nil
}

// nextPage takes the next page's items (ResolveBatchPage, resolved ahead
// when it could be): the reused and failed ones are settled, the others
// queued to run.
func (b *batchRun) nextPage(p *itemPass) error {
	st := b.st
	f := p.ahead
	p.ahead = nil
	if f == nil || f.page != st.NextPage {
		f = &pageFuture{page: st.NextPage, f: b.resolvePage(st.NextPage)}
	}
	var out actwire.ResolvePageOutput
	if err := f.f.Get(b.ctx, &out); err != nil {
		return stageError(fmt.Sprintf("resolve page %d", f.page), err)
	}
	st.NextPage++
	st.Reused += out.Reused
	st.Failed += out.Failed
	p.handled += out.Reused + out.Failed
	if out.Part != "" {
		st.Parts = append(st.Parts, strings.TrimPrefix(out.Part, st.Expanded.WorkPrefix))
	}
	p.queue = out.Run
	// Resolve the next page while this one's children run, so the
	// window does not stall at page boundaries.
	if st.NextPage < st.Expanded.Pages && p.handled+len(p.queue) < b.in.ItemsPerRun {
		p.ahead = &pageFuture{page: st.NextPage, f: b.resolvePage(st.NextPage)}
	}
	b.publish(api.BatchStageRunning)
	return nil
}

// resolvePage starts ResolveBatchPage for page; the future's value is a
// ResolvePageOutput.
func (b *batchRun) resolvePage(page int) actwire.Future[actwire.ResolvePageOutput] {
	st := b.st
	// The activity heartbeats on a ticker: a worker lost at a boundary
	// holds the next run's page no longer than DefaultHeartbeatTimeout.
	actx := workflow.WithActivityOptions(b.ctx, activityOptions(30*time.Minute, DefaultHeartbeatTimeout, b.prio,
		fmt.Sprintf("resolve page %d/%d", page+1, st.Expanded.Pages)))
	opts := b.in.Options
	opts.Model = st.Expanded.Model
	whole, _ := b.reuse()
	return actwire.ResolveBatchPage.Execute(actx, actwire.ResolvePageInput{
		WorkPrefix: st.Expanded.WorkPrefix, Page: page, Options: opts, Samples: b.in.Samples, Whole: whole,
	})
}

// awaitItems waits for the next thing a running child or a signal brings
// and writes the outcomes gathered when they fill a part. It reports
// false when the pass is over: no child runs and none can start, or the
// children still running are to be carried over.
func (b *batchRun) awaitItems(p *itemPass) (bool, error) {
	if b.kids.running() == 0 {
		return b.idle(p)
	}
	if b.kids.carryOver && p.stopping && b.kids.bytes() <= carryBytes && (b.grace.over || b.kids.running() == b.kids.countCarried()) {
		// The window goes on in the next run: the children still
		// running are carried over, none is waited for.
		return false, nil
	}
	b.watchCarried(p.sel)
	if b.kids.running() == 0 {
		return true, nil // settled by watchCarried
	}
	p.sel.Select(b.ctx)
	b.probe("step")
	if p.stopping {
		b.grace.heard(b.ctx)
	}
	if len(b.buffer) >= b.in.ResultsPerPart || b.bufBytes >= partBytes {
		if err := b.flush(); err != nil {
			return false, err
		}
	}
	return true, nil
}

// idle is awaitItems with no child running: a run that has items left
// but no budget pauses (and may continue as new, paused); else the pass
// is over.
func (b *batchRun) idle(p *itemPass) (bool, error) {
	if (len(p.queue) > 0 || (!p.stopping && b.st.NextPage < b.st.Expanded.Pages)) && !b.room() {
		// Paused between pages, the run may continue as new (a
		// page's items in hand stay with it).
		err := b.pause(b.kids.carryOver && len(p.queue) == 0)
		if errors.Is(err, errContinueAsNew) {
			p.stopping = true
			return false, nil
		}
		return err == nil, err
	}
	return false, nil
}

// startChild starts the DocumentQA child of one item and adds its outcome
// to the selector. The child writes under its own run's prefix; the batch
// puts its answer in the answer cache once it has settled it (flush).
func (b *batchRun) startChild(sel workflow.Selector, it actwire.BatchRunItem) {
	st := b.st
	opts := b.in.Options
	opts.Model = st.Expanded.Model
	prio := b.prio
	if it.FairnessKey != "" && it.FairnessKey != prio.FairnessKey {
		prio.FairnessKey, prio.FairnessWeight = it.FairnessKey, 0
	}
	_, reuse := b.reuse()
	in := api.DocumentQAInput{
		Document: it.Document, Documents: it.Documents, Question: it.Question, GoldAnswers: it.GoldAnswers, Options: opts,
		BatchID: st.Name, ChunksPerRun: b.in.ChunksPerRun, Sample: it.Sample, Reuse: reuse,
		Priority: prio.PriorityKey, FairnessKey: prio.FairnessKey, FairnessWeight: float64(prio.FairnessWeight),
	}
	id := b.childID(it.Seq, it.Sample)
	if b.in.Budget != nil {
		g := b.ledger.open(*b.in.Budget, id, b.perCall())
		in.Budget = &g
		b.out.tell(id, g)
	}
	doc := api.DocumentSubject(it.Document, it.Documents)
	summary := fmt.Sprintf("%s #%d · Q#%s · %s", st.Name, it.Seq, api.QuestionDigest(it.Question), doc)
	if it.Sample > 0 {
		summary = fmt.Sprintf("%s #%d sample %d · Q#%s · %s", st.Name, it.Seq, it.Sample, api.QuestionDigest(it.Question), doc)
	}
	copts := workflow.ChildWorkflowOptions{
		WorkflowID:            id,
		Priority:              prio,
		TypedSearchAttributes: api.StartSearchAttributes(in),
		Memo:                  map[string]any{"model_options": opts.WithDefaults()},
		// The question stays out of the summary, which is not encrypted.
		StaticSummary: summary,
	}
	if b.kids.carryOver {
		// The child outlives the run that started it: the next run of
		// the batch settles it.
		copts.ParentClosePolicy = enumspb.PARENT_CLOSE_POLICY_ABANDON
	}
	f := workflow.ExecuteChildWorkflow(workflow.WithChildOptions(b.ctx, copts), api.DocumentQAName, in)
	st.Started++
	b.kids.add(id, it)
	// Kept in both modes: a budget request reads the child's usage from
	// the execution this start made (childRunID).
	b.kids.starts(id, f)
	sel.AddFuture(f, func(f workflow.Future) {
		var res DocumentQAResult
		err := f.Get(b.ctx, &res)
		o := actwire.ChildOutcome{WorkflowID: id, Result: &res}
		if err != nil {
			o.Result = nil
			o.Error, o.ErrorType = actwire.ChildFailure(err)
		}
		b.settle(o)
	})
}

// settle records the outcome of a running child, once: a child settled
// already (by its future, or by a check after its signal) is left as it is.
func (b *batchRun) settle(o actwire.ChildOutcome) {
	st := b.st
	it, ok := b.kids.take(o.WorkflowID)
	if !ok {
		return
	}
	id := o.WorkflowID
	r := api.BatchItemResult{
		Seq: it.Seq, Sample: it.Sample, ID: it.ID, Document: it.Document, Documents: it.Documents, Question: it.Question,
		GoldAnswers: it.GoldAnswers, Labels: it.Labels, WorkflowID: id,
	}
	b.out.forget(id)
	if b.ledger.holds(id) {
		var u *api.Usage
		if o.Result != nil {
			u = &o.Result.Usage
		}
		// What the child left of its grant goes to those waiting.
		for _, g := range b.ledger.release(b.in.Budget, id, u, b.perCall()) {
			b.wake(g)
		}
		b.showWaiting()
	}
	if res := o.Result; res == nil {
		r.Status = api.ItemFailed
		r.Error, r.ErrorType = o.Error, o.ErrorType
		st.Failed++
	} else {
		r.Status = api.ItemAnswered
		r.Answer, r.AnswerFound, r.Scores = res.Answer, res.AnswerFound, res.Scores
		r.Chunks, r.Tokens, r.Usage, r.ResultURI = res.Chunks, res.Tokens, res.Usage, res.ResultURI
		r.AnswerPages, r.Grounding, r.AnswerSources = res.AnswerPages, res.Grounding, res.AnswerSources
		st.Answered++
		st.Usage = st.Usage.Add(res.Usage)
		if it.OutputPrefix != "" && res.ResultURI != "" && res.ResultURI != it.OutputPrefix+"result.json" {
			b.answers = append(b.answers, actwire.AnswerEntry{Prefix: it.OutputPrefix, ResultURI: res.ResultURI})
		}
	}
	b.buffer = append(b.buffer, r)
	b.bufBytes += resultSize(r, it.Bytes)
	b.refresh()
	workflow.SetCurrentDetails(b.ctx, batchDetails(b.progress))
}

// perCall bounds the tokens of one call at the batch's options: a grant's
// tokens are its calls at this bound.
func (b *batchRun) perCall() int64 {
	o := b.in.Options.WithDefaults()
	return int64(o.ChunkTokens + 2*o.MemoryMaxTokens + o.AnswerMaxTokens + 1024)
}

// room reports whether the budget has a call left to grant.
func (b *batchRun) room() bool {
	return b.in.Budget == nil || b.ledger.room(*b.in.Budget)
}

// request takes a BudgetRequestSignal, which only a child from before
// BudgetPullChange sends: a hint that child req.WorkflowID wants more
// budget, on which the batch reads the child's usage itself (askLater),
// grants by the ledger's rule and wakes the child with its grant, which
// such a child takes from the BudgetGrantSignal. The usage the signal
// carries is never used, but by a run from before BatchLedgerChange that
// took such a signal at LedgerSignalChange's DefaultVersion, which replays
// as it ran (grantLedger.takeSignalled).
func (b *batchRun) request(req api.BudgetRequest) {
	if hints := b.signalsAreHints(); hints || b.out.pull {
		b.askLater(req.WorkflowID, hints)
		return
	}
	for _, g := range b.ledger.takeSignalled(*b.in.Budget, req, b.perCall()) {
		b.wake(g)
	}
	b.showWaiting()
}

// signalsAreHints is LedgerSignalChange at version 1 (asked once a run
// takes a request signal).
func (b *batchRun) signalsAreHints() bool {
	if !b.out.hints {
		b.out.hints = workflow.GetVersion(b.ctx, LedgerSignalChange, workflow.DefaultVersion, 1) >= 1
	}
	return b.out.hints
}

// serveWaiting grants the waiting children more budget, first come first
// served, while there is room, and wakes each (BudgetGrantSignal); the
// batch shows paused while any waits.
func (b *batchRun) serveWaiting() {
	if b.in.Budget == nil {
		return
	}
	for _, g := range b.ledger.serve(*b.in.Budget, b.perCall()) {
		b.wake(g)
	}
	b.showWaiting()
}

// wake tells a child that waited that it has a grant. The signal carries
// the grant for children of older workers; a child of this one asks again
// and takes the grant from the batch's reply. A child that ended
// meanwhile cannot take it: its close returns the grant.
func (b *batchRun) wake(g childGrant) {
	b.out.tell(g.WorkflowID, g.Budget)
	b.out.send(workflow.SignalExternalWorkflow(b.ctx, g.WorkflowID, "", api.BudgetGrantSignal, g.Budget))
}

// showWaiting shows the batch paused while a child waits for budget.
func (b *batchRun) showWaiting() {
	switch {
	case len(b.ledger.Waiting) > 0 && b.progress.Stage == api.BatchStageRunning:
		b.publish(api.StagePaused)
	case len(b.ledger.Waiting) == 0 && b.progress.Stage == api.StagePaused:
		b.publish(api.BatchStageRunning)
	}
}

// pause waits, with no child running, until the raise-budget Update gives
// the batch room to start one (or the batch is canceled). With canMove, at
// a page boundary, it returns errContinueAsNew when the paused run should
// continue as new (awaitRoom).
func (b *batchRun) pause(canMove bool) error {
	b.publish(api.StagePaused)
	workflow.GetLogger(b.ctx).Info("paused at the budget", "calls", b.ledger.Charged.Calls)
	if err := awaitRoom(b.ctx, canMove, b.room); err != nil {
		return err
	}
	for b.raised.ReceiveAsync(nil) {
	}
	b.publish(api.BatchStageRunning)
	return nil
}

// SampleWorkflowID is the workflow id of the DocumentQA run of one sample
// of a batch item in a batch started at HTTPIDsChange:
// api.BatchItemWorkflowID, <batch id>.<seq> for sample 0 (the id of the
// item's only run in a batch without samples), <batch id>.<seq>.s<k> for
// sample k. A batch started before it names its children
// api.LegacyBatchItemWorkflowID (<batch id>/<seq>) to its end.
func SampleWorkflowID(batchID string, seq, sample int) string {
	return api.BatchItemWorkflowID(batchID, seq, sample)
}

// childID is the workflow id of the child of one sample of an item, in
// the form the batch's first run chose (batchState.HTTPIDs).
func (b *batchRun) childID(seq, sample int) string {
	if b.st.HTTPIDs {
		return api.BatchItemWorkflowID(b.workflowID, seq, sample)
	}
	return api.LegacyBatchItemWorkflowID(b.workflowID, seq, sample)
}

// flush writes the buffered outcomes as one part.
func (b *batchRun) flush() error {
	if len(b.buffer) == 0 {
		return nil
	}
	slices.SortFunc(b.buffer, func(x, y api.BatchItemResult) int {
		if x.Seq != y.Seq {
			return x.Seq - y.Seq
		}
		return x.Sample - y.Sample
	})
	name := fmt.Sprintf("parts/run-%04d-%04d.jsonl", b.st.Runs, b.parts)
	// A run writes its outcomes as it hands over at a boundary: a worker
	// lost there holds the batch no longer than DefaultHeartbeatTimeout.
	actx := workflow.WithActivityOptions(b.ctx, activityOptions(10*time.Minute, DefaultHeartbeatTimeout, b.prio,
		fmt.Sprintf("write %d outcomes", len(b.buffer))))
	if err := actwire.WriteBatchResults.Execute(actx, actwire.WriteResultsInput{
		URI: b.st.Expanded.WorkPrefix + name, Results: b.buffer, Answers: b.answers,
	}).Get(b.ctx); err != nil {
		return stageError("write outcomes", err)
	}
	b.st.Parts = append(b.st.Parts, name)
	b.parts++
	b.buffer, b.bufBytes, b.answers = nil, 0, nil
	return nil
}

// resultSize estimates an outcome's size in history from the size of its
// item (measured by the activity: workflowcheck refuses a range over a
// map in workflow code, though a sum of the labels' lengths would not
// depend on its order) and what the run added.
func resultSize(r api.BatchItemResult, itemBytes int) int {
	n := 256 + itemBytes + len(r.Answer) + len(r.Error) + len(r.ResultURI) + len(r.WorkflowID)
	for _, s := range r.AnswerSources {
		n += 64 + 2*len(s.Document)
	}
	return n
}
