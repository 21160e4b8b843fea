package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
)

// TestBatchHintsGrowNothingOnTheStack: a caller in the namespace sends a
// running batch 30 budget-request signals naming its running child, which
// has spent nothing of its grant, and one naming a workflow that is not its
// child. Before ledger-hint-once each hint made the batch read the child
// (ReadBatchChild) and wake it (BudgetGrantSignal): 30 wakes in the
// batch's history and the child's, kept in the batch's memory until it
// closed. Now the child is woken by none (its grant did not move), the
// reads are fewer than the hints, and the batch answers its item.
func TestBatchHintsGrowNothingOnTheStack(t *testing.T) {
	ctx, s, id, child := budgetedBatchWithChild(t, "hints", 53)

	const hints = 30
	var wg sync.WaitGroup
	for i := range hints + 1 {
		req := api.BudgetRequest{WorkflowID: child, Usage: api.Usage{Calls: 1 << 20}}
		if i == hints {
			req.WorkflowID = id + ".someone-else"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.temporal.SignalWorkflow(ctx, id, "", api.BudgetRequestSignal, req); err != nil {
				t.Errorf("hint: %v", err)
			}
		}()
	}
	wg.Wait()
	waitFor(t, 30*time.Second, "the batch handled the hints", func() bool { return handledLastSignal(ctx, s, id) })
	if !running(ctx, s, child) {
		t.Fatal("the child closed before the batch handled the hints: the test shows nothing; give the model more latency")
	}
	var res api.BatchQAResult
	if err := s.temporal.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if res.Succeeded != 1 {
		t.Errorf("batch %+v: want its item answered", res)
	}
	reads, wakes := 0, 0
	h, _ := history(ctx, t, s.temporal, id, "")
	for _, e := range h.Events {
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == activities.ReadBatchChildName {
			reads++
		}
		if a := e.GetSignalExternalWorkflowExecutionInitiatedEventAttributes(); a != nil && a.GetSignalName() == api.BudgetGrantSignal {
			wakes++
		}
	}
	woken := 0
	h, _ = history(ctx, t, s.temporal, child, "")
	for _, e := range h.Events {
		if a := e.GetWorkflowExecutionSignaledEventAttributes(); a != nil && a.GetSignalName() == api.BudgetGrantSignal {
			woken++
		}
	}
	t.Logf("%d hints: %d reads, %d wakes sent, %d received", hints, reads, wakes, woken)
	if wakes != 0 || woken != 0 || reads >= hints {
		t.Errorf("%d hints for a child that spent nothing: %d reads (want fewer than the hints), %d wakes sent and %d received (want none)",
			hints, reads, wakes, woken)
	}
}

// budgetedBatchWithChild starts, on a slow worker (a second a model call),
// a BatchQA of one item under a budget, named name-<time> over an
// 8,000-token document of seed, and returns once its child runs: the
// stage of the attacks that send the batch budget requests by hand.
func budgetedBatchWithChild(t *testing.T, name string, seed uint64) (ctx context.Context, s *session, id, child string) {
	t.Helper()
	tok, _ := slowWorker(t, time.Second)
	ctx, s = testSession(t, 4*time.Minute)
	doc := docgen.Needle(tok, 8_000, 0.5, seed)
	path := writeFile(t, t.TempDir(), "doc.txt", []byte(doc))
	uri, _, err := s.resolveDocument(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := json.Marshal(map[string]any{"id": "i0", "document": uri, "question": docgen.Question + " (" + name + ")", "answers": []string{docgen.Answer}})
	id = fmt.Sprintf("%s-%d", name, time.Now().UnixNano())
	if _, err := startBatch(ctx, s.temporal, s.cfg.TaskQueue, id, api.BatchQAInput{
		Manifest: putManifest(ctx, t, s, append(line, '\n')), Concurrency: 1, Reuse: api.ReuseNone,
		Options: api.ModelOptions{ChunkTokens: 1000}, Budget: &api.Budget{MaxCalls: 1000},
	}); err != nil {
		t.Fatal(err)
	}
	child = api.BatchItemWorkflowID(id, 0, 0)
	waitFor(t, time.Minute, "the child running", func() bool { return running(ctx, s, child) })
	return ctx, s, id, child
}
