package activities

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/activities/activitiestest"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/s3store"
)

func TestReadWritePrefixes(t *testing.T) {
	a := &Activities{Bucket: "memagent"}
	for _, tt := range []struct {
		uri  string
		want bool
	}{
		{"s3://memagent/docs/x.txt", true}, {"s3://memagent-other/x.txt", false}, {"s3://private/x.txt", false},
	} {
		if err := a.allowRead("document", tt.uri); (err == nil) != tt.want {
			t.Errorf("allowRead(%s) = %v, want allowed %t", tt.uri, err, tt.want)
		} else if err != nil {
			assertType(t, err, api.ErrForbidden)
			if !strings.Contains(err.Error(), "MEMAGENT_READ_PREFIXES") {
				t.Errorf("message %q does not name the setting", err)
			}
		}
	}
	a.WritePrefixes = []string{"s3://out/team-a"}
	if err := a.allowWrite("output_prefix", "s3://out/team-a/run1/"); err != nil {
		t.Errorf("allowWrite under the prefix: %v", err)
	}
	if err := a.allowWrite("output_prefix", "s3://out/team-ab/"); err == nil {
		t.Error("allowWrite of a sibling that shares the prefix's spelling succeeded")
	}
}

func TestClaimPrefixKeepsOtherWorkflowsOut(t *testing.T) {
	ctx := context.Background()
	store := activitiestest.NewStore()
	a := &Activities{Bucket: "memagent", Store: store}
	wf1 := claim{WorkflowID: "wf-1", FirstRunID: "run-a"}
	if err := a.claimPrefix(ctx, "output_prefix", "s3://memagent/out/a/", wf1); err != nil {
		t.Fatal(err)
	}
	if err := a.claimPrefix(ctx, "output_prefix", "s3://memagent/out/a/", wf1); err != nil {
		t.Fatalf("the owner's second claim (a retry, a reset): %v", err)
	}
	err := a.claimPrefix(ctx, "output_prefix", "s3://memagent/out/a/", claim{WorkflowID: "wf-2"})
	assertType(t, err, api.ErrForbidden)
	if strings.Contains(err.Error(), "wf-1") || strings.Contains(err.Error(), "run-a") {
		t.Errorf("message %q names the owner: another caller learns no workflow id", err)
	}
	// A later workflow that reuses the owner's id (its run closed) is
	// another workflow.
	err = a.claimPrefix(ctx, "output_prefix", "s3://memagent/out/a/", claim{WorkflowID: "wf-1", FirstRunID: "run-b"})
	assertType(t, err, api.ErrForbidden)
	// A claim covers the prefixes inside it.
	err = a.claimPrefix(ctx, "output_prefix", "s3://memagent/out/a/review1/questions/q1/", claim{WorkflowID: "wf-2"})
	assertType(t, err, api.ErrForbidden)
	if err := a.claimPrefix(ctx, "output_prefix", "s3://memagent/out/a/mine/", wf1); err != nil {
		t.Errorf("the owner's claim inside its own prefix: %v", err)
	}
	// Another run's default outputs, the answer cache and converted text
	// are out of reach of a caller's prefix.
	for _, p := range []string{"s3://memagent/runs/wf-9/first/", "s3://memagent/answers/k1/", "s3://memagent/converted/v1/x/",
		"s3://memagent/checkpoints/abc/", "s3://memagent/guards/x/", "s3://memagent/documents/utf8-replaced/x/"} {
		assertType(t, a.claimPrefix(ctx, "output_prefix", p, claim{WorkflowID: "wf-2"}), api.ErrForbidden)
	}
	if len(store.Keys()) != 2 {
		t.Errorf("S3 holds %v, want only the two owner.json of wf-1", store.Keys())
	}
	// No run writes into the batches' answer cache, a batch's child
	// included: the batch writes its entries itself (cacheAnswer).
	for _, wf := range []string{"batch-1/0", "batch-2/7"} {
		assertType(t, a.claimPrefix(ctx, "output_prefix", "s3://memagent/answers/k1/", claim{WorkflowID: wf}), api.ErrForbidden)
	}
}

// racingStore answers a conditional write as S3 does to the loser of a
// race (409: taken, but not yet readable).
type racingStore struct{ *activitiestest.Store }

func (racingStore) PutIfAbsent(context.Context, s3store.Location, []byte, string) (bool, error) {
	return false, nil
}

func TestClaimPrefixRetriesARace(t *testing.T) {
	a := &Activities{Bucket: "memagent", Store: racingStore{activitiestest.NewStore()}}
	err := a.claimPrefix(context.Background(), "output_prefix", "s3://memagent/out/a/", claim{WorkflowID: "wf-1"})
	var appErr *temporal.ApplicationError
	if err == nil || errors.As(err, &appErr) {
		t.Errorf("error = %v, want a plain (retryable) error", err)
	}
}

func TestPutOnceKeepsAnotherRunsResult(t *testing.T) {
	ctx := context.Background()
	store := activitiestest.NewStore()
	a := &Activities{Bucket: "memagent", Store: store}
	loc := s3store.Location{Bucket: "memagent", Key: "runs/wf/first/result.json"}
	write := func(run, answer string) s3store.Location {
		t.Helper()
		at, err := a.putOnce(ctx, loc, run, func(at s3store.Location) any {
			return api.DocumentQAResult{RunID: run, Answer: answer, ResultURI: at.String()}
		})
		if err != nil {
			t.Fatal(err)
		}
		return at
	}
	if at := write("run-1", "A"); at != loc {
		t.Fatalf("first write went to %s", at)
	}
	if at := write("run-1", "A again"); at != loc {
		t.Fatalf("a retry of the same run went to %s, want %s", at, loc)
	}
	at := write("run-2", "B")
	if want := "runs/wf/first/runs/run-2/result.json"; at.Key != want {
		t.Fatalf("a reset run's result went to %s, want key %s", at, want)
	}
	if got := string(store.Object(loc)); !strings.Contains(got, `"A again"`) {
		t.Errorf("the first run's result was replaced: %s", got)
	}
	if got := string(store.Object(at)); !strings.Contains(got, at.String()) {
		t.Errorf("the diverted result does not name where it is: %s", got)
	}
}

func assertType(t *testing.T, err error, typ string) {
	t.Helper()
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != typ || !appErr.NonRetryable() {
		t.Fatalf("error %v, want a non-retryable %s", err, typ)
	}
}
