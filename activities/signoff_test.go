package activities

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/memagent/memagent/activities/activitiestest"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/s3store"
)

// TestAppendAudit: the log gains each entry once, however often an append
// is retried, and a log shorter than the sign-off wrote is refused.
func TestAppendAudit(t *testing.T) {
	store := activitiestest.NewStore()
	a := &Activities{Store: store, Bucket: "memagent"}
	ctx := context.Background()
	uri := "s3://memagent/reviews/rev/r1/signoff/audit.jsonl"
	e := func(seq int) api.SignOffEntry {
		return api.SignOffEntry{Seq: seq, Action: api.ActionDecide, Cell: "q1", Level: 1, Decision: api.DecisionAccepted, Reviewer: "alice"}
	}
	steps := []actwire.AppendAuditInput{
		{AuditURI: uri, From: 0, Entries: []api.SignOffEntry{e(1), e(2)}},
		{AuditURI: uri, From: 0, Entries: []api.SignOffEntry{e(1), e(2)}}, // a retry
		{AuditURI: uri, From: 2, Entries: []api.SignOffEntry{e(3)}},
		{AuditURI: uri, From: 1, Entries: []api.SignOffEntry{e(2), e(3), e(4)}}, // overlaps: only 4 is new
	}
	for i, in := range steps {
		if err := a.appendAudit(ctx, in); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	data, err := store.ReadAll(ctx, s3store.Location{Bucket: "memagent", Key: "reviews/rev/r1/signoff/audit.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 4 {
		t.Fatalf("audit log has %d lines, want 4:\n%s", len(lines), data)
	}
	for i, l := range lines {
		if !strings.Contains(l, `"seq":`+string(rune('1'+i))) {
			t.Errorf("line %d: %s", i+1, l)
		}
	}
	err = a.appendAudit(ctx, actwire.AppendAuditInput{AuditURI: uri, From: 9, Entries: []api.SignOffEntry{e(10)}})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != api.ErrBadInput || !strings.Contains(err.Error(), "changed outside the sign-off") {
		t.Errorf("a log shorter than written: %v, want a BadInput", err)
	}
}

// TestSignOffWritesOnlyAsASignOff: the sign-off's files are written only
// by a workflow whose id is a sign-off's, in a signoff/ folder, and
// inside the write prefixes.
func TestSignOffWritesOnlyAsASignOff(t *testing.T) {
	a := &Activities{Store: activitiestest.NewStore(), Bucket: "memagent", WritePrefixes: []string{"s3://memagent/"}}
	if err := a.allowSignOffOutput(context.Background(), "audit log", "s3://elsewhere/reviews/x/signoff/audit.jsonl"); err == nil {
		t.Error("a write outside the write prefixes was allowed")
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(func(ctx context.Context, uri string) error {
		return a.allowSignOffOutput(ctx, "audit log", uri)
	}, activity.RegisterOptions{Name: "check"})
	_, err := env.ExecuteActivity("check", "s3://memagent/reviews/default-test-workflow-id/r1/signoff/audit.jsonl")
	if err == nil || !strings.Contains(err.Error(), "only a sign-off") {
		t.Errorf("a review's own workflow writing a sign-off's file: %v, want a refusal", err)
	}
}
