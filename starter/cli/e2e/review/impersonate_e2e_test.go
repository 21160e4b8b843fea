package review

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/reviewer"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/memclient"
	"github.com/memagent/memagent/starter/cli"
	"github.com/memagent/memagent/starter/cli/clitest"
	"github.com/memagent/memagent/starter/cli/e2e/desktest"
)

// fakeSignOff is a neighbour's look-alike of memagent's sign-off: it
// answers the grid query with a grid over the real review, takes every
// Update, and counts them.
func fakeSignOff(ctx workflow.Context, subject, gridURI string) error {
	received := 0
	take := func(ctx workflow.Context, _ map[string]any) (map[string]any, error) {
		received++
		return map[string]any{"id": "q1", "status": "accepted"}, nil
	}
	for _, name := range []string{api.DecideUpdate, api.SignOffUpdate, api.ReopenUpdate} {
		if err := workflow.SetUpdateHandler(ctx, name, take); err != nil {
			return err
		}
	}
	grid := api.SignOffGrid{WorkflowID: api.SignOffWorkflowID(subject), Levels: 1, State: api.SignOffWaitingLevel1, Pending: 1,
		Subject: api.SignOffSubject{Kind: api.SubjectReview, WorkflowID: subject, RunID: "forged", GridURI: gridURI},
		Cells:   []api.SignOffCell{{ID: "q1", Status: api.DecisionPending}}}
	if err := workflow.SetQueryHandler(ctx, api.SignOffGridQuery, func() (api.SignOffGrid, error) { return grid, nil }); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, "received", func() (int, error) { return received, nil }); err != nil {
		return err
	}
	return workflow.Await(ctx, func() bool { return false })
}

// fakeBatch is a look-alike of a batch that never ends.
// fakeQA is a neighbour's look-alike of a question: it answers at once.
func fakeQA(ctx workflow.Context, _ map[string]any) (api.DocumentQAResult, error) {
	return api.DocumentQAResult{Answer: "365 days", AnswerFound: true}, nil
}

func fakeBatch(ctx workflow.Context) error {
	return workflow.Await(ctx, func() bool { return false })
}

// scheduleCacheAnswer is a neighbour's workflow that schedules memagent's
// WriteBatchResults on memagent's task queue, to have it copy a result of
// its choosing into the answer cache.
func scheduleCacheAnswer(ctx workflow.Context, queue string, in actwire.WriteResultsInput) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{TaskQueue: queue, StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
	return workflow.ExecuteActivity(ctx, activities.WriteBatchResultsName, in).Get(ctx, nil)
}

// neighbourSignOffWrites is a neighbour's workflow, named memagent.SignOff
// and run under a review's sign-off id on the neighbour's own queue, that
// schedules memagent's AppendAudit and WriteSignOff on memagent's queue to
// write a forged audit line and decided grid beside the review. It
// returns each activity's error ("" when it wrote).
func neighbourSignOffWrites(ctx workflow.Context, queue string, audit actwire.AppendAuditInput, decided actwire.WriteSignOffInput) ([]string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{TaskQueue: queue, StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
	var out []string
	for _, f := range []workflow.Future{
		workflow.ExecuteActivity(ctx, activities.AppendAuditName, audit),
		workflow.ExecuteActivity(ctx, activities.WriteSignOffName, decided),
	} {
		msg := ""
		if err := f.Get(ctx, nil); err != nil {
			msg = err.Error()
		}
		out = append(out, msg)
	}
	return out, nil
}

// scheduleUpdateMemory is a neighbour's workflow that schedules memagent's
// UpdateMemory on memagent's task queue with a memory of its own, to have
// the worker keep the memory that follows as a checkpoint later runs start
// from.
func scheduleUpdateMemory(ctx workflow.Context, queue string, in actwire.UpdateInput) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{TaskQueue: queue, StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
	return workflow.ExecuteActivity(ctx, activities.UpdateMemoryName, in).Get(ctx, nil)
}

// TestNeighbourCannotImpersonateMemagent is issue 48's verified executions
// and pinned subjects, performed the way a client of the namespace would:
// a worker of its own on its own task queue runs a workflow named
// memagent.SignOff under a finished review's sign-off id (the form a
// sign-off starts under today, <review>.signoff, which Temporal's HTTP API
// addresses; TestSignOffUnderTheOldIDRunsOn does the same under the old
// <review>/signoff). The desk does
// not list it, its Open form refuses it, memclient and the starter refuse
// it, and no decision reaches it; a look-alike batch is not exported and
// not sent a budget; a neighbour's UpdateMemory keeps no checkpoint; a
// neighbour's workflow under the sign-off's id that
// schedules memagent's AppendAudit and WriteSignOff on memagent's queue
// writes no audit line and no decided grid (and, closed, gives way to the
// real sign-off); the
// neighbour scheduling memagent's WriteBatchResults does not get a result
// into answers/; and a review id run again makes its sign-off refuse, and
// a sign-off pinned to the earlier run fail as memagent.Forbidden.
func TestNeighbourCannotImpersonateMemagent(t *testing.T) {
	clitest.Stack(t)
	cfg, store := clitest.Store(t)
	clitest.StartWorker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	tc, mc := dialed(t, ctx, cfg)

	path, _ := clitest.WriteDoc(t, 3000)
	review := reviewOf(t, path, []string{docgen.Question})
	subject := review.WorkflowID
	out, stderr, err := clitest.RunCLI(t, "ask", "--doc", path, "--question", "Who signed the lease?", "--json")
	if err != nil {
		t.Fatalf("ask: %v\n%s", err, stderr)
	}
	var asked clitest.AskJSON
	if err := json.Unmarshal([]byte(out), &asked); err != nil || !strings.Contains(asked.ResultURI, "/runs/") {
		t.Fatalf("ask printed %s (%v): want a result under runs/", out, err)
	}

	// The neighbour: its own worker on its own queue.
	queue := "neighbour-" + cfg.TaskQueue
	w := worker.New(tc, queue, worker.Options{})
	w.RegisterWorkflowWithOptions(fakeSignOff, workflow.RegisterOptions{Name: api.SignOffName})
	w.RegisterWorkflowWithOptions(fakeBatch, workflow.RegisterOptions{Name: api.BatchQAName})
	w.RegisterWorkflowWithOptions(fakeQA, workflow.RegisterOptions{Name: api.DocumentQAName})
	w.RegisterWorkflowWithOptions(scheduleCacheAnswer, workflow.RegisterOptions{Name: "neighbour.CacheAnswer"})
	w.RegisterWorkflowWithOptions(scheduleUpdateMemory, workflow.RegisterOptions{Name: "neighbour.UpdateMemory"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	signOffID := api.SignOffWorkflowID(subject)
	if _, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: signOffID, TaskQueue: queue}, api.SignOffName, subject, review.JSONURI); err != nil {
		t.Fatal(err)
	}
	received := func() int {
		t.Helper()
		v, err := tc.QueryWorkflow(ctx, signOffID, "", "received")
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := v.Get(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// The fake has run its first task (it answers queries) before anything
	// is asked of it.
	received()

	file := filepath.Join(t.TempDir(), "reviewers")
	if err := os.WriteFile(file, []byte("alice "+reviewer.HashToken("alice-token")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(reviewer.Env, "tokens:"+file)
	t.Setenv(reviewer.TokenEnv, "alice-token")
	desk := desktest.SignIn(t, desktest.Start(t, ctx), "alice-token")

	t.Run("desk", func(t *testing.T) {
		if status, page := desk.Get(t, "/"); status != http.StatusOK || strings.Contains(page, subject) {
			t.Errorf("the desk's list (%d) shows the look-alike sign-off of %s:\n%s", status, subject, page)
		}
		desk.Expect(t, "open", desktest.WithID("/api/start", subject), `{"review":"`+subject+`","levels":1}`, nil, http.StatusForbidden, "it is not memagent's")
		desk.Expect(t, "decide", desktest.WithID("/api/decide", subject), `{"cell":"q1","level":1,"decision":"accepted","version":0}`, nil, http.StatusForbidden, "it is not memagent's")
		desk.Expect(t, "sign off", desktest.WithID("/api/signoff", subject), `{"level":1}`, nil, http.StatusForbidden, "it is not memagent's")
		desk.Expect(t, "reopen", desktest.WithID("/api/reopen", subject), `{"cell":"q1","level":1,"reason":"x","version":1}`, nil, http.StatusForbidden, "it is not memagent's")
		if status, body := desk.Get(t, desktest.WithID("/api/grid", subject)); status != http.StatusNotFound || !strings.Contains(body, "not memagent's") {
			t.Errorf("the desk's grid of the look-alike: %d %s", status, body)
		}
	})

	t.Run("memclient", func(t *testing.T) {
		if _, err := mc.StartSignOff(ctx, api.SignOffInput{Review: subject, Levels: 1}); !errors.Is(err, memclient.ErrNotMemagent) {
			t.Errorf("StartSignOff joined the look-alike: %v", err)
		}
		if _, err := mc.SignOffGrid(ctx, subject); !errors.Is(err, memclient.ErrNotMemagent) {
			t.Errorf("SignOffGrid read the look-alike: %v", err)
		}
		if _, err := mc.CellHistory(ctx, subject, "q1"); !errors.Is(err, memclient.ErrNotMemagent) {
			t.Errorf("CellHistory queried the look-alike: %v", err)
		}
		_, err := mc.Decide(ctx, subject, api.DecideRequest{Cell: "q1", Level: 1, Decision: api.DecisionAccepted, Reviewer: "alice", ClientIdentity: "neighbour"})
		var not *memclient.NotMemagentError
		if !errors.As(err, &not) || not.TaskQueue != queue || !strings.Contains(err.Error(), "ask the operator to terminate it") {
			t.Errorf("Decide went to the look-alike: %v", err)
		}
		if _, err := mc.SignOff(ctx, subject, api.SignOffRequest{Level: 1, Reviewer: "alice", ClientIdentity: "neighbour"}); !errors.Is(err, memclient.ErrNotMemagent) {
			t.Errorf("SignOff went to the look-alike: %v", err)
		}
	})

	t.Run("starter", func(t *testing.T) {
		for _, args := range [][]string{
			{"signoff", subject},
			{"signoff", subject, "--start", "--levels", "1"},
			{"decide", subject, "--cell", "q1", "--accept"},
			{"export", "grid", subject, "--csv", filepath.Join(t.TempDir(), "g.csv")},
		} {
			_, stderr, err := clitest.RunCLI(t, args...)
			if cli.ExitCode(err) != cli.ExitBadInput || !strings.Contains(err.Error(), "it is not memagent's") {
				t.Errorf("%q: exit %d (%v), want %d refusing the look-alike\n%s", args, cli.ExitCode(err), err, cli.ExitBadInput, stderr)
			}
		}
		if _, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "neighbour-batch-" + cfg.TaskQueue, TaskQueue: queue}, api.BatchQAName); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"export", "rollouts", "neighbour-batch-" + cfg.TaskQueue, "--out", filepath.Join(t.TempDir(), "r.jsonl")},
			{"budget", "neighbour-batch-" + cfg.TaskQueue, "--max-calls", "100"},
		} {
			_, stderr, err := clitest.RunCLI(t, args...)
			if cli.ExitCode(err) != cli.ExitBadInput || !strings.Contains(err.Error(), "it is not memagent's") {
				t.Errorf("%q of a look-alike batch: exit %d (%v)\n%s", args, cli.ExitCode(err), err, stderr)
			}
		}
	})

	// Nothing of all that reached the look-alike.
	if n := received(); n != 0 {
		t.Errorf("the look-alike sign-off took %d Updates", n)
	}

	t.Run("answer cache", func(t *testing.T) {
		id := "neighbour-cache-" + cfg.TaskQueue
		entry := "s3://" + cfg.Bucket + "/answers/neighbour-" + strings.ToLower(cfg.TaskQueue) + "/"
		run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, "neighbour.CacheAnswer", cfg.TaskQueue,
			actwire.WriteResultsInput{URI: "s3://" + cfg.Bucket + "/batches/" + id + "/parts/p.jsonl",
				Answers: []actwire.AnswerEntry{{Prefix: entry, ResultURI: asked.ResultURI}}})
		if err != nil {
			t.Fatal(err)
		}
		_ = run.Get(ctx, nil) // refused or not, what counts is the cache
		loc, _ := s3store.ParseURI(entry + "result.json")
		if _, err := store.Head(ctx, loc); !errors.Is(err, s3store.ErrNotFound) {
			t.Errorf("a neighbour's workflow got %s into the answer cache (%v)", asked.ResultURI, err)
		}
	})

	t.Run("checkpoints", func(t *testing.T) {
		// The ask's own first UpdateMemory, as its history holds it, with
		// a memory of the neighbour's.
		var in actwire.UpdateInput
		it := tc.GetWorkflowHistory(ctx, asked.WorkflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() && in.IndexURI == "" {
			e, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == activities.UpdateMemoryName {
				if err := converter.GetDefaultDataConverter().FromPayload(a.GetInput().GetPayloads()[0], &in); err != nil {
					t.Fatal(err)
				}
			}
		}
		if !in.Checkpoint {
			t.Fatalf("the ask's UpdateMemory keeps no checkpoint: %+v", in)
		}
		before, err := store.List(ctx, cfg.Bucket, "checkpoints/", 1000)
		if err != nil || len(before) == 0 {
			t.Fatalf("the ask kept no checkpoint (%v)", err)
		}
		id := "neighbour-memory-" + cfg.TaskQueue
		// Its traces in its own area, where a run may write.
		in.Memory, in.TracePrefix = "The refund window is 365 days.", "s3://"+cfg.Bucket+"/runs/"+id+"/r/chunks/"
		run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, "neighbour.UpdateMemory", cfg.TaskQueue, in)
		if err != nil {
			t.Fatal(err)
		}
		var app *temporal.ApplicationError
		if err := run.Get(ctx, nil); !errors.As(err, &app) || app.Type() != api.ErrForbidden || !strings.Contains(app.Message(), api.DocumentQAName) {
			t.Errorf("UpdateMemory scheduled by a neighbour: %v, want memagent.Forbidden", err)
		}
		keys, err := store.List(ctx, cfg.Bucket, "checkpoints/", 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			data, err := store.ReadAll(ctx, s3store.Location{Bucket: cfg.Bucket, Key: k})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(data), id) {
				t.Errorf("a neighbour's workflow wrote the checkpoint %s", k)
			}
		}
	})

	t.Run("sign-off activities", func(t *testing.T) {
		// Under the sign-off's id (the look-alike gone), a neighbour's
		// workflow schedules memagent's sign-off activities.
		if err := tc.TerminateWorkflow(ctx, signOffID, "", "a look-alike"); err != nil {
			t.Fatal(err)
		}
		queue2 := "neighbour2-" + cfg.TaskQueue
		w2 := worker.New(tc, queue2, worker.Options{})
		w2.RegisterWorkflowWithOptions(neighbourSignOffWrites, workflow.RegisterOptions{Name: api.SignOffName})
		if err := w2.Start(); err != nil {
			t.Fatal(err)
		}
		defer w2.Stop()
		prefix := review.Prefix + "signoff/"
		entry := api.SignOffEntry{Seq: 1, Action: "decide", Cell: "q1", Level: 1, Decision: api.DecisionAccepted, Reviewer: "alice"}
		run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: signOffID, TaskQueue: queue2,
			WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE}, api.SignOffName, cfg.TaskQueue,
			actwire.AppendAuditInput{AuditURI: prefix + "audit.jsonl", Entries: []api.SignOffEntry{entry}},
			actwire.WriteSignOffInput{Grid: api.SignOffGrid{WorkflowID: signOffID, Levels: 1, State: api.SignOffSignedOff,
				Subject: api.SignOffSubject{Kind: api.SubjectReview, WorkflowID: subject, RunID: review.RunID, GridURI: review.JSONURI, Prefix: prefix},
				Cells:   []api.SignOffCell{{ID: "q1", Status: api.DecisionAccepted}}}})
		if err != nil {
			t.Fatal(err)
		}
		var refusals []string
		if err := run.Get(ctx, &refusals); err != nil {
			t.Fatal(err)
		}
		for i, msg := range refusals {
			if !strings.Contains(msg, "memagent.Forbidden") && !strings.Contains(msg, "only memagent's own memagent.SignOff") {
				t.Errorf("activity %d scheduled by a neighbour: %q, want memagent.Forbidden", i, msg)
			}
		}
		for _, name := range []string{"audit.jsonl", "decided.json", "decided.csv", "decided.xlsx"} {
			loc, _ := s3store.ParseURI(prefix + name)
			if _, err := store.Head(ctx, loc); !errors.Is(err, s3store.ErrNotFound) {
				t.Errorf("a neighbour's workflow wrote %s (%v)", prefix+name, err)
			}
		}
	})

	t.Run("joined question", func(t *testing.T) {
		// The neighbour answers first under the id a question will run as;
		// the question does not take its answer.
		id := "neighbour-answered"
		fake, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, api.DocumentQAName, map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if err := fake.Get(ctx, nil); err != nil {
			t.Fatal(err)
		}
		run, err := mc.Start(ctx, api.DocumentQAInput{Document: review.Document, Question: docgen.Question}, memclient.StartOptions{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		res, err := run.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.Answer == "365 days" || run.RunID == fake.GetRunID() {
			t.Errorf("the question took the look-alike's answer %q (run %s)", res.Answer, run.RunID)
		}
	})

	t.Run("pinned subject", func(t *testing.T) {
		// The real sign-off starts, pinned to the review's run.
		// One Update a run: each decision goes to the verified chain, whichever
		// run of it is current.
		if _, err := mc.StartSignOff(ctx, api.SignOffInput{Review: subject, Levels: 1, UpdatesPerRun: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := signOffGridAwait(ctx, mc, subject); err != nil {
			t.Fatal(err)
		}
		// Anyone may start a real sign-off under the id first, with fewer
		// levels than the reviewers want: a start asking for two does not
		// join the one-level sign-off.
		if _, err := mc.StartSignOff(ctx, api.SignOffInput{Review: subject, Levels: 2}); !errors.Is(err, memclient.ErrSignOffDiffers) {
			t.Errorf("a start asking for two levels joined the one-level sign-off: %v", err)
		}
		// The desk lists memagent's own (its list query names the queue).
		for deadline := time.Now().Add(30 * time.Second); ; {
			_, page := desk.Get(t, "/")
			if strings.Contains(page, subject) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the desk does not list the real sign-off of %s:\n%s", subject, page)
			}
			time.Sleep(100 * time.Millisecond)
		}
		for v, d := range []api.DecideRequest{
			{Cell: "q1", Decision: api.DecisionRejected, Reason: "not in the document"},
			{Cell: "q1", Decision: api.DecisionAccepted},
		} {
			d.Level, d.Version, d.Reviewer, d.ClientIdentity = 1, 2*v, "alice", "test"
			if _, err := mc.Decide(ctx, subject, d); err != nil {
				t.Fatalf("decision %d: %v", v, err)
			}
			if v == 0 {
				if _, err := mc.Reopen(ctx, subject, api.ReopenRequest{Cell: "q1", Level: 1, Reason: "again", Version: 1, Reviewer: "alice", ClientIdentity: "test"}); err != nil {
					t.Fatal(err)
				}
			}
		}
		status, stderr, err := clitest.RunCLI(t, "signoff", subject, "-o", "json")
		var g api.SignOffGrid
		if err != nil || json.Unmarshal([]byte(status), &g) != nil || g.Subject.RunID != review.RunID || g.Runs < 3 || g.Cells[0].Status != api.DecisionAccepted {
			t.Fatalf("signoff: %v\n%s%s: want the review's run %s, q1 accepted, over three runs", err, status, stderr, review.RunID)
		}
		if status, _, _ := clitest.RunCLI(t, "signoff", subject); !strings.Contains(status, subject+" run "+review.RunID) {
			t.Errorf("signoff does not show the review's run:\n%s", status)
		}
		// The id is run again (another review under it).
		rerun, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: subject, TaskQueue: cfg.TaskQueue,
			WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE},
			api.ReviewDocumentName, api.ReviewInput{Document: review.Document, Questions: []api.ReviewQuestion{{ID: "q1", Question: "Who signed the lease?"}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := rerun.Get(ctx, nil); err != nil {
			t.Fatal(err)
		}
		_, stderr, err = clitest.RunCLI(t, "signoff", subject)
		if cli.ExitCode(err) != cli.ExitBadInput || !strings.Contains(err.Error(), "covers its run "+review.RunID+", but its latest run is "+rerun.GetRunID()) {
			t.Errorf("signoff of a review run again: exit %d (%v)\n%s", cli.ExitCode(err), err, stderr)
		}
		if _, err := mc.SignOffGrid(ctx, subject); !errors.Is(err, memclient.ErrSubjectChanged) {
			t.Errorf("SignOffGrid of a review run again: %v", err)
		}
		if status, body := desk.Get(t, desktest.WithID("/api/grid", subject)); status != http.StatusNotFound || !strings.Contains(body, "the id was run again") {
			t.Errorf("the desk's grid of a review run again: %d %s", status, body)
		}
		// A sign-off pinned to the earlier run fails as memagent.Forbidden.
		if err := tc.TerminateWorkflow(ctx, signOffID, "", "sign the earlier run off again"); err != nil {
			t.Fatal(err)
		}
		if _, err := mc.StartSignOff(ctx, api.SignOffInput{Review: subject, Levels: 1, SubjectRunID: review.RunID}); err != nil {
			t.Fatal(err)
		}
		err = tc.GetWorkflow(ctx, signOffID, "").Get(ctx, nil)
		var app *temporal.ApplicationError
		if !errors.As(err, &app) || app.Type() != api.ErrForbidden || !strings.Contains(app.Message(), review.RunID) || !strings.Contains(app.Message(), rerun.GetRunID()) {
			t.Errorf("a sign-off pinned to the earlier run: %v, want memagent.Forbidden naming both runs", err)
		}
	})
}
