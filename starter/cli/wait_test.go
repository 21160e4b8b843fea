package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// outageClient's runs fail to reach the server a number of times, then
// return their outcome; the embedded interface panics on anything else.
type outageClient struct {
	client.Client
	failures int
	outcome  error
	gets     int
}

type outageRun struct {
	client.WorkflowRun
	c *outageClient
}

func (c *outageClient) GetWorkflow(context.Context, string, string) client.WorkflowRun {
	return outageRun{c: c}
}

// CheckHealth fails while the outage lasts.
func (c *outageClient) CheckHealth(context.Context, *client.CheckHealthRequest) (*client.CheckHealthResponse, error) {
	if c.gets <= c.failures {
		return nil, serviceerror.NewUnavailable("connection refused")
	}
	return &client.CheckHealthResponse{}, nil
}

func (c *outageClient) DescribeWorkflowExecution(context.Context, string, string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	return nil, serviceerror.NewUnavailable("connection refused")
}

func (r outageRun) Get(ctx context.Context, out any) error {
	r.c.gets++
	if r.c.gets <= r.c.failures {
		return serviceerror.NewUnavailable("connection refused")
	}
	if p, ok := out.(*string); ok && r.c.outcome == nil {
		*p = "7391-ALPHA"
	}
	return r.c.outcome
}

func TestWaitResultThroughOutage(t *testing.T) {
	var say bytes.Buffer
	c := &outageClient{failures: 2}
	var got string
	start := time.Now()
	if err := waitResult(context.Background(), c, "w", &got, &say); err != nil || got != "7391-ALPHA" {
		t.Fatalf("after an outage: %q, %v", got, err)
	}
	if c.gets != 3 || time.Since(start) < 3*time.Second {
		t.Errorf("%d tries in %v, want 3 with backoff (1 s, 2 s)", c.gets, time.Since(start))
	}
	out := say.String()
	if strings.Count(out, "Temporal is unreachable") != 1 || !strings.Contains(out, "the run goes on") || !strings.Contains(out, "reachable again") {
		t.Errorf("said:\n%s", out)
	}
}

func TestWaitResultEndsOnTheRunsOutcome(t *testing.T) {
	failed := temporal.NewNonRetryableApplicationError("input: x: unknown field", "memagent.BadInput", nil)
	c := &outageClient{outcome: failed}
	err := waitResult(context.Background(), c, "w", new(string), nil)
	if !errors.Is(err, failed) || c.gets != 1 {
		t.Fatalf("err %v after %d tries, want the run's failure at once", err, c.gets)
	}
	if code := exitCode(runFailed("w", err)); code != ExitBadInput {
		t.Errorf("exit code %d for a BadInput run, want %d", code, ExitBadInput)
	}
	if code := exitCode(runFailed("w", temporal.NewApplicationError("boom", "memagent.ModelAuth"))); code != ExitFailed {
		t.Errorf("exit code %d for a failed run, want %d", code, ExitFailed)
	}
}

func TestWaitResultStopsWaitingWithCode3(t *testing.T) {
	c := &outageClient{failures: 1 << 30}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	err := waitResult(ctx, c, "memagent-qa-1", new(string), nil)
	if exitCode(err) != ExitStoppedWaiting || !strings.Contains(err.Error(), "starter watch memagent-qa-1") {
		t.Fatalf("err %v (code %d), want code %d naming starter watch", err, exitCode(err), ExitStoppedWaiting)
	}
}

func TestFlagErrorsExitWith2(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"review", "--no-such-flag"}, &stdout, &stderr)
	if exitCode(err) != ExitBadInput {
		t.Errorf("unknown flag: %v, exit code %d, want %d", err, exitCode(err), ExitBadInput)
	}
}
