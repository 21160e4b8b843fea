package workflows

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/notify"
)

// TestBatchQAComparesWithPreviousScheduledReport: a batch a Schedule
// started with a dated report compares with the one before it, counts the
// changes in its result and POSTs them to notify_url (the search attribute
// is checked on the dev stack, TestScheduleReportsChanges); a notify_url that refuses does not fail the batch.
func TestBatchQAComparesWithPreviousScheduledReport(t *testing.T) {
	f := newBatchFixture(t)
	// The test's receiver is on loopback, which a worker notifies only
	// when its operator allows it; an attempt has 300 ms, and an
	// undelivered one lasts that long.
	loopback, _ := notify.ParseNets([]string{"127.0.0.0/8", "::1/128"})
	f.acts.NotifyPolicy, f.acts.NotifyAttemptTime = notify.Policy{AllowNets: loopback}, 300*time.Millisecond
	var mu sync.Mutex
	var posts []api.ChangeNotification
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/gone" {
			w.WriteHeader(http.StatusGone)
			return
		}
		var n api.ChangeNotification
		_ = json.NewDecoder(r.Body).Decode(&n)
		mu.Lock()
		posts = append(posts, n)
		mu.Unlock()
	}))
	defer hook.Close()
	night := time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC)
	f.setup = func(env *testsuite.TestWorkflowEnvironment) {
		env.SetStartTime(night)
		if err := env.SetTypedSearchAttributesOnStart(temporal.NewSearchAttributes(scheduledByKey.ValueSet("nightly"))); err != nil {
			t.Fatal(err)
		}
	}
	manifest := f.jsonlManifest(t, "nightly.jsonl", 5, nil)
	in := api.BatchQAInput{Manifest: manifest, ReportPrefix: "s3://reports/nightly/", DatedReport: true,
		Options: api.ModelOptions{ChunkTokens: 100}, NotifyURL: hook.URL + "/hook?token=x"}
	first, _ := f.runToEnd(t, "batch-nightly-1", in)
	if c := first.Changes; c == nil || c.New != 5 || c.PreviousReport != "" || first.Notify != api.NotifySent {
		t.Fatalf("first night: changes %+v, notify %q; want 5 new, sent", first.Changes, first.Notify)
	}

	// d2 grows a line, so the item over it answers otherwise.
	f.put(t, "s3://docs/d2.txt", makeDoc(4))
	night = night.Add(24 * time.Hour)
	second, _ := f.runToEnd(t, "batch-nightly-2", in)
	want := api.ChangeSummary{Since: time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC), PreviousReport: "s3://reports/nightly/2026-01-01T020000Z/report.json",
		Changed: 1, Unchanged: 4, ChangesURI: "s3://reports/nightly/2026-01-02T020000Z/changes.json"}
	if second.Changes == nil || *second.Changes != want || second.Notify != api.NotifySent {
		t.Fatalf("second night: changes %+v, notify %q; want %+v, sent", second.Changes, second.Notify, want)
	}
	var doc api.ChangesReport
	if err := json.Unmarshal(f.get(t, want.ChangesURI), &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range doc.Items {
		if (c.Status == api.ChangeChanged) != (c.ID == "item-1") || (c.ID == "item-1" && (c.OldAnswer != "w001" || c.NewAnswer != "w003")) {
			t.Errorf("item %s: %s %q → %q", c.ID, c.Status, c.OldAnswer, c.NewAnswer)
		}
	}
	mu.Lock()
	if len(posts) != 2 || posts[1].Changes == nil || *posts[1].Changes != want || posts[1].WorkflowID != "batch-nightly-2" {
		t.Errorf("posts = %+v, want one a night, the second with %+v", posts, want)
	}
	mu.Unlock()

	// A refused notification: the batch completes, notify failed. Not
	// scheduled, and without compare_with: no comparison.
	f.setup = func(env *testsuite.TestWorkflowEnvironment) { env.SetStartTime(night.Add(time.Hour)) }
	in.NotifyURL = hook.URL + "/gone"
	third, _ := f.runToEnd(t, "batch-adhoc", in)
	if third.Notify != api.NotifyFailed || third.Changes != nil {
		t.Errorf("refused notify: notify %q, changes %+v; want failed, no comparison", third.Notify, third.Changes)
	}
}
