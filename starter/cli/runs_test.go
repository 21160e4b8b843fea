package cli

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/memagent/memagent/api"
)

func TestRunFilterQuery(t *testing.T) {
	base := "WorkflowType IN ('memagent.DocumentQA', 'memagent.ReviewDocument', 'memagent.BatchQA', 'memagent.SignOff') AND ExecutionStatus != 'ContinuedAsNew'"
	questions := "WorkflowType IN ('memagent.DocumentQA') AND ExecutionStatus != 'ContinuedAsNew'"
	tests := []struct {
		name string
		f    runFilter
		want string
	}{
		{"everything", runFilter{}, base},
		{"document and status", runFilter{Document: "s3://b/k.txt", Status: "reading"},
			base + " AND ExecutionStatus = 'Running' AND MemagentDocument = 's3://b/k.txt' AND MemagentStatus = 'reading'"},
		{"questions only", runFilter{Type: "question"}, questions},
		{"running, whatever the stage", runFilter{Status: "running"}, base + " AND ExecutionStatus = 'Running'"},
		{"terminated by the execution status", runFilter{Status: "terminated"}, base + " AND ExecutionStatus = 'Terminated'"},
		{"canceled", runFilter{Status: "canceled", Type: "batch"},
			"WorkflowType IN ('memagent.BatchQA') AND ExecutionStatus != 'ContinuedAsNew' AND ExecutionStatus = 'Canceled'"},
		{"done", runFilter{Status: "done"}, base + " AND ExecutionStatus = 'Completed'"},
		{"sign-offs waiting", runFilter{Type: "signoff", Status: "waiting"},
			"WorkflowType IN ('memagent.SignOff') AND ExecutionStatus != 'ContinuedAsNew' AND ExecutionStatus = 'Running' AND MemagentStatus = 'waiting'"},
		{"quotes and backslashes escaped", runFilter{Document: `s3://b/it's\a.txt`},
			base + ` AND MemagentDocument = 's3://b/it\'s\\a.txt'`},
		{"question by digest", runFilter{Question: "What is the access code?", Batch: "b1", Model: "m"},
			base + " AND MemagentModel = 'm' AND MemagentBatch = 'b1' AND MemagentQuestionDigest = '79c8cc29c4c8616a'"},
		{"long document clipped as the workflow clips it", runFilter{Document: "s3://b/" + strings.Repeat("x", 300)},
			base + " AND MemagentDocument = 's3://b/" + strings.Repeat("x", 255-len("s3://b/")) + "'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.query(); got != tt.want {
				t.Errorf("query =\n  %s\nwant\n  %s", got, tt.want)
			}
		})
	}
}

func TestDisplayStatus(t *testing.T) {
	tests := []struct {
		attr string
		st   enumspb.WorkflowExecutionStatus
		want string
	}{
		{"reading", enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, "reading"},
		{"done", enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, "done"},
		{"reading", enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, "terminated"},
		{"reading", enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT, "timedout"},
		{"", enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, "done"}, // a run from before the attribute
		{"", enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, "running"},
	}
	for _, tt := range tests {
		if got := displayStatus(tt.attr, tt.st); got != tt.want {
			t.Errorf("displayStatus(%q, %s) = %q, want %q", tt.attr, tt.st, got, tt.want)
		}
	}
}

// TestBesideSubjects: a sign-off is listed right after the review or
// batch it signs off when that is listed too, matched by its derived id
// or, failing that (an id of another form, a subject not derived), by
// asking it; one whose subject is not listed stays where it started.
func TestBesideSubjects(t *testing.T) {
	at := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	row := func(id, typ string, min int) runRow {
		return runRow{WorkflowID: id, WorkflowType: typ, StartedAt: at.Add(time.Duration(min) * time.Minute)}
	}
	rows := []runRow{ // newest first
		row(api.SignOffWorkflowID("rev-a"), api.SignOffName, 9),
		row(api.LegacySignOffWorkflowID("rev-c"), api.SignOffName, 3),
		row("legacy-signoff-of-b", api.SignOffName, 8),
		row("q-1", api.DocumentQAName, 7),
		row(api.SignOffWorkflowID("rev-gone"), api.SignOffName, 6),
		row("batch-b", api.BatchQAName, 5),
		row("rev-a", api.ReviewDocumentName, 4),
		row("rev-c", api.ReviewDocumentName, 2),
	}
	asked := map[string]bool{}
	got := besideSubjects(context.Background(), rows, func(_ context.Context, r runRow) (string, error) {
		asked[r.WorkflowID] = true
		switch r.WorkflowID {
		case "legacy-signoff-of-b":
			return "batch-b", nil
		}
		return "", errors.New("no worker")
	})
	var order, signs []string
	for _, r := range got {
		order = append(order, r.WorkflowID)
		signs = append(signs, r.SignsOff)
	}
	wantOrder := []string{"q-1", api.SignOffWorkflowID("rev-gone"), "batch-b", "legacy-signoff-of-b", "rev-a", api.SignOffWorkflowID("rev-a"),
		"rev-c", api.LegacySignOffWorkflowID("rev-c")}
	wantSigns := []string{"", "", "", "batch-b", "", "rev-a", "", "rev-c"}
	if !reflect.DeepEqual(order, wantOrder) || !reflect.DeepEqual(signs, wantSigns) {
		t.Errorf("order %q, signs off %q\nwant %q, %q", order, signs, wantOrder, wantSigns)
	}
	if asked[api.SignOffWorkflowID("rev-a")] || asked[api.LegacySignOffWorkflowID("rev-c")] {
		t.Error("asked a sign-off whose subject is listed under its derived id (either form)")
	}
}
