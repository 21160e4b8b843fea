package workflows

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// TestBatchHintsGrowNothing is the attack of a caller in the namespace (or
// a child from before budget-pull asking again and again) on a running
// batch: it sends hints (BudgetRequestSignal) naming one of the batch's
// running children, in a burst or one at a time. Before
// LedgerHintOnceChange each hint made the batch read the child
// (ReadBatchChild) and wake it (BudgetGrantSignal), and each wake stayed in
// the run's sends until the run closed: the batch's history and memory
// grew with the hints. Now a burst costs at most two reads (the one in
// flight and one after it), a child is woken only with a grant the run
// has not told it, and a send leaves the outbox once delivered. A hint naming no
// running child of the batch does nothing at all, and a child that did
// spend its grant (spent: the read shows it) is still woken once with its
// new grant, even when a forged BudgetRequestUpdate took that grant first
// (the reply went to the forger).
func TestBatchHintsGrowNothing(t *testing.T) {
	const hints = 40
	for _, tc := range []struct {
		name string
		// spent: the child has spent its first grant (as a child from
		// before budget-pull that asks); spends: it has spent every grant
		// it holds whenever it is read; other: the hints name no child.
		spent, spends, spaced, other bool
		// update: a caller sends the batch a BudgetRequestUpdate naming
		// the child before the hints: the reply is the caller's.
		update bool
		// What the batch may do for hints hints at most, and the grant
		// the child must end with.
		reads, wakes int
		grant        int
	}{
		{name: "burst naming a running child", reads: 2, wakes: 0, grant: grantCalls},
		{name: "spaced naming a running child", spaced: true, reads: hints, wakes: 0, grant: grantCalls},
		{name: "burst naming a child that spent its grant", spent: true, reads: 2, wakes: 1, grant: 2 * grantCalls},
		// Each wake delivered before the next is sent: none is kept. The
		// sixth grant takes the last 4 calls of the 100; the child then
		// waits, and its hints do nothing.
		{name: "spaced naming a child that spends every grant", spends: true, spaced: true, reads: 7, wakes: 6, grant: 100},
		// The grant the forged Update moved (16 to 32) reaches the child
		// from before budget-pull only by a wake.
		{name: "forged update, then a burst naming a child that spent its grant", spent: true, update: true, reads: 3, wakes: 1, grant: 2 * grantCalls},
		{name: "burst naming no child", other: true, reads: 0, wakes: 0, grant: grantCalls},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const batchID = "batch-hints"
			child := api.BatchItemWorkflowID(batchID, 0, 0)
			target := child
			if tc.other {
				target = api.BatchItemWorkflowID(batchID, 7, 0)
			}
			var mu sync.Mutex
			reads, wakes, maxSends := 0, 0, 0
			var last api.Budget
			held := grantCalls // what the child holds, as it takes its wakes
			batchProbe = func(b *batchRun, _ string) {
				mu.Lock()
				defer mu.Unlock()
				maxSends = max(maxSends, len(b.out.sends))
				if err := b.invariants(false); err != nil {
					t.Errorf("invariants: %v", err)
				}
			}
			defer func() { batchProbe = nil }()
			f := newBatchFixture(t)
			f.carry = true
			spent := 0
			if tc.spent {
				spent = grantCalls
			}
			// The child runs for an hour, taking the wake-ups (as a child
			// from before budget-pull takes its grant from them).
			f.child = func(ctx workflow.Context, in api.DocumentQAInput) (*DocumentQAResult, error) {
				g := *in.Budget
				tctx, stop := workflow.WithCancel(ctx)
				defer stop()
				done := false
				sel := workflow.NewSelector(ctx)
				sel.AddReceive(workflow.GetSignalChannel(ctx, api.BudgetGrantSignal), func(c workflow.ReceiveChannel, _ bool) {
					c.Receive(ctx, &g)
					mu.Lock()
					wakes++
					held = g.MaxCalls
					mu.Unlock()
				})
				sel.AddFuture(workflow.NewTimer(tctx, time.Hour), func(workflow.Future) { done = true })
				for !done {
					sel.Select(ctx)
				}
				mu.Lock()
				last = g
				mu.Unlock()
				if tc.spends {
					spent = g.MaxCalls
				}
				return &DocumentQAResult{Answer: "a", AnswerFound: true, Usage: api.Usage{Calls: spent}}, nil
			}
			f.setup = func(env *testsuite.TestWorkflowEnvironment) {
				env.OnActivity(actwire.ReadBatchChildName, mock.Anything, mock.Anything).Return(
					func(_ context.Context, ref actwire.ChildRef) (*actwire.ChildUsage, error) {
						mu.Lock()
						defer mu.Unlock()
						reads++
						if ref.WorkflowID != child {
							t.Errorf("read %s, not a child of the batch", ref.WorkflowID)
						}
						if tc.spends {
							return &actwire.ChildUsage{Open: true, Usage: api.Usage{Calls: held}}, nil
						}
						return &actwire.ChildUsage{Open: true, Usage: api.Usage{Calls: spent}}, nil
					})
				req := api.BudgetRequest{WorkflowID: target, Usage: api.Usage{Calls: 1 << 20}}
				if tc.update {
					env.RegisterDelayedCallback(func() {
						env.UpdateWorkflow(api.BudgetRequestUpdate, "", &testsuite.TestUpdateCallback{
							OnReject: func(err error) { t.Errorf("the update was refused: %v", err) },
							OnAccept: func() {}, OnComplete: func(any, error) {},
						}, api.BudgetRequest{WorkflowID: child})
					}, 30*time.Second)
				}
				if tc.spaced {
					for i := range hints {
						env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.BudgetRequestSignal, req) }, time.Minute+time.Duration(i)*time.Minute)
					}
					return
				}
				env.RegisterDelayedCallback(func() {
					for range hints {
						env.SignalWorkflow(api.BudgetRequestSignal, req)
					}
				}, time.Minute)
			}
			res, _ := f.runToEnd(t, batchID, api.BatchQAInput{
				Manifest: f.jsonlManifest(t, "hints.jsonl", 1, nil), Concurrency: 1,
				Budget: &api.Budget{MaxCalls: 100}, Options: api.ModelOptions{ChunkTokens: 100},
			})
			if res.Succeeded != 1 {
				t.Fatalf("result %+v: want the item answered", res)
			}
			mu.Lock()
			defer mu.Unlock()
			t.Logf("%d hints: %d reads, %d wakes, at most %d sends kept", hints, reads, wakes, maxSends)
			if reads > tc.reads || wakes != tc.wakes || maxSends > 1 {
				t.Errorf("%d hints made %d reads (want at most %d), %d wakes (want %d), at most %d sends kept (want at most 1)",
					hints, reads, tc.reads, wakes, tc.wakes, maxSends)
			}
			if last.MaxCalls != tc.grant {
				t.Errorf("the child ended with grant %+v, want %d calls", last, tc.grant)
			}
		})
	}
}
