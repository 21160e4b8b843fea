package activities

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/activities/activitiestest"
)

// noListStore is a store that cannot list keys.
type noListStore struct{ ObjectStore }

// TestClaimPrefixGolden pins, claim after claim, what claimPrefix
// answers (nil, or the error's type and message) and the owner objects
// it writes: every refusal and every claim it grants. Run with -update to
// rewrite the file.
func TestClaimPrefixGolden(t *testing.T) {
	mem := activitiestest.NewStore()
	store := &recordingStore{Store: mem}
	a := &Activities{Bucket: "memagent", Store: store,
		WritePrefixes: []string{"s3://memagent/", "s3://shared/"}, ClaimRoots: []string{"s3://memagent/", "s3://shared/teams/"}}
	putObject(t, mem, "s3://memagent/team/docs/a.txt", []byte("a document"))
	putObject(t, mem, "s3://memagent/team/junk/owner.json", []byte("not an owner"))
	wf1 := claim{WorkflowID: "wf-1", FirstRunID: "run-a"}
	sched := claim{ScheduleID: "nightly"}
	byNightly := claim{WorkflowID: "nightly-2025-03-04", FirstRunID: "run-n", ScheduleID: "nightly"}
	steps := []struct {
		name   string
		prefix string
		c      claim
		store  ObjectStore
	}{
		{"outside write prefixes", "s3://elsewhere/team/a/", wf1, nil},
		{"no claimant", "s3://memagent/team/a/", claim{}, nil},
		{"worker area", "s3://memagent/runs/wf-9/first/", wf1, nil},
		{"answer cache", "s3://memagent/answers/k1/", claim{WorkflowID: "batch-1/0"}, nil},
		{"outside claim roots", "s3://shared/other/a/", wf1, nil},
		{"too shallow", "s3://memagent/team/", wf1, nil},
		{"too shallow below a deeper root", "s3://shared/teams/a/", wf1, nil},
		{"new", "s3://memagent/team/a/", wf1, nil},
		{"retry", "s3://memagent/team/a/", wf1, nil},
		{"inside its own", "s3://memagent/team/a/mine/", wf1, nil},
		{"another workflow", "s3://memagent/team/a/", claim{WorkflowID: "wf-2"}, nil},
		{"a later workflow of the same id", "s3://memagent/team/a/", claim{WorkflowID: "wf-1", FirstRunID: "run-b"}, nil},
		{"inside another's", "s3://memagent/team/a/b/c/", claim{WorkflowID: "wf-2"}, nil},
		{"over objects", "s3://memagent/team/docs/", wf1, nil},
		{"foreign owner object", "s3://memagent/team/junk/", wf1, nil},
		{"schedule", "s3://memagent/reports/nightly/", sched, nil},
		{"schedule again", "s3://memagent/reports/nightly/", sched, nil},
		{"run of the schedule inside it", "s3://memagent/reports/nightly/2025-03-04/", byNightly, nil},
		{"another workflow inside the schedule's", "s3://memagent/reports/nightly/x/", wf1, nil},
		{"store that cannot list", "s3://memagent/team/z/", wf1, noListStore{store}},
		{"race lost", "s3://memagent/team/r/", wf1, racingStore{mem}},
	}
	var golden []byte
	for _, s := range steps {
		a.Store = store
		if s.store != nil {
			a.Store = s.store
		}
		store.transcript.Reset()
		err := a.claimPrefix(context.Background(), "output_prefix", s.prefix, s.c)
		golden = fmt.Appendf(golden, "=== claim %s: %s by %+v\n%s", s.name, s.prefix, s.c, store.transcript.Bytes())
		if err != nil {
			golden = fmt.Appendf(golden, "error %s\n", errorWithType(err))
		}
	}
	checkGolden(t, "ownership/claims.golden", golden)
}

// errorWithType is err's message after its ApplicationError type, or
// after "retryable" for a plain error.
func errorWithType(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Type() + ": " + err.Error()
	}
	return "retryable: " + err.Error()
}
