package workflows

import (
	"slices"

	"github.com/memagent/memagent/internal/actwire"
)

// batchChildren are a BatchQA run's running children: those it started and
// those an earlier run of the batch carried over to it. It is the one home
// of the carried-child protocol.
//
// Invariants (protocol_test.go checks them after every step of its
// randomized interleavings):
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
//     continue-as-new, none is settled by both runs.
type batchChildren struct {
	live map[string]*childRun
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

// restore takes back the children the previous run carried over.
func (c *batchChildren) restore(carried []carriedChild) {
	for _, k := range carried {
		c.live[k.WorkflowID] = &childRun{item: k.Item, runID: k.RunID, carried: true}
	}
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
