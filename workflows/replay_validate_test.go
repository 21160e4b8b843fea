package workflows_test

// Validate's history is recorded by
//
//	go test ./workflows -run 'TestReplayValidate$' -update
//
// which records the last generation: validate_extend_run, from a batch of
// five copies of the replay document asked one question and one asked
// another, then its validation with one cell a stratum: a reveal, a
// decision by another reviewer, an extension to three cells a stratum
// (memagent.validation-extend), the rest decided, and the sign-off, which
// writes the report and completes. validate_run (v1) was recorded from a
// review of two questions, every stratum sampled whole, before
// ValidationStratifiedChange.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
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
	"github.com/memagent/memagent/workflows"
)

var validateGenerations = []generation{{name: "v1", prefix: "validate_run"}, {name: "v2-extend", prefix: "validate_extend_run"}}

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
		})
	}
}

// recordValidateHistory runs a batch and its validation, extended once,
// on the embedded dev stack and writes the validation's history.
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
	const batch = "replay-batch-validate"
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: batch, TaskQueue: cfg.TaskQueue}, api.BatchQAName, api.BatchQAInput{
		Manifest: mloc.String(), Name: "replay-validate", Concurrency: 3,
		Options: api.ModelOptions{ChunkTokens: 64, MemoryMaxTokens: 64, AnswerMaxTokens: 32},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); err != nil {
		t.Fatalf("batch: %v", err)
	}
	mc := memclient.New(c, memclient.Options{TaskQueue: cfg.TaskQueue})
	id, err := mc.StartValidation(ctx, api.ValidateInput{Batch: batch, SampleSize: 1, Thresholds: []api.ValidationThreshold{{Figure: api.FigurePrecision, Op: ">=", Value: 0.5}}})
	if err != nil {
		t.Fatal(err)
	}
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
	writeChain(ctx, t, c, id, d.GetWorkflowExecutionInfo().GetExecution().GetRunId(), prefix)
}
