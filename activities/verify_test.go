package activities

import (
	"context"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/s3store"
)

// runsClient is a Temporal client that describes the runs it holds; the
// last run added under an id is its latest. Any other method panics.
type runsClient struct {
	client.Client
	runs   map[string]*workflowpb.WorkflowExecutionInfo // id/run → run
	latest map[string]string                            // id → run
}

func newRunsClient() *runsClient {
	return &runsClient{runs: map[string]*workflowpb.WorkflowExecutionInfo{}, latest: map[string]string{}}
}

// add records run of id: typ on queue, the chain's first run first ("" for
// run itself), started by parent (id/run, or "").
func (c *runsClient) add(id, run, first, typ, queue, parent string) {
	info := &workflowpb.WorkflowExecutionInfo{
		Execution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: run}, FirstRunId: first,
		Type: &commonpb.WorkflowType{Name: typ}, TaskQueue: queue, Status: enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED,
	}
	if info.FirstRunId == "" {
		info.FirstRunId = run
	}
	if pid, prun, ok := strings.Cut(parent, "@"); ok {
		info.ParentExecution = &commonpb.WorkflowExecution{WorkflowId: pid, RunId: prun}
	}
	c.runs[id+"@"+run] = info
	c.latest[id] = run
}

func (c *runsClient) DescribeWorkflowExecution(_ context.Context, id, run string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	if run == "" {
		run = c.latest[id]
	}
	info, ok := c.runs[id+"@"+run]
	if !ok {
		return nil, serviceerror.NewNotFound("workflow not found")
	}
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: info}, nil
}

// TestBatchChildIsVerified: a batch takes a child's outcome, and copies
// its answer into the cache, only from a memagent.DocumentQA on memagent's
// task queue that a run of the batch's own chain started, read at the run
// the result names. A look-alike of the same type on another queue, a
// DocumentQA started by anyone else (or by another chain under the
// batch's id), a chain continued as new from a look-alike, and a result
// of a later run than the chain's first are each refused.
func TestBatchChildIsVerified(t *testing.T) {
	const q = "memagent"
	c := newRunsClient()
	c.add("batch", "b1", "", api.BatchQAName, q, "")
	c.add("batch", "b2", "b1", api.BatchQAName, q, "")
	c.add("batch", "old1", "", api.BatchQAName, q, "") // another chain under the id
	c.add("batch", "b3", "b1", api.BatchQAName, q, "")
	c.add("batch/0", "k1", "", api.DocumentQAName, q, "batch@b1")
	c.add("batch/1", "k2", "", api.DocumentQAName, q, "batch@b2")
	c.add("batch/2", "f1", "", api.DocumentQAName, "attacker", "batch@b2")
	c.add("batch/3", "f2", "", api.DocumentQAName, q, "")
	c.add("batch/4", "f3", "", api.DocumentQAName, q, "batch@old1")
	c.add("batch/5", "f4", "", "attacker.Workflow", "attacker", "batch@b2")
	c.add("batch/5", "f5", "f4", api.DocumentQAName, q, "batch@b2")
	c.add("batch/6", "k6", "", api.DocumentQAName, q, "batch@b2")
	c.add("batch/6", "k7", "k6", api.DocumentQAName, q, "batch@b2")
	// Runs closed longer than the retention ago are gone: a child of a
	// purged run of the batch's id, and a child whose first run is purged.
	c.add("batch/7", "k8", "", api.DocumentQAName, q, "batch@purged")
	c.add("batch/8", "k9", "gone", api.DocumentQAName, q, "batch@b2")
	b := newBatchChain(c, "batch", "b1", q)
	ctx := context.Background()
	for _, tt := range []struct {
		id, run string
		taken   bool
	}{
		{"batch/0", "k1", true},
		{"batch/1", "k2", true},
		{"batch/1", "", true},
		{"batch/6", "k6", true},
		{"batch/2", "f1", false},
		{"batch/3", "f2", false},
		{"batch/4", "f3", false},
		{"batch/5", "", false},
		{"batch/7", "", true},
		{"batch/8", "", true},
	} {
		_, why, err := b.child(ctx, tt.id, tt.run)
		if err != nil {
			t.Fatalf("%s@%s: %v", tt.id, tt.run, err)
		}
		if (why == "") != tt.taken {
			t.Errorf("%s@%s: taken %v (%q), want %v", tt.id, tt.run, why == "", why, tt.taken)
		}
	}

	// The answer cache, through the same checks.
	a, store := batchActivities(t)
	for _, id := range []string{"batch/0/k1", "batch/2/f1", "batch/3/f2", "batch/6/k7", "batch/9/x"} {
		putObject(t, store, "s3://memagent/runs/"+id+"/result.json", []byte(`{"answer":"`+id+`"}`))
	}
	for _, tt := range []struct {
		result string
		cached bool
	}{
		{"batch/0/k1", true},
		{"batch/2/f1", false}, // a look-alike on another queue
		{"batch/3/f2", false}, // nobody's child
		{"batch/6/k7", false}, // not the first run of its chain
		{"batch/9/x", false},  // no such run
	} {
		key := "k-" + strings.ReplaceAll(tt.result, "/", "-")
		if err := a.cacheAnswers(ctx, b, []actwire.AnswerEntry{{Prefix: "s3://memagent/answers/" + key + "/",
			ResultURI: "s3://memagent/runs/" + tt.result + "/result.json"}}); err != nil {
			t.Fatalf("%s: %v", tt.result, err)
		}
		got := store.Object(s3store.Location{Bucket: "memagent", Key: "answers/" + key + "/result.json"}) != nil
		if got != tt.cached {
			t.Errorf("answer of %s cached: %v, want %v", tt.result, got, tt.cached)
		}
	}
}

// TestSignOffSubjectIsVerified: a sign-off refuses, as memagent.Forbidden,
// a review on another task queue, one whose chain started as another
// workflow, and a pinned run that is no longer the latest.
func TestSignOffSubjectIsVerified(t *testing.T) {
	c := newRunsClient()
	c.add("look-alike", "l1", "", api.ReviewDocumentName, "attacker", "")
	c.add("continued", "c1", "", "attacker.Workflow", "attacker", "")
	c.add("continued", "c2", "c1", api.ReviewDocumentName, "memagent", "")
	c.add("rerun", "r1", "", api.ReviewDocumentName, "memagent", "")
	c.add("rerun", "r2", "", api.ReviewDocumentName, "memagent", "")
	ctx := context.Background()
	for _, in := range []actwire.LoadSignOffInput{
		{Kind: api.SubjectReview, WorkflowID: "look-alike"},
		{Kind: api.SubjectReview, WorkflowID: "continued"},
		{Kind: api.SubjectReview, WorkflowID: "rerun", RunID: "r1"},
	} {
		_, err := completedSubject(ctx, c, "memagent", in)
		assertType(t, err, api.ErrForbidden)
	}
	if run, err := completedSubject(ctx, c, "memagent", actwire.LoadSignOffInput{Kind: api.SubjectReview, WorkflowID: "rerun", RunID: "r2"}); err != nil || run != "r2" {
		t.Errorf("the pinned latest run: %q, %v", run, err)
	}
}
