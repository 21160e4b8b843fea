package activities

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/s3store"
)

// TestActivitiesCheckWhatTheyAreHanded hands each activity what a forged
// workflow state once could: every one refuses it itself, non-retryably,
// before any model call or write.
func TestActivitiesCheckWhatTheyAreHanded(t *testing.T) {
	f := newFixture(t, []byte(makeDoc(3)))
	prep := f.prepare(t, api.ModelOptions{ChunkTokens: 100})
	ctx := context.Background()
	secret := s3store.Location{Bucket: "secret", Key: "secret.txt"}
	if err := f.store.Store.Put(ctx, secret, []byte("TOP-SECRET text"), "text/plain"); err != nil {
		t.Fatal(err)
	}
	secretInfo, _ := f.store.Head(ctx, secret)
	// An index the attacker wrote where documents go, and one of the
	// worker's own indexes, of another document, moved onto the secret.
	forged, _ := json.Marshal(memagent.ChunkIndex{Bytes: 15, Tokens: 2, Tokenizer: "words", ChunkTokens: 100,
		Chunks: []memagent.Chunk{{Start: 0, End: 15, Tokens: 2}}})
	if err := f.store.Store.Put(ctx, s3store.Location{Bucket: "memagent", Key: "documents/forged.json"}, forged, ""); err != nil {
		t.Fatal(err)
	}
	huge, _ := json.Marshal(memagent.ChunkIndex{Bytes: 1 << 40, Tokens: 2, Tokenizer: "words", ChunkTokens: 100,
		Chunks: []memagent.Chunk{{Start: 0, End: 1 << 40, Tokens: 2}}})
	hugeKey := indexKey(testDocURI, s3store.ObjectInfo{ETag: prep.ETag, Size: 1 << 40}, "words", 100)
	if err := f.store.Store.Put(ctx, s3store.Location{Bucket: "memagent", Key: hugeKey}, huge, ""); err != nil {
		t.Fatal(err)
	}
	f.acts.ReadPrefixes = []string{"s3://docs/"}
	f.acts.WritePrefixes = []string{"s3://memagent/"}
	good := actwire.UpdateInput{Document: prep.Document, ETag: prep.ETag, IndexURI: prep.IndexURI, Chunks: prep.Chunks,
		Question: testQuestion, Memory: "m", TracePrefix: tracePrefix}
	writesBefore := len(f.store.puts)

	for _, tt := range []struct {
		name     string
		edit     func(*actwire.UpdateInput)
		wantType string
	}{
		{"an index the worker did not write", func(in *actwire.UpdateInput) { in.IndexURI = "s3://memagent/documents/forged.json" }, api.ErrForbidden},
		{"the worker's index of another document", func(in *actwire.UpdateInput) { in.Document, in.ETag = secret.String(), secretInfo.ETag }, api.ErrForbidden},
		{"no etag", func(in *actwire.UpdateInput) { in.ETag = "" }, api.ErrBadInput},
		{"a range of a terabyte", func(in *actwire.UpdateInput) { in.IndexURI = "s3://memagent/" + hugeKey }, api.ErrBadInput},
		{"another run's trace prefix", func(in *actwire.UpdateInput) { in.TracePrefix = "s3://memagent/runs/victim/run/" }, api.ErrForbidden},
		{"an unclaimed prefix", func(in *actwire.UpdateInput) { in.TracePrefix = "s3://memagent/team/out/" }, api.ErrForbidden},
		{"the worker's indexes as trace prefix", func(in *actwire.UpdateInput) { in.TracePrefix = "s3://memagent/indexes/" }, api.ErrForbidden},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := good
			tt.edit(&in)
			var out actwire.UpdateOutput
			err := f.exec(t, UpdateMemoryName, in, &out)
			assertType(t, err, tt.wantType)
		})
	}
	t.Run("an answer written into another run's outputs", func(t *testing.T) {
		var out api.DocumentQAResult
		err := f.exec(t, AnswerName, actwire.AnswerInput{Question: testQuestion, Memory: "m", ResultURI: "s3://memagent/runs/victim/run/result.json"}, &out)
		assertType(t, err, api.ErrForbidden)
	})
	t.Run("a review written into the forbidden bucket", func(t *testing.T) {
		var out actwire.WriteReviewOutput
		err := f.exec(t, WriteReviewName, actwire.WriteReviewInput{Grid: api.ReviewGrid{Document: testDocURI,
			JSONURI: "s3://secret/out/grid.json", CSVURI: "s3://secret/out/grid.csv", HTMLURI: "s3://secret/out/report.html"}}, &out)
		assertType(t, err, api.ErrForbidden)
	})
	t.Run("a review quoting a document the worker may not read", func(t *testing.T) {
		p := "s3://memagent/reviews/default-test-workflow-id/run/"
		var out actwire.WriteReviewOutput
		err := f.exec(t, WriteReviewName, actwire.WriteReviewInput{Grid: api.ReviewGrid{Document: secret.String(),
			JSONURI: p + "grid.json", CSVURI: p + "grid.csv", HTMLURI: p + "report.html"}}, &out)
		assertType(t, err, api.ErrForbidden)
	})
	t.Run("a batch's report over another batch's work", func(t *testing.T) {
		err := f.exec(t, WriteBatchReportName, actwire.ReportInput{Items: 1, ReportPrefix: "s3://memagent/batches/victim/",
			Parts: []string{"s3://memagent/batches/victim/work/r/parts/p.jsonl"}}, nil)
		assertType(t, err, api.ErrForbidden)
	})
	t.Run("a batch's report with parts outside its work prefix", func(t *testing.T) {
		err := f.exec(t, WriteBatchReportName, actwire.ReportInput{Items: 1, ReportPrefix: "s3://memagent/batches/default-test-workflow-id/",
			Parts: []string{"s3://memagent/batches/victim/work/r/parts/p.jsonl"}}, nil)
		assertType(t, err, api.ErrForbidden)
	})
	t.Run("a report of 1e11 items", func(t *testing.T) {
		err := f.exec(t, WriteBatchReportName, actwire.ReportInput{Items: 1e11, ReportPrefix: "s3://memagent/batches/default-test-workflow-id/"}, nil)
		assertType(t, err, api.ErrBadInput)
	})
	t.Run("results over another batch's parts", func(t *testing.T) {
		err := f.exec(t, WriteBatchResultsName, actwire.WriteResultsInput{URI: "s3://memagent/batches/victim/work/r/parts/run-0001-0000.jsonl"}, nil)
		assertType(t, err, api.ErrForbidden)
	})
	t.Run("a page of another batch", func(t *testing.T) {
		err := f.exec(t, ResolveBatchPageName, actwire.ResolvePageInput{WorkPrefix: "s3://memagent/batches/victim/work/r/"}, nil)
		assertType(t, err, api.ErrForbidden)
	})
	if calls := len(f.model.Calls()); calls != 0 {
		t.Errorf("%d model calls", calls)
	}
	if n := len(f.store.puts) - writesBefore; n != 0 {
		t.Errorf("%d writes", n)
	}
}

func TestParseURIRefusesAmbiguousKeys(t *testing.T) {
	for _, uri := range []string{"s3://b/a/../c", "s3://b/./c", "s3://b/a//c", "s3://b//c", "s3://b/a/\x00c", "s3://b/a\nb"} {
		if _, err := s3store.ParseURI(uri); err == nil {
			t.Errorf("ParseURI(%q) succeeded", uri)
		}
	}
	for _, uri := range []string{"s3://b/a/c", "s3://b/a/c/", "s3://b/a..b/c.d"} {
		if _, err := s3store.ParseURI(uri); err != nil {
			t.Errorf("ParseURI(%q): %v", uri, err)
		}
	}
}

func TestAllowReadKeepsOutputsOut(t *testing.T) {
	a := &Activities{Bucket: "memagent"}
	for _, uri := range []string{"s3://memagent/runs/wf/r/result.json", "s3://memagent/answers/k/result.json",
		"s3://memagent/converted/v1/x/text.txt", "s3://memagent/reviews/wf/r/grid.json", "s3://memagent/batches/b/report.json"} {
		assertType(t, a.allowRead("document", uri), api.ErrForbidden)
	}
	if err := a.allowRead("document", "s3://memagent/documents/sha256/ab/c.txt"); err != nil {
		t.Errorf("an uploaded document: %v", err)
	}
}
