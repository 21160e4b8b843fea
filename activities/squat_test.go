package activities

import (
	"context"
	"encoding/csv"
	"strings"
	"testing"

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
