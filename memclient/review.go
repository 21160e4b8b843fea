package memclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
)

// ReviewRun is a started (or joined) ReviewDocument run.
type ReviewRun struct {
	// ID is the workflow id; RunID the run it started as (Get follows
	// continue-as-new to the last run). RunID is empty for a handle from
	// GetReview without a run id.
	ID, RunID string
	// Existing says that no new run started: the same review was running
	// (Get joins it) or had completed (Get returns its grid).
	Existing bool

	c   client.Client
	run client.WorkflowRun
}

// Get waits for the review's grid.
func (r ReviewRun) Get(ctx context.Context) (*api.ReviewResult, error) {
	return get[api.ReviewResult](ctx, r.run, r.ID)
}

// Progress queries the review's progress.
func (r ReviewRun) Progress(ctx context.Context) (api.ReviewProgress, error) {
	return query[api.ReviewProgress](ctx, r.c, r.ID)
}

// GetReview returns a handle on the review with the given workflow id (and
// run id, or "" for the latest run).
func (c *Client) GetReview(ctx context.Context, workflowID, runID string) ReviewRun {
	return ReviewRun{ID: workflowID, RunID: runID, Existing: true, c: c.c, run: c.c.GetWorkflow(ctx, workflowID, runID)}
}

// StartReview checks the input and starts a ReviewDocument run for it,
// under ReviewWorkflowID(in) unless opts.ID is set. Like Start, the same
// review started again joins the run that is going or returns the one that
// completed (ReviewRun.Existing), unless opts.Fresh; a review whose run
// failed starts again. The input is sent with its defaults filled in
// (question ids q1, q2, ...), which name the questions in the grid.
func (c *Client) StartReview(ctx context.Context, in api.ReviewInput, opts StartOptions) (ReviewRun, error) {
	if err := in.Validate(); err != nil {
		return ReviewRun{}, fmt.Errorf("memagent: %w", err)
	}
	in = in.WithDefaults()
	id := derivedID(opts, func() string { return ReviewWorkflowID(in) })
	s, err := c.start(ctx, startSpec{
		id: id, workflow: api.ReviewDocumentName, arg: in,
		reuse: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
		// The questions stay out of the summary: with payload encryption
		// they are confidential, and there may be a hundred of them.
		summary:  fmt.Sprintf("Review · %d questions · %s", len(in.Questions), api.DocumentSubject(in.Document, in.Documents)),
		memo:     memo(opts.Memo, map[string]any{"model_options": in.Options.WithDefaults(), "questions": len(in.Questions)}),
		attrs:    api.ReviewStartSearchAttributes(in),
		priority: in.StartPriority(),
	})
	if err != nil {
		return ReviewRun{}, err
	}
	return ReviewRun{ID: id, RunID: s.runID, Existing: s.existing, c: c.c, run: s.run}, nil
}

// Review starts (or joins) the review of in and waits for its grid.
func (c *Client) Review(ctx context.Context, in api.ReviewInput) (*api.ReviewResult, error) {
	run, err := c.StartReview(ctx, in, StartOptions{})
	if err != nil {
		return nil, err
	}
	return run.Get(ctx)
}

// ReviewProgress queries the progress of the review with the given
// workflow id.
func (c *Client) ReviewProgress(ctx context.Context, workflowID string) (api.ReviewProgress, error) {
	return query[api.ReviewProgress](ctx, c.c, workflowID)
}

// ReviewWorkflowID derives a stable workflow id,
// memagent-review-<16 hex digits>, from what decides a review's outcome: the
// document, the questions (ids with their defaults, text, gold answers), the
// model options with their defaults and the output prefix. Scheduling knobs
// (parallelism, chunks ahead, activities per run) do not change the grid,
// so asking again with other ones joins the same run. Like WorkflowID, the
// derivation is part of the wire format.
func ReviewWorkflowID(in api.ReviewInput) string {
	b, _ := json.Marshal(struct {
		D  string
		Q  []api.ReviewQuestion
		O  api.ModelOptions
		P  string   `json:",omitempty"`
		Ds []string `json:",omitempty"`
		R  string   `json:",omitempty"`
	}{in.Document, in.WithDefaults().Questions, in.Options.WithDefaults(), in.OutputPrefix, in.Documents, in.Reuse})
	h := sha256.Sum256(b)
	return "memagent-review-" + hex.EncodeToString(h[:8])
}
