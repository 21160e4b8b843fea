package activities

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/memagent/memagent/activities/activitiestest"
	"github.com/memagent/memagent/api"
)

var updateBoundary = flag.Bool("update-boundary", false, "rewrite the table of docs/DEPLOY.md's \"What a caller may read and write\" from TestBoundaryTable")

// boundaryFields are the input fields that name an S3 location, as the
// table's columns: what a caller may read through them, then what it may
// claim (and so write under).
var boundaryFields = []string{"document", "documents[]", "manifest", "compare_with", "output_prefix", "report_prefix"}

// boundaryRow is one key layout: an example key in the worker's bucket
// (memagent), and what each field may do with it.
type boundaryRow struct {
	// layout is the row's name in the table; area the workerAreas prefix
	// it stands for ("" for a row that is not a worker's area).
	layout, area string
	// key is an example object of the layout; a write field claims the
	// folder it is in.
	key string
	// want are the table's cells, one per boundaryFields entry: "read",
	// "claim", "no", or "its runs" (a schedule's own runs only).
	want [6]string
}

// emptyKey is the key of the row of an empty prefix: left out of the
// bucket.
const emptyKey = "team-b/review2/x.txt"

// boundaryRows enumerate every key layout the worker writes, and the
// places a caller's prefix may be, with what the boundary promises. They
// are written out here, apart from workerAreas, so that dropping an area
// from the list (or adding one without a row) fails the test.
var boundaryRows = []boundaryRow{
	{"`runs/<workflow id>/<first run id>/…`", "runs/", "runs/wf/run/chunks/000000.json", never()},
	{"`reviews/<workflow id>/<first run id>/…`", "reviews/", "reviews/wf/run/grid.json", never()},
	{"`batches/<workflow id>/…`", "batches/", "batches/wf/report.json", never()},
	{"`answers/<item key>/…` (the batches' answer cache)", "answers/", "answers/k/result.json", never()},
	{"`indexes/<document version>/…`", "indexes/", "indexes/v/qwen2.5-5000.json", never()},
	{"`converted/…` (converted text, assembled corpora)", "converted/", "converted/v2/v/text.txt", never()},
	{"`checkpoints/<key>/<chain>.json`", "checkpoints/", "checkpoints/k/c.json", never()},
	{"`guards/<hash>.json`", "guards/", "guards/h/g.json", never()},
	{"`documents/utf8-replaced/…`", "documents/utf8-replaced/", "documents/utf8-replaced/v/x.txt", never()},
	{"`documents/sha256/…` (the starter's uploads)", "documents/", "documents/sha256/ab/notes.txt", inputOnly()},
	{"`manifests/sha256/…` (the starter's uploads)", "manifests/", "manifests/sha256/ab/m.jsonl", inputOnly()},
	{"`contexts/sha256/…` (a MemAgent manifest's contexts)", "contexts/", "contexts/sha256/ab/c.txt", inputOnly()},
	{"a prefix another workflow claimed (its `owner.json`, outputs)", "", "team-a/review1/chunks/000000.json", never()},
	{"a schedule's report prefix, and its runs' dated prefixes", "", "reports/nightly/2026-11-24T020000Z/report.json",
		[6]string{"no", "no", "no", "its runs", "no", "its runs"}},
	{"an empty prefix at least `MEMAGENT_CLAIM_DEPTH` (2) folders below a claim root", "", emptyKey,
		[6]string{"read", "read", "read", "read", "claim", "claim"}},
	{"a folder closer to the root (`s3://<bucket>/team-b/`)", "", "team-b/x.txt",
		[6]string{"read", "read", "read", "read", "no", "no"}},
	{"a prefix that holds objects (documents, say) no claim covers", "", "docs/contracts/x.txt",
		[6]string{"read", "read", "read", "read", "no", "no"}},
}

// never is a row no field may read or claim; inputOnly one that every
// input field may read and no output prefix claim.
func never() [6]string     { return [6]string{"no", "no", "no", "no", "no", "no"} }
func inputOnly() [6]string { return [6]string{"read", "read", "read", "read", "no", "no"} }

// boundaryWorld is the bucket the table's checks run against: another
// workflow's claimed prefix with its outputs, and a schedule's report
// prefix with a run's report.
func boundaryWorld(t *testing.T) *Activities {
	t.Helper()
	ctx := context.Background()
	store := activitiestest.NewStore()
	a := &Activities{Bucket: "memagent", Store: store}
	if err := a.claimPrefix(ctx, "output_prefix", "s3://memagent/team-a/review1/", claim{WorkflowID: "victim", FirstRunID: "v"}); err != nil {
		t.Fatal(err)
	}
	if err := a.ClaimScheduleReports(ctx, "s3://memagent/reports/nightly/", "nightly"); err != nil {
		t.Fatal(err)
	}
	if err := a.claimPrefix(ctx, "report_prefix", "s3://memagent/reports/nightly/2026-11-24T020000Z/",
		claim{WorkflowID: "batch-nightly-1", FirstRunID: "n1", ScheduleID: "nightly"}); err != nil {
		t.Fatal(err)
	}
	for _, r := range boundaryRows {
		if r.key != emptyKey {
			putObject(t, store, "s3://memagent/"+r.key, []byte("x"))
		}
	}
	return a
}

// check is what field may do with row's key: "read" or "claim" when the
// boundary lets a caller (a workflow no schedule started) do it, "its
// runs" when only a run of the schedule that holds it may, else "no".
func (r boundaryRow) check(t *testing.T, field string) string {
	ctx := context.Background()
	uri := "s3://memagent/" + r.key
	dir := uri[:strings.LastIndexByte(uri, '/')+1]
	try := func(sched string) error {
		a := boundaryWorld(t)
		switch field {
		case "output_prefix", "report_prefix":
			c := claim{WorkflowID: "caller", FirstRunID: "c"}
			at := dir
			if sched != "" {
				// The schedule's next run, claiming its own dated prefix
				// beside the earlier one.
				c = claim{WorkflowID: "batch-nightly-2", FirstRunID: "n2", ScheduleID: sched}
				if d, ok := strings.CutSuffix(dir, "2026-11-24T020000Z/"); ok {
					at = d + "2026-11-25T020000Z/"
				}
			}
			return a.claimPrefix(ctx, field, at, c)
		case "compare_with":
			if strings.HasSuffix(r.key, api.ReportJSONName) {
				return a.allowCompare(ctx, dir, "s3://memagent/team-c/b/", reader{ScheduleID: sched})
			}
		}
		return a.allowInput(ctx, strings.TrimSuffix(field, "[]"), uri, reader{ScheduleID: sched})
	}
	verb := "read"
	if strings.HasSuffix(field, "_prefix") {
		verb = "claim"
	}
	switch {
	case try("") == nil:
		return verb
	case (field == "compare_with" || field == "report_prefix") && try("nightly") == nil:
		// Only BatchQA knows the schedule that started it, and only its
		// report prefix and comparison take it into account.
		return "its runs"
	}
	return "no"
}

// TestBoundaryTable performs, for every key layout the worker writes and
// every input field that names an S3 location, what the field would do
// with it (read it as an input, claim its folder for outputs), with the
// worker's own checks, and compares with what the boundary promises; the
// table in docs/DEPLOY.md is the same, rendered from these results
// (-update-boundary rewrites it).
func TestBoundaryTable(t *testing.T) {
	listed := map[string]bool{}
	for _, r := range boundaryRows {
		if r.area != "" {
			listed[r.area] = true
		}
	}
	for _, ar := range workerAreas {
		if !listed[ar.Prefix] {
			t.Errorf("workerAreas has %s, which the table has no row for: add one to boundaryRows", ar.Prefix)
		}
	}
	for area := range listed {
		found := false
		for _, ar := range workerAreas {
			found = found || ar.Prefix == area
		}
		if !found {
			t.Errorf("the table has a row for %s, which workerAreas lacks: the worker writes there, so list it in workerAreas", area)
		}
	}
	var b strings.Builder
	b.WriteString("| Key (in the worker's bucket) | `" + strings.Join(boundaryFields, "` | `") + "` |\n")
	b.WriteString("|---" + strings.Repeat("|---", len(boundaryFields)) + "|\n")
	for _, r := range boundaryRows {
		b.WriteString("| " + r.layout)
		for i, f := range boundaryFields {
			got := r.check(t, f)
			if got != r.want[i] {
				t.Errorf("%s, %s: %s, want %s", r.layout, f, got, r.want[i])
			}
			b.WriteString(" | " + got)
		}
		b.WriteString(" |\n")
	}
	const path = "../docs/DEPLOY.md"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- boundary table: TestBoundaryTable -->\n", "<!-- end boundary table -->\n"
	i, j := strings.Index(string(doc), begin), strings.Index(string(doc), end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q … %q section", path, begin, end)
	}
	if have := string(doc[i+len(begin) : j]); have != b.String() {
		if !*updateBoundary {
			t.Errorf("%s's boundary table differs from what the checks do: run go test ./activities -run TestBoundaryTable -update-boundary\n--- have\n%s--- want\n%s", path, have, b.String())
			return
		}
		out := string(doc[:i+len(begin)]) + b.String() + string(doc[j:])
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "rewrote the boundary table of %s\n", path)
	}
}
