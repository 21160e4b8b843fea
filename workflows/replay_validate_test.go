package workflows_test

// Validate's history is recorded by
//
//	go test ./workflows -run 'TestReplayValidate$' -update
//
// which records the last generation: validate_gate_run, the validation a
// gated batch (validation gate of one cell a stratum, notify_url a server
// of the test) started as it completed: the batch of five copies of the
// replay document asked one question and one asked another; then a
// reveal, a decision by another reviewer, an extension to three cells a
// stratum (memagent.validation-extend), the rest decided, and the
// sign-off, which writes the report, marks the batch's report (the
// gate's threshold fails on so small a sample: validation_failed) and
// POSTs the marking to the notify_url the batch handed the validation
// (ValidationGateNotifyChange) before it completes. validate_extend_run
// (v2) was recorded the same way from a validation started by hand,
// before that change; validate_run (v1) from a review of two questions,
// every stratum sampled whole, before ValidationStratifiedChange.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/pluginkit"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/memclient"
	"github.com/memagent/memagent/workflows"
)

var validateGenerations = []generation{{name: "v1", prefix: "validate_run"}, {name: "v2-extend", prefix: "validate_extend_run"},
	{name: "v3-gate-notify", prefix: "validate_gate_run"}}

func TestReplayValidate(t *testing.T) {
	if *update {
		recordValidateHistory(t, validateGenerations[len(validateGenerations)-1].prefix)
	}
	for _, g := range validateGenerations {
		t.Run(g.name, func(t *testing.T) {
			files := historyFiles(t, g)
			if len(files) != 1 {
				t.Fatalf("found %d histories matching %s/%s{N}.json, want 1; record it with: go test ./workflows -run 'TestReplayValidate$' -update",
					len(files), historyDir, g.prefix)
			}
			replayer := worker.NewWorkflowReplayer()
			workflows.Register(replayer)
			logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})))
			hist := loadHistoryOf(t, files[0], api.ValidateName)
			started := hist.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes()
			// The validation checks its own id: replay under the real one.
			if err := replayer.ReplayWorkflowHistoryWithOptions(logger, hist, worker.ReplayWorkflowHistoryOptions{
				OriginalExecution: workflow.Execution{ID: started.GetWorkflowId(), RunID: started.GetOriginalExecutionRunId()},
			}); err != nil {
				t.Errorf("replay of %s: %v", files[0], err)
			}
			checkChain(t, files, []*historypb.History{hist})
			kinds := map[string]int{}
			for _, e := range hist.GetEvents() {
				if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED {
					kinds[e.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest().GetInput().GetName()]++
				}
			}
			want := []string{api.ValidationDecideUpdate, api.ValidationRevealUpdate, api.ValidationFinishUpdate}
			if g.prefix != "validate_run" {
				want = append(want, api.ValidationExtendUpdate)
			}
			for _, k := range want {
				if kinds[k] == 0 {
					t.Errorf("the recorded history accepted no %s Update (%v)", k, kinds)
				}
			}
			if g.prefix == "validate_gate_run" {
				checkGateNotifyCoverage(t, hist)
			}
		})
	}
}

// checkGateNotifyCoverage asserts that a validation history took
// ValidationGateNotifyChange once and POSTed the marking once, after its
// report was written, under the marking's key.
func checkGateNotifyCoverage(t *testing.T, hist *historypb.History) {
	t.Helper()
	markers, notified, written := 0, 0, false
	for _, e := range hist.GetEvents() {
		if a := e.GetMarkerRecordedEventAttributes(); a != nil && strings.Contains(a.String(), workflows.ValidationGateNotifyChange) {
			markers++
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			switch a.GetActivityType().GetName() {
			case actwire.WriteValidationName:
				written = true
			case actwire.NotifyChangesName:
				if !written {
					t.Errorf("the marking was POSTed before the report was written")
				}
				notified++
				if in := a.GetInput().String(); !strings.Contains(in, "/validation") {
					t.Errorf("the marking's POST has no key of its own: %s", in)
				}
			}
		}
	}
	if markers != 1 || notified != 1 {
		t.Errorf("%s recorded %d times, %s scheduled %d times; want once each", workflows.ValidationGateNotifyChange, markers, actwire.NotifyChangesName, notified)
	}
}

// recordValidateHistory runs a gated batch with a notify_url and the
// validation it starts, extended once, on the embedded dev stack and
// writes the validation's history.
func recordValidateHistory(t *testing.T, prefix string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg, c := startReplayWorker(ctx, t, "replay-validate")
	store, err := pluginkit.NewStore(ctx, cfg.Options)
	if err != nil {
		t.Fatal(err)
	}
	var manifest strings.Builder
	for i := range 6 {
		doc := s3store.Location{Bucket: cfg.Bucket, Key: fmt.Sprintf("replay/validate-%d.txt", i)}
		if err := store.Put(ctx, doc, []byte(replayDocument()), "text/plain; charset=utf-8"); err != nil {
			t.Fatal(err)
		}
		q := replayQuestion
		if i == 5 {
			q = "Who mended the willow baskets?"
		}
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprint("doc-", i), "document": doc.String(), "question": q})
		manifest.Write(append(line, '\n'))
	}
	mloc := s3store.Location{Bucket: cfg.Bucket, Key: "replay/validate-manifest.jsonl"}
	if err := store.Put(ctx, mloc, []byte(manifest.String()), "application/x-ndjson"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var states []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n api.ChangeNotification
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil || n.Validation == nil {
			t.Errorf("notification: %v, %+v", err, n)
			return
		}
		mu.Lock()
		states = append(states, n.Validation.State)
		mu.Unlock()
	}))
	defer hook.Close()
	const batch = "replay-batch-validate"
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: batch, TaskQueue: cfg.TaskQueue}, api.BatchQAName, api.BatchQAInput{
		Manifest: mloc.String(), Name: "replay-validate", Concurrency: 3,
		Options:    api.ModelOptions{ChunkTokens: 64, MemoryMaxTokens: 64, AnswerMaxTokens: 32},
		NotifyURL:  hook.URL + "/hook",
		Validation: &api.ValidationGate{SampleSize: 1, Thresholds: []api.ValidationThreshold{{Figure: api.FigurePrecision, Op: ">=", Value: 0.5}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var res api.BatchQAResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("batch: %v", err)
	}
	if res.Notify != api.NotifySent || res.Validation == nil || res.Validation.ValidationRunID == "" {
		t.Fatalf("batch: notify %q, validation %+v; want sent, the validation started", res.Notify, res.Validation)
	}
	mc := memclient.New(c, memclient.Options{TaskQueue: cfg.TaskQueue})
	id := api.ValidationWorkflowID(batch)
	vw, err := mc.AwaitValidation(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	const who = "memagent-replay-test"
	verdict := func(c api.ValidationCell) string {
		if c.Stratum == api.StratumAnswered {
			return api.VerdictRight
		}
		return api.VerdictNoAnswer
	}
	first := vw.Cells[0]
	if _, err := mc.RevealValidation(ctx, id, api.ValidationReveal{Cell: first.ID, Reviewer: "alice", ClientIdentity: who}); err != nil {
		t.Fatal(err)
	}
	if _, err := mc.DecideValidation(ctx, id, api.ValidationDecision{Cell: first.ID, Verdict: verdict(first), Reviewer: "bob", ClientIdentity: who}); err != nil {
		t.Fatal(err)
	}
	if vw, err = mc.ExtendValidation(ctx, id, api.ValidationExtend{SampleSize: 3, Reviewer: "dave", ClientIdentity: who}); err != nil {
		t.Fatal(err)
	}
	if len(vw.Cells) < 3 {
		t.Fatalf("the extension gave %d cells, want at least 3 (a stratum of five grown to three)", len(vw.Cells))
	}
	for _, cell := range vw.Cells {
		if cell.Decision != nil {
			continue
		}
		if _, err := mc.DecideValidation(ctx, id, api.ValidationDecision{Cell: cell.ID, Verdict: verdict(cell), Reviewer: "alice", ClientIdentity: who}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := mc.FinishValidation(ctx, id, api.ValidationFinish{Reviewer: "carol", ClientIdentity: who})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Finished == nil || rep.ReportURI == "" {
		t.Fatalf("report %+v", rep)
	}
	if err := c.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil {
		t.Fatalf("validation: %v", err)
	}
	mu.Lock()
	got := slices.Clone(states)
	mu.Unlock()
	if len(got) != 2 || got[0] != api.ReportProvisional || got[1] == api.ReportProvisional {
		t.Fatalf("notify_url got %q, want the batch's provisional notification, then the marking's", got)
	}
	writeChain(ctx, t, c, id, d.GetWorkflowExecutionInfo().GetExecution().GetRunId(), prefix)
}
