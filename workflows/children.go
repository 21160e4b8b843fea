package workflows

import (
	"fmt"
	"slices"

	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/internal/actwire"
)

// batchChildren are a BatchQA run's running children: those it started and
// those an earlier run of the batch carried over to it. It is the one home
// of the carried-child protocol.
//
// Invariants (TestBatchInterleavings, interleave_test.go, checks them after
// every step of the real BatchQA in its randomized interleavings):
//   - every item is settled exactly once: take removes a child, and any
//     later outcome for it (its start future after a check, a check after
//     its future, a second check) finds nothing to settle;
//   - an outcome comes only from the child run the batch started: the
//     future of its own start, or, for a carried child, a check
//     (CheckBatchChildren) of the execution recorded when it started (its
//     run id, the first of its continue-as-new chain). Another workflow
//     under the same id, started by anyone, is never read: a chain it
//     ended fails the item (api.ErrChildReplaced);
//   - a run hands every running child over with that run id (carry), and
//     the next run takes them all back (restore): none is lost across
//     continue-as-new, none is settled by both runs;
//   - a carried child is settled only by a check, a child this run
//     started by its own future (or, if it never started, as failed at
//     the hand-over); finishing names each child at most once, and at
//     most one check runs at a time (checking), with at most one timer
//     for the next periodic check (ticking).
type batchChildren struct {
	live map[string]*childRun
	// carryOver is BatchCarryChange at version 1: children run on across
	// continue-as-new (ParentClosePolicy ABANDON) and the next run settles
	// the carried ones. Before it, a run waits for all its children.
	carryOver bool
	// starting are the children this run started, with their start
	// futures, until their executions are recorded (recordStarted).
	starting []startingChild
	// finishing are carried children that said they are closing (or could
	// not take the CarriedSignal) and wait for a check.
	finishing []string
	// checking is a CheckBatchChildren in flight; ticking a timer for the
	// next periodic check.
	checking, ticking bool
}

// childRun is one running child.
type childRun struct {
	item actwire.BatchRunItem
	// runID is the first run of the child's chain, the execution the batch
	// started; empty until its start is known, and for a child a worker
	// from before run ids were kept carried over.
	runID string
	// carried says an earlier run started it: it is settled by a check,
	// not by a future of this run.
	carried bool
}

// carriedChild is a running child as one run hands it to the next: its
// item, without what the child itself holds, and the execution the batch
// started.
type carriedChild struct {
	WorkflowID string               `json:"workflow_id"`
	RunID      string               `json:"run_id,omitempty"`
	Item       actwire.BatchRunItem `json:"item"`
}

func newBatchChildren() batchChildren {
	return batchChildren{live: map[string]*childRun{}}
}

// add records a child this run is starting.
func (c *batchChildren) add(id string, it actwire.BatchRunItem) {
	c.live[id] = &childRun{item: it}
}

// started records the execution the batch started for child id.
func (c *batchChildren) started(id, runID string) {
	if r, ok := c.live[id]; ok && r.runID == "" {
		r.runID = runID
	}
}

// restore takes back the children the previous run carried over, and
// those of them that said they are closing.
func (c *batchChildren) restore(carried []carriedChild, finishing []string) {
	for _, k := range carried {
		c.live[k.WorkflowID] = &childRun{item: k.Item, runID: k.RunID, carried: true}
	}
	c.finishing = finishing
}

// starts records the start future of a child this run started.
func (c *batchChildren) starts(id string, f workflow.ChildWorkflowFuture) {
	c.starting = append(c.starting, startingChild{id: id, f: f})
}

// noteDone takes a carried child's word that it is closing: the next
// check reads its outcome. Any other workflow id is ignored.
func (c *batchChildren) noteDone(id string) {
	if c.isCarried(id) {
		c.finish(id)
	}
}

// finish queues running child id for the next check, once.
func (c *batchChildren) finish(id string) {
	if c.has(id) && !slices.Contains(c.finishing, id) {
		c.finishing = append(c.finishing, id)
	}
}

// takeFinishing returns the children queued for a check and empties the
// queue.
func (c *batchChildren) takeFinishing() []string {
	ids := c.finishing
	c.finishing = nil
	return ids
}

// take settles child id: it returns the child's item and takes the child
// out, once; false when the child is not running (settled already, or
// never this batch's).
func (c *batchChildren) take(id string) (actwire.BatchRunItem, bool) {
	r, ok := c.live[id]
	if !ok {
		return actwire.BatchRunItem{}, false
	}
	delete(c.live, id)
	return r.item, true
}

func (c *batchChildren) running() int { return len(c.live) }

func (c *batchChildren) has(id string) bool {
	_, ok := c.live[id]
	return ok
}

func (c *batchChildren) isCarried(id string) bool {
	r, ok := c.live[id]
	return ok && r.carried
}

// runID is the execution the batch started for child id, "" when unknown.
func (c *batchChildren) runID(id string) string {
	if r, ok := c.live[id]; ok {
		return r.runID
	}
	return ""
}

// ids are the running children in order.
func (c *batchChildren) ids() []string { return sortedIDs(c.live) }

// carriedIDs are the running children an earlier run started, in order.
func (c *batchChildren) carriedIDs() []string {
	return slices.DeleteFunc(c.ids(), func(id string) bool { return !c.live[id].carried })
}

// countCarried is how many running children an earlier run started.
func (c *batchChildren) countCarried() int { return len(c.carriedIDs()) }

// refs names the carried children among ids for CheckBatchChildren: by
// execution where the run id is known, else (handed over by an older
// worker) by workflow id alone.
func (c *batchChildren) refs(ids []string) (refs []actwire.ChildRef, byID []string) {
	for _, id := range ids {
		r, ok := c.live[id]
		switch {
		case !ok || !r.carried:
		case r.runID != "":
			refs = append(refs, actwire.ChildRef{WorkflowID: id, RunID: r.runID})
		default:
			byID = append(byID, id)
		}
	}
	return refs, byID
}

// carry hands every running child over, in order.
func (c *batchChildren) carry() []carriedChild {
	var out []carriedChild
	for _, id := range c.ids() {
		r := c.live[id]
		out = append(out, carriedChild{WorkflowID: id, RunID: r.runID, Item: r.item})
	}
	return out
}

// bytes is the size of the running children's items in a continue-as-new
// input.
func (c *batchChildren) bytes() int {
	n := 0
	// A sum: the order of the map walk does not show.
	//workflowcheck:ignore
	for id, r := range c.live {
		n += 128 + len(id) + r.item.Bytes
	}
	return n
}

// startingChild is a child this run started, with its start future.
type startingChild struct {
	id string
	f  workflow.ChildWorkflowFuture
}

// invariants reports the first of the type's invariants that does not
// hold, for the randomized test.
func (c *batchChildren) invariants() error {
	seen := map[string]bool{}
	for _, id := range c.finishing {
		if seen[id] {
			return fmt.Errorf("finishing names %s twice: %q", id, c.finishing)
		}
		seen[id] = true
	}
	for _, s := range c.starting {
		if r, ok := c.live[s.id]; ok && r.carried {
			return fmt.Errorf("child %s is both carried and started by this run", s.id)
		}
	}
	if !c.carryOver && (len(c.finishing) > 0 || c.countCarried() > 0) {
		return fmt.Errorf("a run that does not carry children holds carried ones (%d) or finishing ones %q", c.countCarried(), c.finishing)
	}
	return nil
}
