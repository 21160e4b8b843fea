package workflows

import (
	"slices"

	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
)

// batchOutbox is what a BatchQA run has sent and not yet seen delivered,
// and the budget requests it is serving: the one home of the rule that a
// run that closes (completes or continues as new) has awaited everything
// it sent, as Temporal drops a signal or a cancel request whose sender has
// closed.
//
// Invariants (TestBatchInterleavings, interleave_test.go, checks them after
// every step of the real BatchQA in its randomized interleavings):
//   - at BatchLedgerChange (pull) every signal and cancel the run sends is
//     in sends until it is delivered or refused (send);
//   - a child has at most one budget request served at a time (serve);
//   - at LedgerHintOnceChange a child has at most one hint being served
//     and at most one more asked for (hinted), whatever the hints that
//     came, and a send leaves sends once delivered: what a run keeps does
//     not grow with the messages anyone sends it;
//   - at LedgerAskPlaceChange a child has at most one budget request
//     read waiting after the one in flight (next), which every request
//     that comes meanwhile joins, and a request for a child that waits
//     reads nothing: what an Update costs does not grow with the Updates
//     anyone sends, and none moves a waiting child back;
//   - a run closes only once quiet: no request or hint being served,
//     every Update handler finished and sends empty (quiesce), and nothing
//     blocks after that, so nothing it sends later is lost;
//   - before BatchLedgerChange (pull false) nothing was kept: such runs
//     sent without waiting, and their histories replay so, up to the first
//     request signal taken at LedgerSignalChange (hints), from which on
//     the run keeps and awaits its sends as pull does.
type batchOutbox struct {
	// pull is BatchLedgerChange at version 1: a child asks for budget
	// through BudgetRequestUpdate and the batch reads the child's usage
	// itself; every send is awaited before the run closes.
	pull bool
	// hints is LedgerSignalChange at version 1 in a run from before
	// BatchLedgerChange: from the request signal that asked it on, the
	// run awaits its sends as pull does.
	hints bool
	// once is LedgerHintOnceChange at version 1 (onceAsked: asked).
	once, onceAsked bool
	// place is LedgerAskPlaceChange at version 1 (placeAsked: asked).
	place, placeAsked bool
	// asking are the budget requests being served, by child.
	asking map[string]bool
	// next is, by child, the read that the budget requests (Updates) that
	// came while the child was being read wait for (LedgerAskPlaceChange).
	next map[string]*childRead
	// hinted are the children whose hints are being served
	// (LedgerHintOnceChange), each true when another hint came meanwhile.
	hinted map[string]bool
	// told are the grants the run told its running children: in a
	// child's input as it started it, or in a wake (BudgetGrantSignal).
	// An Update's reply is not among them: a child from before
	// budget-pull never asks so, and anyone may.
	told map[string]api.Budget
	// sends are the signals and cancels sent and not yet seen delivered.
	sends []workflow.Future
}

func newBatchOutbox() batchOutbox {
	return batchOutbox{asking: map[string]bool{}, hinted: map[string]bool{}, next: map[string]*childRead{}, told: map[string]api.Budget{}}
}

// childRead is one read of a child that budget requests share: done once
// it is answered, with the child's grant or err.
type childRead struct {
	done  bool
	grant api.Budget
	err   error
}

// tell notes that child id was told grant g.
func (o *batchOutbox) tell(id string, g api.Budget) { o.told[id] = g }

// forget drops what child id was told, as it closes.
func (o *batchOutbox) forget(id string) { delete(o.told, id) }

// knows reports whether child id was told grant g by this run (a child
// this run carried from an earlier one was told nothing by it).
func (o *batchOutbox) knows(id string, g api.Budget) bool {
	t, ok := o.told[id]
	return ok && t == g
}

// send keeps f, a signal or a cancel the run sent, until the run awaits it
// (at BatchLedgerChange; before it nothing was awaited). Sends delivered
// (or refused) already are dropped: awaiting them would issue nothing, so
// sends holds only what is in flight, however long the run.
func (o *batchOutbox) send(f workflow.Future) {
	if o.awaits() {
		o.sends = slices.DeleteFunc(o.sends, func(f workflow.Future) bool { return f.IsReady() })
		o.sends = append(o.sends, f)
	}
}

// awaits reports whether the run awaits what it sends before it closes.
func (o *batchOutbox) awaits() bool { return o.pull || o.hints }

// serve waits until no request of child id is being served and marks one
// served; the caller calls the function it returns when done.
func (o *batchOutbox) serve(ctx workflow.Context, id string) (func(), error) {
	if err := workflow.Await(ctx, func() bool { return !o.asking[id] }); err != nil {
		return nil, err
	}
	o.asking[id] = true
	return func() { delete(o.asking, id) }, nil
}

// quiet reports whether nothing is in flight: no request or hint served
// and no send pending.
func (o *batchOutbox) quiet() bool {
	return len(o.asking) == 0 && len(o.hinted) == 0 && len(o.next) == 0 && len(o.sends) == 0
}

// quiesce waits, as a run is about to close, until at one moment no
// budget request is being served (Update handlers included) and every
// signal and cancel the run sent has been delivered or refused: what the
// run does after it without blocking cannot lose a send.
func (o *batchOutbox) quiesce(ctx workflow.Context) error {
	for {
		if err := workflow.Await(ctx, func() bool {
			return len(o.asking) == 0 && len(o.hinted) == 0 && workflow.AllHandlersFinished(ctx)
		}); err != nil {
			return err
		}
		if len(o.sends) == 0 {
			return nil
		}
		o.awaitSends(ctx)
	}
}

// awaitSends waits for every signal and cancel the run sent: a send still
// pending when a run closes is dropped. A send to a workflow that has
// closed fails, which changes nothing.
func (o *batchOutbox) awaitSends(ctx workflow.Context) {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	for len(o.sends) > 0 {
		f := o.sends[0]
		o.sends = o.sends[1:]
		_ = f.Get(dctx, nil)
	}
}
