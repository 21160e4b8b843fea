package activities

import (
	"context"
	"encoding/csv"
	"fmt"
	"strings"
	"testing"

	"github.com/memagent/memagent/activities/activitiestest"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/report"
)

// TestDatedReportPrefixCannotBeSquatted: another workflow that claimed the
// next run's dated report prefix ahead of time does not stop the nightly
// batch: it writes under a prefix that also names its first run.
func TestDatedReportPrefixCannotBeSquatted(t *testing.T) {
	a, store := batchActivities(t)
	putObject(t, store, "s3://in/m.jsonl", []byte(`{"document":"s3://docs/a.txt","question":"q"}`+"\n"))
	dated := "2026-11-25T020000Z"
	if err := a.claimPrefix(context.Background(), "output_prefix", "s3://reports/nightly/"+dated+"/", claim{WorkflowID: "squatter"}); err != nil {
		t.Fatal(err)
	}
	out, err := a.expandManifest(context.Background(), actwire.ExpandInput{Manifest: "s3://in/m.jsonl", WorkflowID: "nightly-2026-11-25",
		RunKey: "run-1", ReportPrefix: "s3://reports/nightly/", Dated: dated})
	if err != nil {
		t.Fatalf("a squatted dated prefix stopped the batch: %v", err)
	}
	if want := "s3://reports/nightly/" + dated + "-run-1/"; out.ReportPrefix != want {
		t.Errorf("report prefix = %q, want %q", out.ReportPrefix, want)
	}
	// Without dated_report a taken prefix is refused, as before.
	_, err = a.expandManifest(context.Background(), actwire.ExpandInput{Manifest: "s3://in/m.jsonl", WorkflowID: "other",
		RunKey: "run-2", ReportPrefix: "s3://reports/nightly/" + dated + "/"})
	assertType(t, err, api.ErrForbidden)
}

// TestResultsCSVEscapesEveryCallerCell: a workflow id, an id, an answer or
// an error that starts like a spreadsheet formula is written as text.
func TestResultsCSVEscapesEveryCallerCell(t *testing.T) {
	row := report.BatchCSVRow(api.BatchItemResult{Seq: 1, ID: "=cmd|' /C calc'!A0", WorkflowID: `=HYPERLINK("http://x","y")`, Answer: "+1",
		Error: "@SUM(1)", ErrorType: "-x", ResultURI: "=x", Question: "q", Document: "s3://d"})
	var b strings.Builder
	w := csv.NewWriter(&b)
	w.Write(row)
	w.Flush()
	cells, err := csv.NewReader(strings.NewReader(b.String())).Read()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cells {
		if c != "" && strings.ContainsRune("=+-@", rune(c[0])) {
			t.Errorf("cell %q starts like a formula", c)
		}
	}
}

// TestClaimsCannotSquat: a claim above other claims, over objects others
// wrote, too close to the bucket's root, outside the claim roots or inside
// a schedule's report prefix is refused as memagent.Forbidden, with nothing
// written; the schedule's own runs claim inside it.
func TestClaimsCannotSquat(t *testing.T) {
	ctx := context.Background()
	store := activitiestest.NewStore()
	a := &Activities{Bucket: "memagent", Store: store}
	putObject(t, store, "s3://memagent/docs/contract.txt", []byte("text"))
	if err := a.claimPrefix(ctx, "output_prefix", "s3://memagent/team-a/review1/", claim{WorkflowID: "victim", FirstRunID: "r1"}); err != nil {
		t.Fatal(err)
	}
	if err := a.claimPrefix(ctx, "report_prefix", "s3://memagent/reports/nightly/", claim{ScheduleID: "nightly"}); err != nil {
		t.Fatalf("the schedule's claim: %v", err)
	}
	keys := len(store.Keys())
	squatter := claim{WorkflowID: "squatter", FirstRunID: "s1"}
	for _, tt := range []struct {
		name, prefix string
		depth        int
		roots        []string
		want         string
	}{
		{"a folder at the bucket's root", "s3://memagent/reports/", 0, nil, "MEMAGENT_CLAIM_DEPTH"},
		{"a folder above a schedule's reports", "s3://memagent/reports/", 1, nil, "already holds objects"},
		{"a folder above another claim", "s3://memagent/team-a/", 1, nil, "already holds objects"},
		{"a folder of documents", "s3://memagent/docs/", 1, nil, "already holds objects"},
		{"the schedule's prefix", "s3://memagent/reports/nightly/", 0, nil, "a schedule's reports"},
		{"a dated prefix of the schedule", "s3://memagent/reports/nightly/2026-11-25T020000Z/", 0, nil, "a schedule's reports"},
		{"its fallback", "s3://memagent/reports/nightly/2026-11-25T020000Z-run/", 0, nil, "a schedule's reports"},
		{"outside the claim roots", "s3://memagent/team-b/out/", 0, []string{"s3://memagent/outputs/"}, "MEMAGENT_CLAIM_ROOTS"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a.ClaimDepth, a.ClaimRoots = tt.depth, tt.roots
			err := a.claimPrefix(ctx, "output_prefix", tt.prefix, squatter)
			assertType(t, err, api.ErrForbidden)
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("message %q does not say %q", err, tt.want)
			}
			for _, name := range []string{"victim", "nightly\"", "contract.txt", "review1/"} {
				if strings.Contains(err.Error(), name) && !strings.Contains(tt.prefix, strings.TrimSuffix(name, "\"")) {
					t.Errorf("message %q names %s, another caller's", err, name)
				}
			}
		})
	}
	a.ClaimDepth, a.ClaimRoots = 0, nil
	if n := len(store.Keys()); n != keys {
		t.Fatalf("the refused claims wrote %d objects", n-keys)
	}
	// Another schedule may not take it either; the same one may claim it
	// again (a schedule created again with the same id).
	assertType(t, a.claimPrefix(ctx, "report_prefix", "s3://memagent/reports/nightly/", claim{ScheduleID: "other"}), api.ErrForbidden)
	if err := a.claimPrefix(ctx, "report_prefix", "s3://memagent/reports/nightly/", claim{ScheduleID: "nightly"}); err != nil {
		t.Errorf("the schedule's claim again: %v", err)
	}
	// A run the schedule started claims its dated prefix inside; a run of
	// another schedule does not.
	run := claim{WorkflowID: "batch-nightly-2026-11-25T02:00:00Z", FirstRunID: "r", ScheduleID: "nightly"}
	if err := a.claimPrefix(ctx, "report_prefix", "s3://memagent/reports/nightly/2026-11-25T020000Z/", run); err != nil {
		t.Errorf("the schedule's run: %v", err)
	}
	assertType(t, a.claimPrefix(ctx, "report_prefix", "s3://memagent/reports/nightly/2026-11-26T020000Z/",
		claim{WorkflowID: "batch-other-1", ScheduleID: "other"}), api.ErrForbidden)
	// Deeper roots count folders from themselves.
	a.ClaimRoots, a.ClaimDepth = []string{"s3://memagent/outputs/"}, 1
	if err := a.claimPrefix(ctx, "output_prefix", "s3://memagent/outputs/mine/", squatter); err != nil {
		t.Errorf("a claim one folder below its root: %v", err)
	}
}

// TestScheduleOwnsItsReportPrefix: a schedule made without the starter
// claims its report prefix at its first run; from then on another caller
// claims neither the prefix, a dated prefix in it, nor a folder above it,
// and the next run writes under its plain dated prefix.
func TestScheduleOwnsItsReportPrefix(t *testing.T) {
	ctx := context.Background()
	a, store := batchActivities(t)
	a.ClaimDepth = 1
	putObject(t, store, "s3://in/m.jsonl", []byte(`{"document":"s3://docs/a.txt","question":"q"}`+"\n"))
	run := func(n int, dated string) *actwire.ExpandOutput {
		t.Helper()
		out, err := a.expandManifest(ctx, actwire.ExpandInput{Manifest: "s3://in/m.jsonl", WorkflowID: fmt.Sprintf("batch-nightly-%d", n),
			RunKey: fmt.Sprintf("run-%d", n), ReportPrefix: "s3://memagent/reports/nightly/", Dated: dated, ScheduleID: "nightly"})
		if err != nil {
			t.Fatalf("run %d: %v", n, err)
		}
		return out
	}
	run(1, "2026-11-24T020000Z")
	owner := string(getObject(t, store, "s3://memagent/reports/nightly/"+OwnerObject))
	if !strings.Contains(owner, `"schedule_id":"nightly"`) {
		t.Fatalf("the schedule's prefix is owned by %s", owner)
	}
	squatter := claim{WorkflowID: "squatter", FirstRunID: "s"}
	for _, p := range []string{"s3://memagent/reports/", "s3://memagent/reports/nightly/", "s3://memagent/reports/nightly/2026-11-25T020000Z/"} {
		assertType(t, a.claimPrefix(ctx, "output_prefix", p, squatter), api.ErrForbidden)
	}
	// A batch that names the schedule's prefix but no schedule started.
	_, err := a.expandManifest(ctx, actwire.ExpandInput{Manifest: "s3://in/m.jsonl", WorkflowID: "squatter", RunKey: "s",
		ReportPrefix: "s3://memagent/reports/nightly/", Dated: "2026-11-25T020000Z"})
	assertType(t, err, api.ErrForbidden)
	if out := run(2, "2026-11-25T020000Z"); out.ReportPrefix != "s3://memagent/reports/nightly/2026-11-25T020000Z/" {
		t.Errorf("the next run writes under %s", out.ReportPrefix)
	}
}

// TestOwnerCacheFollowsAScheduleRunsClaim: a lookup below a schedule's
// prefix (a squatter's attempt, say) before the schedule's run claims its
// dated prefix does not leave the run's outputs looking like the
// schedule's.
func TestOwnerCacheFollowsAScheduleRunsClaim(t *testing.T) {
	ctx := context.Background()
	store := activitiestest.NewStore()
	a := &Activities{Bucket: "memagent", Store: store}
	if err := a.ClaimScheduleReports(ctx, "s3://memagent/reports/nightly/", "nightly"); err != nil {
		t.Fatal(err)
	}
	dated := "s3://memagent/reports/nightly/2026-11-25T020000Z/"
	assertType(t, a.claimPrefix(ctx, "output_prefix", dated+"x/", claim{WorkflowID: "squatter"}), api.ErrForbidden)
	if err := a.claimPrefix(ctx, "report_prefix", dated, claim{WorkflowID: "batch-nightly-2", FirstRunID: "r", ScheduleID: "nightly"}); err != nil {
		t.Fatal(err)
	}
	owner, at, err := a.owners.nearest(ctx, store, dated+"report.json")
	if err != nil || owner.WorkflowID != "batch-nightly-2" || at != dated {
		t.Errorf("the run's report is owned by %+v at %s (%v), want the run's own claim", owner, at, err)
	}
}
