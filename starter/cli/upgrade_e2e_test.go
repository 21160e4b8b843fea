package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	deploymentspb "go.temporal.io/server/api/deployment/v1"
	"go.temporal.io/server/common/worker_versioning"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/tokenizer"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
	"github.com/memagent/memagent/workflows"
)

// TestUpgradeMovesRunsAtContinueAsNew is docs/DEPLOY.md's "Upgrading" on
// the embedded server, with two builds of the worker in this process:
//
//   - build v1 is current and starts a long DocumentQA and a batch;
//   - build v2 is deployed and ramped to 50%: about half of the new runs
//     start on v2, each exactly where Temporal's rule for its workflow id
//     puts it, while the long runs (whose ids the ramp leaves on v1) keep
//     reading on v1;
//   - v2 is set current: the long runs continue as new onto v2 at their
//     next boundary, no run ever changing build mid-run, and a new run
//     starts on v2;
//   - v1 shows draining, then drained, and is stopped;
//   - the runs end with the answers of undisturbed runs of the same input
//     on an unversioned worker, no chunk was paid twice, and every history
//     recorded replays against the workflow code.
func TestUpgradeMovesRunsAtContinueAsNew(t *testing.T) {
	stack(t)
	tok, _ := tokenizer.New(tokenizer.Qwen)
	sim := simulator.New(simulator.Options{Tokenizer: tok, Latency: 200 * time.Millisecond})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	ctx, s := testSession(t, 8*time.Minute)
	c := s.temporal
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	cfg.ModelURLs = []string{srv.URL + "/v1"}
	dep := fmt.Sprintf("memagent-upgrade-%d", time.Now().UnixNano())
	dh := c.WorkerDeploymentClient().GetHandle(dep)
	const chunkTokens = 300

	// The documents: one long one, six for the batch, a short one.
	put := func(name string, tokens int, seed uint64) (string, int) {
		doc := docgen.Needle(tok, tokens, 0.5, seed)
		uri, _, err := s.resolveDocument(ctx, writeFile(t, t.TempDir(), name, []byte(doc)))
		if err != nil {
			t.Fatal(err)
		}
		return uri, len(chunkHashes(t, doc, chunkTokens))
	}
	longURI, longChunks := put("long.txt", 36_000, 401)
	shortURI, shortChunks := put("short.txt", 1_500, 402)
	var manifest bytes.Buffer
	batchChunks := 0
	const items = 6
	for i := range items {
		uri, n := put(fmt.Sprintf("item%d.txt", i), 12_000, uint64(410+i))
		batchChunks += n
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("i%d", i), "document": uri,
			"question": fmt.Sprintf("%s (upgrade %d)", docgen.Question, i), "answers": []string{docgen.Answer}})
		manifest.Write(append(line, '\n'))
	}
	muri := putManifest(ctx, t, s, manifest.Bytes())
	qaInput := func(uri string) api.DocumentQAInput {
		return api.DocumentQAInput{Document: uri, Question: docgen.Question, Reuse: api.ReuseNone,
			Options: api.ModelOptions{ChunkTokens: chunkTokens}}
	}
	batchInput := api.BatchQAInput{Manifest: muri, PageSize: 2, ItemsPerRun: 2, Concurrency: 2, Reuse: api.ReuseNone,
		CarryAfterSeconds: 1, Options: api.ModelOptions{ChunkTokens: chunkTokens}}

	// Build v1, current.
	v1 := startBuild(t, cfg, dep, "v1")
	waitUntil(t, 30*time.Second, "v1 registered in its deployment", func() bool { return hasVersion(ctx, dh, "v1") })
	if _, err := dh.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: "v1"}); err != nil {
		t.Fatalf("set-current-version v1: %v", err)
	}
	waitUntil(t, 30*time.Second, "v1 current", func() bool { return routing(ctx, dh) == "v1|" })

	// The long runs, under ids the 50% ramp leaves on v1.
	ramped := func(id string) bool {
		v, _ := worker_versioning.FindTargetDeploymentVersionAndRevisionNumberForWorkflowID(
			&deploymentspb.WorkerDeploymentVersion{DeploymentName: dep, BuildId: "v1"}, 0,
			&deploymentspb.WorkerDeploymentVersion{DeploymentName: dep, BuildId: "v2"}, 50, 0, id, false)
		return v.GetBuildId() == "v2"
	}
	unramped := func(prefix string) string {
		for i := 0; ; i++ {
			if id := fmt.Sprintf("%s-%s-%d", prefix, dep, i); !ramped(id) {
				return id
			}
		}
	}
	qaID, batchID := unramped("upgrade-qa"), unramped("upgrade-batch")
	qaRun, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: qaID, TaskQueue: cfg.TaskQueue}, api.DocumentQAName, qaInput(longURI))
	if err != nil {
		t.Fatal(err)
	}
	batchRun, err := startBatch(ctx, c, cfg.TaskQueue, batchID, batchInput)
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, time.Minute, "the long run reading on v1", func() bool {
		p, err := queryProgress(ctx, c, qaID)
		return err == nil && p.ChunksDone >= 3
	})

	// Build v2, ramped to 50%.
	startBuild(t, cfg, dep, "v2")
	waitUntil(t, 30*time.Second, "v2 registered in its deployment", func() bool { return hasVersion(ctx, dh, "v2") })
	if _, err := dh.SetRampingVersion(ctx, client.WorkerDeploymentSetRampingVersionOptions{BuildID: "v2", Percentage: 50}); err != nil {
		t.Fatalf("set-ramping-version v2 50: %v", err)
	}
	waitUntil(t, 30*time.Second, "v2 ramping", func() bool { return routing(ctx, dh) == "v1|v2" })
	const rampRuns = 32
	var rampIDs []string
	for i := range rampRuns {
		// Fixed ids: the ramp's choice for each is the same every time.
		id := fmt.Sprintf("upgrade-ramp-%02d", i)
		rampIDs = append(rampIDs, id)
		if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: cfg.TaskQueue}, api.EstimateName,
			api.EstimateInput{Document: shortURI, Questions: []string{docgen.Question}}); err != nil {
			t.Fatal(err)
		}
	}
	onV2, predicted := 0, 0
	for _, id := range rampIDs {
		if err := c.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil {
			t.Fatalf("ramp run %s: %v", id, err)
		}
		builds := runBuilds(ctx, t, c, id, "")
		got := builds[0]
		if ramped(id) {
			predicted++
		}
		if got == "v2" {
			onV2++
		}
		if want := map[bool]string{true: "v2", false: "v1"}[ramped(id)]; len(builds) != 1 || got != want {
			t.Errorf("ramp run %s ran on %v, want %s (Temporal's ramp for its id)", id, builds, want)
		}
	}
	t.Logf("50%% ramp: %d of %d new runs started on v2 (%d predicted from their ids)", onV2, rampRuns, predicted)
	if onV2 < rampRuns/4 || onV2 > 3*rampRuns/4 {
		t.Errorf("%d of %d new runs on v2 at a 50%% ramp", onV2, rampRuns)
	}
	if b := currentBuild(ctx, t, c, qaID); b != "v1" {
		t.Fatalf("the long run is on %q during the ramp, want v1: its id is outside the ramp", b)
	}

	// v2 current: the long runs move at their next boundary.
	if _, err := dh.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: "v2"}); err != nil {
		t.Fatalf("set-current-version v2: %v", err)
	}
	waitUntil(t, 30*time.Second, "v2 current", func() bool { return routing(ctx, dh) == "v2|" })
	if p, err := queryProgress(ctx, c, qaID); err != nil || p.ChunksDone >= longChunks {
		t.Fatalf("the long run finished (%d of %d chunks, %v) before v2 became current: the test needs a longer document", p.ChunksDone, longChunks, err)
	}
	waitUntil(t, time.Minute, "v1 draining", func() bool { return drainage(ctx, dh, "v1") == client.WorkerDeploymentVersionDrainageStatusDraining })
	var qaRes api.DocumentQAResult
	if err := qaRun.Get(ctx, &qaRes); err != nil {
		t.Fatalf("long run: %v", err)
	}
	var batchRes api.BatchQAResult
	if err := batchRun.Get(ctx, &batchRes); err != nil {
		t.Fatalf("batch: %v", err)
	}
	if batchRes.Succeeded != items {
		t.Fatalf("batch: %+v, want %d answered", batchRes, items)
	}

	// Each chain: v1's runs, then v2's, none on two builds.
	chains := map[string][]string{}
	for _, id := range []string{qaID, batchID} {
		chains[id] = chain(ctx, t, c, id, firstRun(ctx, t, c, id))
	}
	for i := range items {
		id := workflows.SampleWorkflowID(batchID, i, 0)
		chains[id] = chain(ctx, t, c, id, firstRun(ctx, t, c, id))
	}
	for id, builds := range chains {
		t.Logf("%s ran on %s (memory updates a run: %v)", id, strings.Join(builds, " → "), updatesPerRun(ctx, t, c, id))
		for i := 1; i < len(builds); i++ {
			if builds[i-1] == "v2" && builds[i] == "v1" {
				t.Errorf("%s went back from v2 to v1: %v", id, builds)
			}
		}
	}
	for _, id := range []string{qaID, batchID} {
		if b := chains[id]; b[0] != "v1" || b[len(b)-1] != "v2" {
			t.Errorf("%s ran on %v: want v1's runs, then v2's", id, b)
		}
	}
	if b := chains[qaID]; len(b) != 2 || qaRes.Runs != 2 {
		t.Errorf("the long run took %d runs (%v; its result says %d), want 2: v1's, then v2's from the move on", len(b), b, qaRes.Runs)
	}

	// v1 drains; stopped, nothing is left on it and new runs go on.
	waitUntil(t, 2*time.Minute, "v1 drained", func() bool { return drainage(ctx, dh, "v1") == client.WorkerDeploymentVersionDrainageStatusDrained })
	v1.stop()
	newID := fmt.Sprintf("upgrade-new-%s", dep)
	newRun, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: newID, TaskQueue: cfg.TaskQueue}, api.DocumentQAName, qaInput(shortURI))
	if err != nil {
		t.Fatal(err)
	}
	var newRes api.DocumentQAResult
	if err := newRun.Get(ctx, &newRes); err != nil {
		t.Fatalf("a new run after v1 stopped: %v", err)
	}
	if b := runBuilds(ctx, t, c, newID, newRun.GetRunID()); len(b) != 1 || b[0] != "v2" {
		t.Errorf("a new run ran on %v, want v2", b)
	}

	// No chunk paid twice: each chunk of each document once, each
	// question answered once.
	updates, finals := paidOnce(t, sim)
	if want := longChunks + batchChunks + shortChunks; updates != want || finals != 1+items+1 {
		t.Errorf("%d memory updates and %d answers, want %d and %d", updates, finals, want, 1+items+1)
	}

	// The same answers as undisturbed runs, on an unversioned worker.
	sim2 := simulator.New(simulator.Options{Tokenizer: tok})
	srv2 := httptest.NewServer(sim2)
	t.Cleanup(srv2.Close)
	plain := cfg
	plain.TaskQueue, plain.ModelURLs = cfg.TaskQueue+"-undisturbed", []string{srv2.URL + "/v1"}
	startBuild(t, plain, "", "")
	var ref api.DocumentQAResult
	refRun, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: qaID + "-undisturbed", TaskQueue: plain.TaskQueue}, api.DocumentQAName, qaInput(longURI))
	if err == nil {
		err = refRun.Get(ctx, &ref)
	}
	if err != nil {
		t.Fatal(err)
	}
	if ref.Answer != qaRes.Answer || ref.Chunks != qaRes.Chunks {
		t.Errorf("the moved run answered %q over %d chunks, an undisturbed one %q over %d", qaRes.Answer, qaRes.Chunks, ref.Answer, ref.Chunks)
	}
	refBatch, err := startBatch(ctx, c, plain.TaskQueue, batchID+"-undisturbed", batchInput)
	if err == nil {
		err = refBatch.Get(ctx, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	for i := range items {
		var moved, undisturbed api.DocumentQAResult
		if err := c.GetWorkflow(ctx, workflows.SampleWorkflowID(batchID, i, 0), "").Get(ctx, &moved); err != nil {
			t.Fatal(err)
		}
		if err := c.GetWorkflow(ctx, workflows.SampleWorkflowID(batchID+"-undisturbed", i, 0), "").Get(ctx, &undisturbed); err != nil {
			t.Fatal(err)
		}
		if moved.Answer != undisturbed.Answer {
			t.Errorf("batch item %d: %q across the upgrade, %q undisturbed", i, moved.Answer, undisturbed.Answer)
		}
	}

	// Every history recorded replays against the workflow code.
	replayer := worker.NewWorkflowReplayer()
	workflows.Register(replayer)
	ids := append([]string{newID}, rampIDs...)
	for id := range chains {
		ids = append(ids, id)
	}
	replayed := 0
	for _, id := range ids {
		for runID := firstRun(ctx, t, c, id); runID != ""; {
			hist, next := history(ctx, t, c, id, runID)
			if err := replayer.ReplayWorkflowHistoryWithOptions(nil, hist, worker.ReplayWorkflowHistoryOptions{
				OriginalExecution: workflow.Execution{ID: id, RunID: runID},
			}); err != nil {
				t.Errorf("replay of %s run %s: %v", id, runID, err)
			}
			replayed++
			runID = next
		}
	}
	t.Logf("replayed %d histories", replayed)
}

// build is a worker of one build, stopped once.
type build struct{ stop func() }

// startBuild starts a worker as build id of Worker Deployment dep (an
// unversioned one for dep ""), stopped when the test ends if not before.
func startBuild(t *testing.T, cfg config.Config, dep, id string) build {
	t.Helper()
	cfg.DeploymentName, cfg.BuildID = dep, id
	run, err := workerapp.Start(context.Background(), cfg, workerapp.Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("start build %q: %v", id, err)
	}
	b := build{stop: sync.OnceFunc(run.Stop)}
	t.Cleanup(b.stop)
	return b
}

// waitUntil polls cond until it holds, or fails the test after limit.
func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %v", what, limit)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// hasVersion reports whether build id has registered in the deployment.
func hasVersion(ctx context.Context, dh client.WorkerDeploymentHandle, id string) bool {
	d, err := dh.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		return false
	}
	for _, v := range d.Info.VersionSummaries {
		if v.Version.BuildID == id {
			return true
		}
	}
	return false
}

// routing is the deployment's current and ramping build, "current|ramping".
func routing(ctx context.Context, dh client.WorkerDeploymentHandle) string {
	d, err := dh.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		return ""
	}
	var cur, ramp string
	if v := d.Info.RoutingConfig.CurrentVersion; v != nil {
		cur = v.BuildID
	}
	if v := d.Info.RoutingConfig.RampingVersion; v != nil {
		ramp = v.BuildID
	}
	return cur + "|" + ramp
}

// drainage is a build's drainage status.
func drainage(ctx context.Context, dh client.WorkerDeploymentHandle, id string) client.WorkerDeploymentVersionDrainageStatus {
	d, err := dh.DescribeVersion(ctx, client.WorkerDeploymentDescribeVersionOptions{BuildID: id})
	if err != nil || d.Info.DrainageInfo == nil {
		return client.WorkerDeploymentVersionDrainageStatusUnspecified
	}
	return d.Info.DrainageInfo.DrainageStatus
}

// currentBuild is the build the latest run of id is on.
func currentBuild(ctx context.Context, t *testing.T, c client.Client, id string) string {
	t.Helper()
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	return d.GetWorkflowExecutionInfo().GetVersioningInfo().GetDeploymentVersion().GetBuildId()
}

// firstRun is the run id of the first run of id's latest chain.
func firstRun(ctx context.Context, t *testing.T, c client.Client, id string) string {
	t.Helper()
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	return d.GetWorkflowExecutionInfo().GetFirstRunId()
}

// history is one run's history and the run it continued as, if any.
func history(ctx context.Context, t *testing.T, c client.Client, id, runID string) (*historypb.History, string) {
	t.Helper()
	var h historypb.History
	iter := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		e, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, e)
	}
	last := h.Events[len(h.Events)-1]
	return &h, last.GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId()
}

// runBuilds are the builds that completed the workflow tasks of one run,
// each once, in order.
func runBuilds(ctx context.Context, t *testing.T, c client.Client, id, runID string) []string {
	t.Helper()
	h, _ := history(ctx, t, c, id, runID)
	var builds []string
	for _, e := range h.Events {
		if a := e.GetWorkflowTaskCompletedEventAttributes(); a != nil {
			if b := a.GetDeploymentVersion().GetBuildId(); len(builds) == 0 || builds[len(builds)-1] != b {
				builds = append(builds, b)
			}
		}
	}
	return builds
}

// chain follows the runs of id from runID across continue-as-new and
// returns the build of each, failing the test for a run that ran on two.
func chain(ctx context.Context, t *testing.T, c client.Client, id, runID string) []string {
	t.Helper()
	var builds []string
	for runID != "" {
		b := runBuilds(ctx, t, c, id, runID)
		if len(b) != 1 {
			t.Errorf("%s run %s ran on %v: a pinned run changed build", id, runID, b)
		}
		builds = append(builds, strings.Join(b, "+"))
		_, runID = history(ctx, t, c, id, runID)
	}
	return builds
}

// updatesPerRun counts the memory updates each run of id's chain
// scheduled.
func updatesPerRun(ctx context.Context, t *testing.T, c client.Client, id string) []int {
	t.Helper()
	var counts []int
	for runID := firstRun(ctx, t, c, id); runID != ""; {
		h, next := history(ctx, t, c, id, runID)
		n := 0
		for _, e := range h.Events {
			if e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == activities.UpdateMemoryName {
				n++
			}
		}
		counts = append(counts, n)
		runID = next
	}
	return counts
}
