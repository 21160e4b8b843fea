package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// troubleClient answers the task queue's pollers; the embedded interface
// panics on anything else.
type troubleClient struct {
	client.Client
	pollers int
}

func (c *troubleClient) DescribeTaskQueue(context.Context, string, enumspb.TaskQueueType) (*workflowservice.DescribeTaskQueueResponse, error) {
	resp := &workflowservice.DescribeTaskQueueResponse{}
	for range c.pollers {
		resp.Pollers = append(resp.Pollers, &taskqueuepb.PollerInfo{Identity: "w"})
	}
	return resp, nil
}

func TestDiagnoserExplains(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	running := func(pending ...*workflowpb.PendingActivityInfo) *workflowservice.DescribeWorkflowExecutionResponse {
		return &workflowservice.DescribeWorkflowExecutionResponse{
			WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{Status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
				Execution: &commonpb.WorkflowExecution{WorkflowId: "w"}},
			ExecutionConfig:   &workflowpb.WorkflowExecutionConfig{TaskQueue: &taskqueuepb.TaskQueue{Name: "memagent"}},
			PendingActivities: pending,
		}
	}
	failing := &workflowpb.PendingActivityInfo{
		ActivityType: &commonpb.ActivityType{Name: "memagent.UpdateMemory"}, Attempt: 4,
		LastFailure: &failurepb.Failure{Message: "model server: server (HTTP 503):\n overloaded",
			FailureInfo: &failurepb.Failure_ApplicationFailureInfo{ApplicationFailureInfo: &failurepb.ApplicationFailureInfo{Type: "memagent.ModelUnavailable"}}},
		NextAttemptScheduleTime: timestamppb.New(now.Add(8 * time.Second)),
	}

	d := newDiagnoser(&troubleClient{pollers: 1}, "default", "w")
	got := d.explain(context.Background(), running(failing), now)
	want := "memagent.UpdateMemory attempt 4: memagent.ModelUnavailable: model server: server (HTTP 503): overloaded; next attempt in 8s"
	if got != want {
		t.Errorf("failing activity:\n got %q\nwant %q", got, want)
	}
	if got := d.explain(context.Background(), running(&workflowpb.PendingActivityInfo{Attempt: 1}), now); got != "" {
		t.Errorf("a first attempt is no trouble, got %q", got)
	}

	d = newDiagnoser(&troubleClient{}, "default", "w")
	if got := d.explain(context.Background(), running(), now); got != "" {
		t.Errorf("no poller for a moment is no trouble yet, got %q", got)
	}
	got = d.explain(context.Background(), running(), now.Add(noPollerGrace))
	if !strings.Contains(got, "no worker is polling task queue memagent in namespace default") {
		t.Errorf("no poller for %v: got %q", noPollerGrace, got)
	}
}

func TestProgressViewPrintsTroubleOnce(t *testing.T) {
	var out bytes.Buffer
	v := newProgressView(&out, false)
	s := snapshot{stage: "reading", done: 0, total: 11, trouble: "memagent.UpdateMemory attempt 2: boom"}
	v.show(s)
	v.show(s)
	s.trouble, s.done = "", 1
	v.show(s)
	text := out.String()
	if strings.Count(text, "! memagent.UpdateMemory attempt 2: boom") != 1 || !strings.Contains(text, "ok: the run is moving again") {
		t.Errorf("view printed:\n%s", text)
	}
}

// TestConversionNote: a pending conversion's heartbeat shows as the OCR
// pages done of total; other activities, and a conversion before its
// pages to read are known, show nothing.
func TestConversionNote(t *testing.T) {
	pending := func(name, details string) *workflowpb.PendingActivityInfo {
		pa := &workflowpb.PendingActivityInfo{ActivityType: &commonpb.ActivityType{Name: name}}
		if details != "" {
			pa.HeartbeatDetails = &commonpb.Payloads{Payloads: []*commonpb.Payload{{Data: []byte(details)}}}
		}
		return pa
	}
	for _, tc := range []struct {
		pending []*workflowpb.PendingActivityInfo
		want    string
	}{
		{nil, ""},
		{[]*workflowpb.PendingActivityInfo{pending("memagent.ConvertDocument", `{"pages_read":40,"pages":40,"ocr_done":12,"ocr_pages":40}`)}, "OCR 12/40 pages"},
		{[]*workflowpb.PendingActivityInfo{pending("memagent.ConvertDocument", `{"pages_read":10,"pages":40}`)}, ""},
		{[]*workflowpb.PendingActivityInfo{pending("memagent.UpdateMemory", `{"ocr_done":1,"ocr_pages":2}`), pending("memagent.AssembleCorpus", `{"ocr_done":0,"ocr_pages":3}`)}, "OCR 0/3 pages"},
		{[]*workflowpb.PendingActivityInfo{pending("memagent.ConvertDocument", "")}, ""},
		{[]*workflowpb.PendingActivityInfo{pending("memagent.PrepareReading", `{"pages_read":40,"pages":40,"ocr_done":7,"ocr_pages":40}`)}, "OCR 7/40 pages"},
	} {
		if got := conversionNote(tc.pending); got != tc.want {
			t.Errorf("conversionNote = %q, want %q", got, tc.want)
		}
	}
}
