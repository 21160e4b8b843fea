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

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/reviewer"
	"github.com/memagent/memagent/memclient"
	"github.com/memagent/memagent/starter/cli"
	"github.com/memagent/memagent/starter/cli/clitest"
	"github.com/memagent/memagent/starter/cli/e2e/desktest"
)

// TestSignOffUnderTheOldIDRunsOn: a sign-off started before
// api.SignOffSuffix, under <review>/signoff, is what memclient, the starter
// and the desk find for the review, joined rather than doubled by a new
// start, decided on and listed under the review's id; and the old form
// proves nothing by itself: a neighbour's look-alike under it, on its own
// task queue, is refused like one under the new form
// (TestNeighbourCannotImpersonateMemagent) and is not listed.
func TestSignOffUnderTheOldIDRunsOn(t *testing.T) {
	clitest.Stack(t)
	cfg, _ := clitest.Store(t)
	clitest.StartWorker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	tc, mc := dialed(t, ctx, cfg)

	// A document of its own: a review of the same document and question
	// has the same id, and another test of the package signs that off.
	path, _ := clitest.WriteDoc(t, 3100)
	review := reviewOf(t, path, []string{docgen.Question})
	subject := review.WorkflowID
	legacy, current := api.LegacySignOffWorkflowID(subject), api.SignOffWorkflowID(subject)

	file := filepath.Join(t.TempDir(), "reviewers")
	if err := os.WriteFile(file, []byte("alice "+reviewer.HashToken("alice-token")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(reviewer.Env, "tokens:"+file)
	t.Setenv(reviewer.TokenEnv, "alice-token")
	desk := desktest.SignIn(t, desktest.Start(t, ctx), "alice-token")

	// A neighbour's look-alike under the old form, on its own queue.
	queue := "neighbour-" + cfg.TaskQueue
	w := worker.New(tc, queue, worker.Options{})
	w.RegisterWorkflowWithOptions(fakeSignOff, workflow.RegisterOptions{Name: api.SignOffName})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: legacy, TaskQueue: queue}, api.SignOffName, subject, review.JSONURI); err != nil {
		t.Fatal(err)
	}
	if _, err := mc.SignOffGrid(ctx, subject); !errors.Is(err, memclient.ErrNotMemagent) {
		t.Errorf("SignOffGrid read the look-alike under %s: %v", legacy, err)
	}
	if _, err := mc.Decide(ctx, subject, api.DecideRequest{Cell: "q1", Level: 1, Decision: api.DecisionAccepted, Reviewer: "alice", ClientIdentity: "test"}); !errors.Is(err, memclient.ErrNotMemagent) {
		t.Errorf("Decide went to the look-alike under %s: %v", legacy, err)
	}
	for _, arg := range []string{subject, legacy, current} {
		_, stderr, err := clitest.RunCLI(t, "signoff", arg)
		if cli.ExitCode(err) != cli.ExitBadInput || !strings.Contains(err.Error(), "it is not memagent's") {
			t.Errorf("signoff %s with a look-alike under %s: exit %d (%v)\n%s", arg, legacy, cli.ExitCode(err), err, stderr)
		}
	}
	if status, page := desk.Get(t, "/"); status != http.StatusOK || strings.Contains(page, subject) {
		t.Errorf("the desk's list (%d) shows the look-alike under %s:\n%s", status, legacy, page)
	}
	if err := tc.TerminateWorkflow(ctx, legacy, "", "a look-alike"); err != nil {
		t.Fatal(err)
	}

	// memagent's own sign-off under the old form, as a client from before
	// the change started it.
	if _, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: legacy, TaskQueue: cfg.TaskQueue,
		TypedSearchAttributes: api.SignOffStartSearchAttributes(api.SignOffInput{Review: subject})},
		api.SignOffName, api.SignOffInput{Review: subject, Levels: 1}); err != nil {
		t.Fatal(err)
	}
	g, err := signOffGridAwait(ctx, mc, subject)
	if err != nil || g.WorkflowID != legacy || g.Subject.RunID != review.RunID {
		t.Fatalf("SignOffGrid: %+v, %v; want the sign-off under %s of run %s", g, err, legacy, review.RunID)
	}
	id, err := mc.StartSignOff(ctx, api.SignOffInput{Review: subject, Levels: 1})
	if err != nil || id != legacy {
		t.Fatalf("StartSignOff = %q, %v; want the running %s joined", id, err, legacy)
	}
	if _, err := tc.DescribeWorkflowExecution(ctx, current, ""); !isNotFound(err) {
		t.Errorf("a second sign-off under %s: %v", current, err)
	}
	for _, c := range g.Cells {
		if _, err := mc.Decide(ctx, subject, api.DecideRequest{Cell: c.ID, Level: 1, Decision: api.DecisionAccepted, Version: c.Version, Reviewer: "alice", ClientIdentity: "test"}); err != nil {
			t.Fatalf("decide %s: %v", c.ID, err)
		}
	}
	for _, arg := range []string{subject, legacy, current} {
		out, stderr, err := clitest.RunCLI(t, "signoff", arg, "-o", "json")
		var got api.SignOffGrid
		if err != nil || json.Unmarshal([]byte(out), &got) != nil || got.WorkflowID != legacy || got.Pending != 0 {
			t.Errorf("signoff %s: %v\n%s%s\nwant the grid of %s, nothing pending", arg, err, out, stderr, legacy)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, page := desk.Get(t, "/")
		lower := strings.ToLower(page)
		if strings.Contains(page, subject) {
			if strings.Contains(page, legacy) || strings.Contains(lower, strings.ToLower(subject+"%2fsignoff")) {
				t.Errorf("the desk lists the sign-off by its id, not its review's:\n%s", page)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the desk does not list the sign-off under %s:\n%s", legacy, page)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if g, err := mc.SignOff(ctx, subject, api.SignOffRequest{Level: 1, Reviewer: "alice", ClientIdentity: "test"}); err != nil || g.State != api.SignOffSignedOff {
		t.Fatalf("sign level 1 off: %+v, %v", g, err)
	}
	// Signed off under the old form, it stays the review's sign-off.
	if id, err := mc.StartSignOff(ctx, api.SignOffInput{Review: subject, Levels: 1}); err != nil || id != legacy {
		t.Errorf("StartSignOff of a review signed off under %s = %q, %v", legacy, id, err)
	}
	if _, err := tc.DescribeWorkflowExecution(ctx, current, ""); !isNotFound(err) {
		t.Errorf("a second sign-off under %s: %v", current, err)
	}
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
