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
	"github.com/memagent/memagent/internal/dev/docgen"
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
	tok, _ := slowWorker(t, time.Second)
	ctx, s := testSession(t, 4*time.Minute)
	doc := docgen.Needle(tok, 8_000, 0.5, 54)
	path := writeFile(t, t.TempDir(), "doc.txt", []byte(doc))
	uri, _, err := s.resolveDocument(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := json.Marshal(map[string]any{"id": "i0", "document": uri, "question": docgen.Question + " (asks)", "answers": []string{docgen.Answer}})
	id := fmt.Sprintf("asks-%d", time.Now().UnixNano())
	if _, err := startBatch(ctx, s.temporal, s.cfg.TaskQueue, id, api.BatchQAInput{
		Manifest: putManifest(ctx, t, s, append(line, '\n')), Concurrency: 1, Reuse: api.ReuseNone,
		Options: api.ModelOptions{ChunkTokens: 1000}, Budget: &api.Budget{MaxCalls: 1000},
	}); err != nil {
		t.Fatal(err)
	}
	child := api.BatchItemWorkflowID(id, 0, 0)
	waitFor(t, time.Minute, "the child running", func() bool { return running(ctx, s, child) })

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
