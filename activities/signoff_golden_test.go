package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// subjectClient is a Temporal client that knows one closed workflow: its
// type, status, run and result. Any other method panics.
type subjectClient struct {
	client.Client
	id, typ string
	status  enumspb.WorkflowExecutionStatus
	result  any
	// queue is the workflow's task queue, "memagent" when empty.
	queue string
}

func (c subjectClient) DescribeWorkflowExecution(_ context.Context, id, _ string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	if id != c.id {
		return nil, serviceerror.NewNotFound("workflow not found")
	}
	q := c.queue
	if q == "" {
		q = "memagent"
	}
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{
		Execution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: "run-" + id},
		Type:      &commonpb.WorkflowType{Name: c.typ}, Status: c.status, TaskQueue: q}}, nil
}

func (c subjectClient) GetWorkflow(_ context.Context, id, runID string) client.WorkflowRun {
	return subjectRun{result: c.result}
}

type subjectRun struct {
	client.WorkflowRun
	result any
}

func (r subjectRun) Get(_ context.Context, ptr any) error {
	raw, err := json.Marshal(r.result)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, ptr)
}

// TestLoadSignOffGolden pins what loadSignOff returns for a review, and
// its error for each subject it refuses: unknown, of another type, not
// completed, with outputs that are not its own, with no answers, two
// answers of one id, and a batch whose report is not its own. Run with
// -update to rewrite the file.
func TestLoadSignOffGolden(t *testing.T) {
	a, _ := batchActivities(t)
	a.WritePrefixes = []string{"s3://memagent/"}
	grid := func(change func(*api.ReviewGrid)) api.ReviewGrid {
		prefix := "s3://memagent/reviews/rev-1/run-rev-1/"
		g := api.ReviewGrid{Version: api.ReviewGridVersion, WorkflowID: "rev-1", RunID: "run-rev-1", Document: "s3://docs/doc.txt",
			Prefix: prefix, JSONURI: prefix + ReviewGridJSON, Rows: []api.ReviewRow{{ID: "q1"}, {ID: "q2"}}}
		if change != nil {
			change(&g)
		}
		return g
	}
	completed := enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
	review := func(result any) subjectClient {
		return subjectClient{id: "rev-1", typ: api.ReviewDocumentName, status: completed, result: result}
	}
	steps := []struct {
		name string
		c    subjectClient
		in   actwire.LoadSignOffInput
	}{
		{"review", review(grid(nil)), actwire.LoadSignOffInput{Kind: api.SubjectReview, WorkflowID: "rev-1"}},
		{"unknown", review(grid(nil)), actwire.LoadSignOffInput{Kind: api.SubjectReview, WorkflowID: "rev-2"}},
		{"another type", review(grid(nil)), actwire.LoadSignOffInput{Kind: api.SubjectBatch, WorkflowID: "rev-1"}},
		{"running", subjectClient{id: "rev-1", typ: api.ReviewDocumentName, status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING},
			actwire.LoadSignOffInput{Kind: api.SubjectReview, WorkflowID: "rev-1"}},
		{"grid not its own", review(grid(func(g *api.ReviewGrid) { g.JSONURI = "s3://memagent/reviews/rev-9/run/grid.json" })),
			actwire.LoadSignOffInput{Kind: api.SubjectReview, WorkflowID: "rev-1"}},
		{"audit log outside write prefixes", review(grid(func(g *api.ReviewGrid) { g.Prefix = "s3://elsewhere/x/" })),
			actwire.LoadSignOffInput{Kind: api.SubjectReview, WorkflowID: "rev-1"}},
		{"no answers", review(grid(func(g *api.ReviewGrid) { g.Rows = nil })), actwire.LoadSignOffInput{Kind: api.SubjectReview, WorkflowID: "rev-1"}},
		{"two answers of one id", review(grid(func(g *api.ReviewGrid) { g.Rows = append(g.Rows, api.ReviewRow{ID: "q1"}) })),
			actwire.LoadSignOffInput{Kind: api.SubjectReview, WorkflowID: "rev-1"}},
		{"a look-alike on another task queue", subjectClient{id: "rev-1", typ: api.ReviewDocumentName, status: completed, result: grid(nil), queue: "attacker"},
			actwire.LoadSignOffInput{Kind: api.SubjectReview, WorkflowID: "rev-1"}},
		{"the pinned run", review(grid(nil)), actwire.LoadSignOffInput{Kind: api.SubjectReview, WorkflowID: "rev-1", RunID: "run-rev-1"}},
		{"a pinned run that is no longer the latest", review(grid(nil)),
			actwire.LoadSignOffInput{Kind: api.SubjectReview, WorkflowID: "rev-1", RunID: "run-before"}},
		{"batch report not its own", subjectClient{id: "batch-1", typ: api.BatchQAName, status: completed,
			result: api.BatchQAResult{ReportURI: "s3://memagent/batches/batch-2/report.json"}},
			actwire.LoadSignOffInput{Kind: api.SubjectBatch, WorkflowID: "batch-1"}},
	}
	var golden []byte
	for _, s := range steps {
		out, err := a.loadSignOffWith(context.Background(), s.c, "memagent", s.in)
		golden = fmt.Appendf(golden, "=== %s\n", s.name)
		if err != nil {
			golden = fmt.Appendf(golden, "error %s\n", errorWithType(err))
			continue
		}
		raw, _ := json.MarshalIndent(out, "", " ")
		golden = fmt.Appendf(golden, "%s\n", raw)
	}
	checkGolden(t, "signoff/load.golden", golden)
}
