package workflows_test

// A batch's items are DocumentQA children, most of them short: what an item
// costs on Temporal is set by its workflow tasks and events (BENCHMARKS.md,
// Where the batch loses time on PostgreSQL). The histories here are two
// batch children, one of a document of one chunk and one of several,
// recorded by one BatchQA of two items:
//
//	go test ./workflows -run 'TestReplayItems$' -update
//
// records the last of itemGenerations, the one the current code produces;
// older ones stay, as what items started by older workers look like, and
// TestItemCost compares the oldest with the newest.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/pluginkit"
	"github.com/memagent/memagent/internal/s3store"
)

// itemGeneration is one version of a batch item's commands: the history
// of its one-chunk item (testdata/<prefix>_run1.json) and of its item of
// several chunks (testdata/<prefix>chunks_run1.json).
type itemGeneration struct {
	name, prefix string
}

// itemGenerations are oldest first; -update records the last.
var itemGenerations = []itemGeneration{
	// Every gate asked for, one activity a step: ConvertDocument,
	// PrepareDocument, FindCheckpoint, UpdateMemory, Answer, GroundAnswer.
	{name: "verified", prefix: "documentqa_item"},
	// LeanItemChange at version 1: one gate asked; PrepareReading,
	// UpdateMemory, AnswerAndGround.
	{name: "lean", prefix: "documentqa_lean_item"},
	// QuietProgressChange at version 1 in place of LeanItemChange: lean,
	// chunk counts upserted at most every quietProgressUpsertEvery.
	{name: "quiet", prefix: "documentqa_quiet_item"},
}

const (
	itemBatchID = "replay-items"
	// itemChunkTokens cuts replayDocument into several chunks and
	// itemShortDocument into one.
	itemChunkTokens   = 64
	itemShortDocument = replayFact + " The ferry carried copper lanterns across the harbor.\n"
)

func (g itemGeneration) files() (oneChunk, chunks string) {
	return filepath.Join(historyDir, g.prefix+"_run1.json"), filepath.Join(historyDir, g.prefix+"chunks_run1.json")
}

// TestReplayItems replays every generation's item histories against the
// current code.
func TestReplayItems(t *testing.T) {
	if *update {
		recordItemHistories(t, itemGenerations[len(itemGenerations)-1])
	}
	replayer, logger := newReplayer(t)
	for _, g := range itemGenerations {
		one, many := g.files()
		for _, path := range []string{one, many} {
			t.Run(filepath.Base(path), func(t *testing.T) {
				hist := loadHistory(t, path)
				if err := replayer.ReplayWorkflowHistoryWithOptions(logger, hist, replayOptions(hist)); err != nil {
					t.Errorf("replay of %s: %v", path, err)
				}
				if last := hist.GetEvents()[len(hist.GetEvents())-1]; last.GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED {
					t.Errorf("%s ends with %s, want a completed item", path, last.GetEventType())
				}
			})
		}
	}
}

// itemCost is what one item's history holds.
type itemCost struct {
	events, workflowTasks, activities, markers, upserts int
	activityTypes                                       []string
}

func costOf(hist *historypb.History) itemCost {
	var c itemCost
	for _, e := range hist.GetEvents() {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			c.workflowTasks++
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			c.activities++
			c.activityTypes = append(c.activityTypes, e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName())
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			c.markers++
		case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			c.upserts++
		}
	}
	c.events = len(hist.GetEvents())
	return c
}

// recordItemHistories runs a BatchQA of two items, one on a document of
// one chunk and one on a document of several, on the embedded dev stack,
// and writes each child's history.
func recordItemHistories(t *testing.T, g itemGeneration) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg, c := startReplayWorker(ctx, t, itemBatchID)
	store, err := pluginkit.NewStore(ctx, cfg.Options)
	if err != nil {
		t.Fatal(err)
	}
	short := s3store.Location{Bucket: cfg.Bucket, Key: "replay/short.txt"}
	long := s3store.Location{Bucket: cfg.Bucket, Key: "replay/long.txt"}
	if err := store.Put(ctx, short, []byte(itemShortDocument), "text/plain; charset=utf-8"); err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, long, []byte(replayDocument()), "text/plain; charset=utf-8"); err != nil {
		t.Fatal(err)
	}
	if n := countChunks(t, itemShortDocument, itemChunkTokens); n != 1 {
		t.Fatalf("the short document has %d chunks, want 1", n)
	}
	var manifest strings.Builder
	for _, it := range []map[string]any{
		{"id": "short", "document": short.String(), "question": replayQuestion, "answers": []string{replayAnswer}},
		{"id": "long", "document": long.String(), "question": replayQuestion, "answers": []string{replayAnswer}},
	} {
		line, _ := json.Marshal(it)
		manifest.Write(append(line, '\n'))
	}
	mloc := s3store.Location{Bucket: cfg.Bucket, Key: "replay/items.jsonl"}
	if err := store.Put(ctx, mloc, []byte(manifest.String()), "application/x-ndjson"); err != nil {
		t.Fatal(err)
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: itemBatchID, TaskQueue: cfg.TaskQueue},
		api.BatchQAName, api.BatchQAInput{
			Manifest: mloc.String(), Name: "replay-items", Concurrency: 2,
			Options: api.ModelOptions{ChunkTokens: itemChunkTokens, MemoryMaxTokens: 64, AnswerMaxTokens: 32},
		})
	if err != nil {
		t.Fatalf("start BatchQA: %v", err)
	}
	var res api.BatchQAResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("BatchQA: %v", err)
	}
	if res.Items != 2 || res.Succeeded != 2 || res.Overall.ExactMatch != 1 {
		t.Fatalf("result %+v: want both items answered exactly", res)
	}
	one, many := g.files()
	for seq, path := range []string{one, many} {
		id := api.BatchItemWorkflowID(itemBatchID, seq, 0)
		events := fetchHistory(ctx, t, c, id, "")
		data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(&historypb.History{Events: events})
		if err != nil {
			t.Fatalf("encode history of %s: %v", id, err)
		}
		writeFile(t, path, append(data, '\n'))
		t.Logf("wrote %s: %d events", path, len(events))
	}
}

// TestItemCost holds what a batch item costs on Temporal to what the
// current generation records, against the oldest: a one-chunk item's
// events and workflow tasks, each of which costs the server a read of
// the history and two writes of the run's state.
func TestItemCost(t *testing.T) {
	oldest, newest := itemGenerations[0], itemGenerations[len(itemGenerations)-1]
	for _, g := range []itemGeneration{oldest, newest} {
		one, many := g.files()
		for _, path := range []string{one, many} {
			c := costOf(loadHistory(t, path))
			t.Logf("%s: %d events, %d workflow tasks, %d activities %v, %d version markers, %d upserts",
				filepath.Base(path), c.events, c.workflowTasks, c.activities, c.activityTypes, c.markers, c.upserts)
		}
	}
	before, _ := oldest.files()
	after, _ := newest.files()
	b, a := costOf(loadHistory(t, before)), costOf(loadHistory(t, after))
	// Before: 61 events, 7 workflow tasks; six activities and eight
	// gates. After: one activity before the chunk and one after it, and
	// one gate: 3 workflow tasks (3 events each), 3 activities (3 each),
	// 7 markers and the SDK's 7 upserts of them fewer.
	if a.workflowTasks > b.workflowTasks-3 || a.activities != 3 || a.markers != 1 || a.events > b.events-(9+9+7+7) {
		t.Errorf("one-chunk item: %d events, %d workflow tasks, %d activities, %d markers; was %d, %d, %d, %d: want 3 workflow tasks and 3 activities fewer, one marker",
			a.events, a.workflowTasks, a.activities, a.markers, b.events, b.workflowTasks, b.activities, b.markers)
	}
}

// replayOptions replays hist under its original execution.
func replayOptions(hist *historypb.History) worker.ReplayWorkflowHistoryOptions {
	started := hist.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes()
	return worker.ReplayWorkflowHistoryOptions{
		OriginalExecution: workflow.Execution{ID: started.GetWorkflowId(), RunID: started.GetOriginalExecutionRunId()},
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
