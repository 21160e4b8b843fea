package memclient

import (
	"context"
	"errors"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
)

// describer is a Temporal client that describes the runs it holds
// (id@run; the latest under id@). Any other method panics.
type describer struct {
	client.Client
	runs map[string]*workflowservice.DescribeWorkflowExecutionResponse
}

func (d describer) DescribeWorkflowExecution(_ context.Context, id, run string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	r, ok := d.runs[id+"@"+run]
	if !ok {
		return nil, serviceerror.NewNotFound("workflow not found")
	}
	return r, nil
}

func described(id, run, first, typ, queue string) *workflowservice.DescribeWorkflowExecutionResponse {
	return &workflowservice.DescribeWorkflowExecutionResponse{
		WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{Execution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: run},
			FirstRunId: first, Type: &commonpb.WorkflowType{Name: typ}},
		ExecutionConfig: &workflowpb.WorkflowExecutionConfig{TaskQueue: &taskqueuepb.TaskQueue{Name: queue}},
	}
}

// TestVerify: only memagent's type on the client's task queue, in a chain
// that started so, is memagent's; a look-alike of the type on another
// queue, another type, and a chain continued as new from a neighbour's
// workflow are refused with ErrNotMemagent, naming what they are.
func TestVerify(t *testing.T) {
	d := describer{runs: map[string]*workflowservice.DescribeWorkflowExecutionResponse{
		"real@":      described("real", "r2", "r1", api.SignOffName, "memagent"),
		"real@r1":    described("real", "r1", "r1", api.SignOffName, "memagent"),
		"fake@":      described("fake", "f1", "f1", api.SignOffName, "neighbour"),
		"other@":     described("other", "o1", "o1", "neighbour.Workflow", "memagent"),
		"chained@":   described("chained", "c2", "c1", api.SignOffName, "memagent"),
		"chained@c1": described("chained", "c1", "c1", "neighbour.Workflow", "neighbour"),
	}}
	// A first run closed longer than the retention ago: the run is checked.
	d.runs["purged@"] = described("purged", "p2", "p1", api.SignOffName, "memagent")
	c := New(d, Options{TaskQueue: "memagent"})
	if _, err := c.Verify(context.Background(), "purged", "", api.SignOffName); err != nil {
		t.Errorf("a chain whose first run Temporal no longer holds: %v", err)
	}
	x, err := c.Verify(context.Background(), "real", "", api.SignOffName)
	if err != nil || x.RunID != "r2" || x.FirstRunID != "r1" || x.TaskQueue != "memagent" {
		t.Errorf("memagent's own: %+v, %v", x, err)
	}
	for _, tt := range []struct{ id, msg string }{
		{"fake", "workflow fake (run f1) is a memagent.SignOff on task queue neighbour, not memagent's memagent.SignOff on memagent: it is not memagent's; ask the operator to terminate it"},
		{"other", "is a neighbour.Workflow on task queue memagent"},
		{"chained", "workflow chained (run c1) started as a neighbour.Workflow on task queue neighbour"},
	} {
		_, err := c.Verify(context.Background(), tt.id, "", api.SignOffName)
		if !errors.Is(err, ErrNotMemagent) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: %v, want ErrNotMemagent saying %q", tt.id, err, tt.msg)
		}
	}
	if _, err := c.Verify(context.Background(), "gone", "", api.SignOffName); errors.Is(err, ErrNotMemagent) || !strings.Contains(err.Error(), "not found") {
		t.Errorf("a workflow that does not exist: %v", err)
	}
}
