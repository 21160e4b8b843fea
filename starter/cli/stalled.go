package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// Why a run whose server answers does not move: nobody takes its tasks.
// The starter says so when it stops waiting (--timeout) and beside the
// progress, instead of leaving a person to guess at an outage.

// unversioned is the task queue's current version when no build of a
// worker deployment is current.
const unversioned = "__unversioned__"

// serverAnswers reports whether Temporal answers a health check within a
// few seconds, ctx's end aside: an error from a wait that ended at the
// starter's own deadline is not an outage.
func serverAnswers(ctx context.Context, c client.Client) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	_, err := c.CheckHealth(ctx, &client.CheckHealthRequest{})
	return err == nil
}

// stalledNote says why run id, still running, has no worker taking its
// tasks ("" when one does, or when the server cannot tell), for the
// message of a wait that stopped.
func stalledNote(ctx context.Context, c client.Client, id string) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	resp, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil || resp.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return ""
	}
	tq := resp.GetExecutionConfig().GetTaskQueue().GetName()
	if tq == "" {
		return ""
	}
	wf, err := c.DescribeTaskQueue(ctx, tq, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		return ""
	}
	if len(wf.GetPollers()) == 0 {
		act, err := c.DescribeTaskQueue(ctx, tq, enumspb.TASK_QUEUE_TYPE_ACTIVITY)
		if err != nil || len(act.GetPollers()) > 0 {
			return ""
		}
		return fmt.Sprintf("Temporal answered, but no worker polls the run's task queue %s: start one (go run ./worker) with MEMAGENT_TASK_QUEUE=%s, or ask on the task queue a worker polls (--task-queue)", tq, tq)
	}
	if note := noCurrentBuild(resp, wf); note != "" {
		return "Temporal answered, but " + note
	}
	return ""
}

// versioningTrouble is noCurrentBuild for run, asking the server for its
// task queue's pollers; "" when it cannot tell.
func versioningTrouble(ctx context.Context, c client.Client, run *workflowservice.DescribeWorkflowExecutionResponse) string {
	tq := run.GetExecutionConfig().GetTaskQueue().GetName()
	if tq == "" {
		return ""
	}
	wf, err := c.DescribeTaskQueue(ctx, tq, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		return ""
	}
	return noCurrentBuild(run, wf)
}

// noCurrentBuild is the note for a run that Worker Versioning routes to no
// worker: every worker polling its task queue (wf, the workflow task
// queue's description) is a versioned build of a worker deployment, no
// build is current (nor ramping), and the run, which no build has taken
// yet, waits for an unversioned worker that does not exist. "" otherwise.
func noCurrentBuild(run *workflowservice.DescribeWorkflowExecutionResponse, wf *workflowservice.DescribeTaskQueueResponse) string {
	if v := run.GetWorkflowExecutionInfo().GetVersioningInfo(); v.GetDeploymentVersion() != nil || v.GetVersion() != "" || v.GetVersioningOverride() != nil {
		return ""
	}
	vi := wf.GetVersioningInfo()
	if vi.GetCurrentDeploymentVersion() != nil || (vi.GetCurrentVersion() != "" && vi.GetCurrentVersion() != unversioned) ||
		vi.GetRampingDeploymentVersion() != nil || (vi.GetRampingVersion() != "" && vi.GetRampingVersion() != unversioned) {
		return ""
	}
	var deployments, builds []string
	for _, p := range wf.GetPollers() {
		o := p.GetDeploymentOptions()
		if o.GetWorkerVersioningMode() != enumspb.WORKER_VERSIONING_MODE_VERSIONED {
			return "" // an unversioned worker takes new runs
		}
		if !slices.Contains(deployments, o.GetDeploymentName()) {
			deployments = append(deployments, o.GetDeploymentName())
		}
		if !slices.Contains(builds, o.GetBuildId()) {
			builds = append(builds, o.GetBuildId())
		}
	}
	if len(deployments) == 0 {
		return ""
	}
	slices.Sort(builds)
	build := "build"
	if len(builds) > 1 {
		build = "builds"
	}
	tq := run.GetExecutionConfig().GetTaskQueue().GetName()
	return fmt.Sprintf("no build of worker deployment %s is current under Worker Versioning, so the workers polling task queue %s (versioned, %s %s) take no new run: make a build current (docs/DEPLOY.md, Upgrading): temporal worker deployment set-current-version --deployment-name %s --build-id %s",
		strings.Join(deployments, ", "), tq, build, strings.Join(builds, ", "), deployments[0], builds[len(builds)-1])
}
