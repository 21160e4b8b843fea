package memclient

import (
	"context"
	"errors"
	"testing"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// startClient refuses the first refusals starts for an unmapped search
// attribute, as a frontend whose namespace cache has not refreshed does.
type startClient struct {
	client.Client
	refusals, calls int
	err             error
}

func (c *startClient) ExecuteWorkflow(context.Context, client.StartWorkflowOptions, any, ...any) (client.WorkflowRun, error) {
	c.calls++
	if c.calls <= c.refusals {
		return nil, c.err
	}
	return nil, nil
}

func TestExecuteWorkflowWaitsOutUnmappedSearchAttributes(t *testing.T) {
	unmapped := serviceerror.NewInvalidArgument("Namespace default has no mapping defined for search attribute MemagentStatus")
	c := &startClient{refusals: 2, err: unmapped}
	if _, err := ExecuteWorkflow(context.Background(), c, client.StartWorkflowOptions{}, "w"); err != nil || c.calls != 3 {
		t.Errorf("after 2 refusals: %v in %d calls, want a start in 3", err, c.calls)
	}
	other := serviceerror.NewInvalidArgument("WorkflowId is not set")
	c = &startClient{refusals: 5, err: other}
	if _, err := ExecuteWorkflow(context.Background(), c, client.StartWorkflowOptions{}, "w"); !errors.Is(err, other) || c.calls != 1 {
		t.Errorf("another invalid argument: %v in %d calls, want it at once", err, c.calls)
	}
}
