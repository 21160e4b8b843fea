package workflows_test

// Validate's history is recorded by
//
//	go test ./workflows -run 'TestReplayValidate$' -update
//
// from a review of two questions of the replay document, then its
// validation (every stratum sampled whole): a reveal, a decision by
// another reviewer, the rest decided, and the sign-off, which writes the
// report and completes.

import (
	"context"
	"log/slog"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/memclient"
	"github.com/memagent/memagent/workflows"
)

var validateGenerations = []generation{{name: "v1", prefix: "validate_run"}}

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
			for _, k := range []string{api.ValidationDecideUpdate, api.ValidationRevealUpdate, api.ValidationFinishUpdate} {
				if kinds[k] == 0 {
					t.Errorf("the recorded history accepted no %s Update (%v)", k, kinds)
				}
			}
		})
	}
}

// recordValidateHistory runs a review and its validation on the embedded
// dev stack and writes the validation's history.
func recordValidateHistory(t *testing.T, prefix string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg, c := startReplayWorker(ctx, t, "replay-validate")
	const review = "replay-review-validate"
	runReplayReview(ctx, t, cfg, c, "replay/validate-doc.txt", review)
	mc := memclient.New(c, memclient.Options{TaskQueue: cfg.TaskQueue})
	id, err := mc.StartValidation(ctx, api.ValidateInput{Review: review, Thresholds: []api.ValidationThreshold{{Figure: api.FigurePrecision, Op: ">=", Value: 0.5}}})
	if err != nil {
		t.Fatal(err)
	}
	var vw *api.ValidationView
	deadline := time.Now().Add(time.Minute)
	for {
		if vw, err = mc.Validation(ctx, id, ""); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("validation not ready: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
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
	for _, cell := range vw.Cells[1:] {
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
	writeChain(ctx, t, c, id, d.GetWorkflowExecutionInfo().GetExecution().GetRunId(), prefix)
}
