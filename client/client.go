package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/workflows"
)

// Options configure a Client.
type Options struct {
	// TaskQueue is where runs are started: the task queue of the workers
	// running the memagent plugin. Default workflows.DefaultTaskQueue.
	TaskQueue string
}

// StartOptions configure one start.
type StartOptions struct {
	// ID overrides the derived workflow id (WorkflowID).
	ID string
	// Fresh starts a new run even when the same request already completed,
	// under the derived id with a timestamp appended.
	Fresh bool
}

// Client starts and awaits DocumentQA runs. Its zero value is not usable:
// use New.
type Client struct {
	c         client.Client
	taskQueue string
}

// New returns a Client over c, which the caller keeps and closes.
func New(c client.Client, opts Options) *Client {
	if opts.TaskQueue == "" {
		opts.TaskQueue = workflows.DefaultTaskQueue
	}
	return &Client{c: c, taskQueue: opts.TaskQueue}
}

// Run is a started (or joined) DocumentQA run.
type Run struct {
	// ID is the workflow id; RunID the run it started as (for a run that
	// continued-as-new, Get follows it to the last).
	ID, RunID string
	// Existing says that no new run started: the same request was running
	// (Get joins it) or had completed (Get returns its result).
	Existing bool

	c   client.Client
	run client.WorkflowRun
}

// Get waits for the run's result.
func (r Run) Get(ctx context.Context) (*workflows.DocumentQAResult, error) {
	var res workflows.DocumentQAResult
	if err := r.run.Get(ctx, &res); err != nil {
		return nil, fmt.Errorf("memagent run %s: %w", r.ID, err)
	}
	return &res, nil
}

// Progress queries the run's progress.
func (r Run) Progress(ctx context.Context) (workflows.Progress, error) {
	return progress(ctx, r.c, r.ID)
}

// Start checks the input and starts a DocumentQA run for it. The same
// request started while a run of it is going joins that run; started after
// it completed, it returns the completed run, unless opts.Fresh; either
// way Run.Existing is set. A request whose run failed starts again.
func (c *Client) Start(ctx context.Context, in workflows.DocumentQAInput, opts StartOptions) (Run, error) {
	if err := in.Validate(); err != nil {
		return Run{}, fmt.Errorf("memagent: %w", err)
	}
	id := opts.ID
	if id == "" {
		id = WorkflowID(in)
	}
	if opts.Fresh {
		id += "-" + time.Now().UTC().Format("20060102T150405.000")
	}
	run, err := c.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        id,
		TaskQueue: c.taskQueue,
		// A request that already succeeded is answered from its run; a
		// failed one may start again.
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
		// Without this the SDK hides that the id was taken, and an existing
		// run looks like a new one.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		// The question stays out of the summary, which is not encrypted.
		StaticSummary:         fmt.Sprintf("Q#%s · %s", workflows.QuestionDigest(in.Question), in.Document),
		Memo:                  map[string]any{"model_options": in.Options.WithDefaults()},
		TypedSearchAttributes: workflows.StartSearchAttributes(in),
	}, workflows.DocumentQAName, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	var invalid *serviceerror.InvalidArgument
	switch {
	case errors.As(err, &started):
		run := c.c.GetWorkflow(ctx, id, started.RunId)
		return Run{ID: id, RunID: started.RunId, Existing: true, c: c.c, run: run}, nil
	case errors.As(err, &invalid) && strings.Contains(strings.ToLower(invalid.Error()), "search attribute"):
		return Run{}, fmt.Errorf("memagent: start workflow: %w: register memagent's search attributes in the namespace first (starter setup)", err)
	case err != nil:
		return Run{}, fmt.Errorf("memagent: start workflow: %w", err)
	}
	return Run{ID: id, RunID: run.GetRunID(), c: c.c, run: run}, nil
}

// Ask starts (or joins) the run for in and waits for its result.
func (c *Client) Ask(ctx context.Context, in workflows.DocumentQAInput) (*workflows.DocumentQAResult, error) {
	run, err := c.Start(ctx, in, StartOptions{})
	if err != nil {
		return nil, err
	}
	return run.Get(ctx)
}

// Progress queries the progress of the run with the given workflow id.
func (c *Client) Progress(ctx context.Context, workflowID string) (workflows.Progress, error) {
	return progress(ctx, c.c, workflowID)
}

func progress(ctx context.Context, c client.Client, id string) (workflows.Progress, error) {
	var p workflows.Progress
	v, err := c.QueryWorkflow(ctx, id, "", workflows.ProgressQuery)
	if err != nil {
		return p, fmt.Errorf("memagent: progress of %s: %w", id, err)
	}
	if err := v.Get(&p); err != nil {
		return p, fmt.Errorf("memagent: progress of %s: %w", id, err)
	}
	return p, nil
}

// WorkflowID derives a stable, readable workflow id from a request (the
// document, question, gold answers, options with their defaults filled in,
// and batch), so that the same request started twice is one run. A batch's
// runs are its own: the same question in another batch is another run; ids
// without a batch do not depend on the batch field. The derivation is part
// of the wire format: changing it splits running requests from their runs.
func WorkflowID(in workflows.DocumentQAInput) string {
	b, _ := json.Marshal(struct {
		D, Q string
		G    []string
		O    activities.ModelOptions
		B    string `json:",omitempty"`
	}{in.Document, in.Question, in.GoldAnswers, in.Options.WithDefaults(), in.BatchID})
	h := sha256.Sum256(b)
	return "memagent-qa-" + hex.EncodeToString(h[:8])
}
