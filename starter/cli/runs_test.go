package cli

import (
	"strings"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
)

func TestRunFilterQuery(t *testing.T) {
	base := "WorkflowType IN ('memagent.DocumentQA', 'memagent.ReviewDocument', 'memagent.BatchQA') AND ExecutionStatus != 'ContinuedAsNew'"
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
