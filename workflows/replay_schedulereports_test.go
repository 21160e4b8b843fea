package workflows_test

// ClaimScheduleReports' history, recorded by
//
//	go test ./workflows -run 'TestReplayClaimScheduleReports$' -update
//
// from a claim of a free report prefix on the embedded dev stack:
//
//	testdata/schedule_claim_run1.json

import (
	"context"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
)

const scheduleClaimPrefix = "schedule_claim_run"

func TestReplayClaimScheduleReports(t *testing.T) {
	if *update {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cfg, c := startReplayWorker(ctx, t, "replay-schedule-claim")
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "replay-schedule-claim", TaskQueue: cfg.TaskQueue},
			api.ClaimScheduleReportsName, api.ClaimScheduleReportsInput{ScheduleID: "replay-nightly", ReportPrefix: "s3://" + cfg.Bucket + "/reports/replay-nightly/"})
		if err != nil {
			t.Fatal(err)
		}
		if err := run.Get(ctx, nil); err != nil {
			t.Fatalf("claim: %v", err)
		}
		writeChain(ctx, t, c, run.GetID(), run.GetRunID(), scheduleClaimPrefix)
	}
	files := historyFiles(t, generation{prefix: scheduleClaimPrefix})
	if len(files) != 1 {
		t.Fatalf("found %d histories %s{N}.json, want 1; record it with: go test ./workflows -run 'TestReplayClaimScheduleReports$' -update", len(files), scheduleClaimPrefix)
	}
	histories := replayChain(t, files, api.ClaimScheduleReportsName)
	scheduled := 0
	for _, e := range histories[0].GetEvents() {
		if e.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED {
			scheduled++
		}
	}
	if last := histories[0].GetEvents()[len(histories[0].GetEvents())-1]; scheduled != 1 || last.GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED {
		t.Errorf("the recorded claim scheduled %d activities and ended with %s; want one, completed", scheduled, last.GetEventType())
	}
}
