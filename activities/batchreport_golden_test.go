package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/memagent/memagent/activities/activitiestest"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/s3store"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/")

// recordingStore keeps, in order, every object written through it with
// its content type: a transcript of what an activity wrote. Puts may
// come at once (an update writes its trace and checkpoint together), so
// each is recorded whole under mu.
type recordingStore struct {
	*activitiestest.Store
	mu         sync.Mutex
	transcript bytes.Buffer
}

func (s *recordingStore) record(loc s3store.Location, data []byte, contentType string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(&s.transcript, "=== put %s (%s)\n", loc, contentType)
	s.transcript.Write(data)
	s.transcript.WriteString("\n")
}

func (s *recordingStore) Put(ctx context.Context, loc s3store.Location, data []byte, contentType string) error {
	s.record(loc, data, contentType)
	return s.Store.Put(ctx, loc, data, contentType)
}

func (s *recordingStore) PutReader(ctx context.Context, loc s3store.Location, body io.ReadSeeker, size int64, contentType string) error {
	data, err := io.ReadAll(io.LimitReader(body, size))
	if err != nil {
		return err
	}
	s.record(loc, data, contentType)
	return s.Store.Put(ctx, loc, data, contentType)
}

// TestWriteBatchReportGolden pins every byte writeBatchReport writes, the
// content types and the order of the writes (report.json last), for a
// batch with labels (two of them over the value limit), failures and a
// comparison with a previous report, and for a batch of samples. The
// finish time, the one value that is not a function of the input, is
// replaced by FINISHED_AT. Run with -update to rewrite the files.
func TestWriteBatchReportGolden(t *testing.T) {
	start := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	withLabels := func(items []api.BatchItemResult) []api.BatchItemResult {
		for i := range items {
			items[i].Labels["another"] = fmt.Sprint(1000 - i)
		}
		return items
	}
	sampled := func() []api.BatchItemResult {
		var out []api.BatchItemResult
		for _, r := range batchItems(6) {
			for k := range 2 {
				s := r
				s.Sample = k
				if k == 1 && r.Scores != nil {
					sc := *r.Scores
					sc.F1 = 1 - sc.F1
					s.Scores = &sc
				}
				if r.Seq == 2 && k == 1 {
					s.Status, s.Scores, s.Error, s.ErrorType = api.ItemFailed, nil, "boom", api.ErrPromptTooLong
				}
				out = append(out, s)
			}
		}
		return out
	}
	// The previous night: items 5..39, a third of them answered otherwise,
	// and one item the manifest no longer has.
	previous := func() []api.BatchItemResult {
		items := batchItems(40)[5:]
		for i := range items {
			if i%3 == 0 && items[i].Status != api.ItemFailed {
				items[i].Answer = "an older answer"
			}
		}
		gone := items[0]
		gone.ID = "gone"
		return append(items, gone)
	}
	for _, tc := range []struct {
		name     string
		items    []api.BatchItemResult
		samples  int
		previous []api.BatchItemResult
	}{
		{name: "labels_changes", items: withLabels(batchItems(101)), previous: previous()},
		{name: "samples", items: sampled(), samples: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, mem := batchActivities(t)
			store := &recordingStore{Store: mem}
			a.Store = store
			in := actwire.ReportInput{Name: "golden <" + tc.name + ">", WorkflowID: "wf-" + tc.name, RunID: "run-1",
				Manifest: "s3://in/m.jsonl", Model: "fake", StartedAt: start, Items: len(tc.items), Samples: tc.samples}
			if tc.samples > 1 {
				in.Items /= tc.samples
			}
			if tc.previous != nil {
				prev := "s3://memagent/reports/" + tc.name + "/2025-03-03T050607Z/"
				for i := range tc.previous {
					tc.previous[i].Seq = i
				}
				pin := in
				pin.ReportPrefix, pin.Items, pin.RunID = prev, len(tc.previous), "run-0"
				pin.Parts = writeParts(t, mem, prev+"work/r/", tc.previous, 2)
				if _, err := a.writeBatchReport(context.Background(), pin); err != nil {
					t.Fatal(err)
				}
				in.CompareWith = prev
			}
			in.ReportPrefix = "s3://memagent/reports/" + tc.name + "/2025-03-04T050607Z/"
			in.Parts = writeParts(t, mem, in.ReportPrefix+"work/r/", tc.items, 3)
			store.transcript.Reset()
			rep, err := a.writeBatchReport(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			got := store.transcript.Bytes()
			stamp, _ := json.Marshal(rep.FinishedAt)
			got = bytes.ReplaceAll(got, bytes.Trim(stamp, `"`), []byte("FINISHED_AT"))
			got = bytes.ReplaceAll(got, []byte(rep.FinishedAt.Format(time.RFC3339)), []byte("FINISHED_AT"))
			checkGolden(t, "batchreport/"+tc.name+".golden", got)
		})
	}
}

// checkGolden compares got with testdata/<name>, which -update rewrites,
// and reports the first line that differs.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", filepath.FromSlash(name))
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := 0; ; i++ {
		var g, w []byte
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if i >= len(gl) || i >= len(wl) || !bytes.Equal(g, w) {
			t.Fatalf("%s differs at line %d:\n got %.300s\nwant %.300s", path, i+1, g, w)
		}
	}
}
