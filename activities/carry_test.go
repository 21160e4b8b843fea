package activities

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	updatepb "go.temporal.io/api/update/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/memagent/memagent/api"
)

// runs is a describer that knows some runs of one workflow id.
type runs map[string]*workflowservice.DescribeWorkflowExecutionResponse

func (r runs) DescribeWorkflowExecution(_ context.Context, _, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	if d, ok := r[runID]; ok {
		return d, nil
	}
	return nil, serviceerror.NewNotFound("no such run")
}

func described(wfType, queue string, status enumspb.WorkflowExecutionStatus) *workflowservice.DescribeWorkflowExecutionResponse {
	return &workflowservice.DescribeWorkflowExecutionResponse{
		ExecutionConfig:       &workflowpb.WorkflowExecutionConfig{TaskQueue: &taskqueuepb.TaskQueue{Name: queue}},
		WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{Type: &commonpb.WorkflowType{Name: wfType}, Status: status},
	}
}

// TestVerifyContinuedFrom: a state is taken only from a run of the same
// type on the same task queue that continued as new; a look-alike of the
// same type name on another queue, another type on memagent's queue, a run
// still running or unknown, and no run at all are Forbidden.
func TestVerifyContinuedFrom(t *testing.T) {
	can := enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW
	known := runs{
		"own":        described(api.DocumentQAName, "memagent", can),
		"look-alike": described(api.DocumentQAName, "neighbour", can),
		"other-type": described(api.BatchQAName, "memagent", can),
		"running":    described(api.DocumentQAName, "memagent", enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING),
	}
	for _, tc := range []struct {
		prev string
		ok   bool
		says string
	}{
		{"own", true, ""},
		{"look-alike", false, `task queue "neighbour"`},
		{"other-type", false, api.BatchQAName},
		{"running", false, "(running)"},
		{"unknown", false, "does not exist"},
		{"", false, "did not continue from another run"},
	} {
		t.Run(tc.prev, func(t *testing.T) {
			err := verifyContinuedFrom(context.Background(), known, "wf", tc.prev, api.DocumentQAName, "memagent")
			if tc.ok {
				if err != nil {
					t.Fatalf("own run refused: %v", err)
				}
				return
			}
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) || appErr.Type() != api.ErrForbidden || !appErr.NonRetryable() || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error = %v, want a non-retryable %s saying %q", err, api.ErrForbidden, tc.says)
			}
		})
	}
	// Temporal unreachable: retried, not refused.
	err := verifyContinuedFrom(context.Background(), failing{}, "wf", "own", api.DocumentQAName, "memagent")
	var appErr *temporal.ApplicationError
	if err == nil || errors.As(err, &appErr) {
		t.Errorf("error = %v, want a plain (retryable) error", err)
	}
}

type failing struct{}

func (failing) DescribeWorkflowExecution(context.Context, string, string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	return nil, serviceerror.NewUnavailable("down")
}

// history is a historian that holds one run's events.
type history []*historypb.HistoryEvent

func (h history) GetWorkflowHistory(context.Context, string, string, bool, enumspb.HistoryEventFilterType) client.HistoryEventIterator {
	return &events{h: h}
}

type events struct {
	h history
	i int
}

func (e *events) HasNext() bool { return e.i < len(e.h) }
func (e *events) Next() (*historypb.HistoryEvent, error) {
	e.i++
	return e.h[e.i-1], nil
}

func acceptedAt(id string, at time.Time) *historypb.HistoryEvent {
	return &historypb.HistoryEvent{EventTime: timestamppb.New(at), Attributes: &historypb.HistoryEvent_WorkflowExecutionUpdateAcceptedEventAttributes{
		WorkflowExecutionUpdateAcceptedEventAttributes: &historypb.WorkflowExecutionUpdateAcceptedEventAttributes{
			AcceptedRequest: &updatepb.Request{Meta: &updatepb.Meta{UpdateId: id}}}}}
}

// TestAuditEntriesNeedAcceptedUpdates: the audit log takes an entry only
// where the writing run's history accepted its Update, in order, named for
// that run and dated within it; a forged entry (an Update id that exists
// nowhere, a date before the run, a gap, another run's) writes nothing.
func TestAuditEntriesNeedAcceptedUpdates(t *testing.T) {
	start := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	h := history{
		{EventTime: timestamppb.New(start)},
		acceptedAt("u1", start.Add(time.Minute)),
		acceptedAt("u2", start.Add(2*time.Minute)),
		{EventTime: timestamppb.New(start.Add(3 * time.Minute))}, // the append's scheduling
	}
	entry := func(seq int, update string, at time.Time) api.SignOffEntry {
		return api.SignOffEntry{Seq: seq, UpdateID: update, At: at, WorkflowID: "rev/signoff", RunID: "r2"}
	}
	// u2 applied a workflow task after its acceptance (a continued run
	// proving its state meanwhile).
	good := []api.SignOffEntry{entry(4, "u1", start.Add(time.Minute)), entry(5, "u2", start.Add(150*time.Second))}
	if err := checkAuditEntries(context.Background(), h, "rev/signoff", "r2", 3, good); err != nil {
		t.Fatalf("genuine entries refused: %v", err)
	}
	for _, tc := range []struct {
		name  string
		entry api.SignOffEntry
		says  string
	}{
		{"update that exists nowhere", entry(4, "forged", start.Add(time.Minute)), "never accepted"},
		{"no update", entry(4, "", start.Add(time.Minute)), "never accepted"},
		{"dated before the run", entry(4, "u1", start.Add(-24*time.Hour)), "outside the run"},
		{"dated after the run's last event", entry(4, "u1", start.Add(time.Hour)), "outside the run"},
		{"a gap", entry(6, "u1", start.Add(time.Minute)), "numbered 6"},
		{"another run's", api.SignOffEntry{Seq: 4, UpdateID: "u1", At: start.Add(time.Minute), WorkflowID: "rev/signoff", RunID: "r1"}, "names run r1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkAuditEntries(context.Background(), h, "rev/signoff", "r2", 3, []api.SignOffEntry{tc.entry})
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) || appErr.Type() != api.ErrForbidden || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error = %v, want %s saying %q", err, api.ErrForbidden, tc.says)
			}
		})
	}
}
