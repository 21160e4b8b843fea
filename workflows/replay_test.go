package workflows_test

// The replay test is the determinism guard of DocumentQA: every history
// under testdata/ was recorded from a real run and must replay against the
// current workflow code without a nondeterminism error. A failure here means
// a change would break runs already in flight; guard such a change with
// workflow.GetVersion instead of regenerating the histories.
//
// The histories come in generations, one per version of the workflow's
// commands, and every generation keeps replaying for as long as a run of it
// may be in flight; VERSIONS.md lists them and the changes each records.
//
// To record the current generation again (after adding a workflow feature
// that its histories do not exercise), run
//
//	go test ./workflows -run 'TestReplayDocumentQA$' -update
//
// It runs one DocumentQA on the embedded dev stack (Temporal, S3 and the
// simulator, in memory, on free loopback ports) with a small generated
// document and three chunks per run, so that the run continues-as-new at
// least three times, and writes the history of every run of the chain to
// testdata/documentqa_lean_run{N}.json in the format of
// `temporal workflow show --output json`. Older generations are never
// rewritten: they are what runs started by older workers look like. A
// history saved that way from a production run can be added under the name
// pattern of its generation.
//
// BatchQA's histories come in generations too (batchGenerations); the
// current one is recorded the same way by
//
//	go test ./workflows -run 'TestReplayBatch$' -update
//
// from a batch of five items in pages of two, two items a run, so that it
// continues-as-new twice: one run whose children answer, one whose items
// settle without a child (an earlier answer reused, a missing document)
// and one whose child fails, which then writes the report, compares it
// with an earlier report (compare_with, a prefix that holds none: every
// item is new) and POSTs its notify_url (a server of the test); its budget
// is small enough that a child asks for more, and that child's history is
// kept beside the batch's (testdata/batch_ledger_child_run{N}.json) and
// replayed with it. -update
// records what every replay test selected by -run records: select one.
//
// A chain that moved between two builds of a Worker Deployment
// (testdata/documentqa_move_run{1,2}.json) is replay_move_test.go's.

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/devenv"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/pluginkit"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/tokenizer"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
	"github.com/memagent/memagent/workflows"
)

var update = flag.Bool("update", false, "record the histories of the replay tests selected by -run again from runs on the embedded dev stack")

// generation is one version of DocumentQA's commands and the histories
// recorded from it.
type generation struct {
	name string
	// prefix names the files: testdata/<prefix>{N}.json.
	prefix string
	// version is the SearchAttributesChange version the histories carry.
	version workflow.Version
	// lean says the histories carry LeanItemChange at version 1, and so
	// no other gate's marker: SearchAttributesChange is at version 1
	// unasked.
	lean bool
	// quiet says the histories carry QuietProgressChange at version 1,
	// the run's one marker (lean, LeanItemChange not asked).
	quiet bool
}

// generations are oldest first; -update records the last, the one the
// current code produces.
var generations = []generation{
	{name: "v0", prefix: "documentqa_run", version: workflow.DefaultVersion},
	{name: "v1", prefix: "documentqa_v1_run", version: 1},
	// v1 with ConvertDocumentChange at version 1: ConvertDocument before
	// PrepareDocument.
	{name: "v1-convert", prefix: "documentqa_convert_run", version: 1},
	// and GroundingChange at version 1: GroundAnswer after Answer.
	{name: "v1-ground", prefix: "documentqa_ground_run", version: 1},
	// and CoalesceUpsertsChange at version 1: the chunk count upserted at
	// most every few seconds.
	{name: "v1-coalesce", prefix: "documentqa_coalesce_run", version: 1},
	// and CheckpointsChange at version 1: FindCheckpoint after
	// PrepareDocument, a checkpoint kept with every chunk.
	{name: "v1-checkpoints", prefix: "documentqa_checkpoints_run", version: 1},
	// and ProvenanceChange at version 1: FindCheckpoint and the memory
	// updates told the run's chain.
	{name: "v1-provenance", prefix: "documentqa_provenance_run", version: 1},
	// and VerifyCarryChange at version 1: each continued run proves where
	// its state came from (VerifyContinuedRun, a local activity).
	{name: "v1-verified", prefix: "documentqa_verified_run", version: 1},
	// and LeanItemChange at version 1: one marker a run, PrepareReading
	// and AnswerAndGround for the steps around the chunks.
	{name: "v1-lean", prefix: "documentqa_lean_run", version: 1, lean: true},
	// and QuietProgressChange at version 1 in place of LeanItemChange:
	// chunk counts upserted at most every quietProgressUpsertEvery.
	{name: "v1-quiet", prefix: "documentqa_quiet_run", version: 1, lean: true, quiet: true},
}

const (
	historyDir = "testdata"
	// minRuns is the least number of runs in the recorded chain: the first,
	// at least one in the middle, and the last, with a continue-as-new
	// between each.
	minRuns        = 4
	replayWorkflow = "replay-documentqa"
	replayChunks   = 3
	replayQuestion = "What is the access code for the north gate of the Halvorsen observatory?"
	replayAnswer   = "7391-ALPHA"
	replayFact     = "The access code for the north gate of the Halvorsen observatory is 7391-ALPHA."
)

func TestReplayDocumentQA(t *testing.T) {
	if *update {
		recordHistories(t, generations[len(generations)-1])
	}
	for _, g := range generations {
		t.Run(g.name, func(t *testing.T) { replayGeneration(t, g) })
	}
}

// replayGeneration replays every history of g, checks that they form one
// continue-as-new chain, and that they carry g's version.
func replayGeneration(t *testing.T, g generation) {
	files := historyFiles(t, g)
	if len(files) < minRuns {
		t.Fatalf("found %d histories matching %s/%s{N}.json, want at least %d; record the current generation with: go test ./workflows -run TestReplay -update",
			len(files), historyDir, g.prefix, minRuns)
	}

	replayer := worker.NewWorkflowReplayer()
	replayer.RegisterWorkflowWithOptions(workflows.DocumentQA, workflow.RegisterOptions{Name: api.DocumentQAName})
	logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})))

	histories := make([]*historypb.History, len(files))
	for i, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			hist := loadHistory(t, path)
			histories[i] = hist
			started := hist.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes()
			err := replayer.ReplayWorkflowHistoryWithOptions(logger, hist, worker.ReplayWorkflowHistoryOptions{
				OriginalExecution: workflow.Execution{ID: started.GetWorkflowId(), RunID: started.GetOriginalExecutionRunId()},
			})
			if err != nil {
				t.Errorf("replay of %s: %v", path, err)
			}
		})
	}
	checkChain(t, files, histories)
	checkVersion(t, g, files, histories)
}

// historyFiles returns the recorded histories of g in run order.
func historyFiles(t *testing.T, g generation) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(historyDir, g.prefix+"*.json"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(g.prefix) + `(\d+)\.json$`)
	run := func(p string) int {
		m := re.FindStringSubmatch(filepath.Base(p))
		if m == nil {
			t.Fatalf("%s does not match %s{N}.json", p, g.prefix)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	slices.SortFunc(paths, func(a, b string) int { return run(a) - run(b) })
	return paths
}

// checkVersion asserts that every run of g recorded g's version of
// SearchAttributesChange, and that the search attribute upserts match it:
// none before version 1; from version 1 on, the run's status in every run
// and "done" at the end of the last.
func checkVersion(t *testing.T, g generation, files []string, histories []*historypb.History) {
	t.Helper()
	dc := converter.GetDefaultDataConverter()
	for i, hist := range histories {
		if hist == nil {
			return
		}
		version, marked, markers := workflow.DefaultVersion, false, 0
		gate := workflows.SearchAttributesChange
		if g.lean {
			gate = workflows.LeanItemChange
		}
		if g.quiet {
			gate = workflows.QuietProgressChange
		}
		var statuses []string
		for _, e := range hist.GetEvents() {
			if m := e.GetMarkerRecordedEventAttributes(); m != nil && m.GetMarkerName() == "Version" {
				var id string
				var v workflow.Version
				if err := dc.FromPayloads(m.GetDetails()["change-id"], &id); err != nil {
					t.Fatalf("%s: version marker change id: %v", files[i], err)
				}
				markers++
				if id != gate {
					continue
				}
				if err := dc.FromPayloads(m.GetDetails()["version"], &v); err != nil {
					t.Fatalf("%s: version marker of %s: %v", files[i], id, err)
				}
				version, marked = v, true
			}
			if u := e.GetUpsertWorkflowSearchAttributesEventAttributes(); u != nil {
				if p, ok := u.GetSearchAttributes().GetIndexedFields()[api.AttrStatus]; ok {
					var s string
					if err := dc.FromPayload(p, &s); err != nil {
						t.Fatalf("%s: %s: %v", files[i], api.AttrStatus, err)
					}
					statuses = append(statuses, s)
				}
			}
		}
		if version != g.version || marked != (g.version != workflow.DefaultVersion) {
			t.Errorf("%s: %s version %d (marker recorded: %v), want %d", files[i], gate, version, marked, g.version)
		}
		if g.lean && markers != 1 {
			t.Errorf("%s: %d version markers, want one (%s) a run", files[i], markers, gate)
		}
		switch {
		case g.version == workflow.DefaultVersion && len(statuses) > 0:
			t.Errorf("%s: %s upserted as %q before version 1", files[i], api.AttrStatus, statuses)
		case g.version >= 1 && len(statuses) == 0:
			t.Errorf("%s: no upsert of %s", files[i], api.AttrStatus)
		case g.version >= 1 && i == len(histories)-1 && statuses[len(statuses)-1] != api.StageDone:
			t.Errorf("%s: %s upserts %q, want the last to be %q", files[i], api.AttrStatus, statuses, api.StageDone)
		}
	}
}

func loadHistory(t *testing.T, path string) *historypb.History {
	t.Helper()
	return loadHistoryOf(t, path, api.DocumentQAName)
}

// loadHistoryOf reads a whole history of a workflow of type workflowType.
func loadHistoryOf(t *testing.T, path, workflowType string) *historypb.History {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	hist, err := client.HistoryFromJSON(bytes.NewReader(data), client.HistoryJSONOptions{})
	if err != nil {
		t.Fatalf("read history %s: %v", path, err)
	}
	events := hist.GetEvents()
	if len(events) < 3 || events[0].GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED {
		t.Fatalf("%s: %d events, want a whole history starting with WorkflowExecutionStarted", path, len(events))
	}
	if got := events[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName(); got != workflowType {
		t.Fatalf("%s is a history of %q, want %q", path, got, workflowType)
	}
	return hist
}

// checkChain asserts that the histories are the runs of one continue-as-new
// chain in order, so the replay covers the first run, the middle runs that
// start from a carried state, and the last run that answers.
func checkChain(t *testing.T, files []string, histories []*historypb.History) {
	t.Helper()
	for i, hist := range histories {
		if hist == nil {
			return // loading failed and was reported
		}
		events := hist.GetEvents()
		started := events[0].GetWorkflowExecutionStartedEventAttributes()
		last := events[len(events)-1]
		if i == 0 {
			if started.GetContinuedExecutionRunId() != "" {
				t.Errorf("%s continues run %s, want the first run of the chain", files[i], started.GetContinuedExecutionRunId())
			}
		} else {
			prev := histories[i-1].GetEvents()
			want := prev[len(prev)-1].GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId()
			if got := started.GetOriginalExecutionRunId(); got != want {
				t.Errorf("%s is run %s, want %s, the run that %s continued as", files[i], got, want, files[i-1])
			}
		}
		wantLast := enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
		if i == len(histories)-1 {
			wantLast = enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
		}
		if last.GetEventType() != wantLast {
			t.Errorf("%s ends with %s, want %s", files[i], last.GetEventType(), wantLast)
		}
	}
}

// recordHistories runs DocumentQA on the embedded dev stack with an
// in-process worker and writes the history of every run of its chain.
func recordHistories(t *testing.T, g generation) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg, c := startReplayWorker(ctx, t, replayWorkflow)

	opts := api.ModelOptions{ChunkTokens: 64, MemoryMaxTokens: 64, AnswerMaxTokens: 32}
	doc := replayDocument()
	chunks := countChunks(t, doc, opts.ChunkTokens)
	if chunks <= (minRuns-1)*replayChunks {
		t.Fatalf("the replay document has %d chunks, want more than %d for %d runs of %d chunks",
			chunks, (minRuns-1)*replayChunks, minRuns, replayChunks)
	}
	store, err := pluginkit.NewStore(ctx, cfg.Options)
	if err != nil {
		t.Fatal(err)
	}
	docLoc := s3store.Location{Bucket: cfg.Bucket, Key: "replay/doc.txt"}
	if err := store.Put(ctx, docLoc, []byte(doc), "text/plain; charset=utf-8"); err != nil {
		t.Fatalf("upload document: %v", err)
	}

	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: replayWorkflow, TaskQueue: cfg.TaskQueue},
		api.DocumentQAName, api.DocumentQAInput{
			Document: docLoc.String(), Question: replayQuestion, GoldAnswers: []string{replayAnswer},
			Options: opts, ChunksPerRun: replayChunks,
		})
	if err != nil {
		t.Fatalf("start DocumentQA: %v", err)
	}
	// Get follows the chain and moves the handle's run id to the last run.
	runID := run.GetRunID()
	var res workflows.DocumentQAResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("DocumentQA: %v", err)
	}
	if res.Chunks != chunks || res.Runs < minRuns || res.Answer != replayAnswer {
		t.Fatalf("result: %d chunks in %d runs, answer %q; want %d chunks in at least %d runs, answer %q",
			res.Chunks, res.Runs, res.Answer, chunks, minRuns, replayAnswer)
	}
	if g := res.Grounding; g == nil || g.Status != api.GroundingVerbatim || !strings.Contains(g.Quote, replayAnswer) {
		t.Fatalf("grounding %+v, want verbatim with a quote holding %q", g, replayAnswer)
	}

	writeChain(ctx, t, c, replayWorkflow, runID, g.prefix)
}

// startReplayWorker starts the embedded dev stack (Temporal, S3 and the
// simulator, in memory, on free ports) and a worker on taskQueue, and
// returns the configuration and a client, both closed when t ends.
func startReplayWorker(ctx context.Context, t *testing.T, taskQueue string) (config.Config, client.Client) {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	dev, err := devenv.Start(ctx, devenv.Options{FreePorts: true, DisableUI: true, Simulator: true, Logger: logger})
	if err != nil {
		t.Fatalf("start dev stack: %v", err)
	}
	t.Cleanup(func() { dev.Close() })
	cfg := config.Default().AtDevStack(dev.Addresses())
	cfg.TaskQueue = taskQueue

	acts, pool, err := pluginkit.NewActivities[*activities.Activities](ctx, workerapp.PluginOptions(cfg, workerapp.Options{Logger: logger}))
	if err != nil {
		t.Fatalf("NewActivities: %v", err)
	}
	t.Cleanup(pool.Close) // after the worker stops: cleanups run last first
	// A fixed identity keeps this machine's host name out of the histories.
	c, err := client.DialContext(ctx, client.Options{
		HostPort: cfg.TemporalAddress, Namespace: cfg.TemporalNamespace,
		Identity: "memagent-replay-test", Logger: log.NewStructuredLogger(logger),
	})
	if err != nil {
		t.Fatalf("dial Temporal: %v", err)
	}
	t.Cleanup(c.Close)
	w := workerapp.NewWorker(c, cfg, acts, pool.Capacity(), workerapp.Options{Logger: logger})
	if err := w.Start(); err != nil {
		t.Fatalf("start worker: %v", err)
	}
	t.Cleanup(w.Stop)
	return cfg, c
}

// writeChain replaces testdata/<prefix>{N}.json with the history of every
// run of workflow id's chain, from runID on.
func writeChain(ctx context.Context, t *testing.T, c client.Client, id, runID, prefix string) {
	t.Helper()
	old, err := filepath.Glob(filepath.Join(historyDir, prefix+"*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range old {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(historyDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for n := 1; runID != ""; n++ {
		events := fetchHistory(ctx, t, c, id, runID)
		runID = events[len(events)-1].GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId()
		// The CLI marshals with these options and payload shorthand off,
		// which is what the SDK's replayer reads.
		data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(&historypb.History{Events: events})
		if err != nil {
			t.Fatalf("encode history of run %d: %v", n, err)
		}
		path := filepath.Join(historyDir, fmt.Sprintf("%s%d.json", prefix, n))
		if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s: %d events", path, len(events))
	}
}

func fetchHistory(ctx context.Context, t *testing.T, c client.Client, id, runID string) []*historypb.HistoryEvent {
	t.Helper()
	var events []*historypb.HistoryEvent
	it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatalf("history of run %s: %v", runID, err)
		}
		events = append(events, e)
	}
	if len(events) == 0 {
		t.Fatalf("history of run %s is empty", runID)
	}
	return events
}

func countChunks(t *testing.T, doc string, chunkTokens int) int {
	t.Helper()
	tok, err := tokenizer.New(api.DefaultTokenizer)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := memagent.PlanChunks(strings.NewReader(doc), tok, chunkTokens)
	if err != nil {
		t.Fatal(err)
	}
	return len(idx.Chunks)
}

// replayDocument is a short, fixed document: filler paragraphs that share no
// content word with the question, and the fact that answers it.
func replayDocument() string {
	subjects := []string{"The ferry", "A miller", "The old potter", "Two sailors", "A shepherd", "The weaver"}
	verbs := []string{"carried", "counted", "mended", "gathered", "painted", "traded"}
	objects := []string{"copper lanterns", "willow baskets", "silver ribbons", "wooden paddles", "golden candles", "velvet blankets"}
	places := []string{"across the harbor", "along the quiet river", "beneath the oak", "beyond the meadow", "near the busy wharf", "around the lagoon"}
	var b strings.Builder
	for p := 0; p < 17; p++ {
		if p == 11 {
			b.WriteString(replayFact + "\n\n")
		}
		for s := 0; s < 3; s++ {
			k := p*3 + s
			fmt.Fprintf(&b, "%s %s %s %s. ", subjects[k%6], verbs[(k/2)%6], objects[(k+p)%6], places[(k*5)%6])
		}
		b.WriteString("\n\n")
	}
	return b.String()
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// batchGenerations are BatchQA's recorded chains, oldest first, each kept
// replaying for good; -update records the last.
var batchGenerations = []generation{
	// Before the status lifecycle, priorities and samples.
	{name: "v0", prefix: "batch_run"},
	// The status lifecycle (StatusLifecycleChange), task priorities and
	// the samples field.
	{name: "v1", prefix: "batch_v1_run"},
	// BatchCarryChange at version 1: children run on across
	// continue-as-new, carried in the state, and report by signal.
	{name: "v2-carry", prefix: "batch_carry_run"},
	// BatchChangesChange at version 1: the report compared (compare_with),
	// MemagentChangedItems upserted and notify_url POSTed.
	{name: "v3-changes", prefix: "batch_changes_run"},
	// BatchQuietCarryChange at version 1: a run at its boundary carries
	// its children once it has heard nothing for a quiet period.
	{name: "v4-quiet", prefix: "batch_quiet_run"},
	// BatchLedgerChange at version 1, with a budget: a child that spent
	// its grant asks through BudgetRequestUpdate and the batch reads its
	// usage (ReadBatchChild); carried children keep their run ids.
	{name: "v5-ledger", prefix: "batch_ledger_run"},
	// BatchWholeReadingsChange at version 1, with reuse "none": the item
	// asked twice is read again, not reused, and every child starts with
	// reuse "none".
	{name: "v6-whole", prefix: "batch_whole_run"},
	// VerifyCarryChange at version 1: each continued run proves where its
	// state came from (VerifyContinuedRun, a local activity).
	{name: "v7-verified", prefix: "batch_verified_run"},
	// HTTPIDsChange at version 1: the children are <batch id>.<seq>, in
	// every run of the chain.
	{name: "v8-http-ids", prefix: "batch_httpids_run"},
	// ValidationGateChange at version 1: a batch with a validation gate
	// starts its validation (<batch id>.validate) as its last command.
	{name: "v9-validation-gate", prefix: "batch_gate_run"},
	// LedgerHintOnceChange at version 1: a caller sends the batch hints
	// (BudgetRequestSignal) naming each child as it runs; the batch reads
	// a child at most twice for them and wakes none (none spent its grant).
	{name: "v10-hints", prefix: "batch_hints_run"},
	// LedgerAskPlaceChange at version 1: the caller also sends three
	// budget-request Updates at once naming each child as it runs; the
	// ones that come while the child is read fold into one read after it.
	{name: "v11-asks", prefix: "batch_asks_run"},
}

const (
	batchReplayID = "replay-batch"
	// batchMinRuns: children answering, items settled without a child,
	// a child failing and the report.
	batchMinRuns = 3
)

// TestReplayBatch replays BatchQA's recorded chain of runs against the
// current code, and checks that the chain covers what a batch does: the
// manifest expanded, children answering and failing, items settled by
// ResolveBatchPage alone, outcomes written, the report, continue-as-new.
func TestReplayBatch(t *testing.T) {
	if *update {
		recordBatchHistories(t, batchGenerations[len(batchGenerations)-1].prefix)
	}
	for _, g := range batchGenerations {
		t.Run(g.name, func(t *testing.T) { replayBatchGeneration(t, g) })
	}
}

// newReplayer is a replayer of every memagent workflow, and its logger.
func newReplayer(t *testing.T) (worker.WorkflowReplayer, log.Logger) {
	replayer := worker.NewWorkflowReplayer()
	workflows.Register(replayer)
	return replayer, log.NewStructuredLogger(slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})))
}

// replayChain replays the histories of files, a continue-as-new chain of
// workflowType in run order, each under its original execution (child ids
// derive from the workflow id), checks that they are one chain, and
// returns them.
func replayChain(t *testing.T, files []string, workflowType string) []*historypb.History {
	t.Helper()
	replayer, logger := newReplayer(t)
	histories := make([]*historypb.History, len(files))
	for i, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			hist := loadHistoryOf(t, path, workflowType)
			histories[i] = hist
			started := hist.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes()
			if err := replayer.ReplayWorkflowHistoryWithOptions(logger, hist, worker.ReplayWorkflowHistoryOptions{
				OriginalExecution: workflow.Execution{ID: started.GetWorkflowId(), RunID: started.GetOriginalExecutionRunId()},
			}); err != nil {
				t.Errorf("replay of %s: %v", path, err)
			}
		})
	}
	checkChain(t, files, histories)
	return histories
}

func replayBatchGeneration(t *testing.T, g generation) {
	files := historyFiles(t, g)
	if len(files) < batchMinRuns {
		t.Fatalf("found %d histories matching %s/%s{N}.json, want at least %d; record them with: go test ./workflows -run 'TestReplayBatch$' -update",
			len(files), historyDir, g.prefix, batchMinRuns)
	}
	histories := replayChain(t, files, api.BatchQAName)
	checkBatchCoverage(t, histories)
	checkChildIDs(t, histories, g.name == "v8-http-ids" || g.name == "v9-validation-gate" || g.name == "v10-hints" || g.name == "v11-asks")
	if g.name == "v9-validation-gate" || g.name == "v10-hints" || g.name == "v11-asks" {
		checkGateCoverage(t, histories)
	}
	if g.name == "v10-hints" {
		checkHintsCoverage(t, histories)
	}
	if g.name == "v11-asks" {
		checkAsksCoverage(t, histories)
	}
	if g.name == "v3-changes" {
		checkChangesCoverage(t, histories)
	}
	if g.name == "v5-ledger" {
		checkLedgerCoverage(t, histories)
		replayLedgerChild(t, childPrefix(g.prefix))
	}
	if g.name == "v6-whole" {
		checkWholeCoverage(t, histories)
	}
}

// checkChildIDs asserts that every child a chain started has an id of one
// form, through every run: <batch id>.<seq>[.s<k>] in a chain that took
// HTTPIDsChange at version 1 (its first run recording the marker),
// <batch id>/<seq>[.s<k>] in one recorded before it.
func checkChildIDs(t *testing.T, histories []*historypb.History, httpIDs bool) {
	t.Helper()
	form := regexp.MustCompile(`^` + regexp.QuoteMeta(batchReplayID) + `/[0-9]+(\.s[0-9]+)?$`)
	if httpIDs {
		form = regexp.MustCompile(`^` + regexp.QuoteMeta(batchReplayID) + `\.[0-9]+(\.s[0-9]+)?$`)
	}
	children, markers := 0, 0
	for _, hist := range histories {
		if hist == nil {
			return
		}
		for _, e := range hist.GetEvents() {
			if a := e.GetStartChildWorkflowExecutionInitiatedEventAttributes(); a != nil && a.GetWorkflowType().GetName() != api.ValidateName {
				children++
				if !form.MatchString(a.GetWorkflowId()) {
					t.Errorf("child %q is not of the form %s", a.GetWorkflowId(), form)
				}
			}
			if a := e.GetMarkerRecordedEventAttributes(); a != nil && strings.Contains(a.String(), workflows.HTTPIDsChange) {
				markers++
			}
		}
	}
	switch {
	case children == 0:
		t.Errorf("the chain started no child")
	case httpIDs && markers != 1:
		t.Errorf("%s recorded %d times, want once (the first run)", workflows.HTTPIDsChange, markers)
	case !httpIDs && markers != 0:
		t.Errorf("%s recorded %d times in a chain from before it", workflows.HTTPIDsChange, markers)
	}
}

// checkGateCoverage asserts that a gated chain recorded
// ValidationGateChange once and started its validation once, in its last
// run, under <batch id>.validate.
func checkGateCoverage(t *testing.T, histories []*historypb.History) {
	t.Helper()
	var started []int
	markers := 0
	for i, hist := range histories {
		for _, e := range hist.GetEvents() {
			if a := e.GetStartChildWorkflowExecutionInitiatedEventAttributes(); a != nil && a.GetWorkflowType().GetName() == api.ValidateName {
				started = append(started, i)
				if a.GetWorkflowId() != api.ValidationWorkflowID(batchReplayID) {
					t.Errorf("validation started as %q", a.GetWorkflowId())
				}
			}
			if a := e.GetMarkerRecordedEventAttributes(); a != nil && strings.Contains(a.String(), workflows.ValidationGateChange) {
				markers++
			}
		}
	}
	if len(started) != 1 || started[0] != len(histories)-1 || markers != 1 {
		t.Errorf("validation started in runs %v, %s recorded %d times; want once, in the last run", started, workflows.ValidationGateChange, markers)
	}
}

// checkChangesCoverage asserts that a chain of BatchChangesChange at
// version 1 compared its report and notified once.
func checkChangesCoverage(t *testing.T, histories []*historypb.History) {
	t.Helper()
	notified, changed, marker := 0, 0, 0
	for _, hist := range histories {
		if hist == nil {
			return
		}
		for _, e := range hist.GetEvents() {
			switch {
			case e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == activities.NotifyChangesName:
				notified++
			case e.GetUpsertWorkflowSearchAttributesEventAttributes() != nil:
				if _, ok := e.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()[api.AttrChangedItems]; ok {
					changed++
				}
			case e.GetMarkerRecordedEventAttributes() != nil:
				if strings.Contains(e.GetMarkerRecordedEventAttributes().String(), workflows.BatchChangesChange) {
					marker++
				}
			}
		}
	}
	if notified != 1 || changed != 1 || marker != 1 {
		t.Errorf("%s marker %d, %s upserted %d times, %s scheduled %d times; want 1 each",
			workflows.BatchChangesChange, marker, api.AttrChangedItems, changed, activities.NotifyChangesName, notified)
	}
}

// childPrefix names the recorded histories of the batch child that asked
// for budget beside a batch generation's: batch_ledger_child_run{N}.json.
func childPrefix(batchPrefix string) string {
	return strings.TrimSuffix(batchPrefix, "_run") + "_child_run"
}

// replayLedgerChild replays the recorded chain of the batch's child that
// asked for more budget (BudgetPullChange at version 1), and checks that it
// did: RequestBatchBudget scheduled after the budget-pull marker.
func replayLedgerChild(t *testing.T, prefix string) {
	t.Helper()
	replayer, logger := newReplayer(t)
	files := historyFiles(t, generation{prefix: prefix})
	if len(files) == 0 {
		t.Fatalf("no %s/%s{N}.json: record them with: go test ./workflows -run 'TestReplayBatch$' -update", historyDir, prefix)
	}
	marker, asked := 0, 0
	for _, path := range files {
		hist := loadHistoryOf(t, path, api.DocumentQAName)
		started := hist.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes()
		if err := replayer.ReplayWorkflowHistoryWithOptions(logger, hist, worker.ReplayWorkflowHistoryOptions{
			OriginalExecution: workflow.Execution{ID: started.GetWorkflowId(), RunID: started.GetOriginalExecutionRunId()},
		}); err != nil {
			t.Errorf("replay of %s: %v", path, err)
		}
		for _, e := range hist.GetEvents() {
			switch {
			case e.GetMarkerRecordedEventAttributes() != nil && strings.Contains(e.GetMarkerRecordedEventAttributes().String(), workflows.BudgetPullChange):
				marker++
			case e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == activities.RequestBatchBudgetName:
				asked++
			}
		}
	}
	if marker == 0 || asked == 0 {
		t.Errorf("the child's chain recorded %d %s markers and %d budget requests: want both", marker, workflows.BudgetPullChange, asked)
	}
}

// checkLedgerCoverage asserts that a chain of BatchLedgerChange at version
// 1 served a child's budget request: an Update accepted and completed, and
// the child's usage read by the batch.
func checkLedgerCoverage(t *testing.T, histories []*historypb.History) {
	t.Helper()
	accepted, completed, reads := 0, 0, 0
	for _, hist := range histories {
		if hist == nil {
			return
		}
		for _, e := range hist.GetEvents() {
			switch {
			case e.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest().GetInput().GetName() == api.BudgetRequestUpdate:
				accepted++
			case e.GetWorkflowExecutionUpdateCompletedEventAttributes() != nil:
				completed++
			case e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == activities.ReadBatchChildName:
				reads++
			}
		}
	}
	if accepted == 0 || completed < accepted || reads < accepted {
		t.Errorf("%d budget requests accepted, %d updates completed, %d usages read: want a request served", accepted, completed, reads)
	}
}

// checkWholeCoverage asserts that a chain of BatchWholeReadingsChange at
// version 1 recorded the change and started every child with reuse "none".
func checkWholeCoverage(t *testing.T, histories []*historypb.History) {
	t.Helper()
	marker, children, whole := 0, 0, 0
	dc := converter.GetDefaultDataConverter()
	for _, hist := range histories {
		if hist == nil {
			return
		}
		for _, e := range hist.GetEvents() {
			if m := e.GetMarkerRecordedEventAttributes(); m != nil && strings.Contains(m.String(), workflows.BatchWholeReadingsChange) {
				marker++
			}
			if a := e.GetStartChildWorkflowExecutionInitiatedEventAttributes(); a != nil {
				children++
				var in api.DocumentQAInput
				if err := dc.FromPayloads(a.GetInput(), &in); err != nil {
					t.Fatal(err)
				}
				if in.Reuse == api.ReuseNone {
					whole++
				}
			}
		}
	}
	if marker == 0 || children == 0 || whole != children {
		t.Errorf("%s marker %d times, %d children started, %d with reuse %q: want the marker and every child reading whole",
			workflows.BatchWholeReadingsChange, marker, children, whole, api.ReuseNone)
	}
}

// checkBatchCoverage asserts that the chain exercised every path of
// BatchQA the replay is meant to guard.
func checkBatchCoverage(t *testing.T, histories []*historypb.History) {
	t.Helper()
	activityRuns := map[string]int{}
	var childrenStarted, childrenDone, childrenFailed int
	var statuses []string
	dc := converter.GetDefaultDataConverter()
	for _, hist := range histories {
		if hist == nil {
			return // loading failed and was reported
		}
		for _, e := range hist.GetEvents() {
			switch {
			case e.GetActivityTaskScheduledEventAttributes() != nil:
				activityRuns[e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()]++
			case e.GetStartChildWorkflowExecutionInitiatedEventAttributes() != nil:
				// The validation a gated batch starts is abandoned, not
				// awaited (checkGateCoverage).
				if e.GetStartChildWorkflowExecutionInitiatedEventAttributes().GetWorkflowType().GetName() != api.ValidateName {
					childrenStarted++
				}
			case e.GetChildWorkflowExecutionCompletedEventAttributes() != nil:
				childrenDone++
			case e.GetChildWorkflowExecutionFailedEventAttributes() != nil:
				childrenFailed++
			case e.GetUpsertWorkflowSearchAttributesEventAttributes() != nil:
				if p, ok := e.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()[api.AttrStatus]; ok {
					var s string
					if err := dc.FromPayload(p, &s); err != nil {
						t.Fatal(err)
					}
					statuses = append(statuses, s)
				}
			}
		}
	}
	for _, name := range []string{activities.ExpandManifestName, activities.ResolveBatchPageName, activities.WriteBatchResultsName, activities.WriteBatchReportName} {
		if activityRuns[name] == 0 {
			t.Errorf("no %s in the recorded chain (activities: %v)", name, activityRuns)
		}
	}
	if activityRuns[activities.ExpandManifestName] != 1 || activityRuns[activities.WriteBatchReportName] != 1 {
		t.Errorf("activities %v: want the manifest expanded once and the report written once", activityRuns)
	}
	if childrenDone < 2 || childrenFailed < 1 || childrenStarted != childrenDone+childrenFailed {
		t.Errorf("children: %d started, %d completed, %d failed; want at least 2 completed and 1 failed, all closed", childrenStarted, childrenDone, childrenFailed)
	}
	if len(statuses) == 0 || statuses[0] != api.BatchStageExpanding || statuses[len(statuses)-1] != api.BatchStageDone {
		t.Errorf("%s upserts %q, want %q first and %q last", api.AttrStatus, statuses, api.BatchStageExpanding, api.BatchStageDone)
	}
}

// recordBatchHistories runs a batch of five items on the embedded dev
// stack, in pages of two and two items a run, and writes the history of
// each of its runs.
func recordBatchHistories(t *testing.T, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg, c := startReplayWorker(ctx, t, batchReplayID)
	store, err := pluginkit.NewStore(ctx, cfg.Options)
	if err != nil {
		t.Fatal(err)
	}
	doc := s3store.Location{Bucket: cfg.Bucket, Key: "replay/batch.txt"}
	latin1 := s3store.Location{Bucket: cfg.Bucket, Key: "replay/latin1.txt"}
	missing := s3store.Location{Bucket: cfg.Bucket, Key: "replay/missing.txt"}
	if err := store.Put(ctx, doc, []byte(replayDocument()), "text/plain; charset=utf-8"); err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, latin1, []byte("Na\xefve text from an old system.\n"), "text/plain"); err != nil {
		t.Fatal(err)
	}
	// Page 0 runs two children that answer; page 1 runs one for the first
	// item asked again (read whole, not reused) and settles a missing
	// document without a child; page 2's child fails (the document is not
	// UTF-8).
	items := []map[string]any{
		{"id": "fact", "document": doc.String(), "question": replayQuestion, "answers": []string{replayAnswer}, "labels": map[string]string{"kind": "fact"}},
		{"id": "filler", "document": doc.String(), "question": "Who mended the willow baskets?"},
		{"id": "fact-again", "document": doc.String(), "question": replayQuestion, "answers": []string{replayAnswer}, "labels": map[string]string{"kind": "fact"}},
		{"id": "missing", "document": missing.String(), "question": replayQuestion},
		{"id": "latin1", "document": latin1.String(), "question": replayQuestion},
	}
	var manifest strings.Builder
	for _, it := range items {
		line, _ := json.Marshal(it)
		manifest.Write(append(line, '\n'))
	}
	mloc := s3store.Location{Bucket: cfg.Bucket, Key: "replay/manifest.jsonl"}
	if err := store.Put(ctx, mloc, []byte(manifest.String()), "application/x-ndjson"); err != nil {
		t.Fatal(err)
	}
	var posts atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { posts.Add(1) }))
	defer hook.Close()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: batchReplayID, TaskQueue: cfg.TaskQueue},
		api.BatchQAName, api.BatchQAInput{
			Manifest: mloc.String(), Name: "replay", Concurrency: 2, PageSize: 2, ItemsPerRun: 2,
			Priority: api.PriorityBatch, FairnessKey: "replay", FairnessWeight: 2,
			Options:     api.ModelOptions{ChunkTokens: 64, MemoryMaxTokens: 64, AnswerMaxTokens: 32},
			CompareWith: "s3://" + cfg.Bucket + "/replay/baseline/", NotifyURL: hook.URL + "/hook",
			// Each child's grant is 16 calls, which it does not spend.
			// (v5-ledger, recorded with 25 calls and reuse "auto", kept the
			// history of the second child, which asked for more.)
			Budget: &api.Budget{MaxCalls: 100},
			// Every item read whole (BatchWholeReadingsChange): the item
			// asked twice is answered again, not reused.
			Reuse: api.ReuseNone,
			// ValidationGateChange: the report provisional, the
			// validation started as the batch completes.
			Validation: &api.ValidationGate{SampleSize: 1, Thresholds: []api.ValidationThreshold{{Figure: api.FigurePrecision, Op: ">=", Value: 0.5}}},
		})
	if err != nil {
		t.Fatalf("start BatchQA: %v", err)
	}
	runID := run.GetRunID()
	// LedgerHintOnceChange: hints naming each child as it runs;
	// LedgerAskPlaceChange: budget-request Updates naming it too.
	hints := hintChildren(ctx, t, c, batchReplayID, len(items))
	var res api.BatchQAResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("BatchQA: %v", err)
	}
	if n := hints(); n == 0 {
		t.Fatal("no hint sent: no child was seen running")
	}
	if res.Items != 5 || res.Succeeded != 3 || res.Skipped != 0 || res.Failed != 2 || res.Runs < batchMinRuns || res.Overall.ExactMatch != 1 {
		t.Fatalf("result %+v: want 5 items (3 answered, none reused, 2 failed, all scored items exact) in at least %d runs", res, batchMinRuns)
	}
	if v := res.Validation; v == nil || v.State != api.ReportProvisional || v.ValidationRunID == "" {
		t.Fatalf("validation %+v: want the report provisional, the validation started", v)
	}
	if res.Changes == nil || res.Changes.New != 5 || res.Notify != api.NotifySent || posts.Load() != 1 {
		t.Fatalf("changes %+v, notify %q, %d POSTs: want all 5 new (no earlier report), one POST", res.Changes, res.Notify, posts.Load())
	}
	writeChain(ctx, t, c, batchReplayID, runID, prefix)
}

// hintChildren sends batch, as a caller in the namespace can, three hints
// (BudgetRequestSignal) and three budget-request Updates at once
// (BudgetRequestUpdate, not awaited past their acceptance) naming each of
// its children 0..items-1 once it is seen running, until the function it
// returns is called; that returns how many hints were sent.
func hintChildren(ctx context.Context, t *testing.T, c client.Client, batch string, items int) func() int {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	var sent atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		seen := map[string]bool{}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			for seq := range items {
				id := api.BatchItemWorkflowID(batch, seq, 0)
				if seen[id] {
					continue
				}
				d, err := c.DescribeWorkflowExecution(ctx, id, "")
				if err != nil || d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
					continue
				}
				seen[id] = true
				for range 3 {
					if c.SignalWorkflow(ctx, batch, "", api.BudgetRequestSignal, api.BudgetRequest{WorkflowID: id}) == nil {
						sent.Add(1)
					}
				}
				var wg sync.WaitGroup
				for range 3 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						// Refused once the child has closed: nothing to see.
						_, _ = c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: batch, UpdateName: api.BudgetRequestUpdate,
							Args: []any{api.BudgetRequest{WorkflowID: id}}, WaitForStage: client.WorkflowUpdateStageAccepted})
					}()
				}
				wg.Wait()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() int {
		cancel()
		<-done
		return int(sent.Load())
	}
}

// checkAsksCoverage asserts that a chain took budget-request Updates at
// LedgerAskPlaceChange version 1: the change recorded, fewer reads than
// the hints and Updates that asked for them, and no child woken.
func checkAsksCoverage(t *testing.T, histories []*historypb.History) {
	t.Helper()
	asks, reads, wakes, markers := 0, 0, 0, 0
	for _, hist := range histories {
		for _, e := range hist.GetEvents() {
			switch {
			case e.GetWorkflowExecutionSignaledEventAttributes().GetSignalName() == api.BudgetRequestSignal:
				asks++
			case e.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest().GetInput().GetName() == api.BudgetRequestUpdate:
				asks++
			case e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == activities.ReadBatchChildName:
				reads++
			case e.GetSignalExternalWorkflowExecutionInitiatedEventAttributes().GetSignalName() == api.BudgetGrantSignal:
				wakes++
			case e.GetMarkerRecordedEventAttributes() != nil && strings.Contains(e.GetMarkerRecordedEventAttributes().String(), workflows.LedgerAskPlaceChange):
				markers++
			}
		}
	}
	if asks == 0 || reads == 0 || reads >= asks || wakes != 0 || markers == 0 {
		t.Errorf("%d hints and Updates, %d reads, %d wakes, %s recorded %d times; want fewer reads than asks, no wake, the change recorded",
			asks, reads, wakes, workflows.LedgerAskPlaceChange, markers)
	}
}

// checkHintsCoverage asserts that a chain took hints at
// LedgerHintOnceChange version 1: the change recorded, a child read for
// them, and no child woken (none spent its grant).
func checkHintsCoverage(t *testing.T, histories []*historypb.History) {
	t.Helper()
	hints, reads, wakes, markers := 0, 0, 0, 0
	for _, hist := range histories {
		for _, e := range hist.GetEvents() {
			switch {
			case e.GetWorkflowExecutionSignaledEventAttributes().GetSignalName() == api.BudgetRequestSignal:
				hints++
			case e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == activities.ReadBatchChildName:
				reads++
			case e.GetSignalExternalWorkflowExecutionInitiatedEventAttributes().GetSignalName() == api.BudgetGrantSignal:
				wakes++
			case e.GetMarkerRecordedEventAttributes() != nil && strings.Contains(e.GetMarkerRecordedEventAttributes().String(), workflows.LedgerHintOnceChange):
				markers++
			}
		}
	}
	if hints == 0 || reads == 0 || reads > hints || wakes != 0 || markers == 0 {
		t.Errorf("%d hints, %d reads, %d wakes, %s recorded %d times; want hints read for, no wake, the change recorded",
			hints, reads, wakes, workflows.LedgerHintOnceChange, markers)
	}
}
