package memclient

import (
	"context"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
)

// BatchRun is a started BatchQA run.
type BatchRun struct {
	// ID is the workflow id; RunID the run it started as (Get follows
	// continue-as-new to the last run). RunID is empty for a handle from
	// GetBatch without a run id.
	ID, RunID string

	c   client.Client
	run client.WorkflowRun
}

// Get waits for the batch's result: its counts, overall scores and where
// its report is.
func (r BatchRun) Get(ctx context.Context) (*api.BatchQAResult, error) {
	return get[api.BatchQAResult](ctx, r.run, r.ID)
}

// Progress queries the batch's progress.
func (r BatchRun) Progress(ctx context.Context) (api.BatchProgress, error) {
	return query[api.BatchProgress](ctx, r.c, r.ID)
}

// GetBatch returns a handle on the batch with the given workflow id (and
// run id, or "" for the latest run).
func (c *Client) GetBatch(ctx context.Context, workflowID, runID string) BatchRun {
	return BatchRun{ID: workflowID, RunID: runID, c: c.c, run: c.c.GetWorkflow(ctx, workflowID, runID)}
}

// StartBatch checks the input and starts a BatchQA run over its manifest
// (an s3:// URI: upload a local manifest first). The workflow id is opts.ID,
// or else BatchWorkflowID(in.Name, now). Unlike a question or a review, a
// batch is never joined: an id already in use, by a running or a closed
// run, is an error that wraps *serviceerror.WorkflowExecutionAlreadyStarted.
// The same items in another batch still reuse earlier answers (see
// workflows.BatchQA), so starting a batch again costs no model call for
// what was answered.
func (c *Client) StartBatch(ctx context.Context, in api.BatchQAInput, opts StartOptions) (BatchRun, error) {
	if err := in.Validate(); err != nil {
		return BatchRun{}, fmt.Errorf("memagent: %w", err)
	}
	id := opts.ID
	if id == "" {
		id = BatchWorkflowID(in.Name, time.Now())
	}
	name := in.Name
	if name == "" {
		name = id
	}
	s, err := c.start(ctx, startSpec{
		id: id, workflow: api.BatchQAName, arg: in,
		reuse:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		summary:  fmt.Sprintf("batch %s · %s", name, in.Manifest),
		memo:     memo(opts.Memo, nil),
		attrs:    api.BatchStartSearchAttributes(in, id),
		priority: in.StartPriority(),
	})
	switch {
	case err != nil:
		return BatchRun{}, err
	case s.existing:
		return BatchRun{}, fmt.Errorf("memagent: start batch: workflow id %s is taken: pick another id: %w", id, s.taken)
	}
	return BatchRun{ID: id, RunID: s.runID, c: c.c, run: s.run}, nil
}

// Batch starts a batch for in and waits for its result.
func (c *Client) Batch(ctx context.Context, in api.BatchQAInput) (*api.BatchQAResult, error) {
	run, err := c.StartBatch(ctx, in, StartOptions{})
	if err != nil {
		return nil, err
	}
	return run.Get(ctx)
}

// BatchProgress queries the progress of the batch with the given workflow
// id.
func (c *Client) BatchProgress(ctx context.Context, workflowID string) (api.BatchProgress, error) {
	return query[api.BatchProgress](ctx, c.c, workflowID)
}

// batchNameBytes bounds the part of a batch id taken from its name.
const batchNameBytes = 80

// BatchWorkflowID is the default workflow id of a batch started at now:
// memagent-batch-<name>-<UTC time to the millisecond>Z, or
// memagent-batch-<time>Z without a name. The name is cut to 80 bytes of
// letters, digits, '.', '-' and '_' (anything else becomes '_'). Unlike
// WorkflowID it names a start, not a request: two starts are two batches.
func BatchWorkflowID(name string, now time.Time) string {
	id := "memagent-batch-"
	if name != "" {
		safe := strings.Map(func(r rune) rune {
			if r < 0x80 && (r == '.' || r == '-' || r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
				return r
			}
			return '_'
		}, name)
		if len(safe) > batchNameBytes {
			safe = safe[:batchNameBytes]
		}
		id += safe + "-"
	}
	return id + now.UTC().Format("20060102T150405.000Z")
}
