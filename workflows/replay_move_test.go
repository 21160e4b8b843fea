package workflows_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/devenv"
	"github.com/memagent/memagent/internal/pluginkit"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
	"github.com/memagent/memagent/workflows"
)

// movePrefix names the recorded chain of a DocumentQA that moved between
// two builds of a Worker Deployment: testdata/documentqa_move_run1.json,
// its run on build v1, which Temporal told that its target version had
// changed when v2 became current and which then continued as new
// (MoveToTargetChange), and testdata/documentqa_move_run2.json, its run on
// v2, which answered. Record it again with
//
//	go test ./workflows -run 'TestReplayMove$' -update
const movePrefix = "documentqa_move_run"

// TestReplayMove replays the moved chain against the current code and
// checks that it is what it says: each run on one build, v1 then v2, the
// first told of the new target, taking MoveToTargetChange and continuing
// as new onto the target (AutoUpgrade for the next run's first task).
func TestReplayMove(t *testing.T) {
	if *update {
		recordMoveHistories(t)
	}
	files := historyFiles(t, generation{prefix: movePrefix})
	if len(files) != 2 {
		t.Fatalf("found %d histories matching %s/%s{N}.json, want 2; record them with: go test ./workflows -run 'TestReplayMove$' -update", len(files), historyDir, movePrefix)
	}
	histories := replayChain(t, files, api.DocumentQAName)

	dc := converter.GetDefaultDataConverter()
	for i, hist := range histories {
		builds, told, moved := map[string]bool{}, false, false
		for _, e := range hist.GetEvents() {
			if a := e.GetWorkflowTaskCompletedEventAttributes(); a != nil {
				builds[a.GetDeploymentVersion().GetBuildId()] = true
			}
			if e.GetWorkflowTaskStartedEventAttributes().GetTargetWorkerDeploymentVersionChanged() {
				told = true
			}
			if m := e.GetMarkerRecordedEventAttributes(); m != nil && m.GetMarkerName() == "Version" {
				var id string
				var v workflow.Version
				if dc.FromPayloads(m.GetDetails()["change-id"], &id) == nil && id == workflows.MoveToTargetChange &&
					dc.FromPayloads(m.GetDetails()["version"], &v) == nil && v == 1 {
					moved = true
				}
			}
		}
		want := map[int]string{0: "v1", 1: "v2"}[i]
		if len(builds) != 1 || !builds[want] {
			t.Errorf("%s ran on builds %v, want %s alone", files[i], builds, want)
		}
		switch i {
		case 0:
			if !told || !moved {
				t.Errorf("%s: told of a new target %v, %s marker %v; want both", files[i], told, workflows.MoveToTargetChange, moved)
			}
		case 1:
			// The server keeps the continue-as-new's option in the next
			// run's start.
			inherited := hist.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetInheritedAutoUpgradeInfo()
			if b := inherited.GetContinueAsNewInitialVersioningBehavior(); b != enumspb.CONTINUE_AS_NEW_VERSIONING_BEHAVIOR_AUTO_UPGRADE {
				t.Errorf("%s started from a continue-as-new with %v, want AutoUpgrade", files[i], b)
			}
		}
	}
}

// recordMoveHistories runs DocumentQA on the embedded dev stack under
// build v1 of a Worker Deployment, makes build v2 current while it reads,
// and writes the history of both runs of its chain.
func recordMoveHistories(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	dev, err := devenv.Start(ctx, devenv.Options{FreePorts: true, DisableUI: true, Simulator: true,
		SimulatorLatency: 100 * time.Millisecond, Logger: logger})
	if err != nil {
		t.Fatalf("start dev stack: %v", err)
	}
	t.Cleanup(func() { dev.Close() })
	cfg := config.Default().AtDevStack(dev.Addresses())
	cfg.TaskQueue, cfg.DeploymentName = "replay-move", "memagent-replay"
	// A fixed identity keeps this machine's host name out of the histories.
	c, err := client.DialContext(ctx, client.Options{
		HostPort: cfg.TemporalAddress, Namespace: cfg.TemporalNamespace,
		Identity: "memagent-replay-test", Logger: log.NewStructuredLogger(logger),
	})
	if err != nil {
		t.Fatalf("dial Temporal: %v", err)
	}
	t.Cleanup(c.Close)
	dh := c.WorkerDeploymentClient().GetHandle(cfg.DeploymentName)
	current := func(build string) {
		t.Helper()
		bc := cfg
		bc.BuildID = build
		acts, pool, err := pluginkit.NewActivities(ctx, workerapp.PluginOptions(bc, workerapp.Options{Logger: logger}))
		if err != nil {
			t.Fatalf("NewActivities: %v", err)
		}
		t.Cleanup(pool.Close)
		w := workerapp.NewWorker(c, bc, acts, pool.Capacity(), workerapp.Options{Logger: logger})
		if err := w.Start(); err != nil {
			t.Fatalf("start worker %s: %v", build, err)
		}
		t.Cleanup(w.Stop)
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			_, err := dh.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: build})
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("set build %s current: %v", build, err)
			}
		}
	}
	current("v1")

	store, err := pluginkit.NewStore(ctx, cfg.Options)
	if err != nil {
		t.Fatal(err)
	}
	docLoc := s3store.Location{Bucket: cfg.Bucket, Key: "replay/doc.txt"}
	if err := store.Put(ctx, docLoc, []byte(replayDocument()), "text/plain; charset=utf-8"); err != nil {
		t.Fatalf("upload document: %v", err)
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "replay-move", TaskQueue: cfg.TaskQueue},
		api.DocumentQAName, api.DocumentQAInput{
			Document: docLoc.String(), Question: replayQuestion, GoldAnswers: []string{replayAnswer},
			Options: api.ModelOptions{ChunkTokens: 64, MemoryMaxTokens: 64, AnswerMaxTokens: 32}, Reuse: api.ReuseNone,
		})
	if err != nil {
		t.Fatalf("start DocumentQA: %v", err)
	}
	runID := run.GetRunID()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		v, err := c.QueryWorkflow(ctx, "replay-move", "", api.ProgressQuery)
		var p api.Progress
		if err == nil && v.Get(&p) == nil && p.ChunksDone >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("DocumentQA read no chunk on v1 within a minute")
		}
	}
	current("v2")
	var res workflows.DocumentQAResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("DocumentQA: %v", err)
	}
	if res.Runs != 2 || res.Answer != replayAnswer {
		t.Fatalf("result: %d runs, answer %q; want 2 runs (v1's, v2's) and %q", res.Runs, res.Answer, replayAnswer)
	}
	writeChain(ctx, t, c, "replay-move", runID, movePrefix)
}
