package memclient

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
)

// EstimateRun is a started Estimate run.
type EstimateRun struct {
	// ID is the workflow id; RunID the run it started as.
	ID, RunID string

	run client.WorkflowRun
}

// Get waits for the estimate.
func (r EstimateRun) Get(ctx context.Context) (*api.Estimate, error) {
	return get[api.Estimate](ctx, r.run, r.ID)
}

// StartEstimate checks the input and starts an Estimate run: what asking
// in's questions of its document will cost, worked out on a worker without
// calling the model. The workflow id is opts.ID, or else
// EstimateWorkflowID(now). A person waits for an estimate, so it is
// scheduled as a question is. Like a batch, an estimate is never joined:
// an id already in use is an error.
func (c *Client) StartEstimate(ctx context.Context, in api.EstimateInput, opts StartOptions) (EstimateRun, error) {
	if err := in.Validate(); err != nil {
		return EstimateRun{}, fmt.Errorf("memagent: %w", err)
	}
	id := opts.ID
	if id == "" {
		id = EstimateWorkflowID(time.Now())
	}
	s, err := c.start(ctx, startSpec{
		id: id, workflow: api.EstimateName, arg: in,
		reuse:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		memo:     memo(opts.Memo, nil),
		priority: api.DocumentQAInput{}.StartPriority(),
	})
	switch {
	case err != nil:
		return EstimateRun{}, err
	case s.existing:
		return EstimateRun{}, fmt.Errorf("memagent: start estimate: workflow id %s is taken: pick another id: %w", id, s.taken)
	}
	return EstimateRun{ID: id, RunID: s.runID, run: s.run}, nil
}

// EstimateWorkflowID is the default workflow id of an estimate started at
// now: memagent-estimate-<UTC time to the microsecond>.
func EstimateWorkflowID(now time.Time) string {
	return "memagent-estimate-" + now.UTC().Format("20060102T150405.000000")
}
