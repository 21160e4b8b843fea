package workflows

import (
	"errors"
	"fmt"
	"slices"

	"github.com/memagent/memagent/api"
)

// grantLedger is how a batch shares its budget with its running children:
// each child holds a grant (its own budget: what it had spent when it was
// last granted, plus a share of what is left), spends it, and asks for more
// once it has spent it. The ledger is part of the batch's carried state; the
// limit it is held to is the batch's input budget, which the raise-budget
// Update writes and continue-as-new carries, so a raise is never undone.
//
// Invariants (TestBatchInterleavings, interleave_test.go, and
// TestChildBudgetInterleavings check them after every step of the real
// BatchQA in their randomized interleavings):
//   - grants never pass the limit: Charged plus every grant stays within
//     max_calls, and within max_tokens but for what children spent past
//     their grants (a call in flight may pass a child's tokens);
//   - no grant is negative, and a child's grant never falls below what the
//     child has spent;
//   - a child's grant grows only once the child has spent it, by the
//     usage the batch itself read from the child run it started (request),
//     never by a figure a message carries;
//   - what a child did not spend returns when it closes (settle): an
//     answered child is charged its usage, a failed one its whole grant;
//   - a raise below what is committed is refused (checkRaise), so a raise
//     never takes back a grant.
type grantLedger struct {
	// Charged is what the children that closed spent.
	Charged api.Usage `json:"charged,omitempty"`
	// Grants are the running children's budgets, by workflow id.
	Grants map[string]api.Budget `json:"grants,omitempty"`
	// Waiting are the children that spent their grant and wait for room,
	// first come first served, with their usage when they asked.
	Waiting []api.BudgetRequest `json:"waiting,omitempty"`
}

// grantCalls is how many calls the batch hands a child at a time when it
// has a budget: few enough that the window shares the budget, enough that
// a child asks seldom.
const grantCalls = 16

// committed is what the ledger has spent or handed out: calls, and
// prompt and completion tokens together.
func (l *grantLedger) committed() (calls int, tokens int64) {
	calls = l.Charged.Calls
	tokens = l.Charged.PromptTokens + l.Charged.CompletionTokens
	// A sum: the order of the map walk does not show.
	//workflowcheck:ignore
	for _, g := range l.Grants {
		calls += g.MaxCalls
		tokens += g.MaxTokens
	}
	return calls, tokens
}

// available is what limit leaves to grant: calls and tokens, each -1 when
// the limit does not bound it.
func (l *grantLedger) available(limit api.Budget) (calls int, tokens int64) {
	c, t := l.committed()
	calls, tokens = -1, -1
	if limit.MaxCalls > 0 {
		calls = limit.MaxCalls - c
	}
	if limit.MaxTokens > 0 {
		tokens = limit.MaxTokens - t
	}
	return calls, tokens
}

// room reports whether limit has a call left to grant.
func (l *grantLedger) room(limit api.Budget) bool {
	calls, tokens := l.available(limit)
	return (limit.MaxCalls == 0 || calls > 0) && (limit.MaxTokens == 0 || tokens > 0)
}

// share is a grant for a child that has spent spent: spent and a share of
// what is available (grantCalls calls, and their tokens at perCall each).
// Call it only when room reports true.
func (l *grantLedger) share(limit api.Budget, spent api.Usage, perCall int64) api.Budget {
	calls, tokens := l.available(limit)
	var g api.Budget
	if limit.MaxCalls > 0 {
		g.MaxCalls = spent.Calls + min(grantCalls, calls)
	}
	if limit.MaxTokens > 0 {
		g.MaxTokens = spent.PromptTokens + spent.CompletionTokens + min(grantCalls*perCall, tokens)
	}
	return g
}

// open grants a child that is starting its first share.
func (l *grantLedger) open(limit api.Budget, id string, perCall int64) api.Budget {
	g := l.share(limit, api.Usage{}, perCall)
	if l.Grants == nil {
		l.Grants = map[string]api.Budget{}
	}
	l.Grants[id] = g
	return g
}

// holds reports whether id is a running child with a grant.
func (l *grantLedger) holds(id string) bool {
	_, ok := l.Grants[id]
	return ok
}

// spentAll reports whether usage has reached grant g: the child's next
// call would pass it.
func spentAll(g api.Budget, u api.Usage) bool { return overBudget(&g, u) }

// request takes the usage of child id, as the batch read it from the child
// run it started. A child that has not spent its grant keeps it. One that
// has is charged what it spent (its grant shrinks to that) and waits for a
// share more (serve). It reports whether the child waits. With keep
// (LedgerAskPlaceChange) a child that waits already keeps its place and its
// grant: it spends nothing while it waits, and a request anyone may send in
// its name must not send it to the back of the queue.
func (l *grantLedger) request(id string, u api.Usage, keep bool) bool {
	g, ok := l.Grants[id]
	if !ok {
		return false
	}
	if !spentAll(g, u) || (keep && l.waits(id)) {
		return l.waits(id)
	}
	spent := spentGrant(g, u)
	l.Grants[id] = spent
	l.Waiting = slices.DeleteFunc(l.Waiting, func(r api.BudgetRequest) bool { return r.WorkflowID == id })
	l.Waiting = append(l.Waiting, api.BudgetRequest{WorkflowID: id,
		Usage: api.Usage{Calls: spent.MaxCalls, PromptTokens: spent.MaxTokens}})
	return true
}

// spentGrant is what a child that has spent grant g spent, as a grant in
// the figures g bounds: a child stops before the call that would pass its
// calls, and may pass its tokens by the call in flight, which it did spend.
func spentGrant(g api.Budget, u api.Usage) api.Budget {
	var s api.Budget
	if g.MaxCalls > 0 {
		s.MaxCalls = min(max(u.Calls, 0), g.MaxCalls)
	}
	if g.MaxTokens > 0 {
		s.MaxTokens = max(u.PromptTokens+u.CompletionTokens, 0)
	}
	return s
}

// waits reports whether child id waits for room.
func (l *grantLedger) waits(id string) bool {
	return slices.ContainsFunc(l.Waiting, func(r api.BudgetRequest) bool { return r.WorkflowID == id })
}

// childGrant is a grant handed to a child that waited for it.
type childGrant struct {
	WorkflowID string
	Budget     api.Budget
}

// serve grants the waiting children a share each, first come first
// served, while limit has room, and returns the grants made.
func (l *grantLedger) serve(limit api.Budget, perCall int64) []childGrant {
	var out []childGrant
	for len(l.Waiting) > 0 && l.room(limit) {
		req := l.Waiting[0]
		l.Waiting = l.Waiting[1:]
		if !l.holds(req.WorkflowID) {
			continue
		}
		// The child's grant is what it spent, and is committed already:
		// the new one adds a share of what is available.
		g := l.share(limit, req.Usage, perCall)
		l.Grants[req.WorkflowID] = g
		out = append(out, childGrant{WorkflowID: req.WorkflowID, Budget: g})
	}
	if len(l.Waiting) == 0 {
		l.Waiting = nil
	}
	return out
}

// settle closes child id's grant: an answered child (u set) is charged its
// usage, a failed one (u nil: its usage is unknown) its whole grant.
func (l *grantLedger) settle(id string, u *api.Usage) {
	g, ok := l.Grants[id]
	if !ok {
		return
	}
	delete(l.Grants, id)
	l.Waiting = slices.DeleteFunc(l.Waiting, func(r api.BudgetRequest) bool { return r.WorkflowID == id })
	if u == nil {
		l.Charged = l.Charged.Add(api.Usage{Calls: g.MaxCalls, PromptTokens: g.MaxTokens})
		return
	}
	l.Charged = l.Charged.Add(*u)
}

// checkRaise refuses a new limit for the batch (cur is its limit now, nil
// when it has none) that is negative, that bounds what running children
// hold grants without a bound for, or that is below what the ledger has
// committed: a grant handed out is never taken back.
func (l *grantLedger) checkRaise(cur *api.Budget, b api.Budget) error {
	if b.MaxCalls < 0 || b.MaxTokens < 0 {
		return fmt.Errorf("max_calls (%d) and max_tokens (%d) must not be negative (0 is no bound)", b.MaxCalls, b.MaxTokens)
	}
	if cur == nil {
		return errors.New("the batch was started without a budget, so its children hold none: give the budget when the batch starts (budget, or starter batch --max-calls)")
	}
	if len(l.Grants) > 0 && ((cur.MaxCalls == 0 && b.MaxCalls > 0) || (cur.MaxTokens == 0 && b.MaxTokens > 0)) {
		return errors.New("running children hold grants without that bound: a bound the budget did not have can be set once they close")
	}
	calls, tokens := l.committed()
	if (b.MaxCalls > 0 && b.MaxCalls < calls) || (b.MaxTokens > 0 && b.MaxTokens < tokens) {
		return fmt.Errorf("the batch has spent or granted to its running children %d calls and %d tokens: give a budget at or above that (0 is no bound)", calls, tokens)
	}
	return nil
}

// answer serves child id's request for more budget, given the usage the
// batch read from the child: it returns the child's grant (a new one, or
// while the child waits what it spent) and the grants made to the children
// that waited before it, whom the batch wakes. keep is request's.
func (l *grantLedger) answer(limit api.Budget, id string, u api.Usage, perCall int64, keep bool) (api.Budget, []childGrant) {
	var others []childGrant
	if l.request(id, u, keep) {
		for _, g := range l.serve(limit, perCall) {
			if g.WorkflowID != id {
				others = append(others, g)
			}
		}
	}
	return l.Grants[id], others
}

// release settles child id's grant (u as settle takes it) and serves the
// children waiting with what it frees; it returns the grants made.
func (l *grantLedger) release(limit *api.Budget, id string, u *api.Usage, perCall int64) []childGrant {
	if !l.holds(id) {
		return nil
	}
	l.settle(id, u)
	if limit == nil {
		return nil
	}
	return l.serve(*limit, perCall)
}

// takeSignalled is the rule of the runs from before BatchLedgerChange that
// took a BudgetRequestSignal before LedgerSignalChange, kept only so that
// their histories replay: child id's grant becomes the usage the signal
// carries, the child waits, and the waiting are served. It breaks the
// rule that a grant grows only by usage the batch read itself; a run at
// LedgerSignalChange version 1 never calls it.
func (l *grantLedger) takeSignalled(limit api.Budget, req api.BudgetRequest, perCall int64) []childGrant {
	if !l.holds(req.WorkflowID) {
		return nil // not a running child of this batch
	}
	l.Grants[req.WorkflowID] = api.Budget{MaxCalls: req.Usage.Calls, MaxTokens: req.Usage.PromptTokens + req.Usage.CompletionTokens}
	l.Waiting = slices.DeleteFunc(l.Waiting, func(r api.BudgetRequest) bool { return r.WorkflowID == req.WorkflowID })
	l.Waiting = append(l.Waiting, req)
	return l.serve(limit, perCall)
}

// checkRequest refuses a request for budget that is not from a running
// child of the batch with a grant, or whose usage is negative: a refused
// request never reaches the batch's history. The usage a request carries is
// only checked, never used: the batch reads the child's own.
func (l *grantLedger) checkRequest(limit *api.Budget, batch string, req api.BudgetRequest) error {
	u := req.Usage
	switch {
	case limit == nil:
		return errors.New("the batch has no budget")
	case u.Calls < 0 || u.PromptTokens < 0 || u.CompletionTokens < 0:
		return fmt.Errorf("usage must not be negative (calls %d, prompt tokens %d, completion tokens %d)", u.Calls, u.PromptTokens, u.CompletionTokens)
	case !l.holds(req.WorkflowID):
		return fmt.Errorf("%q is not a running child of batch %s with a grant", req.WorkflowID, batch)
	}
	return nil
}

// invariants reports the first of the ledger's invariants that does not
// hold under limit, for the randomized test.
func (l *grantLedger) invariants(limit *api.Budget) error {
	calls, _ := l.committed()
	if limit != nil && limit.MaxCalls > 0 && calls > limit.MaxCalls {
		return fmt.Errorf("committed %d calls past max_calls %d", calls, limit.MaxCalls)
	}
	for _, id := range sortedIDs(l.Grants) {
		g := l.Grants[id]
		switch {
		case g.MaxCalls < 0 || g.MaxTokens < 0:
			return fmt.Errorf("negative grant %+v for %s", g, id)
		case limit != nil && limit.MaxCalls > 0 && g.MaxCalls == 0:
			return fmt.Errorf("child %s of a batch with max_calls %d holds a grant without a bound", id, limit.MaxCalls)
		}
	}
	seen := map[string]bool{}
	for _, r := range l.Waiting {
		switch {
		case seen[r.WorkflowID]:
			return fmt.Errorf("%s waits twice", r.WorkflowID)
		case !l.holds(r.WorkflowID):
			return fmt.Errorf("%s waits without a grant", r.WorkflowID)
		}
		seen[r.WorkflowID] = true
	}
	return nil
}
