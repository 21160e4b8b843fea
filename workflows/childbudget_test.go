package workflows

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// childBudgetSeeds is how many seeds TestChildBudgetInterleavings runs.
const childBudgetSeeds = 100

// TestChildBudgetInterleavings is the child's side of the budget
// (childBudget) as the real code runs it: the real BatchQA with real
// DocumentQA children over the real activities (an in-memory store and a
// fake model), budgets too small for the children, so that they spend
// their grants and ask (RequestBatchBudget, here an activity that sends
// the batch's BudgetRequestUpdate as the real one does, and ReadBatchChild
// reading the child's usage from its progress query). At random moments an
// operator raises the batch's budget and a caller outside sends a child a
// BudgetGrantSignal carrying a huge budget or a raise-budget Update. The
// model is never called past the batch's budget, the forged raises are
// refused, every item is answered once, and the batch's invariants hold
// after every step (batchProbe).
func TestChildBudgetInterleavings(t *testing.T) {
	var calls, asks, forged int
	for seed := int64(1); seed <= childBudgetSeeds; seed++ {
		c, a, fo := childBudgetSeed(t, seed)
		calls, asks, forged = calls+c, asks+a, forged+fo
		if t.Failed() {
			t.Fatalf("seed %d failed (rerun: go test ./workflows -run TestChildBudgetInterleavings -v)", seed)
		}
	}
	t.Logf("%d seeds: %d model calls, %d budget requests, %d forged messages", childBudgetSeeds, calls, asks, forged)
	if asks == 0 || forged == 0 {
		t.Error("no child asked for budget, or nothing was forged: the test exercises nothing")
	}
}

func childBudgetSeed(t *testing.T, seed int64) (calls, asks, forged int) {
	r := rand.New(rand.NewPCG(uint64(seed), 0xc41d))
	f := newBatchFixture(t)
	f.carry = true
	items := 2 + r.IntN(6)
	limit := api.Budget{MaxCalls: 2 + r.IntN(12)}
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	batchProbe = func(b *batchRun, at string) {
		if err := b.invariants(at == "closing"); err != nil {
			fail("after %s: %v", at, err)
		}
	}
	defer func() { batchProbe = nil }()
	checkCalls := func() {
		if n := len(f.model.Calls()); n > limit.MaxCalls {
			fail("the model was called %d times, past max_calls %d", n, limit.MaxCalls)
		}
	}
	f.setup = func(env *testsuite.TestWorkflowEnvironment) {
		env.SetTestTimeout(30 * time.Second)
		// The child's request: an Update of its batch (RequestBatchBudget).
		env.OnActivity(actwire.RequestBatchBudgetName, mock.Anything, mock.Anything).Return(
			func(ctx context.Context, in actwire.BudgetRequestInput) (*api.Budget, error) {
				id := activity.GetInfo(ctx).WorkflowExecution.ID
				type reply struct {
					g   api.Budget
					err error
				}
				ch := make(chan reply, 1)
				env.RegisterDelayedCallback(func() {
					asks++
					env.UpdateWorkflow(api.BudgetRequestUpdate, "", &testsuite.TestUpdateCallback{
						OnReject: func(err error) { ch <- reply{err: err} },
						OnAccept: func() {},
						OnComplete: func(v any, err error) {
							g, _ := budgetOf(v)
							ch <- reply{g, err}
						},
					}, api.BudgetRequest{WorkflowID: id, Usage: in.Usage})
				}, 0)
				rep := <-ch
				if rep.err != nil {
					return nil, temporal.NewApplicationError(rep.err.Error(), "Refused")
				}
				return &rep.g, nil
			})
		// The batch reads the child's usage from the child itself.
		env.OnActivity(actwire.ReadBatchChildName, mock.Anything, mock.Anything).Return(
			func(_ context.Context, ref actwire.ChildRef) (*actwire.ChildUsage, error) {
				ch := make(chan *actwire.ChildUsage, 1)
				env.RegisterDelayedCallback(func() {
					v, err := env.QueryWorkflowByID(ref.WorkflowID, api.ProgressQuery)
					var p api.Progress
					if err != nil || v.Get(&p) != nil {
						ch <- &actwire.ChildUsage{}
						return
					}
					ch <- &actwire.ChildUsage{Open: true, Usage: p.Usage}
				}, 0)
				return <-ch, nil
			})
		var tick func()
		ticks := 0
		tick = func() {
			checkCalls()
			if ticks++; ticks > 500 || env.IsWorkflowCompleted() {
				return
			}
			id := api.BatchItemWorkflowID("batch-budget", r.IntN(items), 0)
			switch r.IntN(6) {
			case 0: // an operator raises the batch's budget
				nb := api.Budget{MaxCalls: limit.MaxCalls + 1 + r.IntN(6)}
				env.UpdateWorkflow(api.RaiseBudgetUpdate, "", &testsuite.TestUpdateCallback{
					OnReject: func(error) {}, OnAccept: func() {},
					OnComplete: func(_ any, err error) {
						if err == nil {
							limit = nb
						}
					},
				}, nb)
			case 1: // a forged grant: it only wakes the child
				forged++
				_ = env.SignalWorkflowByID(id, api.BudgetGrantSignal, api.Budget{MaxCalls: 1 << 30})
			case 2: // a forged raise on a child: refused, the grant is its batch's
				forged++
				_ = env.UpdateWorkflowByID(id, api.RaiseBudgetUpdate, "", &testsuite.TestUpdateCallback{
					OnReject: func(error) {}, OnComplete: func(any, error) {},
					OnAccept: func() { fail("a raise on child %s was accepted", id) },
				}, api.Budget{MaxCalls: 1 << 30})
			}
			env.RegisterDelayedCallback(tick, time.Duration(1+r.IntN(60))*time.Second)
		}
		env.RegisterDelayedCallback(tick, time.Second)
	}
	res, _ := f.runToEnd(t, "batch-budget", api.BatchQAInput{
		Manifest: f.jsonlManifest(t, fmt.Sprintf("budget-%d.jsonl", seed), items, nil), Concurrency: 1 + r.IntN(3),
		ItemsPerRun: 1000, Budget: &api.Budget{MaxCalls: limit.MaxCalls}, Options: api.ModelOptions{ChunkTokens: 100},
	})
	checkCalls()
	if res.Succeeded != items {
		fail("%d of %d items answered: %+v", res.Succeeded, items, res)
	}
	if err := errors.Join(errs...); err != nil {
		t.Errorf("seed %d (items %d, budget %+v): %v", seed, items, limit, err)
	}
	return len(f.model.Calls()), asks, forged
}

// TestBatchWakesAChildThatAskedBySignal: a child from before budget-pull
// asks for budget by a BudgetRequestSignal and takes its grant from the
// BudgetGrantSignal that wakes it. The batch serves the request as a hint
// (it reads the child's usage itself) and, when it grants at once, must
// wake the child with the grant: nobody hears the Update's reply. Found by
// TestBatchInterleavings (seed 240, a batch from before batch-ledger): the
// batch granted and told nobody, and the child waited for good; a
// batch-ledger run did the same to such a child (LedgerSignalChange).
func TestBatchWakesAChildThatAskedBySignal(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprintf("before batch-ledger %v", legacy), func(t *testing.T) {
			f := newBatchFixture(t)
			f.carry = true
			f.child = func(ctx workflow.Context, in api.DocumentQAInput) (*DocumentQAResult, error) {
				info := workflow.GetInfo(ctx)
				spent := api.Usage{Calls: in.Budget.MaxCalls}
				req := api.BudgetRequest{WorkflowID: info.WorkflowExecution.ID, Usage: spent}
				if err := workflow.SignalExternalWorkflow(ctx, info.ParentWorkflowExecution.ID, "", api.BudgetRequestSignal, req).Get(ctx, nil); err != nil {
					return nil, err
				}
				var g api.Budget
				sel := workflow.NewSelector(ctx)
				sel.AddReceive(workflow.GetSignalChannel(ctx, api.BudgetGrantSignal), func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &g) })
				sel.AddFuture(workflow.NewTimer(ctx, time.Hour), func(workflow.Future) {})
				sel.Select(ctx)
				return &DocumentQAResult{Answer: fmt.Sprintf("granted %d", g.MaxCalls), AnswerFound: true, Usage: spent}, nil
			}
			f.setup = func(env *testsuite.TestWorkflowEnvironment) {
				if legacy {
					env.OnGetVersion(BatchLedgerChange, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
				}
				env.OnActivity(actwire.ReadBatchChildName, mock.Anything, mock.Anything).Return(
					&actwire.ChildUsage{Open: true, Usage: api.Usage{Calls: grantCalls}}, nil)
			}
			res, _ := f.runToEnd(t, "batch-hint", api.BatchQAInput{
				Manifest: f.jsonlManifest(t, "hint.jsonl", 1, nil), Concurrency: 1,
				Budget: &api.Budget{MaxCalls: 40}, Options: api.ModelOptions{ChunkTokens: 100},
			})
			_, items := f.results(t, res)
			if want := fmt.Sprintf("granted %d", 2*grantCalls); len(items) != 1 || items[0].Answer != want {
				t.Fatalf("items %+v: want the child woken with its grant (%q)", items, want)
			}
		})
	}
}
