package memclient

import (
	"context"
	"errors"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// MappingWait bounds how long ExecuteWorkflow waits out a namespace's
// search attributes not yet being known to the frontend.
const MappingWait = 30 * time.Second

// ExecuteWorkflow starts a workflow as c.ExecuteWorkflow does, and waits
// out the seconds in which search attributes just added to the namespace
// (by `starter setup`, or by a worker at start) are not yet in the
// frontend's namespace cache: a start that names one is refused as
// "no mapping defined for search attribute" until the cache refreshes. It
// tries again, for at most MappingWait, and only on that refusal.
func ExecuteWorkflow(ctx context.Context, c client.Client, opts client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error) {
	deadline := time.Now().Add(MappingWait)
	wait := 250 * time.Millisecond
	for {
		run, err := c.ExecuteWorkflow(ctx, opts, workflow, args...)
		var invalid *serviceerror.InvalidArgument
		if err == nil || !errors.As(err, &invalid) || !strings.Contains(invalid.Error(), "no mapping defined for search attribute") ||
			time.Now().Add(wait).After(deadline) {
			return run, err
		}
		select {
		case <-ctx.Done():
			return run, err
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}
