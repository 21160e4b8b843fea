package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/s3store"
)

// The attacks of issue 36 on a batch and its children, performed by a
// caller outside the batch on the embedded stack: each is refused, or
// changes nothing the batch records or spends.

// forgedFact is what the attacker's own document says: no byte of its
// answer may reach the victim batch's outputs.
const forgedFact = "The access code for the north gate of the Halvorsen observatory is 0000-FORGED."

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// batchProgress queries a batch's progress.
func batchProgress(ctx context.Context, s *session, id string) (api.BatchProgress, error) {
	var p api.BatchProgress
	v, err := s.temporal.QueryWorkflow(ctx, id, "", api.ProgressQuery)
	if err == nil {
		err = v.Get(&p)
	}
	return p, err
}

func running(ctx context.Context, s *session, id string) bool {
	d, err := s.temporal.DescribeWorkflowExecution(ctx, id, "")
	return err == nil && d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
}

// TestReplacedChildIsNotTaken: a batch carries its long document's child
// over a continue-as-new; a caller terminates that child by starting a
// DocumentQA of its own under the child's id
// (WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING) about a document that
// gives another answer, and holds the id of a later item with a run of its
// own before the batch gets there. The batch completes with both items
// failed as memagent.ChildReplaced, and no byte of the attacker's answer
// is in its results, report or answer cache.
func TestReplacedChildIsNotTaken(t *testing.T) {
	tok, _ := slowWorker(t, 100*time.Millisecond)
	ctx, s := testSession(t, 4*time.Minute)
	cfg := s.cfg
	dir := t.TempDir()
	var manifest bytes.Buffer
	for i := range 4 {
		tokens := 1_000
		if i == 0 {
			tokens = 15_000 // about 50 chunks of 300 tokens: 5 s at 100 ms a call
		}
		uri, _, err := s.resolveDocument(ctx, writeFile(t, dir, fmt.Sprintf("doc%d.txt", i), []byte(docgen.Needle(tok, tokens, 0.5, uint64(200+i)))))
		if err != nil {
			t.Fatal(err)
		}
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("i%d", i), "document": uri,
			"question": fmt.Sprintf("%s (replaced %d)", docgen.Question, i), "answers": []string{docgen.Answer}})
		manifest.Write(append(line, '\n'))
	}
	forged, _, err := s.resolveDocument(ctx, writeFile(t, dir, "forged.txt", []byte(forgedFact+"\n")))
	if err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprintf("replaced-%d", time.Now().UnixNano())
	// The squatter: a run of the attacker's under item 3's id, paused at a
	// budget of one call, so that it is still running when the batch
	// starts item 3.
	if _, err := s.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: api.BatchItemWorkflowID(id, 3, 0), TaskQueue: cfg.TaskQueue},
		api.DocumentQAName, api.DocumentQAInput{Document: forged, Question: docgen.Question, Reuse: api.ReuseNone, Budget: &api.Budget{MaxCalls: 1}}); err != nil {
		t.Fatal(err)
	}
	defer s.temporal.TerminateWorkflow(context.Background(), api.BatchItemWorkflowID(id, 3, 0), "", "test over")
	if _, err := startBatch(ctx, s.temporal, cfg.TaskQueue, id, api.BatchQAInput{
		Manifest: putManifest(ctx, t, s, manifest.Bytes()), PageSize: 1, ItemsPerRun: 1, Concurrency: 4,
		CarryAfterSeconds: 1, Options: api.ModelOptions{ChunkTokens: 300},
	}); err != nil {
		t.Fatal(err)
	}
	child := api.BatchItemWorkflowID(id, 0, 0)
	waitFor(t, time.Minute, "the long child carried over a continue-as-new", func() bool {
		p, err := batchProgress(ctx, s, id)
		return err == nil && p.Run >= 2 && running(ctx, s, child)
	})
	attack, err := s.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: child, TaskQueue: cfg.TaskQueue, WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING,
	}, api.DocumentQAName, api.DocumentQAInput{Document: forged, Question: docgen.Question, Reuse: api.ReuseNone})
	if err != nil {
		t.Fatalf("the attacker's start: %v", err)
	}
	var forgedRes api.DocumentQAResult
	if err := attack.Get(ctx, &forgedRes); err != nil || !strings.Contains(forgedRes.Answer, "0000-FORGED") {
		t.Fatalf("the attacker's run answered %q (%v): the test needs an answer to look for", forgedRes.Answer, err)
	}

	var res api.BatchQAResult
	if err := s.temporal.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	if res.Succeeded != 2 || res.Failed != 2 {
		t.Errorf("batch: %+v; want 2 answered, the replaced and the squatted item failed", res)
	}
	rep := readReport(ctx, t, s, res.ReportURI)
	results := readObject(ctx, t, s, rep.ResultsURI)
	for _, line := range bytes.Split(bytes.TrimSpace(results), []byte{'\n'}) {
		var r api.BatchItemResult
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		if (r.Seq == 0 || r.Seq == 3) && (r.Status != api.ItemFailed || r.ErrorType != api.ErrChildReplaced) {
			t.Errorf("item %d: %s %s %q; want failed as %s", r.Seq, r.Status, r.ErrorType, r.Error, api.ErrChildReplaced)
		}
	}
	for _, uri := range []string{res.ReportURI, rep.ResultsURI, strings.TrimSuffix(res.ReportURI, "report.json") + api.ReportCSVName} {
		if b := readObject(ctx, t, s, uri); bytes.Contains(b, []byte("FORGED")) || bytes.Contains(b, []byte(forged)) {
			t.Errorf("%s holds the attacker's answer or document", uri)
		}
	}
	keys, err := s.store.List(ctx, cfg.Bucket, "answers/", 10000)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if b := readObject(ctx, t, s, "s3://"+cfg.Bucket+"/"+k); bytes.Contains(b, []byte("FORGED")) {
			t.Errorf("the answer cache %s holds the attacker's answer", k)
		}
	}
}

func readObject(ctx context.Context, t *testing.T, s *session, uri string) []byte {
	t.Helper()
	loc, err := s3store.ParseURI(uri)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.store.ReadAll(ctx, loc)
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	return b
}

func readReport(ctx context.Context, t *testing.T, s *session, uri string) api.BatchReport {
	t.Helper()
	var rep api.BatchReport
	if err := json.Unmarshal(readObject(ctx, t, s, uri), &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestForgedBudgetMessagesMoveNothing: a batch with max_calls 5 and
// children paused at their grants; a caller outside sends each child a
// budget-grant signal of no bound, sends the batch budget-request signals
// and Updates with negative, huge and plausible usage, and raise-budget to
// a child. The Updates with bad figures and the raise are refused; the
// rest moves nothing: the model serves 5 calls and no more, until the
// batch's own raise lets every child finish.
func TestForgedBudgetMessagesMoveNothing(t *testing.T) {
	d := stack(t)
	startWorker(t)
	ctx, s := testSession(t, 4*time.Minute)
	cfg := s.cfg
	path, _ := writeDoc(t, 8_000)
	uri, _, err := s.resolveDocument(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	var manifest bytes.Buffer
	for i := range 3 {
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("i%d", i), "document": uri,
			"question": fmt.Sprintf("%s (forged budget %d)", demoQuestion, i)})
		manifest.Write(append(line, '\n'))
	}
	d.Simulator.Reset()
	id := fmt.Sprintf("forged-budget-%d", time.Now().UnixNano())
	if _, err := startBatch(ctx, s.temporal, cfg.TaskQueue, id, api.BatchQAInput{
		Manifest: putManifest(ctx, t, s, manifest.Bytes()), Concurrency: 3, Reuse: api.ReuseNone,
		Options: api.ModelOptions{ChunkTokens: 1000}, Budget: &api.Budget{MaxCalls: 5},
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the batch paused at its budget", func() bool {
		p, err := batchProgress(ctx, s, id)
		return err == nil && p.Stage == api.StagePaused
	})
	if n := len(d.Simulator.Calls()); n != 5 {
		t.Fatalf("%d model calls at the pause, want 5", n)
	}
	children := []string{api.BatchItemWorkflowID(id, 0, 0), api.BatchItemWorkflowID(id, 1, 0), api.BatchItemWorkflowID(id, 2, 0)}
	var live []string
	for _, c := range children {
		if running(ctx, s, c) {
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		t.Fatal("no child running at the pause")
	}

	// Refused outright: nothing reaches the batch's or the child's history.
	update := func(wf, name string, arg any) error {
		h, err := s.temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: wf, UpdateName: name,
			Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err != nil {
			return err
		}
		return h.Get(ctx, nil)
	}
	for _, req := range []api.BudgetRequest{
		{WorkflowID: live[0], Usage: api.Usage{Calls: -100}},
		{WorkflowID: "someone-else", Usage: api.Usage{Calls: 1}},
	} {
		if err := update(id, api.BudgetRequestUpdate, req); err == nil {
			t.Errorf("budget request %+v accepted", req)
		}
	}
	if err := update(live[0], api.RaiseBudgetUpdate, api.Budget{MaxCalls: 1000}); err == nil || !strings.Contains(err.Error(), id) {
		t.Errorf("raise-budget on a batch child: %v; want refused naming the batch %s", err, id)
	}
	// Accepted, and moving nothing: the batch reads each child's usage
	// itself, and a child takes a grant only from its batch's reply.
	if err := update(id, api.BudgetRequestUpdate, api.BudgetRequest{WorkflowID: live[0], Usage: api.Usage{Calls: 1 << 40}}); err != nil {
		t.Errorf("a budget request for a running child: %v", err)
	}
	for _, c := range live {
		if err := s.temporal.SignalWorkflow(ctx, c, "", api.BudgetGrantSignal, api.Budget{}); err != nil {
			t.Errorf("forged grant to %s: %v", c, err)
		}
		if err := s.temporal.SignalWorkflow(ctx, id, "", api.BudgetRequestSignal, api.BudgetRequest{WorkflowID: c, Usage: api.Usage{Calls: -100}}); err != nil {
			t.Errorf("forged request for %s: %v", c, err)
		}
	}
	// Every forged signal handled: each child and the batch completed a
	// workflow task after the last one.
	for _, wf := range append(live, id) {
		waitFor(t, 30*time.Second, "handled the forged signals: "+wf, func() bool { return handledLastSignal(ctx, s, wf) })
	}
	if n := len(d.Simulator.Calls()); n != 5 {
		t.Fatalf("%d model calls after the forged messages, want 5", n)
	}
	if p, err := batchProgress(ctx, s, id); err != nil || p.Stage != api.StagePaused || p.Budget == nil ||
		p.Budget.Committed.MaxCalls > 5 || p.Budget.Limit.MaxCalls != 5 {
		t.Errorf("batch %+v, budget %+v (%v) after the forged messages, want still paused with at most 5 calls committed", p, p.Budget, err)
	}

	// The batch's own raise: every child goes on and finishes.
	if out, stderr, err := runCLI(t, "budget", id, "--max-calls", "1000"); err != nil {
		t.Fatalf("budget: %v\n%s%s", err, out, stderr)
	}
	var res api.BatchQAResult
	if err := s.temporal.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	updates, finals := paidCalls(t, d)
	if res.Succeeded != 3 || finals != 3 || updates%3 != 0 || res.Overall.Usage.Calls != updates+finals {
		t.Errorf("batch %d of 3 answered, %d final calls and %d updates, usage %d; want all three, none paid twice", res.Succeeded, finals, updates, res.Overall.Usage.Calls)
	}
}

// handledLastSignal reports whether wf's history has a workflow task
// completed after its last signal.
func handledLastSignal(ctx context.Context, s *session, wf string) bool {
	it := s.temporal.GetWorkflowHistory(ctx, wf, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	lastSignal, lastTask := int64(-1), int64(-1)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return false
		}
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			lastSignal = e.GetEventId()
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			lastTask = e.GetEventId()
		}
	}
	return lastSignal > 0 && lastTask > lastSignal
}

// outsideParent is a workflow of a caller's own, on a task queue of its
// own, that starts memagent.DocumentQA as its child with the answer cache
// as the child's output prefix: "a batch child" by every mark the child
// can see.
func outsideParent(ctx workflow.Context, in api.DocumentQAInput, taskQueue string) (*api.DocumentQAResult, error) {
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: api.BatchItemWorkflowID(workflow.GetInfo(ctx).WorkflowExecution.ID, 0, 0), TaskQueue: taskQueue})
	var res api.DocumentQAResult
	err := workflow.ExecuteChildWorkflow(cctx, api.DocumentQAName, in).Get(ctx, &res)
	return &res, err
}

// TestOutsideParentWritesNoAnswers: a parent workflow of a caller's own
// starts memagent.DocumentQA as its child, naming a key of the answer
// cache as its output prefix and a batch id: the child fails as
// memagent.Forbidden and nothing is written under answers/. A real batch
// of the same item then writes the cache entry itself, from the answer it
// settled.
func TestOutsideParentWritesNoAnswers(t *testing.T) {
	stack(t)
	startWorker(t)
	ctx, s := testSession(t, 3*time.Minute)
	cfg := s.cfg
	path, _ := writeDoc(t, 3_000)
	uri, _, err := s.resolveDocument(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(s.temporal, "outside-parent", worker.Options{})
	w.RegisterWorkflowWithOptions(outsideParent, workflow.RegisterOptions{Name: "attacker.Parent"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	before, err := s.store.List(ctx, cfg.Bucket, "answers/", 10000)
	if err != nil {
		t.Fatal(err)
	}
	key := "0123456789abcdef0123456789abcdef"
	id := fmt.Sprintf("outside-parent-%d", time.Now().UnixNano())
	run, err := s.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "outside-parent"}, "attacker.Parent",
		api.DocumentQAInput{Document: uri, Question: demoQuestion, BatchID: "nightly", Reuse: api.ReuseNone,
			OutputPrefix: "s3://" + cfg.Bucket + "/answers/" + key + "/", Options: api.ModelOptions{ChunkTokens: 1000}}, cfg.TaskQueue)
	if err != nil {
		t.Fatal(err)
	}
	err = run.Get(ctx, nil)
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != api.ErrForbidden {
		t.Fatalf("the outside parent's child: %v; want %s", err, api.ErrForbidden)
	}
	after, err := s.store.List(ctx, cfg.Bucket, "answers/", 10000)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("answers/ held %d objects, %d after the outside parent's child", len(before), len(after))
	}

	// A batch of the same question writes one entry, a copy of its
	// child's result.json.
	line, _ := json.Marshal(map[string]any{"id": "x", "document": uri, "question": demoQuestion})
	bid := fmt.Sprintf("cache-writer-%d", time.Now().UnixNano())
	brun, err := startBatch(ctx, s.temporal, cfg.TaskQueue, bid, api.BatchQAInput{
		Manifest: putManifest(ctx, t, s, append(line, '\n')), Reuse: api.ReuseNone, Options: api.ModelOptions{ChunkTokens: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	var res api.BatchQAResult
	if err := brun.Get(ctx, &res); err != nil || res.Succeeded != 1 {
		t.Fatalf("batch: %+v, %v", res, err)
	}
	after, err = s.store.List(ctx, cfg.Bucket, "answers/", 10000)
	if err != nil {
		t.Fatal(err)
	}
	var added []string
	for _, k := range after {
		if !containsString(before, k) {
			added = append(added, k)
		}
	}
	if len(added) != 1 || !strings.HasSuffix(added[0], "/result.json") {
		t.Fatalf("the batch added %v under answers/, want one result.json", added)
	}
	var child api.DocumentQAResult
	if err := s.temporal.GetWorkflow(ctx, api.BatchItemWorkflowID(bid, 0, 0), "").Get(ctx, &child); err != nil {
		t.Fatal(err)
	}
	cached := readObject(ctx, t, s, "s3://"+cfg.Bucket+"/"+added[0])
	if !bytes.Equal(cached, readObject(ctx, t, s, child.ResultURI)) || !strings.HasPrefix(child.ResultURI, "s3://"+cfg.Bucket+"/runs/") {
		t.Errorf("the cache entry is not the child's own result.json (%s)", child.ResultURI)
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestRaisedBudgetSurvivesContinueAsNew: a run paused at its budget and
// raised goes on across its later continue-as-new runs: a review of four
// activities a run, a DocumentQA of two chunks a run, and a batch of one
// item a run, each with a budget of 3 calls raised to 1000.
func TestRaisedBudgetSurvivesContinueAsNew(t *testing.T) {
	d := stack(t)
	startWorker(t)
	path, _ := writeDoc(t, 8_000)
	ctx, s := testSession(t, 4*time.Minute)
	uri, _, err := s.resolveDocument(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	opts := api.ModelOptions{ChunkTokens: 1000}
	var manifest bytes.Buffer
	for i := range 3 {
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("i%d", i), "document": uri,
			"question": fmt.Sprintf("%s (raised batch %d)", demoQuestion, i)})
		manifest.Write(append(line, '\n'))
	}
	muri := putManifest(ctx, t, s, manifest.Bytes())
	stamp := time.Now().UnixNano()
	for _, tt := range []struct {
		name, workflow, id string
		input              any
	}{
		{"review", api.ReviewDocumentName, fmt.Sprintf("raised-review-%d", stamp), api.ReviewInput{Document: uri,
			Questions:        []api.ReviewQuestion{{Question: demoQuestion}, {Question: "What is the vault code?"}},
			ActivitiesPerRun: 4, Options: opts, Reuse: api.ReuseNone, Budget: &api.Budget{MaxCalls: 3}}},
		{"ask", api.DocumentQAName, fmt.Sprintf("raised-ask-%d", stamp), api.DocumentQAInput{Document: uri,
			Question: demoQuestion + " (raised)", ChunksPerRun: 2, Options: opts, Reuse: api.ReuseNone, Budget: &api.Budget{MaxCalls: 3}}},
		{"batch", api.BatchQAName, fmt.Sprintf("raised-batch-%d", stamp), api.BatchQAInput{Manifest: muri, Concurrency: 1,
			ItemsPerRun: 1, PageSize: 1, Options: opts, Reuse: api.ReuseNone, Budget: &api.Budget{MaxCalls: 3}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d.Simulator.Reset()
			if _, err := s.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: tt.id, TaskQueue: s.cfg.TaskQueue}, tt.workflow, tt.input); err != nil {
				t.Fatal(err)
			}
			holdsAndRaises(t, d, tt.id, 3)
			if err := s.temporal.GetWorkflow(ctx, tt.id, "").Get(ctx, nil); err != nil {
				t.Fatalf("%s after the raise: %v", tt.name, err)
			}
			// Visibility lags: wait for the runs to be listed.
			runs := 0
			for deadline := time.Now().Add(10 * time.Second); runs < 3 && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				runs = countRuns(ctx, t, s, tt.id)
			}
			if runs < 3 {
				t.Errorf("%s took %d runs: the raise was not tested across continue-as-new", tt.name, runs)
			}
			if n := len(d.Simulator.Calls()); n <= 3 {
				t.Errorf("%s: %d model calls in all", tt.name, n)
			}
		})
	}
}

// countRuns counts a workflow's runs in visibility.
func countRuns(ctx context.Context, t *testing.T, s *session, id string) int {
	t.Helper()
	resp, err := s.temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Namespace: s.cfg.TemporalNamespace, Query: fmt.Sprintf("WorkflowId = '%s'", id)})
	if err != nil {
		t.Fatal(err)
	}
	return len(resp.GetExecutions())
}

// TestBatchCanceledInItsLastRunLeavesNoChild: a batch canceled in its last
// run, with children carried from earlier runs and children of its own
// running, leaves none of them running (counted by the children's ids).
func TestBatchCanceledInItsLastRunLeavesNoChild(t *testing.T) {
	tok, _ := slowWorker(t, 200*time.Millisecond)
	ctx, s := testSession(t, 3*time.Minute)
	cfg := s.cfg
	dir := t.TempDir()
	var manifest bytes.Buffer
	const items = 4
	for i := range items {
		uri, _, err := s.resolveDocument(ctx, writeFile(t, dir, fmt.Sprintf("doc%d.txt", i), []byte(docgen.Needle(tok, 12_000+1_000*i, 0.5, uint64(300+i)))))
		if err != nil {
			t.Fatal(err)
		}
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("i%d", i), "document": uri,
			"question": fmt.Sprintf("%s (cancel %d)", docgen.Question, i)})
		manifest.Write(append(line, '\n'))
	}
	id := fmt.Sprintf("cancel-last-%d", time.Now().UnixNano())
	if _, err := startBatch(ctx, s.temporal, cfg.TaskQueue, id, api.BatchQAInput{
		Manifest: putManifest(ctx, t, s, manifest.Bytes()), PageSize: 1, ItemsPerRun: 1, Concurrency: items,
		CarryAfterSeconds: 1, Reuse: api.ReuseNone, Options: api.ModelOptions{ChunkTokens: 300},
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the batch's last run with every child running", func() bool {
		p, err := batchProgress(ctx, s, id)
		return err == nil && p.Pages > 0 && p.PagesResolved == p.Pages && p.Running == items && p.Run >= 2
	})
	if err := s.temporal.CancelWorkflow(ctx, id, ""); err != nil {
		t.Fatal(err)
	}
	err := s.temporal.GetWorkflow(ctx, id, "").Get(ctx, nil)
	var canceled *temporal.CanceledError
	if !errors.As(err, &canceled) {
		t.Fatalf("the canceled batch ended with %v", err)
	}
	open := func() []string {
		var ids []string
		for i := range items {
			if c := api.BatchItemWorkflowID(id, i, 0); running(ctx, s, c) {
				ids = append(ids, c)
			}
		}
		return ids
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(open()) > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if ids := open(); len(ids) > 0 {
		t.Errorf("children %v still running 30 s after the batch was canceled", ids)
	}
}
