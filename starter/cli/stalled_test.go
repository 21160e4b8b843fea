package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	deploymentpb "go.temporal.io/api/deployment/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// stalledClient is a server that answers, where run "w" is running on
// task queue "tq" with the pollers given, and whose long poll for the
// result ends with a deadline error (its own deadline, reached first).
type stalledClient struct {
	client.Client
	pollers    []*taskqueuepb.PollerInfo
	versioning *taskqueuepb.TaskQueueVersioningInfo
}

type stalledRun struct{ client.WorkflowRun }

func (stalledRun) Get(context.Context, any) error {
	return serviceerror.NewDeadlineExceeded("context deadline exceeded")
}

func (c *stalledClient) GetWorkflow(context.Context, string, string) client.WorkflowRun {
	return stalledRun{}
}

func (c *stalledClient) CheckHealth(context.Context, *client.CheckHealthRequest) (*client.CheckHealthResponse, error) {
	return &client.CheckHealthResponse{}, nil
}

func (c *stalledClient) DescribeWorkflowExecution(context.Context, string, string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	return runningOn("tq"), nil
}

func (c *stalledClient) DescribeTaskQueue(context.Context, string, enumspb.TaskQueueType) (*workflowservice.DescribeTaskQueueResponse, error) {
	return &workflowservice.DescribeTaskQueueResponse{Pollers: c.pollers, VersioningInfo: c.versioning}, nil
}

func runningOn(tq string) *workflowservice.DescribeWorkflowExecutionResponse {
	return &workflowservice.DescribeWorkflowExecutionResponse{
		WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{Status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING},
		ExecutionConfig:       &workflowpb.WorkflowExecutionConfig{TaskQueue: &taskqueuepb.TaskQueue{Name: tq}},
	}
}

func versionedPoller(dep, build string) *taskqueuepb.PollerInfo {
	return &taskqueuepb.PollerInfo{DeploymentOptions: &deploymentpb.WorkerDeploymentOptions{
		DeploymentName: dep, BuildId: build, WorkerVersioningMode: enumspb.WORKER_VERSIONING_MODE_VERSIONED}}
}

// TestTimeoutSaysWhyTheRunWaits: --timeout reached while Temporal answers
// is never "Temporal is unreachable" (the server ends the long poll at the
// starter's deadline a moment before the starter does), and the error
// says why the run did not finish: no worker polls its task queue, or its
// workers are versioned builds none of which is current.
func TestTimeoutSaysWhyTheRunWaits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		c     *stalledClient
		wants []string
	}{
		{"no poller", &stalledClient{},
			[]string{"Temporal answered, but no worker polls the run's task queue tq: start one (go run ./worker) with MEMAGENT_TASK_QUEUE=tq"}},
		{"no current build", &stalledClient{pollers: []*taskqueuepb.PollerInfo{versionedPoller("memagent", "b1")},
			versioning: &taskqueuepb.TaskQueueVersioningInfo{CurrentVersion: unversioned}},
			[]string{"Temporal answered, but no build of worker deployment memagent is current under Worker Versioning, so the workers polling task queue tq (versioned, build b1) take no new run",
				"temporal worker deployment set-current-version --deployment-name memagent --build-id b1"}},
		{"a current build", &stalledClient{pollers: []*taskqueuepb.PollerInfo{versionedPoller("memagent", "b1")},
			versioning: &taskqueuepb.TaskQueueVersioningInfo{CurrentDeploymentVersion: &deploymentpb.WorkerDeploymentVersion{DeploymentName: "memagent", BuildId: "b1"}}},
			nil},
		{"an unversioned worker beside", &stalledClient{pollers: []*taskqueuepb.PollerInfo{versionedPoller("memagent", "b1"), {Identity: "old"}},
			versioning: &taskqueuepb.TaskQueueVersioningInfo{CurrentVersion: unversioned}},
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			var say bytes.Buffer
			err := waitResult(ctx, tc.c, "w", new(string), &say)
			if exitCode(err) != ExitStoppedWaiting || !strings.Contains(err.Error(), "--timeout reached: stopped waiting for run w, which goes on") {
				t.Fatalf("err %v (exit %d), want exit %d, --timeout reached", err, exitCode(err), ExitStoppedWaiting)
			}
			if strings.Contains(say.String(), "unreachable") {
				t.Errorf("said %q of a server that answers", say.String())
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err:\n %v\nwant it to say:\n %s", err, w)
				}
			}
			if tc.wants == nil && strings.Contains(err.Error(), "Temporal answered") {
				t.Errorf("err %v blames the workers, who take the run's tasks", err)
			}
		})
	}
}
