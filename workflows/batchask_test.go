package workflows

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// TestForgedAsksMoveNoChild is the attack of a caller in the namespace on
// a running batch through BudgetRequestUpdate, whose validator only checks
// that the child it names holds a grant. Before LedgerAskPlaceChange a
// request naming a child that waited for room sent the child to the back
// of the queue, so that a forger asking for it again and again kept it
// from ever being served while others were; and every request cost the
// batch a read of the child (ReadBatchChild). Now a request for a child
// that waits keeps its place and reads nothing, requests that come while
// the child is being read fold into one more read after it (a burst costs
// two reads at most), and a child that was served still gets its grant
// when it asks again.
func TestForgedAsksMoveNoChild(t *testing.T) {
	const batchID = "batch-asks"
	id := func(i int) string { return api.BatchItemWorkflowID(batchID, i, 0) }
	update := func(env *testsuite.TestWorkflowEnvironment, name string, child string, done func(api.Budget, error)) {
		env.UpdateWorkflow(api.BudgetRequestUpdate, name, &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Errorf("update %s was refused: %v", name, err) },
			OnAccept: func() {},
			OnComplete: func(r any, err error) {
				g, _ := r.(api.Budget)
				if p, ok := r.(*api.Budget); ok && p != nil {
					g = *p
				}
				done(g, err)
			},
		}, api.BudgetRequest{WorkflowID: child})
	}

	// Four children spend their grant and ask in turn (minutes 1 to 4);
	// the fifth's place in the budget is what frees room, at minute 10. A
	// forger asks for the first every minute from minute 5 on: the first
	// must still be the first served, and get its grant when it asks again.
	t.Run("a forger asking for a waiting child keeps it from nothing", func(t *testing.T) {
		var mu sync.Mutex
		reads := 0
		var woken []string
		var reply api.Budget
		batchProbe = func(b *batchRun, _ string) {
			if err := b.invariants(false); err != nil {
				t.Errorf("invariants: %v", err)
			}
		}
		defer func() { batchProbe = nil }()
		f := newBatchFixture(t)
		f.carry = true
		f.child = func(ctx workflow.Context, in api.DocumentQAInput) (*DocumentQAResult, error) {
			me := workflow.GetInfo(ctx).WorkflowExecution.ID
			run, spent := time.Hour, grantCalls
			if me == id(4) {
				run, spent = 10*time.Minute, 0
			}
			tctx, stop := workflow.WithCancel(ctx)
			defer stop()
			done := false
			sel := workflow.NewSelector(ctx)
			sel.AddReceive(workflow.GetSignalChannel(ctx, api.BudgetGrantSignal), func(c workflow.ReceiveChannel, _ bool) {
				c.Receive(ctx, nil)
				mu.Lock()
				woken = append(woken, me)
				mu.Unlock()
			})
			sel.AddFuture(workflow.NewTimer(tctx, run), func(workflow.Future) { done = true })
			for !done {
				sel.Select(ctx)
			}
			return &DocumentQAResult{Answer: "a", AnswerFound: true, Usage: api.Usage{Calls: spent}}, nil
		}
		f.setup = func(env *testsuite.TestWorkflowEnvironment) {
			env.OnActivity(actwire.ReadBatchChildName, mock.Anything, mock.Anything).Return(
				func(_ context.Context, ref actwire.ChildRef) (*actwire.ChildUsage, error) {
					mu.Lock()
					defer mu.Unlock()
					reads++
					if ref.WorkflowID == id(4) {
						return &actwire.ChildUsage{Open: true}, nil
					}
					return &actwire.ChildUsage{Open: true, Usage: api.Usage{Calls: grantCalls}}, nil
				})
			for i := range 4 {
				env.RegisterDelayedCallback(func() {
					update(env, fmt.Sprintf("ask-%d", i), id(i), func(api.Budget, error) {})
				}, time.Duration(1+i)*time.Minute)
			}
			for m := 5; m < 10; m++ {
				env.RegisterDelayedCallback(func() {
					update(env, fmt.Sprintf("forged-%d", m), id(0), func(api.Budget, error) {})
				}, time.Duration(m)*time.Minute)
			}
			// The first child, woken, asks again.
			env.RegisterDelayedCallback(func() {
				update(env, "ask-again", id(0), func(g api.Budget, err error) {
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						t.Errorf("the child's ask again: %v", err)
					}
					reply = g
				})
			}, 15*time.Minute)
		}
		res, _ := f.runToEnd(t, batchID, api.BatchQAInput{
			Manifest: f.jsonlManifest(t, "asks.jsonl", 5, nil), Concurrency: 5,
			Budget: &api.Budget{MaxCalls: 5 * grantCalls}, Options: api.ModelOptions{ChunkTokens: 100},
		})
		if res.Succeeded != 5 {
			t.Fatalf("result %+v: want every item answered", res)
		}
		mu.Lock()
		defer mu.Unlock()
		t.Logf("woken %v, %d reads, the first child's ask again: %+v", woken, reads, reply)
		if len(woken) == 0 || woken[0] != id(0) {
			t.Errorf("woken in the order %v: want %s, the first to wait, first", woken, id(0))
		}
		if reply.MaxCalls != 2*grantCalls {
			t.Errorf("the first child asked again and was granted %+v, want %d calls", reply, 2*grantCalls)
		}
		// One read for each child's ask and one for the ask again: the
		// forged asks for a child that waits read nothing.
		if reads > 5 {
			t.Errorf("%d reads: want at most 5 (the children's own asks)", reads)
		}
	})

	for _, tc := range []struct {
		name string
		// spent: the child has spent its first grant when read.
		spent bool
		grant int
	}{
		{name: "a burst naming a child that spent nothing", grant: grantCalls},
		{name: "a burst naming a child that spent its grant", spent: true, grant: 2 * grantCalls},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const asks = 40
			var mu sync.Mutex
			reads, replies := 0, 0
			f := newBatchFixture(t)
			f.carry = true
			f.child = func(ctx workflow.Context, in api.DocumentQAInput) (*DocumentQAResult, error) {
				if err := workflow.Sleep(ctx, time.Hour); err != nil {
					return nil, err
				}
				return &DocumentQAResult{Answer: "a", AnswerFound: true}, nil
			}
			f.setup = func(env *testsuite.TestWorkflowEnvironment) {
				env.OnActivity(actwire.ReadBatchChildName, mock.Anything, mock.Anything).Return(
					func(context.Context, actwire.ChildRef) (*actwire.ChildUsage, error) {
						mu.Lock()
						defer mu.Unlock()
						reads++
						if tc.spent {
							return &actwire.ChildUsage{Open: true, Usage: api.Usage{Calls: grantCalls}}, nil
						}
						return &actwire.ChildUsage{Open: true}, nil
					})
				env.RegisterDelayedCallback(func() {
					for i := range asks {
						update(env, fmt.Sprintf("forged-%d", i), id(0), func(g api.Budget, err error) {
							mu.Lock()
							defer mu.Unlock()
							replies++
							if err != nil || g.MaxCalls != tc.grant {
								t.Errorf("forged ask %d: reply %+v, %v; want a grant of %d calls", i, g, err, tc.grant)
							}
						})
					}
				}, time.Minute)
			}
			res, _ := f.runToEnd(t, batchID, api.BatchQAInput{
				Manifest: f.jsonlManifest(t, "burst.jsonl", 1, nil), Concurrency: 1,
				Budget: &api.Budget{MaxCalls: 100}, Options: api.ModelOptions{ChunkTokens: 100},
			})
			if res.Succeeded != 1 {
				t.Fatalf("result %+v: want the item answered", res)
			}
			mu.Lock()
			defer mu.Unlock()
			t.Logf("%d asks: %d replies, %d reads", asks, replies, reads)
			if replies != asks {
				t.Errorf("%d of %d asks answered", replies, asks)
			}
			if reads > 2 {
				t.Errorf("%d asks made %d reads: want at most 2 (the one in flight and one after it)", asks, reads)
			}
		})
	}
}
