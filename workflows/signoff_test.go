package workflows

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// signOffEnv runs SignOff over a review of three questions with fake
// activities, recording what the audit log received.
type signOffEnv struct {
	env     *testsuite.TestWorkflowEnvironment
	audit   []api.SignOffEntry
	written *actwire.WriteSignOffInput
}

func newSignOffEnv(t *testing.T, in api.SignOffInput) *signOffEnv {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	e := &signOffEnv{env: s.NewTestWorkflowEnvironment()}
	Register(e.env)
	e.env.RegisterActivityWithOptions(func(ctx context.Context, in actwire.LoadSignOffInput) (*actwire.LoadSignOffOutput, error) {
		return &actwire.LoadSignOffOutput{
			Subject: api.SignOffSubject{Kind: api.SubjectReview, WorkflowID: in.WorkflowID, RunID: "r1", Document: "s3://b/doc.txt",
				GridURI: "s3://b/reviews/" + in.WorkflowID + "/r1/grid.json", Prefix: "s3://b/reviews/" + in.WorkflowID + "/r1/signoff/",
				AuditURI: "s3://b/reviews/" + in.WorkflowID + "/r1/signoff/audit.jsonl"},
			Cells: []string{"q1", "q2", "q3"},
		}, nil
	}, activity.RegisterOptions{Name: "memagent.LoadSignOff"})
	e.env.RegisterActivityWithOptions(func(ctx context.Context, in actwire.AppendAuditInput) error {
		if in.From != len(e.audit) {
			t.Errorf("append from %d, the log holds %d", in.From, len(e.audit))
		}
		e.audit = append(e.audit, in.Entries...)
		return nil
	}, activity.RegisterOptions{Name: "memagent.AppendAudit"})
	e.env.RegisterActivityWithOptions(func(ctx context.Context, in actwire.WriteSignOffInput) (*actwire.WriteSignOffOutput, error) {
		e.written = &in
		return &actwire.WriteSignOffOutput{CSVURI: in.Grid.Subject.Prefix + "decided.csv"}, nil
	}, activity.RegisterOptions{Name: "memagent.WriteSignOff"})
	e.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: api.SignOffWorkflowID(in.Review)})
	return e
}

// update sends an Update; *refused gets its refusal when the validator
// refuses it.
func (e *signOffEnv) update(t *testing.T, name string, arg any, refused *string) {
	t.Helper()
	e.env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
		OnAccept: func() {},
		OnReject: func(err error) { *refused = err.Error() },
		OnComplete: func(_ any, err error) {
			if err != nil {
				t.Errorf("%s completed with %v", name, err)
			}
		},
	}, arg)
}

func (e *signOffEnv) grid(t *testing.T) api.SignOffGrid {
	t.Helper()
	v, err := e.env.QueryWorkflow(api.SignOffGridQuery)
	if err != nil {
		t.Fatal(err)
	}
	var g api.SignOffGrid
	if err := v.Get(&g); err != nil {
		t.Fatal(err)
	}
	return g
}

func decide(cell string, level int, decision, reviewer string, version int) api.DecideRequest {
	r := api.DecideRequest{Cell: cell, Level: level, Decision: decision, Reviewer: reviewer, ClientIdentity: "test@host", Version: version}
	switch decision {
	case api.DecisionEdited:
		r.FinalAnswer, r.Reason = "the edited answer", "the model's answer is incomplete"
	case api.DecisionRejected:
		r.Reason = "not what the document says"
	}
	return r
}

func signOffReq(level int, reviewer string) api.SignOffRequest {
	return api.SignOffRequest{Level: level, Reviewer: reviewer, ClientIdentity: "test@host"}
}

// TestSignOffTwoLevels walks a sign-off through both levels, with every
// refusal the issue names on the way: each refused request is refused by
// a validator (it never reaches the audit log), each accepted one is in
// the log in order, and the sign-off ends with the decided grid written.
func TestSignOffTwoLevels(t *testing.T) {
	e := newSignOffEnv(t, api.SignOffInput{Review: "rev-1"})
	type step struct {
		name, update string
		arg          any
		refused      string // a part of the refusal, "" when accepted
	}
	steps := []step{
		{"accept q1", api.DecideUpdate, decide("q1", 1, api.DecisionAccepted, "alice", 0), ""},
		{"stale version", api.DecideUpdate, decide("q1", 1, api.DecisionRejected, "alice", 0), "stale: cell q1 is at version 1"},
		{"cell of another review", api.DecideUpdate, decide("q9", 1, api.DecisionAccepted, "alice", 0), `no cell "q9" in the sign-off of review rev-1`},
		{"sign-off with pending cells", api.SignOffUpdate, signOffReq(1, "alice"), "2 cells are pending at level 1 (q2, q3)"},
		{"no reviewer", api.DecideUpdate, decide("q2", 1, api.DecisionAccepted, "", 0), "reviewer is empty"},
		{"edit without a reason", api.DecideUpdate, api.DecideRequest{Cell: "q2", Level: 1, Decision: api.DecisionEdited, FinalAnswer: "x", Reviewer: "alice", ClientIdentity: "c"}, "reason is empty"},
		{"edit q2", api.DecideUpdate, decide("q2", 1, api.DecisionEdited, "alice", 0), ""},
		{"level 2 before level 1 is signed off", api.DecideUpdate, decide("q2", 2, api.DecisionAccepted, "bob", 1), "level 1 is not signed off yet"},
		{"reject q3", api.DecideUpdate, decide("q3", 1, api.DecisionRejected, "alice", 0), ""},
		{"sign off level 1", api.SignOffUpdate, signOffReq(1, "alice"), ""},
		{"level 1 again", api.DecideUpdate, decide("q1", 1, api.DecisionRejected, "alice", 1), "level 1 is signed off"},
		{"level 2 by the level-1 reviewer", api.DecideUpdate, decide("q2", 2, api.DecisionAccepted, "alice", 1), "four eyes: alice decided cell q2 at level 1"},
		{"level 2 sign-off with pending cells", api.SignOffUpdate, signOffReq(2, "bob"), "2 cells are pending at level 2 (q2, q3)"},
		{"bob accepts the edit", api.DecideUpdate, decide("q2", 2, api.DecisionAccepted, "bob", 1), ""},
		{"bob reopens q3 at level 1", api.ReopenUpdate, api.ReopenRequest{Cell: "q3", Level: 1, Reason: "look again", Reviewer: "bob", ClientIdentity: "c", Version: 1}, ""},
		{"level 2 sign-off after the reopening", api.SignOffUpdate, signOffReq(2, "bob"), "level 1 is not signed off yet"},
		{"carol rejects q3 at level 1", api.DecideUpdate, decide("q3", 1, api.DecisionRejected, "carol", 2), ""},
		{"carol signs level 1 off", api.SignOffUpdate, signOffReq(1, "carol"), ""},
		{"level-2 sign-off by the level-1 signer", api.SignOffUpdate, signOffReq(2, "carol"), "four eyes: carol signed level 1 off"},
		{"bob rejects q3 at level 2", api.DecideUpdate, decide("q3", 2, api.DecisionRejected, "bob", 3), ""},
		{"bob signs level 2 off", api.SignOffUpdate, signOffReq(2, "bob"), ""},
	}
	accepted := 0
	got := make([]string, len(steps))
	for i, s := range steps {
		e.env.RegisterDelayedCallback(func() { e.update(t, s.update, s.arg, &got[i]) }, time.Duration(i+1)*time.Minute)
		if s.refused == "" {
			accepted++
		}
	}
	e.env.RegisterDelayedCallback(func() {
		g := e.grid(t)
		if g.State != api.SignOffWaitingLevel1 || g.Pending != 2 {
			t.Errorf("after the first decision: state %s, %d pending; want %s, 2", g.State, g.Pending, api.SignOffWaitingLevel1)
		}
	}, time.Minute+30*time.Second)
	e.env.ExecuteWorkflow(api.SignOffName, api.SignOffInput{Review: "rev-1"})
	if err := e.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	for i, s := range steps {
		switch {
		case s.refused == "" && got[i] != "":
			t.Errorf("%s: refused: %s", s.name, got[i])
		case s.refused != "" && !strings.Contains(got[i], s.refused):
			t.Errorf("%s: refusal %q, want it to hold %q", s.name, got[i], s.refused)
		}
	}
	var g api.SignOffGrid
	if err := e.env.GetWorkflowResult(&g); err != nil {
		t.Fatal(err)
	}
	if g.State != api.SignOffSignedOff || len(g.SignOffs) != 2 || g.CSVURI == "" {
		t.Errorf("result: state %s, %d sign-offs, csv %q; want signed off at 2 levels with the decided grid", g.State, len(g.SignOffs), g.CSVURI)
	}
	// Level 2's accept approves level 1's edit: q2 stays edited.
	want := map[string]string{"q1": api.DecisionAccepted, "q2": api.DecisionEdited, "q3": api.DecisionRejected}
	for _, c := range g.Cells {
		if c.Status != want[c.ID] {
			t.Errorf("cell %s: %s, want %s", c.ID, c.Status, want[c.ID])
		}
	}
	if q2 := g.Cell("q2"); q2.Level1 == nil || q2.Level1.Decision != api.DecisionEdited || q2.Level2 == nil || q2.Level2.Reviewer != "bob" {
		t.Errorf("q2: %+v, want edited by alice at level 1, decided by bob at level 2", q2)
	}
	if len(e.audit) != accepted || g.AuditLines != accepted {
		t.Errorf("audit log: %d lines (grid says %d), want the %d accepted updates", len(e.audit), g.AuditLines, accepted)
	}
	for i, l := range e.audit {
		if l.Seq != i+1 || l.Reviewer == "" || l.At.IsZero() || l.UpdateID == "" {
			t.Errorf("audit line %d: %+v", i+1, l)
		}
	}
	if e.written == nil || e.written.Grid.State != api.SignOffSignedOff {
		t.Errorf("WriteSignOff got %+v, want the signed-off grid", e.written)
	}
}

// TestSignOffContinuesAsNew: a sign-off that waits past its run's hours
// continues as new with its decisions, and refuses a state a caller
// sends.
func TestSignOffContinuesAsNew(t *testing.T) {
	e := newSignOffEnv(t, api.SignOffInput{Review: "rev-2"})
	e.env.RegisterDelayedCallback(func() {
		var refused string
		e.update(t, api.DecideUpdate, decide("q1", 1, api.DecisionAccepted, "alice", 0), &refused)
	}, time.Minute)
	e.env.ExecuteWorkflow(api.SignOffName, api.SignOffInput{Review: "rev-2", RunHours: 1})
	err := e.env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("error %v, want continue-as-new after the run's hours", err)
	}
	if len(e.audit) != 1 {
		t.Errorf("audit log holds %d lines before continuing as new, want 1", len(e.audit))
	}
}

// TestSignOffRefusesAnotherID: a sign-off runs only under the id of what
// it signs off, in either form (api.SignOffWorkflowID, or
// api.LegacySignOffWorkflowID for one started before it).
func TestSignOffRefusesAnotherID(t *testing.T) {
	for _, tc := range []struct {
		id     string
		refuse bool
	}{
		{"someone-else", true},
		{"rev-3", true},
		{"rev-3.signoffs", true},
		{"rev-3.signoff.signoff", true},
		{"rev-4.signoff", true},
		{"rev-3.signoff", false},
		{"rev-3/signoff", false},
	} {
		t.Run(tc.id, func(t *testing.T) {
			e := newSignOffEnv(t, api.SignOffInput{Review: "rev-3"})
			e.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: tc.id})
			e.env.ExecuteWorkflow(api.SignOffName, api.SignOffInput{Review: "rev-3"})
			err := e.env.GetWorkflowError()
			refused := err != nil && strings.Contains(err.Error(), `runs as workflow "rev-3.signoff"`)
			if refused != tc.refuse {
				t.Errorf("error %v; want a refusal naming the sign-off's id: %v", err, tc.refuse)
			}
		})
	}
}

// TestSignOffFloodIsBounded: one reviewer sending decide and reopen
// Updates without end is refused once past (cells +
// api.MaxSignOffRevisions) at the level, with a refusal naming the limit,
// and the others still decide and sign both levels off.
func TestSignOffFloodIsBounded(t *testing.T) {
	e := newSignOffEnv(t, api.SignOffInput{Review: "rev-flood"})
	limit := 3 + api.MaxSignOffRevisions
	flood := limit + 10
	refusals := make([]string, flood)
	at := time.Duration(0)
	next := func() time.Duration { at += time.Minute; return at }
	for i := range flood {
		// Decide, reopen, decide, …: each accepted one moves q1 a version.
		version := min(i, limit)
		var arg any = decide("q1", 1, api.DecisionAccepted, "mallory", version)
		name := api.DecideUpdate
		if i%2 == 1 {
			name, arg = api.ReopenUpdate, api.ReopenRequest{Cell: "q1", Level: 1, Reason: "again", Reviewer: "mallory", ClientIdentity: "c", Version: version}
		}
		e.env.RegisterDelayedCallback(func() { e.update(t, name, arg, &refusals[i]) }, next())
	}
	var others [4]string
	e.env.RegisterDelayedCallback(func() { e.update(t, api.DecideUpdate, decide("q2", 1, api.DecisionAccepted, "bob", 0), &others[0]) }, next())
	e.env.RegisterDelayedCallback(func() { e.update(t, api.DecideUpdate, decide("q3", 1, api.DecisionAccepted, "bob", 0), &others[1]) }, next())
	e.env.RegisterDelayedCallback(func() { e.update(t, api.SignOffUpdate, signOffReq(1, "bob"), &others[2]) }, next())
	e.env.RegisterDelayedCallback(func() { e.update(t, api.SignOffUpdate, signOffReq(2, "carol"), &others[3]) }, next())
	e.env.ExecuteWorkflow(api.SignOffName, api.SignOffInput{Review: "rev-flood"})
	if err := e.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	for i, r := range refusals {
		switch {
		case i < limit && r != "":
			t.Errorf("flood update %d refused: %s", i+1, r)
		case i >= limit && !strings.Contains(r, fmt.Sprintf("mallory has made %d decisions and reopenings at level 1 of this sign-off, the most one reviewer may", limit)):
			t.Errorf("flood update %d: refusal %q, want the per-reviewer limit", i+1, r)
		}
	}
	for i, r := range others {
		if r != "" {
			t.Errorf("other reviewers' update %d refused: %s", i+1, r)
		}
	}
	var g api.SignOffGrid
	if err := e.env.GetWorkflowResult(&g); err != nil {
		t.Fatal(err)
	}
	if g.State != api.SignOffSignedOff || len(e.audit) != limit+4 {
		t.Errorf("state %s, %d audit lines; want signed off with the %d accepted updates", g.State, len(e.audit), limit+4)
	}
}

// TestSignOffKeepsRoom: a sign-off near its entries and text limits
// refuses changes of mind and reopenings that would take the room kept for
// pending cells and level sign-offs, and still takes those.
func TestSignOffKeepsRoom(t *testing.T) {
	accepted := func(reviewer string) *api.Decision {
		return &api.Decision{Level: 1, Decision: api.DecisionAccepted, Reviewer: reviewer}
	}
	// entries filled by many reviewers, none past its own limit.
	filled := func(n int) []api.SignOffEntry {
		es := make([]api.SignOffEntry, n)
		for i := range es {
			es[i] = api.SignOffEntry{Seq: i + 1, Action: api.ActionDecide, Cell: "q1", Level: 1, Reviewer: fmt.Sprintf("r%d", i%100)}
		}
		return es
	}
	run := func(entries, text int, cells []api.SignOffCell, signOffs ...api.LevelSignOff) *signOffRun {
		return &signOffRun{in: api.SignOffInput{Review: "rev"}.WithDefaults(), st: &signOffState{
			Subject: api.SignOffSubject{Kind: api.SubjectReview, WorkflowID: "rev"},
			Cells:   cells, SignOffs: signOffs, Entries: filled(entries), TextBytes: text,
		}}
	}
	reopen := func(cell string, level, version int) api.ReopenRequest {
		return api.ReopenRequest{Cell: cell, Level: level, Reason: "again", Reviewer: "bob", ClientIdentity: "c", Version: version}
	}
	max := api.MaxSignOffEntries
	tests := []struct {
		name    string
		s       *signOffRun
		check   func(s *signOffRun) error
		refused string
	}{
		{"a change of mind that leaves no room for the pending cells",
			run(max-5, 0, []api.SignOffCell{{ID: "q1", Version: 1, Level1: accepted("a")}, {ID: "q2"}, {ID: "q3"}}),
			func(s *signOffRun) error { return s.checkDecide(decide("q1", 1, api.DecisionRejected, "bob", 1)) },
			"keeps the rest for a decision on each cell still waiting for one (5)"},
		{"a reopening that leaves no room for the pending cells",
			run(max-5, 0, []api.SignOffCell{{ID: "q1", Version: 1, Level1: accepted("a")}, {ID: "q2"}, {ID: "q3"}}),
			func(s *signOffRun) error { return s.checkReopen(reopen("q1", 1, 1)) },
			"a change of mind or a reopening no longer fits"},
		{"a pending cell's first decision",
			run(max-5, 0, []api.SignOffCell{{ID: "q1", Version: 1, Level1: accepted("a")}, {ID: "q2"}, {ID: "q3"}}),
			func(s *signOffRun) error { return s.checkDecide(decide("q2", 1, api.DecisionEdited, "bob", 0)) },
			""},
		{"a first decision into the sign-offs' reserve",
			run(max-2, 0, []api.SignOffCell{{ID: "q1", Version: 1, Level1: accepted("a")}, {ID: "q2"}}),
			func(s *signOffRun) error { return s.checkDecide(decide("q2", 1, api.DecisionAccepted, "bob", 0)) },
			"keeps its last 2 for the level sign-offs not made yet"},
		{"level 1's sign-off from the reserve",
			run(max-2, 0, []api.SignOffCell{{ID: "q1", Version: 1, Level1: accepted("a")}}),
			func(s *signOffRun) error { return s.checkSignOff(signOffReq(1, "a")) },
			""},
		{"an optional level-2 decision from level 2's reserve",
			run(max-1, 0, []api.SignOffCell{{ID: "q1", Version: 1, Level1: accepted("a")}}, api.LevelSignOff{Level: 1, Reviewer: "a"}),
			func(s *signOffRun) error { return s.checkDecide(decide("q1", 2, api.DecisionAccepted, "bob", 1)) },
			"keeps its last 1 for the level sign-offs"},
		{"level 2's sign-off, the last entry",
			run(max-1, 0, []api.SignOffCell{{ID: "q1", Version: 1, Level1: accepted("a")}}, api.LevelSignOff{Level: 1, Reviewer: "a"}),
			func(s *signOffRun) error { return s.checkSignOff(signOffReq(2, "bob")) },
			""},
		{"a reason into the sign-offs' text",
			run(10, api.MaxSignOffTextBytes-2*api.SignOffReservedTextBytes, []api.SignOffCell{{ID: "q1"}}),
			func(s *signOffRun) error { return s.checkDecide(decide("q1", 1, api.DecisionRejected, "bob", 0)) },
			"less the 2048 kept for the level sign-offs"},
		{"a sign-off comment from the reserved text",
			run(10, api.MaxSignOffTextBytes-2*api.SignOffReservedTextBytes, []api.SignOffCell{{ID: "q1", Version: 1, Level1: accepted("a")}}),
			func(s *signOffRun) error {
				r := signOffReq(1, "a")
				r.Comment = strings.Repeat("x", api.MaxCommentBytes)
				return s.checkSignOff(r)
			},
			""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.check(tt.s)
			switch {
			case tt.refused == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.refused != "" && (err == nil || !strings.Contains(err.Error(), tt.refused)):
				t.Errorf("got %v, want a refusal holding %q", err, tt.refused)
			}
		})
	}
}
