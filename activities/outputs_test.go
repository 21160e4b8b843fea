package activities

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/memagent/memagent/activities/activitiestest"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/s3store"
)

// readLog records every object read other than an owner.json, and every
// write.
type readLog struct {
	*activitiestest.Store
	mu     sync.Mutex
	reads  []string
	writes []string
}

func (s *readLog) read(loc s3store.Location) {
	if !strings.HasSuffix(loc.Key, "/"+OwnerObject) {
		s.mu.Lock()
		s.reads = append(s.reads, loc.String())
		s.mu.Unlock()
	}
}

func (s *readLog) Head(ctx context.Context, loc s3store.Location) (s3store.ObjectInfo, error) {
	s.read(loc)
	return s.Store.Head(ctx, loc)
}

func (s *readLog) Open(ctx context.Context, loc s3store.Location, etag string) (io.ReadCloser, error) {
	s.read(loc)
	return s.Store.Open(ctx, loc, etag)
}

func (s *readLog) ReadRange(ctx context.Context, loc s3store.Location, start, end int64, etag string) ([]byte, error) {
	s.read(loc)
	return s.Store.ReadRange(ctx, loc, start, end, etag)
}

func (s *readLog) ReadAll(ctx context.Context, loc s3store.Location) ([]byte, error) {
	s.read(loc)
	return s.Store.ReadAll(ctx, loc)
}

func (s *readLog) Put(ctx context.Context, loc s3store.Location, data []byte, contentType string) error {
	s.mu.Lock()
	s.writes = append(s.writes, loc.String())
	s.mu.Unlock()
	return s.Store.Put(ctx, loc, data, contentType)
}

func (s *readLog) reset() (reads, writes []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	reads, writes, s.reads, s.writes = s.reads, s.writes, nil, nil
	return reads, writes
}

// TestOutputsAreNotInputs performs the attack of issue 37: another
// workflow's chunk trace, result or report, under the prefix it claimed,
// named as a document, a corpus member (one by one, or every object found
// under the prefix), a manifest or a compare_with report. Each is refused
// as memagent.Forbidden before anything is read or written, naming neither
// the other workflow nor its run. A schedule's run still compares with
// the schedule's earlier reports, and finds none of another workflow's.
func TestOutputsAreNotInputs(t *testing.T) {
	ctx := context.Background()
	store := &readLog{Store: activitiestest.NewStore()}
	a := &Activities{Bucket: "memagent", Store: store, Templates: DefaultTemplates(), Tokenizers: NewTokenizer}
	victim := "s3://memagent/team-a/review1/"
	if err := a.claimPrefix(ctx, "output_prefix", victim, claim{WorkflowID: "matter-acme-merger", FirstRunID: "run-victim"}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"chunks/000000.json", "result.json", "report.json", "results.jsonl", "grid.json"} {
		putObject(t, store.Store, victim+k, []byte(`{"memory_after":"the merger closes on 3 March"}`))
	}
	putObject(t, store.Store, "s3://memagent/docs/mine.txt", []byte("my own document"))
	listed, err := store.List(ctx, "memagent", "team-a/review1/", 0)
	if err != nil {
		t.Fatal(err)
	}
	var members []string
	for _, k := range listed {
		members = append(members, "s3://memagent/"+k)
	}
	store.reset()

	trace := victim + "chunks/000000.json"
	for _, tt := range []struct {
		name string
		run  func() error
	}{
		{"a chunk trace as the document", func() error {
			_, err := a.convertDocument(ctx, actwire.ConvertInput{Document: trace})
			return err
		}},
		{"a result as the document to index", func() error {
			_, err := a.prepareDocument(ctx, actwire.PrepareInput{Document: victim + "result.json", Question: "q", WorkflowID: "thief"})
			return err
		}},
		{"a trace as a corpus member", func() error {
			_, err := a.assembleCorpus(ctx, actwire.CorpusInput{Documents: []string{"s3://memagent/docs/mine.txt", trace}})
			return err
		}},
		{"the corpus of every object under the prefix", func() error {
			_, err := a.assembleCorpus(ctx, actwire.CorpusInput{Documents: members})
			return err
		}},
		{"results.jsonl as a manifest", func() error {
			_, err := a.expandManifest(ctx, actwire.ExpandInput{Manifest: victim + "results.jsonl", WorkflowID: "thief", RunKey: "r"})
			return err
		}},
		{"the report to compare with", func() error {
			putObject(t, store.Store, "s3://memagent/docs/m.jsonl", []byte(`{"document":"s3://memagent/docs/mine.txt","question":"q"}`+"\n"))
			store.reset()
			_, err := a.expandManifest(ctx, actwire.ExpandInput{Manifest: "s3://memagent/docs/m.jsonl", WorkflowID: "thief", RunKey: "r", CompareWith: victim})
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			assertType(t, err, api.ErrForbidden)
			for _, name := range []string{"matter-acme-merger", "run-victim"} {
				if strings.Contains(errText(err), name) {
					t.Errorf("the refusal names %s: %v", name, err)
				}
			}
			reads, writes := store.reset()
			for _, r := range reads {
				if strings.HasPrefix(r, victim) {
					t.Errorf("%s was read", r)
				}
			}
			if len(writes) > 0 {
				t.Errorf("wrote %v", writes)
			}
		})
	}

	t.Run("a schedule compares with its own earlier reports only", func(t *testing.T) {
		a.ReadPrefixes, a.WritePrefixes = nil, nil
		base := "s3://memagent/reports/nightly/"
		if err := a.ClaimScheduleReports(ctx, base, "nightly"); err != nil {
			t.Fatal(err)
		}
		// Night 1, a run of the schedule. Nothing else can be inside: a
		// claim is made on an empty prefix, and only the schedule's runs
		// claim inside its.
		night1 := base + "2026-11-24T020000Z/"
		if err := a.claimPrefix(ctx, "report_prefix", night1, claim{WorkflowID: "batch-nightly-1", FirstRunID: "n1", ScheduleID: "nightly"}); err != nil {
			t.Fatal(err)
		}
		if _, err := writeChangesReport(t, a, night1, "", false, []api.BatchItemResult{answered(0, "a", "Paris")}); err != nil {
			t.Fatal(err)
		}
		night2 := base + "2026-11-25T020000Z/"
		if err := a.claimPrefix(ctx, "report_prefix", night2, claim{WorkflowID: "batch-nightly-2", FirstRunID: "n2", ScheduleID: "nightly"}); err != nil {
			t.Fatal(err)
		}
		if err := a.allowCompare(ctx, api.CompareWithPrevious, night2, reader{ScheduleID: "nightly"}); err != nil {
			t.Fatalf("the schedule's run comparing with its previous report: %v", err)
		}
		prev, err := a.findPrevious(ctx, api.CompareWithPrevious, night2)
		if err != nil || prev != night1 {
			t.Errorf("previous = %q (%v), want %s", prev, err, night1)
		}
		// Dated batches no schedule started, under a folder nobody
		// claimed: each is another workflow, and none reads the other's.
		other, mine := "s3://memagent/team-d/dated/2026-11-24T020000Z/", "s3://memagent/team-d/dated/2026-11-25T020000Z/"
		if err := a.claimPrefix(ctx, "report_prefix", other, claim{WorkflowID: "other-batch", FirstRunID: "o"}); err != nil {
			t.Fatal(err)
		}
		if _, err := writeChangesReport(t, a, other, "", false, []api.BatchItemResult{answered(0, "a", "Paris")}); err != nil {
			t.Fatal(err)
		}
		if err := a.claimPrefix(ctx, "report_prefix", mine, claim{WorkflowID: "my-batch", FirstRunID: "m"}); err != nil {
			t.Fatal(err)
		}
		if prev, err := a.findPrevious(ctx, api.CompareWithPrevious, mine); err != nil || prev != "" {
			t.Errorf("previous = %q (%v), want none: the earlier report is another workflow's", prev, err)
		}
		// Another caller's batch may not compare with the schedule's report.
		assertType(t, a.allowCompare(ctx, night1, "s3://memagent/team-c/b1/", reader{}), api.ErrForbidden)
		assertType(t, a.allowCompare(ctx, night1, "s3://memagent/team-c/b1/", reader{ScheduleID: "other"}), api.ErrForbidden)
	})
}
