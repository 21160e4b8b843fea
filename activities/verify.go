package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
)

// The namespace is not a trust boundary: anyone who can start a workflow
// can run a worker of its own, start a look-alike of a memagent workflow
// type on its own task queue under an id memagent expects, or schedule
// memagent's activities from a workflow of its own. An execution memagent
// reads or joins is taken only once these checks find it memagent's: of the
// expected workflow type, on memagent's task queue (the activity's own),
// and, for a chain that continued as new, started so.

// executionInfo describes run runID of id ("" for the latest run).
func executionInfo(ctx context.Context, c client.Client, id, runID string) (*workflowpb.WorkflowExecutionInfo, error) {
	d, err := c.DescribeWorkflowExecution(ctx, id, runID)
	if err != nil {
		return nil, err
	}
	info := d.GetWorkflowExecutionInfo()
	if info.GetTaskQueue() == "" && d.GetExecutionConfig().GetTaskQueue().GetName() != "" {
		info.TaskQueue = d.GetExecutionConfig().GetTaskQueue().GetName()
	}
	return info, nil
}

// notMemagents is why info is not memagent's typ on queue, or "".
func notMemagents(info *workflowpb.WorkflowExecutionInfo, typ, queue string) string {
	if got, q := info.GetType().GetName(), info.GetTaskQueue(); got != typ || q != queue {
		return fmt.Sprintf("workflow %s (run %s) is a %s on task queue %s, not memagent's %s on %s",
			info.GetExecution().GetWorkflowId(), info.GetExecution().GetRunId(), got, q, typ, queue)
	}
	return ""
}

// firstRunOf is the first run of info's continue-as-new chain.
func firstRunOf(info *workflowpb.WorkflowExecutionInfo) string {
	if f := info.GetFirstRunId(); f != "" {
		return f
	}
	return info.GetExecution().GetRunId()
}

// memagentChain checks that info, and the first run of its chain when it
// continued as new, are memagent's typ on queue; it returns why not, or "".
func memagentChain(ctx context.Context, c client.Client, info *workflowpb.WorkflowExecutionInfo, typ, queue string) (string, error) {
	if why := notMemagents(info, typ, queue); why != "" {
		return why, nil
	}
	first := firstRunOf(info)
	if first == info.GetExecution().GetRunId() {
		return "", nil
	}
	fi, err := executionInfo(ctx, c, info.GetExecution().GetWorkflowId(), first)
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		// Closed longer than the namespace's retention ago: the run
		// itself was checked, and what it carried over is the carry
		// check's to prove.
		return "", nil
	case err != nil:
		return "", fmt.Errorf("describe the first run %s of %s: %w", first, info.GetExecution().GetWorkflowId(), err)
	}
	if why := notMemagents(fi, typ, queue); why != "" {
		return "its chain started as " + why, nil
	}
	return "", nil
}

// batchChain is the BatchQA an activity runs for, once checked: its
// workflow id, the first run of its chain, and memagent's task queue.
// The children it may take are those a run of this chain started.
type batchChain struct {
	c                    client.Client
	workflowID, firstRun string
	queue                string
	mu                   sync.Mutex
	chainOf              map[string]string // run id of the batch → first run of its chain
}

// callingBatch checks that the workflow that scheduled the activity is a
// BatchQA on memagent's task queue (the activity's) whose chain started so,
// and returns it; why says otherwise.
func callingBatch(ctx context.Context, c client.Client) (b *batchChain, why string, err error) {
	ai := activity.GetInfo(ctx)
	info, err := executionInfo(ctx, c, ai.WorkflowExecution.ID, ai.WorkflowExecution.RunID)
	if err != nil {
		return nil, "", fmt.Errorf("describe the batch %s: %w", ai.WorkflowExecution.ID, err)
	}
	if why, err := memagentChain(ctx, c, info, api.BatchQAName, ai.TaskQueue); why != "" || err != nil {
		return nil, why, err
	}
	return newBatchChain(c, ai.WorkflowExecution.ID, firstRunOf(info), ai.TaskQueue), "", nil
}

func newBatchChain(c client.Client, id, firstRun, queue string) *batchChain {
	return &batchChain{c: c, workflowID: id, firstRun: firstRun, queue: queue, chainOf: map[string]string{}}
}

// child checks that run runID of the DocumentQA id (the first of the
// chain the batch started; "" for the latest) is the batch's own child:
// a DocumentQA on memagent's queue, whose chain started so, whose parent
// is a run of this batch's chain. It returns the run's description, and
// why it is not the batch's child ("" when it is).
func (b *batchChain) child(ctx context.Context, id, runID string) (*workflowpb.WorkflowExecutionInfo, string, error) {
	info, err := executionInfo(ctx, b.c, id, runID)
	if err != nil {
		return nil, "", err
	}
	why, err := b.check(ctx, info)
	return info, why, err
}

// check is child for a run already described.
func (b *batchChain) check(ctx context.Context, info *workflowpb.WorkflowExecutionInfo) (string, error) {
	if why, err := memagentChain(ctx, b.c, info, api.DocumentQAName, b.queue); why != "" || err != nil {
		return why, err
	}
	id, run := info.GetExecution().GetWorkflowId(), info.GetExecution().GetRunId()
	p := info.GetParentExecution()
	if p.GetWorkflowId() != b.workflowID {
		return fmt.Sprintf("workflow %s (run %s) was not started by the batch %s", id, run, b.workflowID), nil
	}
	chain, err := b.chainOfRun(ctx, p.GetRunId())
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		// A run of the batch's id closed longer than the retention ago:
		// its chain cannot be told any more; the child is of this id.
		return "", nil
	case err != nil:
		return "", err
	case chain != b.firstRun:
		return fmt.Sprintf("workflow %s (run %s) was started by run %s of %s, of another chain than the batch's (%s)",
			id, run, p.GetRunId(), b.workflowID, b.firstRun), nil
	}
	return "", nil
}

// chainOfRun is the first run of the chain run runID of the batch's id
// belongs to.
func (b *batchChain) chainOfRun(ctx context.Context, runID string) (string, error) {
	b.mu.Lock()
	chain, ok := b.chainOf[runID]
	b.mu.Unlock()
	if ok {
		return chain, nil
	}
	info, err := executionInfo(ctx, b.c, b.workflowID, runID)
	if err != nil {
		return "", fmt.Errorf("describe run %s of the batch %s: %w", runID, b.workflowID, err)
	}
	chain = firstRunOf(info)
	b.mu.Lock()
	b.chainOf[runID] = chain
	b.mu.Unlock()
	return chain, nil
}

// runOfResult splits a DocumentQA's result URI
// (s3://<bucket>/runs/<workflow id>/<first run id>/result.json) into the
// workflow id and the run id of its chain.
func runOfResult(runs, uri string) (id, runID string, ok bool) {
	rest, ok := strings.CutPrefix(uri, runs)
	if !ok {
		return "", "", false
	}
	rest, ok = strings.CutSuffix(rest, "/result.json")
	if !ok {
		return "", "", false
	}
	i := strings.LastIndex(rest, "/")
	if i <= 0 || i == len(rest)-1 {
		return "", "", false
	}
	return rest[:i], rest[i+1:], true
}

// answeredBy checks that the result at uri is that of a child of the
// batch's chain: the run its URI names (runs/<id>/<run>/) is the first of
// a chain that child describes; why says otherwise ("" when it is).
func (b *batchChain) answeredBy(ctx context.Context, runs, uri string) (string, error) {
	id, run, ok := runOfResult(runs, uri)
	if !ok {
		return fmt.Sprintf("%s is not a run's result (runs/<workflow id>/<run id>/result.json)", uri), nil
	}
	info, why, err := b.child(ctx, id, run)
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return fmt.Sprintf("no run %s of %s", run, id), nil
	case err != nil:
		return "", err
	case why != "":
		return why, nil
	case firstRunOf(info) != run:
		return fmt.Sprintf("run %s of %s is not the first of its chain (%s)", run, id, firstRunOf(info)), nil
	}
	return "", nil
}

// maxCallers bounds the runs callerIs remembers; past it, it starts over.
const maxCallers = 10000

// callerIs fails as memagent.Forbidden unless the workflow that scheduled
// the activity is memagent's, of one of types, on memagent's task queue (the
// activity's), in a chain that started so: a workflow of a neighbour's
// own, on its own task queue, can schedule memagent's activities on
// memagent's queue by name, with any input, and under an id memagent
// expects (such as <review>.signoff, or <review>/signoff from before that
// form). A run found memagent's is remembered. Outside an activity, or with SkipExecutionChecks, it checks
// nothing.
func (a *Activities) callerIs(ctx context.Context, types ...string) error {
	if !activity.IsActivity(ctx) || a.SkipExecutionChecks {
		return nil
	}
	c := activity.GetClient(ctx)
	ai := activity.GetInfo(ctx)
	id, run := ai.WorkflowExecution.ID, ai.WorkflowExecution.RunID
	typ := ""
	if ai.WorkflowType != nil {
		typ = ai.WorkflowType.Name
	}
	if !slices.Contains(types, typ) {
		return forbidden("%s is the own activity of memagent's %s, and workflow %s is a %s", ai.ActivityType.Name, strings.Join(types, " or "), id, typ)
	}
	key := ai.TaskQueue + "\x00" + id + "\x00" + run
	a.callersMu.Lock()
	ok := a.callers[key]
	a.callersMu.Unlock()
	if ok {
		return nil
	}
	info, err := executionInfo(ctx, c, id, run)
	if err != nil {
		return fmt.Errorf("describe the caller %s: %w", id, err)
	}
	why, err := memagentChain(ctx, c, info, typ, ai.TaskQueue)
	switch {
	case err != nil:
		return err
	case why != "":
		return forbidden("%s: only memagent's own %s runs %s; ask the operator to terminate it", why, typ, ai.ActivityType.Name)
	}
	a.callersMu.Lock()
	if a.callers == nil || len(a.callers) >= maxCallers {
		a.callers = map[string]bool{}
	}
	a.callers[key] = true
	a.callersMu.Unlock()
	return nil
}
