package review

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/starter/cli/clitest"
)

// TestSignOffFloodIsBounded performs the review's flood on the dev clitest.Stack:
// a namespace client sends decide and reopen Updates to a batch's
// sign-off without end under one reviewer's name. Past (cells +
// api.MaxSignOffRevisions) at the level each is refused naming the limit,
// and another reviewer still decides the cells and signs the level off.
func TestSignOffFloodIsBounded(t *testing.T) {
	clitest.Stack(t)
	clitest.StartWorker(t)
	doc, _ := clitest.WriteDoc(t, 3000)
	m := clitest.WriteManifest(t,
		`{"id":"a","document":"`+doc+`","question":"`+docgen.Question+`"}`,
		`{"id":"b","document":"`+doc+`","question":"Who signed the lease?"}`)
	out, _ := clitest.RunBatch(t, "--manifest", m, "--name", "signoff-flood", "--json")
	id := out.Result.WorkflowID
	if _, stderr, err := clitest.RunCLI(t, "signoff", id, "--start", "--levels", "1"); err != nil {
		t.Fatalf("signoff --start: %v\n%s", err, stderr)
	}
	c := clitest.Dial(t)
	ctx := context.Background()
	update := func(name string, arg any) error {
		h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: api.SignOffWorkflowID(id), UpdateName: name,
			Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err != nil {
			return err
		}
		return h.Get(ctx, nil)
	}
	limit := 2 + api.MaxSignOffRevisions
	version, accepted := 0, 0
	for i := range limit + 5 {
		var err error
		if i%2 == 0 || i >= limit { // past the limit cell 0 is pending: decide it
			err = update(api.DecideUpdate, api.DecideRequest{Cell: "0", Level: 1, Decision: api.DecisionAccepted, Version: version,
				Reviewer: "mallory", ClientIdentity: "flood"})
		} else {
			err = update(api.ReopenUpdate, api.ReopenRequest{Cell: "0", Level: 1, Reason: "again", Version: version,
				Reviewer: "mallory", ClientIdentity: "flood"})
		}
		switch {
		case i < limit && err != nil:
			t.Fatalf("flood update %d refused: %v", i+1, err)
		case i < limit:
			version++
			accepted++
		case err == nil || !strings.Contains(err.Error(), fmt.Sprintf("mallory has made %d decisions and reopenings at level 1", limit)):
			t.Fatalf("flood update %d: %v, want refused naming the per-reviewer limit", i+1, err)
		}
	}
	// Cell 0 was last reopened: bob decides both cells and signs off.
	for _, r := range []api.DecideRequest{
		{Cell: "0", Level: 1, Decision: api.DecisionAccepted, Version: version, Reviewer: "bob", ClientIdentity: "desk"},
		{Cell: "1", Level: 1, Decision: api.DecisionAccepted, Version: 0, Reviewer: "bob", ClientIdentity: "desk"},
	} {
		if err := update(api.DecideUpdate, r); err != nil {
			t.Fatalf("bob decides cell %s: %v", r.Cell, err)
		}
	}
	if err := update(api.SignOffUpdate, api.SignOffRequest{Level: 1, Reviewer: "bob", ClientIdentity: "desk"}); err != nil {
		t.Fatalf("bob signs level 1 off after the flood: %v", err)
	}
	var g api.SignOffGrid
	if err := c.GetWorkflow(ctx, api.SignOffWorkflowID(id), "").Get(ctx, &g); err != nil {
		t.Fatal(err)
	}
	if g.State != api.SignOffSignedOff || g.AuditLines != accepted+3 {
		t.Errorf("sign-off %s with %d audit lines, want signed off with the %d accepted updates", g.State, g.AuditLines, accepted+3)
	}
}
