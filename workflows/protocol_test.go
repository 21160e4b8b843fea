package workflows

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// The randomized interleaving test of the protocols between a batch and its
// children: the budget's ledger (ledger.go) and the carried children
// (children.go), the types BatchQA keeps its protocol state in. Each seed
// runs one batch as a sequence of events in random order: children start,
// spend, ask for budget, are woken, close (into the run that started them,
// or after it continued as new); the batch continues as new (its state
// through JSON, as Temporal carries it), restarts (its state rebuilt by
// replaying what it saw since its run began, as a new worker does), is
// raised, and is canceled; and a caller outside forges what it can:
// item-done and budget-grant signals, budget requests with any usage, a
// raise on a child, a workflow started under a child's id. After every
// event it checks the invariants the types' doc comments state.
//
//	go test ./workflows -run TestProtocolInterleavings -v           # the fixed seeds
//	go test ./workflows -run TestProtocolInterleavings -seed 1234   # one seed alone
var protocolSeed = flag.Int64("seed", -1, "run TestProtocolInterleavings for this seed alone")

// protocolSeeds is how many seeds CI runs.
const protocolSeeds = 300

func TestProtocolInterleavings(t *testing.T) {
	seeds := make([]int64, protocolSeeds)
	for i := range seeds {
		seeds[i] = int64(i + 1)
	}
	if *protocolSeed >= 0 {
		seeds = []int64{*protocolSeed}
	}
	var steps, cans, restarts, forged, replaced int
	for _, seed := range seeds {
		s := newProtoSim(t, seed)
		if !s.run() {
			t.Fatalf("seed %d failed (rerun alone: go test ./workflows -run TestProtocolInterleavings -seed %d -v)", seed, seed)
		}
		steps += s.steps
		cans += s.cans
		restarts += s.restarts
		forged += s.forged
		replaced += s.replacedN
	}
	t.Logf("seeds %d..%d: %d events, %d continue-as-new, %d restarts, %d forged messages, %d children replaced from outside",
		seeds[0], seeds[len(seeds)-1], steps, cans, restarts, forged, replaced)
	if len(seeds) > 1 && (cans == 0 || restarts == 0 || forged == 0 || replaced == 0) {
		t.Error("the seeds did not exercise every kind of event")
	}
}

// simChild is one child as the world (Temporal, the model) knows it.
type simChild struct {
	id, runID string
	seq       int
	need      int        // calls it needs to finish
	usage     int        // calls it made
	budget    api.Budget // the budget it runs with: its batch's replies only
	fails     bool       // it ends failed
	closed    bool       // its own chain closed
	outcome   string     // answered, failed, terminated
	replaced  bool       // a caller outside terminated it and runs its own workflow under its id
	ownerRun  int        // the batch run that started it
	asking    bool       // it has spent its budget and waits (woken: ask again)
	woken     bool
	told      bool // it told its batch it is closing (item-done)
}

// batchSide is what one batch run holds: the state it was handed and the
// events it saw since, which a restart replays.
type batchSide struct {
	limit     *api.Budget
	ledger    grantLedger
	kids      batchChildren
	finishing []string
	next      int // items started
	run       int
}

// simEvent is one event as the batch saw it: enough to replay it.
type simEvent struct {
	kind  string
	id    string
	runID string
	usage api.Usage
	limit api.Budget
	o     actwire.ChildOutcome
}

type protoSim struct {
	t        *testing.T
	seed     int64
	r        *rand.Rand
	items    int
	window   int
	perCall  int64
	b        *batchSide
	snapshot []byte     // the state the current run was handed
	events   []simEvent // what the current run saw
	children map[string]*simChild
	settled  map[int][]actwire.ChildOutcome
	sends    []childGrant // wake-ups the run sent and has not yet seen delivered
	// limit is the batch's limit as the last accepted raise set it.
	limit                                    *api.Budget
	canceled                                 bool
	failed                                   bool
	steps, cans, restarts, forged, replacedN int
}

func newProtoSim(t *testing.T, seed int64) *protoSim {
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	s := &protoSim{t: t, seed: seed, r: r, items: 3 + r.IntN(10), window: 1 + r.IntN(4), perCall: 100,
		children: map[string]*simChild{}, settled: map[int][]actwire.ChildOutcome{}}
	s.b = &batchSide{kids: newBatchChildren(), run: 1}
	if r.IntN(4) > 0 {
		s.b.limit = &api.Budget{MaxCalls: 3 + r.IntN(40)}
		s.limit = ptr(*s.b.limit)
	}
	s.snapshot = s.marshal()
	return s
}

func (s *protoSim) errorf(format string, args ...any) {
	s.t.Helper()
	if !s.failed {
		s.t.Errorf("seed %d, event %d: "+format, append([]any{s.seed, s.steps}, args...)...)
	}
	s.failed = true
}

// run plays the batch to its end and reports whether every check held.
func (s *protoSim) run() bool {
	for s.steps = 0; s.steps < 5000 && !s.failed; s.steps++ {
		if s.done() {
			break
		}
		s.step()
		s.check()
	}
	if !s.failed && !s.done() {
		s.errorf("no end after %d events: %d of %d items settled, %d running", s.steps, len(s.settled), s.items, s.b.kids.running())
	}
	if !s.failed {
		s.checkEnd()
	}
	return !s.failed
}

func (s *protoSim) done() bool {
	return s.b.kids.running() == 0 && (s.canceled || s.b.next == s.items)
}

func (s *protoSim) room() bool { return s.b.limit == nil || s.b.ledger.room(*s.b.limit) }

// step picks one event that can happen now and plays it.
func (s *protoSim) step() {
	var moves []func()
	b := s.b
	if !s.canceled && b.next < s.items && b.kids.running() < s.window && s.room() {
		moves = append(moves, s.start)
	}
	for _, id := range b.kids.ids() {
		c := s.children[id]
		if c.closed {
			continue
		}
		switch {
		case c.usage >= c.need:
			moves = append(moves, func() { s.close(c) })
		case !overBudget(s.budgetOf(c), api.Usage{Calls: c.usage}):
			moves = append(moves, func() { c.usage++ })
		case !c.asking || c.woken:
			moves = append(moves, func() { s.ask(c) })
		}
	}
	// The world's messages, forged ones included.
	if len(s.sends) > 0 {
		moves = append(moves, s.deliver)
	}
	for _, id := range b.kids.ids() {
		if c := s.children[id]; c.closed && b.kids.isCarried(id) {
			moves = append(moves, func() { s.checkCarried([]string{id}) })
		}
	}
	moves = append(moves, s.forge, s.forge, s.continueAsNew, s.restart)
	if s.r.IntN(20) == 0 {
		moves = append(moves, s.raise)
	}
	if s.r.IntN(300) == 0 {
		moves = append(moves, s.cancel)
	}
	if !s.progressPossible() {
		// Everyone waits for budget: an operator raises it.
		moves = []func(){s.raise}
	}
	moves[s.r.IntN(len(moves))]()
}

// progressPossible reports whether some event other than a raise moves
// the batch on.
func (s *protoSim) progressPossible() bool {
	b := s.b
	if s.canceled || len(s.sends) > 0 || (b.next < s.items && b.kids.running() < s.window && s.room()) {
		return true
	}
	for _, id := range b.kids.ids() {
		c := s.children[id]
		if c.closed || c.usage >= c.need || !overBudget(s.budgetOf(c), api.Usage{Calls: c.usage}) || !c.asking || c.woken {
			return true
		}
	}
	return b.kids.running() == 0 && b.next == s.items
}

func (s *protoSim) budgetOf(c *simChild) *api.Budget {
	if s.b.limit == nil && c.budget == (api.Budget{}) {
		return nil
	}
	return &c.budget
}

// see records an event of the current run, applies it to the batch, keeps
// an outcome it settled, and sends the wake-ups of the grants it made.
func (s *protoSim) see(e simEvent) {
	s.events = append(s.events, e)
	had := e.kind == "settle" && s.b.kids.has(e.o.WorkflowID)
	s.sends = append(s.sends, s.apply(s.b, e)...)
	if had {
		c := s.children[e.o.WorkflowID]
		s.settled[c.seq] = append(s.settled[c.seq], e.o)
	}
}

// apply is the batch's part of an event: what batchRun does with it. It
// returns the grants made, which the batch wakes.
func (s *protoSim) apply(b *batchSide, e simEvent) []childGrant {
	switch e.kind {
	case "start":
		it := actwire.BatchRunItem{Seq: b.next}
		b.next++
		b.kids.add(e.id, it)
		if b.limit != nil {
			b.ledger.open(*b.limit, e.id, s.perCall)
		}
	case "started":
		b.kids.started(e.id, e.runID)
	case "settle":
		if _, ok := b.kids.take(e.o.WorkflowID); !ok {
			return nil
		}
		var u *api.Usage
		if e.o.Result != nil {
			u = &e.o.Result.Usage
		}
		b.finishing = slices.DeleteFunc(b.finishing, func(id string) bool { return id == e.o.WorkflowID })
		return b.ledger.release(b.limit, e.o.WorkflowID, u, s.perCall)
	case "ask":
		if b.limit == nil || !b.ledger.holds(e.id) {
			return nil
		}
		_, woken := b.ledger.answer(*b.limit, e.id, e.usage, s.perCall)
		return woken
	case "done":
		if b.kids.isCarried(e.id) && !slices.Contains(b.finishing, e.id) {
			b.finishing = append(b.finishing, e.id)
		}
	case "raise":
		l := e.limit
		b.limit = &l
		return b.ledger.serve(l, s.perCall)
	}
	return nil
}

func (s *protoSim) start() {
	id := fmt.Sprintf("batch/%d", s.b.next)
	c := &simChild{id: id, runID: fmt.Sprintf("run-%d-%d", s.b.next, s.r.IntN(1000)), seq: s.b.next,
		need: 1 + s.r.IntN(30), fails: s.r.IntN(6) == 0, ownerRun: s.b.run}
	s.children[id] = c
	s.see(simEvent{kind: "start", id: id})
	if s.b.limit != nil {
		c.budget = s.b.ledger.Grants[id]
	}
	// The start is known at once or later (at the latest when the run
	// hands the child over).
	if s.r.IntN(2) == 0 {
		s.see(simEvent{kind: "started", id: id, runID: c.runID})
	}
}

// ask is a child that has spent its budget asking its batch for more
// (RequestBatchBudget): the batch reads the child's usage itself, and the
// child takes the reply.
func (s *protoSim) ask(c *simChild) {
	c.asking, c.woken = true, false
	if err := s.b.ledger.checkRequest(s.b.limit, "batch", api.BudgetRequest{WorkflowID: c.id, Usage: api.Usage{Calls: c.usage}}); err != nil {
		return // a child the batch no longer holds stays paused
	}
	s.see(simEvent{kind: "ask", id: c.id, usage: api.Usage{Calls: c.usage}})
	c.budget = s.b.ledger.Grants[c.id]
	if !overBudget(&c.budget, api.Usage{Calls: c.usage}) {
		c.asking = false
	}
}

// deliver delivers the oldest wake-up: the child asks again.
func (s *protoSim) deliver() {
	g := s.sends[0]
	s.sends = s.sends[1:]
	if c := s.children[g.WorkflowID]; c != nil && !c.closed {
		c.woken = true
	}
}

// close ends a child's own chain: answered or failed. Its outcome reaches
// the run that started it as its future; a carried child tells the batch
// it is closing, and the batch reads its outcome (checkCarried).
func (s *protoSim) close(c *simChild) {
	c.closed = true
	c.outcome = "answered"
	if c.fails {
		c.outcome = "failed"
	}
	s.deliverClose(c)
}

func (s *protoSim) deliverClose(c *simChild) {
	if !s.b.kids.has(c.id) {
		return
	}
	if !s.b.kids.isCarried(c.id) && c.ownerRun == s.b.run {
		s.see(simEvent{kind: "settle", o: s.outcomeOf(c)})
		return
	}
	c.told = true
	s.see(simEvent{kind: "done", id: c.id})
}

func ptr[T any](v T) *T { return &v }

// outcomeOf is a closed chain's outcome as Temporal holds it for the
// execution the batch started: never the workflow a caller outside put
// under the id.
func (s *protoSim) outcomeOf(c *simChild) actwire.ChildOutcome {
	o := actwire.ChildOutcome{WorkflowID: c.id}
	switch {
	case c.outcome == "answered":
		o.Result = &api.DocumentQAResult{Answer: "genuine " + c.id, Usage: api.Usage{Calls: c.usage}}
	case c.replaced:
		o.Error, o.ErrorType = "replaced", api.ErrChildReplaced
	default:
		o.Error, o.ErrorType = c.outcome, "Failed"
	}
	return o
}

// checkCarried is CheckBatchChildren: it reads each carried child by the
// execution the batch recorded (refs), and settles those closed.
func (s *protoSim) checkCarried(ids []string) {
	refs, byID := s.b.kids.refs(ids)
	if len(byID) > 0 {
		s.errorf("carried children %v have no run id", byID)
		return
	}
	for _, ref := range refs {
		c := s.children[ref.WorkflowID]
		if ref.RunID != c.runID {
			s.errorf("child %s carried with run %s, started as %s", c.id, ref.RunID, c.runID)
			return
		}
		if !c.closed {
			continue
		}
		s.see(simEvent{kind: "settle", o: s.outcomeOf(c)})
	}
}

// forge is a caller outside the batch doing what it can.
func (s *protoSim) forge() {
	s.forged++
	ids := s.b.kids.ids()
	pick := func() string {
		if len(ids) == 0 || s.r.IntN(4) == 0 {
			return fmt.Sprintf("batch/%d", s.r.IntN(s.items+3))
		}
		return ids[s.r.IntN(len(ids))]
	}
	switch s.r.IntN(5) {
	case 0: // item-done for anyone: only makes the batch check
		id := pick()
		s.see(simEvent{kind: "done", id: id})
		if s.b.kids.isCarried(id) {
			s.checkCarried([]string{id})
		}
	case 1: // a budget request with any usage, for any child
		u := api.Usage{Calls: []int{-100, 0, 1, 16, 1 << 40}[s.r.IntN(5)]}
		id := pick()
		if s.b.ledger.checkRequest(s.b.limit, "batch", api.BudgetRequest{WorkflowID: id, Usage: u}) != nil {
			return // refused by the validator: never in the batch's history
		}
		// The batch reads the child's usage itself (ReadBatchChild; a
		// closed chain is not read); the reply goes to the forger, the
		// child keeps what it has.
		if c := s.children[id]; !c.closed {
			s.see(simEvent{kind: "ask", id: id, usage: api.Usage{Calls: c.usage}})
		}
	case 2: // a budget-grant signal to a child: it only wakes it
		if c := s.children[pick()]; c != nil && !c.closed {
			c.woken = true
		}
	case 3: // raise-budget on a child: refused by the child's validator
	case 4: // a workflow under a running child's id (terminate the child, start another)
		c := s.children[pick()]
		if c == nil || c.closed || s.r.IntN(3) > 0 {
			return
		}
		s.replacedN++
		c.replaced, c.closed, c.outcome = true, true, "terminated"
		s.deliverClose(c)
	}
}

// continueAsNew hands the state over as BatchQA does: every send awaited,
// every running child recorded with its run, the state through JSON.
func (s *protoSim) continueAsNew() {
	if s.canceled {
		return
	}
	s.cans++
	for len(s.sends) > 0 {
		s.deliver()
	}
	for _, id := range s.b.kids.ids() {
		if s.b.kids.runID(id) == "" {
			s.see(simEvent{kind: "started", id: id, runID: s.children[id].runID})
		}
	}
	s.snapshot = s.marshal()
	run := s.b.run
	s.b = s.unmarshal(s.snapshot)
	s.events = nil
	s.b.run = run + 1
	s.checkLimit("continue-as-new")
}

// checkLimit asserts that the batch holds the limit the last accepted
// raise set: a raise is never undone.
func (s *protoSim) checkLimit(after string) {
	if !reflect.DeepEqual(s.b.limit, s.limit) {
		s.errorf("after %s the limit is %+v, the last raise set %+v", after, s.b.limit, s.limit)
	}
}

// restart rebuilds the run as a new worker does: from the state it was
// handed and the events it saw, which must give the same state.
func (s *protoSim) restart() {
	s.restarts++
	b := s.unmarshal(s.snapshot)
	b.run = s.b.run
	for _, e := range s.events {
		s.apply(b, e)
	}
	if got, want := s.state(b), s.state(s.b); got != want {
		s.errorf("restart rebuilt\n%s\nwhere the run holds\n%s", got, want)
		return
	}
	s.b = b
	s.checkLimit("a restart")
}

func (s *protoSim) raise() {
	cur := 0
	if s.b.limit != nil {
		cur = s.b.limit.MaxCalls
	}
	nb := api.Budget{MaxCalls: max(cur+s.r.IntN(30)-5, 1)}
	switch s.r.IntN(10) {
	case 0:
		nb.MaxCalls = -1
	case 1:
		nb.MaxCalls = 0
	}
	calls, _ := s.b.ledger.committed()
	if err := s.b.ledger.checkRaise(s.b.limit, nb); err != nil {
		fine := nb.MaxCalls < 0 || s.b.limit == nil || (nb.MaxCalls > 0 && nb.MaxCalls < calls) ||
			(s.b.limit.MaxCalls == 0 && nb.MaxCalls > 0 && len(s.b.ledger.Grants) > 0)
		if !fine {
			s.errorf("raise from %+v to %+v refused: %v", s.b.limit, nb, err)
		}
		return
	}
	s.limit = ptr(nb)
	s.see(simEvent{kind: "raise", limit: nb})
}

// cancel cancels the batch: every running child is asked to cancel (the
// request awaited) and ends canceled.
func (s *protoSim) cancel() {
	s.canceled = true
	for _, id := range s.b.kids.ids() {
		c := s.children[id]
		if !c.closed {
			c.closed, c.outcome = true, "canceled"
		}
		s.see(simEvent{kind: "settle", o: actwire.ChildOutcome{WorkflowID: id, Error: "canceled with the batch", ErrorType: "Canceled"}})
	}
	s.sends = nil // each awaited; a closed child takes none
}

// snapshotState is what continue-as-new carries.
type snapshotState struct {
	Limit     *api.Budget    `json:"limit,omitempty"`
	Ledger    grantLedger    `json:"ledger"`
	Carried   []carriedChild `json:"carried,omitempty"`
	Finishing []string       `json:"finishing,omitempty"`
	Next      int            `json:"next"`
}

func (s *protoSim) marshal() []byte {
	b := s.b
	data, err := json.Marshal(snapshotState{Limit: b.limit, Ledger: b.ledger, Carried: b.kids.carry(), Finishing: b.finishing, Next: b.next})
	if err != nil {
		s.t.Fatal(err)
	}
	return data
}

func (s *protoSim) unmarshal(data []byte) *batchSide {
	var st snapshotState
	if err := json.Unmarshal(data, &st); err != nil {
		s.t.Fatal(err)
	}
	b := &batchSide{limit: st.Limit, ledger: st.Ledger, kids: newBatchChildren(), finishing: st.Finishing, next: st.Next}
	b.kids.restore(st.Carried, nil)
	return b
}

// state renders a batch's protocol state for comparison.
func (s *protoSim) state(b *batchSide) string {
	var carried []string
	for _, k := range b.kids.carry() {
		carried = append(carried, fmt.Sprintf("%s@%s carried=%v", k.WorkflowID, k.RunID, b.kids.isCarried(k.WorkflowID)))
	}
	data, _ := json.Marshal(map[string]any{"limit": b.limit, "ledger": b.ledger, "kids": carried, "finishing": b.finishing, "next": b.next})
	return string(data)
}

// check asserts the invariants after an event.
func (s *protoSim) check() {
	b := s.b
	for seq, os := range s.settled {
		if len(os) > 1 {
			s.errorf("item %d settled %d times: %+v", seq, len(os), os)
		}
	}
	calls, _ := b.ledger.committed()
	if b.limit != nil && b.limit.MaxCalls > 0 && calls > b.limit.MaxCalls {
		s.errorf("committed %d calls past max_calls %d (ledger %+v)", calls, b.limit.MaxCalls, b.ledger)
	}
	spent := 0
	for _, c := range s.children {
		spent += c.usage
	}
	if b.limit != nil && b.limit.MaxCalls > 0 && spent > calls {
		s.errorf("the children made %d calls, more than the %d committed", spent, calls)
	}
	for id, g := range b.ledger.Grants {
		c := s.children[id]
		switch {
		case g.MaxCalls < 0 || g.MaxTokens < 0:
			s.errorf("negative grant %+v for %s", g, id)
		case b.limit != nil && b.limit.MaxCalls > 0 && g.MaxCalls == 0:
			s.errorf("child %s of a batch with max_calls %d holds a grant without a bound", id, b.limit.MaxCalls)
		case c == nil || !b.kids.has(id):
			s.errorf("grant %+v held for %s, not a running child", g, id)
		case b.limit != nil && b.limit.MaxCalls > 0 && c.usage > g.MaxCalls:
			s.errorf("child %s made %d calls on a grant of %d", id, c.usage, g.MaxCalls)
		}
	}
	for _, c := range s.children {
		if b.limit != nil && c.budget.MaxCalls > 0 && c.usage > c.budget.MaxCalls {
			s.errorf("child %s made %d calls on a budget of %d", c.id, c.usage, c.budget.MaxCalls)
		}
	}
}

// checkEnd asserts what must hold once the batch has ended: every item
// started settled once, from its own child, and nothing left granted.
func (s *protoSim) checkEnd() {
	if len(s.sends) > 0 && !s.canceled {
		// The last run awaits its sends before it completes.
		for len(s.sends) > 0 {
			s.deliver()
		}
	}
	if len(s.b.ledger.Grants) > 0 || len(s.b.ledger.Waiting) > 0 {
		s.errorf("grants %+v and waiting %+v left at the end", s.b.ledger.Grants, s.b.ledger.Waiting)
	}
	for seq := range s.b.next {
		os := s.settled[seq]
		if len(os) != 1 {
			s.errorf("item %d settled %d times at the end", seq, len(os))
			continue
		}
		c := s.children[fmt.Sprintf("batch/%d", seq)]
		o := os[0]
		switch {
		case o.Result != nil && o.Result.Answer != "genuine "+c.id:
			s.errorf("item %d answered %q, not by its own child", seq, o.Result.Answer)
		case o.Result != nil && (c.replaced || c.outcome != "answered"):
			s.errorf("item %d answered though its child %s", seq, c.outcome)
		case c.replaced && o.ErrorType != api.ErrChildReplaced && o.ErrorType != "Canceled":
			s.errorf("item %d, replaced from outside, settled as %+v", seq, o)
		case o.Result == nil && c.outcome == "answered" && !s.canceled:
			s.errorf("item %d failed (%s) though its child answered", seq, o.Error)
		}
	}
	if !s.canceled && s.b.next != s.items {
		s.errorf("%d of %d items started", s.b.next, s.items)
	}
}
