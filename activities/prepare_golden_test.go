package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/memagent"
)

// goldenLog is a logger that writes to the recording store's transcript,
// without times.
func goldenLog(store *recordingStore) *slog.Logger {
	return slog.New(slog.NewTextHandler(&store.transcript, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		}}))
}

// recordOutcome writes an activity's output as indented JSON, or its
// error's type and message.
func recordOutcome(t *testing.T, w *bytes.Buffer, out any, err error) {
	t.Helper()
	if err != nil {
		fmt.Fprintf(w, "error %s: %v\n", appError(t, err).Type(), err)
		return
	}
	raw, _ := json.MarshalIndent(out, "", " ")
	fmt.Fprintf(w, "=== output\n%s\n", raw)
}

// TestPrepareDocumentGolden pins what prepareDocument writes, logs and
// returns, in order, for a new document, the same one again (reused), a
// document with invalid UTF-8 replaced and then asked again rejecting it,
// an output prefix claimed, and the error of each refused input. Run with
// -update to rewrite the file.
func TestPrepareDocumentGolden(t *testing.T) {
	f := newFixture(t, []byte(makeDoc(5)))
	putObject(t, f.store.Store, "s3://docs/bad.txt", []byte(makeDoc(3)+"bad \xff\xfe bytes\n"))
	putObject(t, f.store.Store, "s3://docs/empty.txt", nil)
	store := &recordingStore{Store: f.store.Store}
	f.acts.Store = store
	f.acts.Logger = goldenLog(store)
	f.acts.ReadPrefixes = []string{"s3://docs/"}
	f.acts.WritePrefixes = []string{"s3://memagent/", "s3://out/"}
	in := func(change func(*actwire.PrepareInput)) actwire.PrepareInput {
		in := actwire.PrepareInput{Document: testDocURI, Question: testQuestion, Options: api.ModelOptions{ChunkTokens: 100}}
		if change != nil {
			change(&in)
		}
		return in
	}
	steps := []struct {
		name   string
		in     actwire.PrepareInput
		limits Limits
		maxLen int
	}{
		{name: "new", in: in(nil)},
		{name: "reused", in: in(nil)},
		{name: "claimed", in: in(func(in *actwire.PrepareInput) {
			in.OutputPrefix, in.WorkflowID, in.FirstRunID = "s3://out/team/mine/", "wf-1", "run-1"
		})},
		{name: "replaced", in: in(func(in *actwire.PrepareInput) {
			in.Document, in.Options.InvalidUTF8 = "s3://docs/bad.txt", api.InvalidUTF8Replace
		})},
		{name: "replaced then rejected", in: in(func(in *actwire.PrepareInput) { in.Document = "s3://docs/bad.txt" })},
		{name: "invalid options", in: in(func(in *actwire.PrepareInput) { in.Options.ChunkTokens = -1 })},
		{name: "no question", in: in(func(in *actwire.PrepareInput) { in.Question = " " })},
		{name: "not a uri", in: in(func(in *actwire.PrepareInput) { in.Document = "docs/doc.txt" })},
		{name: "outside read prefixes", in: in(func(in *actwire.PrepareInput) { in.Document = "s3://elsewhere/doc.txt" })},
		{name: "claimed by another", in: in(func(in *actwire.PrepareInput) {
			in.OutputPrefix, in.WorkflowID, in.FirstRunID = "s3://out/team/mine/", "wf-2", "run-9"
		})},
		{name: "unknown tokenizer", in: in(func(in *actwire.PrepareInput) { in.Options.Tokenizer = "nope" })},
		{name: "over budget", in: in(func(in *actwire.PrepareInput) { in.Options.ChunkTokens = 2000 }), maxLen: 2500},
		{name: "missing", in: in(func(in *actwire.PrepareInput) { in.Document = "s3://docs/none.txt" })},
		{name: "empty", in: in(func(in *actwire.PrepareInput) { in.Document = "s3://docs/empty.txt" })},
		{name: "too large", in: in(nil), limits: Limits{MaxDocumentBytes: 10}},
		{name: "too many chunks", in: in(nil), limits: Limits{MaxChunks: 2}},
	}
	tokenizers := f.acts.Tokenizers
	for _, s := range steps {
		f.acts.Limits = s.limits
		f.acts.MaxModelLen = s.maxLen
		f.acts.Tokenizers = tokenizers
		if s.in.Options.Tokenizer == "nope" {
			f.acts.Tokenizers = func(name string) (memagent.Tokenizer, error) { return nil, fmt.Errorf("unknown tokenizer %q", name) }
		}
		fmt.Fprintf(&store.transcript, "=== step %s\n", s.name)
		out, err := f.acts.prepareDocument(context.Background(), s.in)
		recordOutcome(t, &store.transcript, out, err)
	}
	checkGolden(t, "prepare/steps.golden", store.transcript.Bytes())
}
