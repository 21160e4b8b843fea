package workflows

import (
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/activities"
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

// startingChild is a child this run started, with its start future.
type startingChild struct {
	id string
	f  workflow.ChildWorkflowFuture
}

// startGrace starts the wait, at the boundary, for the children this run
// started itself: each closes into the run that started it, and a run
// that continued as new while they close would have its continue-as-new
// refused (UnhandledCommand) and retried, at the cost of a whole replay,
// for as long as they keep closing. Those still running after
// CarryAfterSeconds are carried: long ones, which close seldom.
func (b *batchRun) startGrace(sel workflow.Selector) {
	wait := b.in.CarryAfterSeconds
	if wait == 0 {
		wait = api.DefaultCarryAfterSeconds
	}
	sel.AddFuture(workflow.NewTimer(b.ctx, time.Duration(wait)*time.Second), func(workflow.Future) { b.graceOver = true })
	b.quiet = workflow.GetVersion(b.ctx, BatchQuietCarryChange, workflow.DefaultVersion, 1) >= 1
	if b.quiet {
		b.quietFor = quietPeriod(workflow.GetInfo(b.ctx).GetCurrentHistoryLength())
		b.lastEvent = workflow.Now(b.ctx)
		b.armQuiet(sel, b.quietFor)
	}
}

// armQuiet adds a quiet check after d: the grace is over if nothing has
// come since lastEvent for quietFor, else the check is armed again for
// the rest of the period.
func (b *batchRun) armQuiet(sel workflow.Selector, d time.Duration) {
	sel.AddFuture(workflow.NewTimer(b.ctx, d), func(workflow.Future) {
		b.quietChecked = true
		since := workflow.Now(b.ctx).Sub(b.lastEvent)
		if since >= b.quietFor {
			b.graceOver = true
			return
		}
		b.armQuiet(sel, b.quietFor-since)
	})
}

// heard notes, after the selector has run a callback, that something came
// to the stopping run, unless it was its own quiet check.
func (b *batchRun) heard() {
	if !b.quietChecked {
		b.lastEvent = workflow.Now(b.ctx)
	}
	b.quietChecked = false
}

// restore takes over the children the previous run carried, with their
// budget grants and the requests that wait for one.
func (b *batchRun) restore() {
	st := b.st
	for _, c := range st.Carried {
		b.live[c.WorkflowID] = c.Item
		b.carried[c.WorkflowID] = true
	}
	b.running = len(st.Carried)
	if st.Grants != nil {
		b.grants = st.Grants
	}
	b.waiting, b.finishing = st.Waiting, st.Finishing
	st.Carried, st.Grants, st.Waiting, st.Finishing = nil, nil, nil, nil
}

// cancelLive asks every child still running to cancel, as a canceled
// batch ends: children carried from an earlier run are not this run's, so
// its cancellation does not reach them by itself.
func (b *batchRun) cancelLive() {
	dctx, _ := workflow.NewDisconnectedContext(b.ctx)
	for _, id := range sortedIDs(b.live) {
		// A child that closed meanwhile answers with an error: nothing to do.
		_ = workflow.RequestCancelExternalWorkflow(dctx, id, "").Get(dctx, nil)
	}
}

// noteDone takes a carried child's word that it is closing: the next check
// reads its outcome. Any other workflow id is ignored.
func (b *batchRun) noteDone(done api.ItemDone) {
	if b.carried[done.WorkflowID] && !slices.Contains(b.finishing, done.WorkflowID) {
		b.finishing = append(b.finishing, done.WorkflowID)
	}
}

// liveBytes is the size of the running children's items in a
// continue-as-new input.
func (b *batchRun) liveBytes() int {
	n := 0
	// A sum: the order of the map walk does not show.
	//workflowcheck:ignore
	for id, it := range b.live {
		n += 128 + len(id) + it.Bytes
	}
	return n
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
		for _, id := range sortedIDs(b.carried) {
			workflow.RequestCancelExternalWorkflow(dctx, id, "")
			b.settle(actwire.ChildOutcome{WorkflowID: id, Error: "canceled with the batch", ErrorType: "Canceled"})
		}
		return
	}
	if b.checking || len(b.carried) == 0 {
		return
	}
	if len(b.finishing) > 0 {
		ids := b.finishing
		b.finishing = nil
		b.check(sel, ids, finishWait)
		return
	}
	if !b.ticking {
		b.ticking = true
		sel.AddFuture(workflow.NewTimer(b.ctx, reconcileEvery), func(workflow.Future) {
			b.ticking = false
			if !b.checking && len(b.carried) > 0 {
				b.check(sel, sortedIDs(b.carried), 0)
			}
		})
	}
}

// check runs CheckBatchChildren for ids and settles the carried children
// it finds closed.
func (b *batchRun) check(sel workflow.Selector, ids []string, wait int) {
	b.checking = true
	actx := workflow.WithActivityOptions(b.ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		// The activity heartbeats on a ticker while it waits for a child.
		HeartbeatTimeout:      DefaultHeartbeatTimeout,
		RetryPolicy:           retryPolicy(),
		Priority:              b.prio,
		DisableEagerExecution: skipsEagerExecution(b.prio),
		Summary:               "check carried children",
	})
	f := workflow.ExecuteActivity(actx, activities.CheckChildrenName, actwire.CheckChildrenInput{IDs: ids, WaitSeconds: wait})
	sel.AddFuture(f, func(f workflow.Future) {
		b.checking = false
		var out actwire.CheckChildrenOutput
		if err := f.Get(b.ctx, &out); err != nil {
			workflow.GetLogger(b.ctx).Warn("check carried children", "error", err)
			return
		}
		for _, o := range out.Closed {
			if b.carried[o.WorkflowID] {
				b.settle(o)
			}
		}
	})
}

// handOver ends a run that continues as new with children running: it
// waits until every child it started has started (a child that could not
// start is settled as failed), writes the outcomes it holds, and puts the
// running children, their grants and the signals not yet read into the
// state. Nothing blocks after the signals are read, so none is lost.
func (b *batchRun) handOver() error {
	if b.ctx.Err() != nil {
		// A canceled batch does not continue: it ends canceled, and its
		// running children with it (cancelLive).
		return temporal.NewCanceledError()
	}
	for _, c := range b.starting {
		if _, ok := b.live[c.id]; !ok {
			continue
		}
		if err := c.f.GetChildWorkflowExecution().Get(b.ctx, nil); err != nil {
			o := actwire.ChildOutcome{WorkflowID: c.id}
			o.Error, o.ErrorType = actwire.ChildFailure(err)
			b.settle(o)
		}
	}
	b.starting = nil
	if err := b.flush(); err != nil {
		return err
	}
	st := b.st
	ids := sortedIDs(b.live)
	// Tell each child it is carried, so that it says when it closes; wait
	// for the signals, as those still pending when a run closes are
	// dropped. A child that has closed meanwhile cannot take the signal:
	// the next run checks it at once.
	sent := make([]workflow.Future, len(ids))
	for i, id := range ids {
		sent[i] = workflow.SignalExternalWorkflow(b.ctx, id, "", api.CarriedSignal, nil)
	}
	for i, f := range sent {
		if err := f.Get(b.ctx, nil); err != nil && !slices.Contains(b.finishing, ids[i]) {
			b.finishing = append(b.finishing, ids[i])
		}
	}
	// The signals not read yet, last: nothing blocks after them. Every
	// running child is carried, so one that says it is closing is checked
	// first by the next run.
	for {
		var done api.ItemDone
		if !workflow.GetSignalChannel(b.ctx, api.ItemDoneSignal).ReceiveAsync(&done) {
			break
		}
		if b.isLive(done.WorkflowID) && !slices.Contains(b.finishing, done.WorkflowID) {
			b.finishing = append(b.finishing, done.WorkflowID)
		}
	}
	if b.in.Budget != nil {
		for {
			var req api.BudgetRequest
			if !workflow.GetSignalChannel(b.ctx, api.BudgetRequestSignal).ReceiveAsync(&req) {
				break
			}
			b.request(req)
		}
	}
	for _, id := range ids {
		st.Carried = append(st.Carried, carriedChild{WorkflowID: id, Item: b.live[id]})
	}
	if len(b.grants) > 0 {
		st.Grants = b.grants
	}
	st.Waiting, st.Finishing = b.waiting, b.finishing
	if b.ctx.Err() != nil {
		st.Carried, st.Grants, st.Waiting, st.Finishing = nil, nil, nil, nil
		return temporal.NewCanceledError()
	}
	return nil
}

func (b *batchRun) isLive(id string) bool {
	_, ok := b.live[id]
	return ok
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
