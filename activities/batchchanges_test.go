package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// writeChangesReport writes a report of results under prefix, comparing as
// compareWith says.
func writeChangesReport(t *testing.T, a *Activities, prefix, compareWith string, auto bool, results []api.BatchItemResult) (*api.BatchReport, error) {
	t.Helper()
	store := a.Store.(interface {
		Put(ctx context.Context, loc Location, data []byte, contentType string) error
	})
	var part bytes.Buffer
	for _, r := range results {
		line, _ := json.Marshal(r)
		part.Write(append(line, '\n'))
	}
	loc, _ := ParseURI(prefix + "work/r/parts/p.jsonl")
	if err := store.Put(context.Background(), loc, part.Bytes(), "application/x-ndjson"); err != nil {
		t.Fatal(err)
	}
	return a.writeBatchReport(context.Background(), actwire.ReportInput{Name: "nightly", WorkflowID: "w", Model: "fake",
		ReportPrefix: prefix, Parts: []string{loc.String()}, Items: len(results), StartedAt: time.Now().UTC(),
		CompareWith: compareWith, CompareAuto: auto})
}

func answered(seq int, id, answer string) api.BatchItemResult {
	return api.BatchItemResult{Seq: seq, ID: id, Document: "s3://docs/" + id + ".txt", Question: "Q " + id, Status: api.ItemAnswered, Answer: answer, AnswerFound: answer != ""}
}

func TestWriteBatchReportChanges(t *testing.T) {
	a, store := batchActivities(t)
	base := "s3://memagent/reports/nightly/"
	night1 := []api.BatchItemResult{answered(0, "a", "Paris"), answered(1, "b", "Lyon"), answered(2, "c", "Nice"), answered(3, "gone", "x")}
	// The oldest report, and an unfinished batch after night 1 (no
	// report.json): neither is the previous report of night 2.
	if _, err := writeChangesReport(t, a, base+"2026-01-01T020000Z/", "", false, night1[:1]); err != nil {
		t.Fatal(err)
	}
	first, err := writeChangesReport(t, a, base+"2026-01-02T020000Z/", api.CompareWithPrevious, false, night1)
	if err != nil {
		t.Fatal(err)
	}
	if c := first.Changes; c == nil || c.New != 3 || c.PreviousReport != base+"2026-01-01T020000Z/report.json" {
		t.Fatalf("first changes = %+v, want 3 new against the first night", c)
	}
	putObject(t, store, base+"2026-01-02T030000Z/work/r/items/000000.jsonl", []byte("{}\n"))

	night2 := []api.BatchItemResult{
		answered(0, "b", "lyon."), // moved in the manifest, same answer normalised
		answered(1, "a", "Marseille"),
		{Seq: 2, ID: "c", Status: api.ItemFailed, Error: "boom"},
		answered(3, "new", "fresh <b>"),
	}
	rep, err := writeChangesReport(t, a, base+"2026-01-03T020000Z/", api.CompareWithPrevious, false, night2)
	if err != nil {
		t.Fatal(err)
	}
	want := api.ChangeSummary{Since: first.StartedAt, PreviousReport: base + "2026-01-02T020000Z/report.json",
		New: 1, Changed: 1, Unchanged: 1, Removed: 1, Failed: 1, ChangesURI: base + "2026-01-03T020000Z/changes.json"}
	if rep.Changes == nil || *rep.Changes != want {
		t.Fatalf("changes = %+v, want %+v", rep.Changes, want)
	}
	var doc api.ChangesReport
	if err := json.Unmarshal(getObject(t, store, want.ChangesURI), &doc); err != nil {
		t.Fatalf("changes.json: %v", err)
	}
	var got []string
	for _, c := range doc.Items {
		got = append(got, c.ID+":"+c.Status)
	}
	if strings.Join(got, " ") != "b:unchanged a:changed c:failed new:new gone:removed" || doc.ChangeSummary != want || doc.Report != rep.ReportURI {
		t.Errorf("changes.json = %v %+v, report %q", got, doc.ChangeSummary, doc.Report)
	}
	if a := doc.Items[1]; a.OldAnswer != "Paris" || a.NewAnswer != "Marseille" || *a.Seq != 1 || *a.PreviousSeq != 0 {
		t.Errorf("changed item = %+v", a)
	}
	page := string(getObject(t, store, rep.HTMLURI))
	for _, s := range []string{"What changed since " + first.StartedAt.Format(time.RFC3339), "<td>Paris</td><td>Marseille</td>", "fresh &lt;b&gt;", `href="changes.json"`} {
		if !strings.Contains(page, s) {
			t.Errorf("report.html lacks %q", s)
		}
	}

	// An explicit prefix compares with that report, whatever its date.
	rep, err = writeChangesReport(t, a, base+"2026-01-04T020000Z/", base+"2026-01-01T020000Z", false, night1[:2])
	if err != nil || rep.Changes == nil || rep.Changes.Unchanged != 1 || rep.Changes.New != 1 {
		t.Errorf("explicit compare_with: %v, %+v", err, rep.Changes)
	}
	// No report there: every item is new, no error.
	rep, err = writeChangesReport(t, a, "s3://memagent/reports/other/2026-01-01T020000Z/", api.CompareWithPrevious, false, night1)
	if err != nil || rep.Changes == nil || rep.Changes.New != 4 || rep.Changes.PreviousReport != "" {
		t.Errorf("no previous report: %v, %+v", err, rep.Changes)
	}
}

// TestCompareReadsOnlyWhatTheWorkerMay: the report to compare with is read
// under the read prefixes and never from a run's output area, as a
// manifest; a Schedule's own comparison then compares with nothing.
func TestCompareReadsOnlyWhatTheWorkerMay(t *testing.T) {
	a, _ := batchActivities(t)
	a.ReadPrefixes = []string{"s3://memagent/reports/"}
	tests := []struct {
		name, compareWith, prefix string
	}{
		{"outside the read prefixes", "s3://secret/reports/x/", "s3://memagent/reports/n/2026-01-02T020000Z/"},
		{"another run's outputs", "s3://memagent/batches/other/", "s3://memagent/reports/n/2026-01-02T020000Z/"},
		{"previous beside an unreadable prefix", api.CompareWithPrevious, "s3://memagent/batches/w/2026-01-02T020000Z/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := a.allowCompare(context.Background(), tt.compareWith, tt.prefix, reader{})
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) || appErr.Type() != api.ErrForbidden {
				t.Errorf("allowCompare = %v, want %s", err, api.ErrForbidden)
			}
			if _, err := writeChangesReport(t, a, tt.prefix, tt.compareWith, false, []api.BatchItemResult{answered(0, "a", "x")}); err == nil {
				t.Error("report compared with an unreadable report")
			}
			rep, err := writeChangesReport(t, a, tt.prefix, tt.compareWith, true, []api.BatchItemResult{answered(0, "a", "x")})
			if err != nil || rep.Changes != nil {
				t.Errorf("scheduled: %v, changes %+v; want a report without a comparison", err, rep.Changes)
			}
		})
	}
}

func TestDatedFolder(t *testing.T) {
	for name, want := range map[string]string{
		"2026-01-02T020000Z/": "2026-01-02T020000Z", "2026-01-02T020000Z-0f1e/": "2026-01-02T020000Z",
		"2026-01-02T020000Zx/": "", "work/": "", "2026-13-02T020000Z/": "", "2026-01-02/": "",
	} {
		got, ok := datedFolder(name)
		if got != want || ok != (want != "") {
			t.Errorf("datedFolder(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
}
