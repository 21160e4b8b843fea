package workflows_test

// SignOff's histories, like DocumentQA's, come in generations (one per
// version of its commands), each replayed for as long as a sign-off of it
// may be waiting for people, which is weeks:
//
//	testdata/signoff_run{N}.json   the first: every Update kind, continue-as-new twice
//
// The current one is recorded by
//
//	go test ./workflows -run 'TestReplaySignOff$' -update
//
// from a review of two questions of the replay document, then its
// sign-off at three Updates a run: level 1 decides (one cell reopened by
// another reviewer and decided again) and signs off, level 2 approves and
// signs off, and the sign-off completes with the decided grid.

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/pluginkit"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/memclient"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/workflows"
)

// signOffGenerations are SignOff's recorded chains, oldest first.
var signOffGenerations = []generation{
	{name: "v1", prefix: "signoff_run"},
	// VerifyCarryChange at version 1: each continued run registers its
	// handlers, proves where its state came from, then takes it.
	{name: "v2-verified", prefix: "signoff_verified_run"},
}

const signOffMinRuns = 3

func TestReplaySignOff(t *testing.T) {
	if *update {
		recordSignOffHistories(t, signOffGenerations[len(signOffGenerations)-1].prefix)
	}
	for _, g := range signOffGenerations {
		t.Run(g.name, func(t *testing.T) {
			files := historyFiles(t, g)
			if len(files) < signOffMinRuns {
				t.Fatalf("found %d histories matching %s/%s{N}.json, want at least %d; record them with: go test ./workflows -run 'TestReplaySignOff$' -update",
					len(files), historyDir, g.prefix, signOffMinRuns)
			}
			replayer := worker.NewWorkflowReplayer()
			workflows.Register(replayer)
			logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})))
			histories := make([]*historypb.History, len(files))
			for i, path := range files {
				t.Run(filepath.Base(path), func(t *testing.T) {
					hist := loadHistoryOf(t, path, api.SignOffName)
					histories[i] = hist
					started := hist.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes()
					// The sign-off checks its own id: replay under the real one.
					if err := replayer.ReplayWorkflowHistoryWithOptions(logger, hist, worker.ReplayWorkflowHistoryOptions{
						OriginalExecution: workflow.Execution{ID: started.GetWorkflowId(), RunID: started.GetOriginalExecutionRunId()},
					}); err != nil {
						t.Errorf("replay of %s: %v", path, err)
					}
				})
			}
			checkChain(t, files, histories)
			checkSignOffCoverage(t, histories)
		})
	}
}

// checkSignOffCoverage asserts that the chain accepted every kind of
// Update, across runs.
func checkSignOffCoverage(t *testing.T, histories []*historypb.History) {
	t.Helper()
	kinds := map[string]int{}
	runsWithUpdates := 0
	for _, hist := range histories {
		n := 0
		for _, e := range hist.GetEvents() {
			if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED {
				kinds[e.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest().GetInput().GetName()]++
				n++
			}
		}
		if n > 0 {
			runsWithUpdates++
		}
	}
	for _, k := range []string{api.DecideUpdate, api.SignOffUpdate, api.ReopenUpdate} {
		if kinds[k] == 0 {
			t.Errorf("the recorded chain accepted no %s Update (%v)", k, kinds)
		}
	}
	if runsWithUpdates < 2 {
		t.Errorf("Updates in %d runs, want them carried over continue-as-new", runsWithUpdates)
	}
}

// recordSignOffHistories runs a review and its sign-off on the embedded
// dev stack and writes the sign-off's chain.
func recordSignOffHistories(t *testing.T, prefix string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg, c := startReplayWorker(ctx, t, "replay-signoff")
	const review = "replay-review-signoff"
	runReplayReview(ctx, t, cfg, c, "replay/signoff-doc.txt", review)
	mc := memclient.New(c, memclient.Options{TaskQueue: cfg.TaskQueue})
	id, err := mc.StartSignOff(ctx, api.SignOffInput{Review: review, UpdatesPerRun: 3})
	if err != nil {
		t.Fatal(err)
	}
	firstRun := ""
	deadline := time.Now().Add(time.Minute)
	for {
		g, err := mc.SignOffGrid(ctx, review)
		if err == nil {
			d, derr := c.DescribeWorkflowExecution(ctx, id, "")
			if derr != nil {
				t.Fatal(derr)
			}
			firstRun = d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
			if len(g.Cells) != 2 {
				t.Fatalf("sign-off has %d cells, want 2", len(g.Cells))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sign-off not ready: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	const who = "memagent-replay-test"
	decide := func(cell string, level int, decision, reviewer string, version int) {
		t.Helper()
		r := api.DecideRequest{Cell: cell, Level: level, Decision: decision, Reviewer: reviewer, ClientIdentity: who, Version: version}
		switch decision {
		case api.DecisionEdited:
			r.FinalAnswer, r.Reason = "the miller", "the memory lost it"
		case api.DecisionRejected:
			r.Reason = "not in the document"
		}
		if _, err := mc.Decide(ctx, review, r); err != nil {
			t.Fatalf("decide %s: %v", cell, err)
		}
	}
	signOff := func(level int, reviewer string) {
		t.Helper()
		if _, err := mc.SignOff(ctx, review, api.SignOffRequest{Level: level, Reviewer: reviewer, ClientIdentity: who}); err != nil {
			t.Fatalf("sign off level %d: %v", level, err)
		}
	}
	decide("q1", 1, api.DecisionAccepted, "alice", 0)
	decide("q2", 1, api.DecisionEdited, "alice", 0)
	if _, err := mc.Reopen(ctx, review, api.ReopenRequest{Cell: "q2", Level: 1, Reason: "look again", Reviewer: "bob", ClientIdentity: who, Version: 1}); err != nil {
		t.Fatal(err)
	}
	decide("q2", 1, api.DecisionRejected, "alice", 2)
	signOff(1, "alice")
	decide("q2", 2, api.DecisionAccepted, "bob", 3)
	signOff(2, "bob")
	var g api.SignOffGrid
	if err := c.GetWorkflow(ctx, id, "").Get(ctx, &g); err != nil {
		t.Fatalf("sign-off: %v", err)
	}
	if g.State != api.SignOffSignedOff || g.Runs < signOffMinRuns || g.AuditLines != 7 {
		t.Fatalf("sign-off: %s after %d runs, %d audit lines; want signed off after %d runs, 7 lines", g.State, g.Runs, g.AuditLines, signOffMinRuns)
	}
	writeChain(ctx, t, c, id, firstRun, prefix)
}

// runReplayReview uploads the replay document under key and runs a review
// of it, workflow id review, with two questions (one of them unanswerable
// in the document) to its end: the subject a sign-off or a validation is
// recorded on.
func runReplayReview(ctx context.Context, t *testing.T, cfg config.Config, c client.Client, key, review string) {
	t.Helper()
	store, err := pluginkit.NewStore(ctx, cfg.Options)
	if err != nil {
		t.Fatal(err)
	}
	docLoc := s3store.Location{Bucket: cfg.Bucket, Key: key}
	if err := store.Put(ctx, docLoc, []byte(replayDocument()), "text/plain; charset=utf-8"); err != nil {
		t.Fatal(err)
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: review, TaskQueue: cfg.TaskQueue}, api.ReviewDocumentName, api.ReviewInput{
		Document: docLoc.String(),
		Questions: []api.ReviewQuestion{
			{ID: "q1", Question: replayQuestion, GoldAnswers: []string{replayAnswer}},
			{ID: "q2", Question: "Who mended the willow baskets?"},
		},
		Options: api.ModelOptions{ChunkTokens: 64, MemoryMaxTokens: 64, AnswerMaxTokens: 32},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); err != nil {
		t.Fatalf("review: %v", err)
	}
}
