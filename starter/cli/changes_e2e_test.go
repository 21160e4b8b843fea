package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/sdk/converter"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/s3store"
)

// TestScheduleReportsChanges is the standing question: a schedule over 20
// documents, triggered twice with 5 documents changed in between. The
// second run compares with the first run's report by itself: changes.json
// lists exactly the 5 items whose answers changed, the result counts them,
// MemagentChangedItems is set, report.html says what changed, and
// notify_url gets one POST a run, the second with the summary.
func TestScheduleReportsChanges(t *testing.T) {
	stack(t)
	startWorker(t)
	const id = "e2e-changes"
	c := dialTest(t)
	t.Cleanup(func() { _ = c.ScheduleClient().GetHandle(context.Background(), id).Delete(context.Background()) })
	cfg, store := testStore(t)

	var mu sync.Mutex
	var posts []api.ChangeNotification
	var queries []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n api.ChangeNotification
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
			t.Errorf("notification body: %v", err)
		}
		mu.Lock()
		posts, queries = append(posts, n), append(queries, r.URL.RawQuery)
		mu.Unlock()
	}))
	defer hook.Close()

	// Each document plants one code among filler sentences; the question
	// shares words with that sentence alone, so the simulator answers with
	// the code.
	putDepot := func(i int, code string) string {
		t.Helper()
		var b strings.Builder
		for k := range 6 {
			fmt.Fprintf(&b, "The orchard keeper walked row %d and counted the pears twice. ", k)
		}
		fmt.Fprintf(&b, "The vault code of depot %d is %s. ", i, code)
		b.WriteString("Rain came late that season and the river stayed low.\n")
		loc := s3store.Location{Bucket: cfg.Bucket, Key: fmt.Sprintf("changes-e2e/depot-%02d.txt", i)}
		if err := store.Put(context.Background(), loc, []byte(b.String()), "text/plain"); err != nil {
			t.Fatal(err)
		}
		return loc.String()
	}
	var lines []string
	for i := range 20 {
		doc := putDepot(i, fmt.Sprintf("KX%02d-ALPHA", i))
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("depot-%02d", i), "document": doc,
			"question": fmt.Sprintf("What is the vault code of depot %d?", i)})
		lines = append(lines, string(line))
	}
	manifest := filepath.Join(t.TempDir(), "depots.jsonl")
	if err := os.WriteFile(manifest, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const secret = "tok3n-do-not-log"
	if _, stderr, err := runCLI(t, "schedule", "create", "--id", id, "--manifest", manifest, "--every", "24h",
		"--chunk-tokens", "2000", "--notify-url", hook.URL+"/hook?token="+secret); err != nil {
		t.Fatalf("schedule create: %v\n%s", err, stderr)
	}
	for _, args := range [][]string{{"schedule", "describe", id}, {"schedule", "describe", id, "--json"}} {
		out, stderr, err := runCLI(t, args...)
		if err != nil || strings.Contains(out, secret) || !strings.Contains(out, hook.URL+"/…") {
			t.Errorf("%s: %v; want the notify_url's scheme and host, not its token:\n%s%s", strings.Join(args, " "), err, out, stderr)
		}
	}
	trigger := func() api.BatchQAResult {
		t.Helper()
		out, stderr, err := runCLI(t, "schedule", "trigger", id, "--wait", "--json")
		if err != nil {
			t.Fatalf("schedule trigger --wait: %v\n%s", err, stderr)
		}
		if strings.Contains(out+stderr, secret) {
			t.Errorf("trigger printed the notify_url's token:\n%s%s", out, stderr)
		}
		var res api.BatchQAResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("trigger --json printed %q: %v", out, err)
		}
		if res.Items != 20 || res.Failed != 0 {
			t.Fatalf("batch result = %+v, want 20 items, none failed", res)
		}
		return res
	}

	first := trigger()
	if ch := first.Changes; ch == nil || ch.New != 20 || ch.PreviousReport != "" || first.Notify != api.NotifySent {
		t.Fatalf("first run: changes %+v, notify %q; want 20 new (no previous report), notify sent", first.Changes, first.Notify)
	}

	changed := []string{"depot-02", "depot-07", "depot-11", "depot-15", "depot-19"}
	for _, d := range changed {
		var i int
		fmt.Sscanf(d, "depot-%d", &i)
		putDepot(i, fmt.Sprintf("KX%02d-OMEGA", i))
	}
	second := trigger()
	want := api.ChangeSummary{Since: first.Changes.Since, PreviousReport: first.ReportURI, Changed: 5, Unchanged: 15,
		ChangesURI: second.ReportPrefix + api.ReportChangesName}
	if second.Changes == nil {
		t.Fatalf("second run: no changes in %+v", second)
	}
	want.Since = second.Changes.Since
	if *second.Changes != want || second.Notify != api.NotifySent {
		t.Errorf("second run: changes %+v, notify %q; want %+v, sent", *second.Changes, second.Notify, want)
	}
	var rep api.BatchReport
	readJSON(t, store, first.ReportURI, &rep)
	if !second.Changes.Since.Equal(rep.StartedAt) {
		t.Errorf("since %s, want the first run's start %s", second.Changes.Since, rep.StartedAt)
	}

	var doc api.ChangesReport
	readJSON(t, store, want.ChangesURI, &doc)
	var got []string
	for _, it := range doc.Items {
		switch it.Status {
		case api.ChangeChanged:
			got = append(got, it.ID)
			if !strings.HasSuffix(it.OldAnswer, "ALPHA") || !strings.HasSuffix(it.NewAnswer, "OMEGA") {
				t.Errorf("%s: %q → %q, want the ALPHA code then the OMEGA one", it.ID, it.OldAnswer, it.NewAnswer)
			}
		case api.ChangeUnchanged:
		default:
			t.Errorf("%s is %s, want changed or unchanged", it.ID, it.Status)
		}
	}
	if !slices.Equal(got, changed) || len(doc.Items) != 20 {
		t.Errorf("changes.json lists %v as changed (of %d items), want %v", got, len(doc.Items), changed)
	}
	loc, _ := s3store.ParseURI(second.HTMLURI)
	page, err := store.ReadAll(context.Background(), loc)
	if err != nil || !strings.Contains(string(page), "What changed since") || !strings.Contains(string(page), "KX07-OMEGA") {
		t.Errorf("report.html: %v; want a What changed section with the new answers", err)
	}

	eventually(t, "MemagentChangedItems on the second run", func() (bool, string) {
		d, err := c.DescribeWorkflowExecution(context.Background(), second.WorkflowID, "")
		if err != nil {
			return false, err.Error()
		}
		p, ok := d.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[api.AttrChangedItems]
		if !ok {
			return false, "unset"
		}
		var n int64
		if err := converter.GetDefaultDataConverter().FromPayload(p, &n); err != nil {
			return false, err.Error()
		}
		return n == 5, fmt.Sprint(n)
	})

	mu.Lock()
	defer mu.Unlock()
	if len(posts) != 2 || posts[1].WorkflowID != second.WorkflowID || posts[1].Changes == nil || *posts[1].Changes != want {
		t.Fatalf("notify_url got %d POSTs %+v; want one a run, the second with %+v", len(posts), posts, want)
	}
	if queries[1] != "token="+secret {
		t.Errorf("the POST went to ?%s, want the notify_url's own query", queries[1])
	}
}
