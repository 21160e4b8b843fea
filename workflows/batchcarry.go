package workflows

import (
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// BatchCarryChange is the workflow.GetVersion change id under which a
// BatchQA run continues as new without waiting for its children: the
// children run on (ParentClosePolicy ABANDON), the next run keeps them in
// its window and settles each when it closes, so the pool never idles
// behind the slowest child at a boundary. Runs recorded before it replay as
// workflow.DefaultVersion and wait for every child before continuing.
const BatchCarryChange = "batch-carry-window"

// BatchQuietCarryChange is the change id under which a run at its
// boundary carries its children as soon as none has closed (and no signal
// has come) for a quiet period, instead of waiting CarryAfterSeconds for
// its own children to close: the window is refilled by the next run within
// about a second, not 15. The quiet period is what makes it safe: an event
// that reaches the run while its continue-as-new is in flight gets the
// continue-as-new refused and the run replayed, and a run that has heard
// nothing for the quiet period is one whose children close seldom. The
// period grows with the run's history (what a refusal costs to replay).
// CarryAfterSeconds still bounds the wait. Runs recorded before it replay
// as workflow.DefaultVersion and wait as before.
const BatchQuietCarryChange = "batch-quiet-carry"

// BatchLedgerChange is the change id under which a batch's budget and its
// carried children follow protocols that nobody outside can move: a child
// asks for budget through BudgetRequestUpdate and the batch reads the
// child's usage from the child run it started (askedForBudget), a
// BudgetRequestSignal only makes it read; every signal and cancel a run
// sends is awaited before the run closes (quiesce, cancelLive). Runs
// recorded before it replay as workflow.DefaultVersion: they take the
// usage a request signal carries and send grants without waiting.
const BatchLedgerChange = "batch-ledger"

// LedgerSignalChange is the change id under which a run from before
// BatchLedgerChange takes a BudgetRequestSignal as the runs after it do:
// as a hint on which it reads the child's usage itself (ReadBatchChild)
// and grants by the ledger's rule. Before it, such a run wrote the child's
// grant from the usage the signal carried, which anyone in the namespace
// can send. Runs that took a signal before it replay as
// workflow.DefaultVersion (grantLedger.takeSignalled).
const LedgerSignalChange = "ledger-signal-hints"

// LedgerHintOnceChange is the change id under which a run serves the hints
// (BudgetRequestSignal) for one child one at a time and wakes the child
// only with a grant it has not told the child (hintOnce): a hint that comes while
// one for the same child is being served is folded into one more read
// after it, a hint for a child that waits for room does nothing (it is
// woken when served), and the run closes only once every hint it took is
// served. Before it, every hint made its own read (ReadBatchChild) and its
// own wake (BudgetGrantSignal), kept in the run's sends until the run
// closed, so that anyone who could signal the batch grew its history and
// memory without bound. Asked once a run takes a hint naming a running
// child with a grant; runs that took one before it replay as
// workflow.DefaultVersion and serve every hint as they did.
const LedgerHintOnceChange = "ledger-hint-once"

// LedgerAskPlaceChange is the change id under which a run serves a
// BudgetRequestUpdate, which anyone in the namespace can send naming a
// running child with a grant, so that it moves nothing (askFor): a request
// for a child that waits for room keeps the child's place and reads
// nothing (a child that waits spends nothing; it is woken when served), and
// the requests that come while the child is being read fold into one more
// read after it. Before it, each request was its own read (ReadBatchChild),
// and a request for a waiting child sent it to the back of the queue, so
// that a forger asking for it again and again kept it from ever being
// served. Asked once a run takes a request for a child that waits or is
// being read; runs that took one before it replay as
// workflow.DefaultVersion and serve every request as they did.
const LedgerAskPlaceChange = "ledger-ask-place"

// quietPeriod is how long a stopping run must hear nothing before it
// carries its children: quietPerEvent per event of its history, between
// quietMin and quietMax.
func quietPeriod(historyLength int) time.Duration {
	return min(max(time.Duration(historyLength)*quietPerEvent, quietMin), quietMax)
}

const (
	quietMin      = 250 * time.Millisecond
	quietMax      = 2 * time.Second
	quietPerEvent = 100 * time.Microsecond
)

// carryBytes bounds the items a run hands to the next one in its
// continue-as-new input; a run whose running children's items are larger
// waits for some of them to close first.
const carryBytes = 1 << 20

// reconcileEvery is how often a run checks the children it carried over
// (CheckBatchChildren): a child that closed without telling the batch
// (terminated by an operator, timed out) is settled then. finishWait is
// how long a check waits for a child that said it is closing.
var (
	reconcileEvery = 2 * time.Minute
	finishWait     = 30
)

// carryGrace is a stopping run's wait, at its boundary, for the children
// it started itself: each closes into the run that started it, and a run
// that continued as new while they close would have its continue-as-new
// refused (UnhandledCommand) and retried, at the cost of a whole replay,
// for as long as they keep closing. Those still running after
// CarryAfterSeconds are carried: long ones, which close seldom.
//
// Invariants: over is set only by the CarryAfterSeconds timer or by a
// quiet check that found nothing heard for quietFor (BatchQuietCarryChange),
// and never unset; a quiet check arms at most one next check.
type carryGrace struct {
	// over says the run has waited CarryAfterSeconds at its boundary for
	// its own children, or (BatchQuietCarryChange) that nothing has come
	// to it for quietFor.
	over bool
	// quiet is BatchQuietCarryChange at version 1; lastEvent is when the
	// stopping run last heard from a child or a signal; checked says the
	// callback the selector ran was the grace's own quiet check.
	quiet     bool
	quietFor  time.Duration
	lastEvent time.Time
	checked   bool
}

// start starts the wait on sel: CarryAfterSeconds (wait, 0 for the
// default) and, at BatchQuietCarryChange, the quiet checks.
func (g *carryGrace) start(ctx workflow.Context, sel workflow.Selector, wait int) {
	if wait == 0 {
		wait = api.DefaultCarryAfterSeconds
	}
	sel.AddFuture(workflow.NewTimer(ctx, time.Duration(wait)*time.Second), func(workflow.Future) { g.over = true })
	g.quiet = workflow.GetVersion(ctx, BatchQuietCarryChange, workflow.DefaultVersion, 1) >= 1
	if g.quiet {
		g.quietFor = quietPeriod(workflow.GetInfo(ctx).GetCurrentHistoryLength())
		g.lastEvent = workflow.Now(ctx)
		g.arm(ctx, sel, g.quietFor)
	}
}

// arm adds a quiet check after d: the grace is over if nothing has come
// since lastEvent for quietFor, else the check is armed again for the
// rest of the period.
func (g *carryGrace) arm(ctx workflow.Context, sel workflow.Selector, d time.Duration) {
	sel.AddFuture(workflow.NewTimer(ctx, d), func(workflow.Future) {
		g.checked = true
		since := workflow.Now(ctx).Sub(g.lastEvent)
		if since >= g.quietFor {
			g.over = true
			return
		}
		g.arm(ctx, sel, g.quietFor-since)
	})
}

// heard notes, after the selector has run a callback, that something came
// to the stopping run, unless it was the grace's own quiet check.
func (g *carryGrace) heard(ctx workflow.Context) {
	if !g.quiet {
		return
	}
	if !g.checked {
		g.lastEvent = workflow.Now(ctx)
	}
	g.checked = false
}

// restore takes over the children the previous run carried, and reads
// again the children whose request for budget came as it handed over.
func (b *batchRun) restore() {
	st := b.st
	b.kids.restore(st.Carried, st.Finishing)
	st.Carried, st.Finishing = nil, nil
	asking := st.Asking
	st.Asking = nil
	for _, id := range asking {
		b.askLater(id, b.signalsAreHints())
	}
}

// cancelLive asks every child still running to cancel, as a canceled
// batch ends, and waits for each request to be delivered: children
// carried from an earlier run are not this run's, so its cancellation
// does not reach them by itself.
func (b *batchRun) cancelLive() {
	dctx, _ := workflow.NewDisconnectedContext(b.ctx)
	ids := b.kids.ids()
	fs := make([]workflow.Future, len(ids))
	for i, id := range ids {
		fs[i] = workflow.RequestCancelExternalWorkflow(dctx, id, "")
		if !b.out.pull {
			// A child that closed meanwhile answers with an error: nothing to do.
			_ = fs[i].Get(dctx, nil)
		}
	}
	if b.out.pull {
		for _, f := range fs {
			_ = f.Get(dctx, nil)
		}
	}
}

// watchCarried keeps one CheckBatchChildren going for the carried children
// that said they are closing, and a periodic one for the rest.
func (b *batchRun) watchCarried(sel workflow.Selector) {
	if b.ctx.Err() != nil {
		// The batch is canceled. The carried children are not children
		// of this run, so its cancellation does not reach them by itself
		// (those this run started get it from the SDK): ask them to
		// cancel, and settle them as canceled, as no activity can run.
		dctx, _ := workflow.NewDisconnectedContext(b.ctx)
		for _, id := range b.kids.carriedIDs() {
			b.out.send(workflow.RequestCancelExternalWorkflow(dctx, id, ""))
			b.settle(actwire.ChildOutcome{WorkflowID: id, Error: "canceled with the batch", ErrorType: "Canceled"})
		}
		b.out.awaitSends(b.ctx)
		return
	}
	carried := b.kids.carriedIDs()
	if b.kids.checking || len(carried) == 0 {
		return
	}
	if len(b.kids.finishing) > 0 {
		b.check(sel, b.kids.takeFinishing(), finishWait)
		return
	}
	if !b.kids.ticking {
		b.kids.ticking = true
		sel.AddFuture(workflow.NewTimer(b.ctx, reconcileEvery), func(workflow.Future) {
			b.kids.ticking = false
			if ids := b.kids.carriedIDs(); !b.kids.checking && len(ids) > 0 {
				b.check(sel, ids, 0)
			}
		})
	}
}

// check runs CheckBatchChildren for ids and settles the carried children
// it finds closed.
func (b *batchRun) check(sel workflow.Selector, ids []string, wait int) {
	b.kids.checking = true
	// The activity heartbeats on a ticker while it waits for a child.
	actx := workflow.WithActivityOptions(b.ctx, activityOptions(10*time.Minute, DefaultHeartbeatTimeout, b.prio, "check carried children"))
	refs, byID := b.kids.refs(ids)
	f := actwire.CheckChildren.Execute(actx, actwire.CheckChildrenInput{Children: refs, IDs: byID, WaitSeconds: wait})
	sel.AddFuture(f.Future, func(workflow.Future) {
		b.kids.checking = false
		var out actwire.CheckChildrenOutput
		if err := f.Get(b.ctx, &out); err != nil {
			workflow.GetLogger(b.ctx).Warn("check carried children", "error", err)
			return
		}
		for _, o := range out.Closed {
			if b.kids.isCarried(o.WorkflowID) {
				b.settle(o)
			}
		}
	})
}

// handOver ends a run that continues as new with children running: it
// waits until every child it started has started (a child that could not
// start is settled as failed) and records the execution each one is,
// writes the outcomes it holds, and puts the running children and the
// signals not yet read into the state. At BatchLedgerChange it first lets
// the budget requests in flight finish and waits for every signal it sent.
// Nothing blocks after the signals are read, so none is lost.
func (b *batchRun) handOver() error {
	if b.ctx.Err() != nil {
		// A canceled batch does not continue: it ends canceled, and its
		// running children with it (cancelLive).
		return temporal.NewCanceledError()
	}
	b.recordStarted()
	if err := b.flush(); err != nil {
		return err
	}
	b.tellCarried()
	if b.out.awaits() {
		// The last wait: nothing blocks after it.
		// (Only the selector settles children, and it is not run here:
		// the outcomes written above are all this run has.)
		if err := b.out.quiesce(b.ctx); err != nil {
			return err
		}
	}
	// The signals not read yet, last: nothing blocks after them.
	b.readDoneLeft()
	b.readRequestsLeft()
	st := b.st
	b.probe("hand over")
	st.Carried = b.kids.carry()
	st.Finishing = b.kids.finishing
	if b.ctx.Err() != nil {
		st.Carried, st.Finishing, st.Asking = nil, nil, nil
		return temporal.NewCanceledError()
	}
	return nil
}

// recordStarted waits until every child this run started has started
// and records the execution each one is; a child that could not start is
// settled as failed.
func (b *batchRun) recordStarted() {
	for _, c := range b.kids.starting {
		if !b.kids.has(c.id) {
			continue
		}
		var exec workflow.Execution
		if err := c.f.GetChildWorkflowExecution().Get(b.ctx, &exec); err != nil {
			o := actwire.ChildOutcome{WorkflowID: c.id}
			o.Error, o.ErrorType = actwire.ChildFailure(err)
			b.settle(o)
			continue
		}
		b.kids.started(c.id, exec.RunID)
	}
	b.kids.starting = nil
}

// tellCarried tells each running child it is carried, so that it says
// when it closes, and waits for the signals, as those still pending when
// a run closes are dropped. A child that has closed meanwhile cannot take
// the signal: the next run checks it at once.
func (b *batchRun) tellCarried() {
	ids := b.kids.ids()
	sent := make([]workflow.Future, len(ids))
	for i, id := range ids {
		sent[i] = workflow.SignalExternalWorkflow(b.ctx, id, "", api.CarriedSignal, nil)
	}
	for i, f := range sent {
		if err := f.Get(b.ctx, nil); err != nil {
			b.kids.finish(ids[i])
		}
	}
}

// readDoneLeft reads the ItemDoneSignals not read yet, without blocking.
// Every running child is carried, so one that says it is closing is
// checked first by the next run.
func (b *batchRun) readDoneLeft() {
	for {
		var done api.ItemDone
		if !workflow.GetSignalChannel(b.ctx, api.ItemDoneSignal).ReceiveAsync(&done) {
			return
		}
		b.kids.finish(done.WorkflowID)
	}
}

// readRequestsLeft reads the budget requests not read yet, without
// blocking: at BatchLedgerChange the next run reads them (this one sends
// nothing more); before it, they are served as they come.
func (b *batchRun) readRequestsLeft() {
	if b.in.Budget == nil {
		return
	}
	st := b.st
	for {
		var req api.BudgetRequest
		if !workflow.GetSignalChannel(b.ctx, api.BudgetRequestSignal).ReceiveAsync(&req) {
			return
		}
		if b.out.pull || b.signalsAreHints() {
			if b.ledger.holds(req.WorkflowID) && !slices.Contains(st.Asking, req.WorkflowID) {
				st.Asking = append(st.Asking, req.WorkflowID)
			}
			continue
		}
		b.request(req)
	}
}

// checkRequest is the validator of BudgetRequestUpdate (see
// grantLedger.checkRequest). A run from before BatchLedgerChange takes the
// Update too (a child of a newer worker asks so): no recorded history of
// such a run holds one, so serving it changes none of them.
func (b *batchRun) checkRequest(req api.BudgetRequest) error {
	return b.ledger.checkRequest(b.in.Budget, b.workflowID, req)
}

// askLater serves a budget request that came as a signal (a hint: the
// batch reads the child's usage itself), in a coroutine of its own. With
// wake (LedgerSignalChange) a child granted at once is woken with its
// grant: nobody else hears the reply, and a child that asks by signal
// takes its grant from the wake-up (one that waits is woken when served).
// Before it, such a child was never told and waited for good. At
// LedgerHintOnceChange the hints for a child are served one at a time and
// wake it only with a grant it was not told (hintOnce).
func (b *batchRun) askLater(id string, wake bool) {
	if !b.ledger.holds(id) || b.in.Budget == nil {
		return
	}
	if wake && b.hintsOnce() {
		b.hintOnce(id)
		return
	}
	workflow.Go(b.ctx, func(ctx workflow.Context) {
		g, err := b.askedForBudget(ctx, id)
		switch {
		case err != nil:
			workflow.GetLogger(ctx).Warn("serve a budget request", "child", id, "error", err)
		case wake && b.ledger.holds(id) && !b.ledger.waits(id):
			b.wake(childGrant{WorkflowID: id, Budget: g})
		}
	})
}

// hintsOnce is LedgerHintOnceChange at version 1, asked once a run takes
// a hint naming a running child with a grant.
func (b *batchRun) hintsOnce() bool {
	if !b.out.onceAsked {
		b.out.onceAsked = true
		b.out.once = workflow.GetVersion(b.ctx, LedgerHintOnceChange, workflow.DefaultVersion, 1) >= 1
	}
	return b.out.once
}

// hintOnce serves a hint that child id wants more budget
// (LedgerHintOnceChange): one coroutine a child reads the child
// (askedForBudget) and wakes it only with a grant this run has not told
// it (outbox.told: in its input or an earlier wake, each awaited); a wake
// with a grant the child holds would tell it nothing. An Update's reply
// does not count as told: anyone may send that Update naming the child,
// and a child from before budget-pull never hears the reply. A hint that
// comes while the child's is being served asks for one more read after
// it (the child may have spent its grant since the read in flight
// looked): a burst of hints costs two reads at most. A child that waits
// for room does not spend while it waits and is woken when served: its
// hint does nothing, and keeps its place.
func (b *batchRun) hintOnce(id string) {
	if b.ledger.waits(id) {
		return
	}
	if _, busy := b.out.hinted[id]; busy {
		b.out.hinted[id] = true
		return
	}
	b.out.hinted[id] = false
	workflow.Go(b.ctx, func(ctx workflow.Context) {
		defer delete(b.out.hinted, id)
		for {
			g, err := b.askedForBudget(ctx, id)
			switch {
			case err != nil:
				workflow.GetLogger(ctx).Warn("serve a budget request", "child", id, "error", err)
			case b.ledger.holds(id) && !b.ledger.waits(id) && !b.out.knows(id, g):
				b.wake(childGrant{WorkflowID: id, Budget: g})
			}
			if !b.out.hinted[id] || !b.ledger.holds(id) || b.ledger.waits(id) || ctx.Err() != nil {
				return
			}
			b.out.hinted[id] = false
		}
	})
}

// askedForBudget serves child id's request for more budget: it reads the
// child's usage from the child run the batch started (ReadBatchChild),
// never from the request, and grants it more when it has spent its grant
// and the budget has room; else the child waits, and is woken
// (BudgetGrantSignal) once it has a grant. It returns the child's grant.
// Requests for one child are served one at a time.
func (b *batchRun) askedForBudget(ctx workflow.Context, id string) (api.Budget, error) {
	done, err := b.out.serve(ctx, id)
	if err != nil {
		return api.Budget{}, err
	}
	defer done()
	return b.readChild(ctx, id)
}

// asksKeepPlace is LedgerAskPlaceChange at version 1, asked once a run
// takes a request for child id that the change serves otherwise: one for a
// child that waits, or that is being read.
func (b *batchRun) asksKeepPlace(id string) bool {
	if !b.out.placeAsked && (b.ledger.waits(id) || b.out.asking[id]) {
		b.out.placeAsked = true
		b.out.place = workflow.GetVersion(b.ctx, LedgerAskPlaceChange, workflow.DefaultVersion, 1) >= 1
	}
	return b.out.place
}

// askFor serves a BudgetRequestUpdate naming child id, which anyone in
// the namespace can send (its validator checks only that the child holds
// a grant). At LedgerAskPlaceChange a request for a child that waits for
// room is answered with the grant it holds (what it spent): it reads
// nothing and leaves the child its place, to be woken when served. A
// request that comes while the child is being read joins the one read
// after it, which all such requests share (the child may have spent its
// grant since the read in flight looked): a burst costs two reads at
// most, and the child's own request is answered by a read that began
// after it came. Before it, every request was askedForBudget.
func (b *batchRun) askFor(ctx workflow.Context, id string) (api.Budget, error) {
	if !b.asksKeepPlace(id) {
		return b.askedForBudget(ctx, id)
	}
	if b.ledger.waits(id) {
		return b.ledger.Grants[id], nil
	}
	if r := b.out.next[id]; r != nil {
		if err := workflow.Await(ctx, func() bool { return r.done }); err != nil {
			return api.Budget{}, err
		}
		return r.grant, r.err
	}
	r := &childRead{}
	b.out.next[id] = r
	defer func() { r.done = true }()
	done, err := b.out.serve(ctx, id)
	delete(b.out.next, id)
	if err != nil {
		r.err = err
		return api.Budget{}, err
	}
	defer done()
	if b.ledger.waits(id) {
		r.grant = b.ledger.Grants[id]
		return r.grant, nil
	}
	r.grant, r.err = b.readChild(ctx, id)
	return r.grant, r.err
}

// readChild reads child id's usage and answers its request (see
// askedForBudget); the caller serves it (outbox.serve).
func (b *batchRun) readChild(ctx workflow.Context, id string) (api.Budget, error) {
	if !b.ledger.holds(id) || b.in.Budget == nil {
		return api.Budget{}, fmt.Errorf("%q is not a running child of batch %s with a grant", id, b.workflowID)
	}
	runID, err := b.childRunID(ctx, id)
	if err != nil {
		return api.Budget{}, err
	}
	opts := activityOptions(time.Minute, DefaultHeartbeatTimeout, b.prio, "read the usage of "+id)
	opts.RetryPolicy = askRetryPolicy()
	actx := workflow.WithActivityOptions(ctx, opts)
	var cu actwire.ChildUsage
	if err := actwire.ReadBatchChild.Execute(actx, actwire.ChildRef{WorkflowID: id, RunID: runID}).Get(ctx, &cu); err != nil {
		return b.ledger.Grants[id], fmt.Errorf("read the usage of %s: %w", id, err)
	}
	if !cu.Open || !b.ledger.holds(id) || b.in.Budget == nil {
		return api.Budget{}, fmt.Errorf("%q is not running any more", id)
	}
	g, woken := b.ledger.answer(*b.in.Budget, id, cu.Usage, b.perCall(), b.out.place)
	for _, w := range woken {
		b.wake(w)
	}
	b.showWaiting()
	return g, nil
}

// childRunID is the execution the batch started for child id: recorded
// when a run handed it over, else taken from its start; "" for a child a
// worker from before run ids were kept carried over (read by its id).
func (b *batchRun) childRunID(ctx workflow.Context, id string) (string, error) {
	if r := b.kids.runID(id); r != "" || b.kids.isCarried(id) {
		return r, nil
	}
	for _, c := range b.kids.starting {
		if c.id != id {
			continue
		}
		var exec workflow.Execution
		if err := c.f.GetChildWorkflowExecution().Get(ctx, &exec); err != nil {
			return "", fmt.Errorf("child %s did not start: %w", id, err)
		}
		b.kids.started(id, exec.RunID)
		return exec.RunID, nil
	}
	return "", fmt.Errorf("the execution of child %s is not known", id)
}

// sortedIDs returns a map's keys in order: workflow code never ranges over
// a map where order shows.
func sortedIDs[V any](m map[string]V) []string {
	ids := make([]string, 0, len(m))
	// The keys are sorted below: the order of the map walk does not show.
	//workflowcheck:ignore
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
