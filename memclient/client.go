package memclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
)

// Options configure a Client.
type Options struct {
	// TaskQueue is where runs are started: the task queue of the workers
	// running the memagent plugin. Default api.DefaultTaskQueue.
	TaskQueue string
}

// StartOptions configure one start.
type StartOptions struct {
	// ID overrides the derived workflow id (WorkflowID, ReviewWorkflowID,
	// BatchWorkflowID).
	ID string
	// Fresh starts a new DocumentQA or review run even when the same request
	// already completed, under the derived id with a timestamp appended. A
	// batch's derived id is new at every start, so Fresh changes nothing
	// there.
	Fresh bool
	// Memo adds entries to the run's memo, such as "document_sha256" for an
	// uploaded document. The entries the client sets itself
	// ("model_options", "questions") take precedence.
	Memo map[string]any
}

// Client starts and awaits memagent runs: DocumentQA (Start, Ask),
// ReviewDocument (StartReview, Review) and BatchQA (StartBatch, Batch).
// Its zero value is not usable: use New.
type Client struct {
	c         client.Client
	taskQueue string
}

// New returns a Client over c, which the caller keeps and closes.
func New(c client.Client, opts Options) *Client {
	if opts.TaskQueue == "" {
		opts.TaskQueue = api.DefaultTaskQueue
	}
	return &Client{c: c, taskQueue: opts.TaskQueue}
}

// Run is a started (or joined) DocumentQA run.
type Run struct {
	// ID is the workflow id; RunID the run it started as (for a run that
	// continued-as-new, Get follows it to the last). RunID is empty for a
	// handle from GetRun without a run id.
	ID, RunID string
	// Existing says that no new run started: the same request was running
	// (Get joins it) or had completed (Get returns its result).
	Existing bool

	c   client.Client
	run client.WorkflowRun
}

// Get waits for the run's result.
func (r Run) Get(ctx context.Context) (*api.DocumentQAResult, error) {
	return get[api.DocumentQAResult](ctx, r.run, r.ID)
}

// Progress queries the run's progress.
func (r Run) Progress(ctx context.Context) (api.Progress, error) {
	return query[api.Progress](ctx, r.c, r.ID)
}

// GetRun returns a handle on the DocumentQA run with the given workflow id
// (and run id, or "" for the latest run), to await or query a run started
// elsewhere.
func (c *Client) GetRun(ctx context.Context, workflowID, runID string) Run {
	return Run{ID: workflowID, RunID: runID, Existing: true, c: c.c, run: c.c.GetWorkflow(ctx, workflowID, runID)}
}

// Start checks the input and starts a DocumentQA run for it. The same
// request started while a run of it is going joins that run; started after
// it completed, it returns the completed run, unless opts.Fresh; either
// way Run.Existing is set. A request whose run failed starts again.
func (c *Client) Start(ctx context.Context, in api.DocumentQAInput, opts StartOptions) (Run, error) {
	if err := in.Validate(); err != nil {
		return Run{}, fmt.Errorf("memagent: %w", err)
	}
	id := derivedID(opts, func() string { return WorkflowID(in) })
	s, err := c.start(ctx, startSpec{
		id: id, workflow: api.DocumentQAName, arg: in,
		// A request that already succeeded is answered from its run; a
		// failed one may start again.
		reuse:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
		summary:  summary(in),
		memo:     memo(opts.Memo, map[string]any{"model_options": in.Options.WithDefaults()}),
		attrs:    api.StartSearchAttributes(in),
		priority: in.StartPriority(),
	})
	if err != nil {
		return Run{}, err
	}
	return Run{ID: id, RunID: s.runID, Existing: s.existing, c: c.c, run: s.run}, nil
}

// Ask starts (or joins) the run for in and waits for its result.
func (c *Client) Ask(ctx context.Context, in api.DocumentQAInput) (*api.DocumentQAResult, error) {
	run, err := c.Start(ctx, in, StartOptions{})
	if err != nil {
		return nil, err
	}
	return run.Get(ctx)
}

// Progress queries the progress of the DocumentQA run with the given
// workflow id.
func (c *Client) Progress(ctx context.Context, workflowID string) (api.Progress, error) {
	return query[api.Progress](ctx, c.c, workflowID)
}

// WorkflowType returns the workflow type of the latest run of workflowID:
// api.DocumentQAName, api.ReviewDocumentName,
// api.BatchQAName, or the type of a workflow memagent did not start.
// It tells which progress query result and which result a run has.
func (c *Client) WorkflowType(ctx context.Context, workflowID string) (string, error) {
	d, err := c.c.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		return "", fmt.Errorf("memagent: describe %s: %w", workflowID, err)
	}
	return d.GetWorkflowExecutionInfo().GetType().GetName(), nil
}

// summary is the one-line summary a DocumentQA run is started with, shown
// in the Temporal Web UI's list of runs: Q#<question digest> · <document>,
// where the digest is api.QuestionDigest (the MemagentQuestionDigest search
// attribute) and the document is api.DocumentSubject (a corpus is named by
// its first document and its count). The question itself stays out: a
// UI without the codec server shows a summary as it is, and the question
// may be confidential.
func summary(in api.DocumentQAInput) string {
	return fmt.Sprintf("Q#%s · %s", api.QuestionDigest(in.Question), api.DocumentSubject(in.Document, in.Documents))
}

// WorkflowID derives a stable, readable workflow id from a request (the
// document, question, gold answers, options with their defaults filled in,
// and batch), so that the same request started twice is one run. A batch's
// runs are its own: the same question in another batch is another run; ids
// without a batch do not depend on the batch field. The derivation is part
// of the wire format: changing it splits running requests from their runs.
func WorkflowID(in api.DocumentQAInput) string {
	b, _ := json.Marshal(struct {
		D, Q string
		G    []string
		O    api.ModelOptions
		B    string   `json:",omitempty"`
		Ds   []string `json:",omitempty"`
		R    string   `json:",omitempty"`
		S    int      `json:",omitempty"`
	}{in.Document, in.Question, in.GoldAnswers, in.Options.WithDefaults(), in.BatchID, in.Documents, in.Reuse, in.Sample})
	h := sha256.Sum256(b)
	return "memagent-qa-" + hex.EncodeToString(h[:8])
}

// freshLayout is appended to a derived id by StartOptions.Fresh.
const freshLayout = "20060102T150405.000"

// derivedID is opts.ID, or else derive(), with a timestamp for Fresh.
func derivedID(opts StartOptions, derive func() string) string {
	id := opts.ID
	if id == "" {
		id = derive()
	}
	if opts.Fresh {
		id += "-" + time.Now().UTC().Format(freshLayout)
	}
	return id
}

// memo is extra with own on top; nil when both are empty.
func memo(extra, own map[string]any) map[string]any {
	if len(extra)+len(own) == 0 {
		return nil
	}
	m := make(map[string]any, len(extra)+len(own))
	maps.Copy(m, extra)
	maps.Copy(m, own)
	return m
}

// startSpec is what differs between the starts of the workflows.
type startSpec struct {
	id, workflow, summary string
	arg                   any
	reuse                 enumspb.WorkflowIdReusePolicy
	memo                  map[string]any
	attrs                 temporal.SearchAttributes
	priority              temporal.Priority
}

// started is a started run, or the run that held the id.
type started struct {
	run   client.WorkflowRun
	runID string
	// existing is set when the id was taken (by taken's run).
	existing bool
	taken    *serviceerror.WorkflowExecutionAlreadyStarted
}

// start starts s on the client's task queue. An id already in use is not an
// error here: the run holding it is returned with existing set; the
// caller decides whether that is a join or a conflict.
func (c *Client) start(ctx context.Context, s startSpec) (started, error) {
	run, err := ExecuteWorkflow(ctx, c.c, client.StartWorkflowOptions{
		ID:                    s.id,
		TaskQueue:             c.taskQueue,
		WorkflowIDReusePolicy: s.reuse,
		// Without this the SDK hides that the id was taken, and an existing
		// run looks like a new one.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		StaticSummary:                            s.summary,
		Memo:                                     s.memo,
		// Set at start, so the run is findable before a worker has taken
		// its first task.
		TypedSearchAttributes: s.attrs,
		// Orders the run's workflow tasks on a backed-up queue; the
		// workflow gives its activities (and children) the same.
		Priority: s.priority,
	}, s.workflow, s.arg)
	var taken *serviceerror.WorkflowExecutionAlreadyStarted
	var invalid *serviceerror.InvalidArgument
	switch {
	case errors.As(err, &taken):
		// The run holding the id is joined only if it is memagent's: anyone
		// may start a look-alike under an id memagent derives and answer
		// what it likes. One that has closed gives way to a new run.
		x, verr := c.Verify(ctx, s.id, taken.RunId, s.workflow)
		if errors.Is(verr, ErrNotMemagent) && x.Status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING && s.reuse != enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE {
			if d, err := c.c.DescribeWorkflowExecution(ctx, s.id, taken.RunId); err == nil &&
				d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				s.reuse = enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE
				return c.start(ctx, s)
			}
		}
		if verr != nil {
			return started{}, fmt.Errorf("memagent: workflow %s is taken: %w", s.id, verr)
		}
		return started{run: c.c.GetWorkflow(ctx, s.id, taken.RunId), runID: taken.RunId, existing: true, taken: taken}, nil
	case errors.As(err, &invalid) && strings.Contains(strings.ToLower(invalid.Error()), "search attribute"):
		return started{}, fmt.Errorf("memagent: start workflow: %w: register memagent's search attributes in the namespace first (starter setup)", err)
	case err != nil:
		return started{}, fmt.Errorf("memagent: start workflow: %w", err)
	}
	return started{run: run, runID: run.GetRunID()}, nil
}

// get waits for run's result.
func get[T any](ctx context.Context, run client.WorkflowRun, id string) (*T, error) {
	var res T
	if err := run.Get(ctx, &res); err != nil {
		return nil, fmt.Errorf("memagent run %s: %w", id, err)
	}
	return &res, nil
}

// query runs the progress query of the latest run of id.
func query[T any](ctx context.Context, c client.Client, id string) (T, error) {
	var p T
	v, err := c.QueryWorkflow(ctx, id, "", api.ProgressQuery)
	if err != nil {
		return p, fmt.Errorf("memagent: progress of %s: %w", id, err)
	}
	if err := v.Get(&p); err != nil {
		return p, fmt.Errorf("memagent: progress of %s: %w", id, err)
	}
	return p, nil
}
