package cli

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/api"
)

// TestForgedAsksGrowNothingOnTheStack: a caller in the namespace sends a
// running batch 30 budget-request Updates at once naming its running
// child, which has spent nothing of its grant (the Update's validator
// checks only that the child holds one). Before ledger-ask-place each
// Update made the batch read the child (ReadBatchChild), one after another:
// 30 reads. Now the ones that come while the child is read fold into one
// read after it: fewer reads than Updates, each answered with the child's
// grant, unmoved, and the batch answers its item.
func TestForgedAsksGrowNothingOnTheStack(t *testing.T) {
	ctx, s, id, child := budgetedBatchWithChild(t, "asks", 54)

	const asks = 30
	var mu sync.Mutex
	grants := map[api.Budget]int{}
	var wg sync.WaitGroup
	for range asks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := s.temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: api.BudgetRequestUpdate,
				Args: []any{api.BudgetRequest{WorkflowID: child}}, WaitForStage: client.WorkflowUpdateStageCompleted})
			var g api.Budget
			if err == nil {
				err = h.Get(ctx, &g)
			}
			if err != nil {
				t.Errorf("forged ask: %v", err)
				return
			}
			mu.Lock()
			grants[g]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if !running(ctx, s, child) {
		t.Fatal("the child closed before the batch answered the asks: the test shows nothing; give the model more latency")
	}
	var res api.BatchQAResult
	if err := s.temporal.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if res.Succeeded != 1 {
		t.Errorf("batch %+v: want its item answered", res)
	}
	reads := 0
	h, _ := history(ctx, t, s.temporal, id, "")
	for _, e := range h.Events {
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == activities.ReadBatchChildName {
			reads++
		}
	}
	t.Logf("%d asks: %d reads, replies %v", asks, reads, grants)
	if reads >= asks {
		t.Errorf("%d forged asks for a child that spent nothing made %d reads: want fewer than the asks", asks, reads)
	}
	if len(grants) != 1 {
		t.Errorf("replies %v: want every ask answered with the child's one grant", grants)
	}
}

// TestForgedAsksKeepNoChildWaitingOnTheStack: a batch's two children spend
// their grants and wait, the budget all granted; a caller in the namespace
// sends five budget-request Updates naming the first to wait. Before
// ledger-ask-place each sent it to the back of the queue, so that the
// raise that makes room for one share woke the other child; now the first
// to wait is the first woken, and the forged asks read nothing (before,
// one read each).
func TestForgedAsksKeepNoChildWaitingOnTheStack(t *testing.T) {
	stack(t)
	startWorker(t)
	ctx, s := testSession(t, 4*time.Minute)
	path, _ := writeDoc(t, 40_000)
	uri, _, err := s.resolveDocument(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	var manifest []byte
	for i := range 2 {
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("i%d", i), "document": uri,
			"question": fmt.Sprintf("%s (waiting %d)", demoQuestion, i)})
		manifest = append(append(manifest, line...), '\n')
	}
	id := fmt.Sprintf("asks-wait-%d", time.Now().UnixNano())
	if _, err := startBatch(ctx, s.temporal, s.cfg.TaskQueue, id, api.BatchQAInput{
		Manifest: putManifest(ctx, t, s, manifest), Concurrency: 2, Reuse: api.ReuseNone,
		Options: api.ModelOptions{ChunkTokens: 1000}, Budget: &api.Budget{MaxCalls: 32},
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "both children waiting", func() bool {
		p, err := batchProgress(ctx, s, id)
		return err == nil && p.Budget != nil && p.Budget.Waiting == 2
	})
	// The first to wait is the child whose read the batch took first:
	// each is read once, as it spent its grant, the two reads maybe in
	// flight together.
	readsOf := func() (order, wakes []string) {
		h, _ := history(ctx, t, s.temporal, id, "")
		read := map[int64]string{}
		for _, e := range h.Events {
			if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == activities.ReadBatchChildName {
				var ref struct {
					WorkflowID string `json:"workflow_id"`
				}
				if p := a.GetInput().GetPayloads(); len(p) == 1 {
					_ = json.Unmarshal(p[0].GetData(), &ref)
				}
				read[e.GetEventId()] = ref.WorkflowID
			}
			if a := e.GetActivityTaskCompletedEventAttributes(); a != nil {
				if c, ok := read[a.GetScheduledEventId()]; ok {
					order = append(order, c)
				}
			}
			if a := e.GetSignalExternalWorkflowExecutionInitiatedEventAttributes(); a != nil && a.GetSignalName() == api.BudgetGrantSignal {
				wakes = append(wakes, a.GetWorkflowExecution().GetWorkflowId())
			}
		}
		return order, wakes
	}
	order, _ := readsOf()
	before := len(order)
	if before != 2 || order[0] == order[1] || order[0] == "" {
		t.Fatalf("reads of %v before the forged asks: want one of each child", order)
	}
	first := order[0]
	for range 5 {
		h, err := s.temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: api.BudgetRequestUpdate,
			Args: []any{api.BudgetRequest{WorkflowID: first}}, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err == nil {
			err = h.Get(ctx, nil)
		}
		if err != nil {
			t.Fatalf("forged ask for %s: %v", first, err)
		}
	}
	order, _ = readsOf()
	forged := len(order) - before
	// Room for one share: the head of the queue is served.
	raise := func(calls int) {
		h, err := s.temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: api.RaiseBudgetUpdate,
			Args: []any{api.Budget{MaxCalls: calls}}, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err == nil {
			err = h.Get(ctx, nil)
		}
		if err != nil {
			t.Fatalf("raise to %d: %v", calls, err)
		}
	}
	raise(48)
	var wakes []string
	waitFor(t, time.Minute, "a child woken", func() bool {
		order, wakes = readsOf()
		return len(wakes) > 0
	})
	t.Logf("waiting %s first; 5 forged asks for it made %d reads; woken %v", first, forged, wakes)
	if wakes[0] != first {
		t.Errorf("woken %v: want %s, the first to wait, first", wakes, first)
	}
	if forged != 0 {
		t.Errorf("5 forged asks for a child that waits made %d reads: want none", forged)
	}
	raise(1000)
	var res api.BatchQAResult
	if err := s.temporal.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if res.Succeeded != 2 {
		t.Errorf("batch %+v: want both items answered", res)
	}
}
