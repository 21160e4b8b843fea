package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/report"
	"github.com/memagent/memagent/internal/s3store"
)

func TestCorpusAnswerKey(t *testing.T) {
	opts := api.ModelOptions{}.WithDefaults()
	opts.Model = "m"
	tpl := memagent.Templates{Update: "u", Final: "f"}
	base := []DocumentVersion{{URI: "s3://d/a.txt", ETag: "e1", Size: 10}, {URI: "s3://d/b.txt", ETag: "e2", Size: 20}}
	key := CorpusAnswerKey(base, "q", opts, tpl)
	with := func(f func(vs []DocumentVersion) []DocumentVersion) []DocumentVersion {
		return f(append([]DocumentVersion(nil), base...))
	}
	other := opts
	other.Temperature = new(float32)
	tests := []struct {
		name string
		key  string
		same bool
	}{
		{"same corpus", CorpusAnswerKey(with(func(vs []DocumentVersion) []DocumentVersion { return vs }), "q", opts, tpl), true},
		{"second document's etag", CorpusAnswerKey(with(func(vs []DocumentVersion) []DocumentVersion { vs[1].ETag = "e3"; return vs }), "q", opts, tpl), false},
		{"second document's size", CorpusAnswerKey(with(func(vs []DocumentVersion) []DocumentVersion { vs[1].Size = 21; return vs }), "q", opts, tpl), false},
		{"order", CorpusAnswerKey(with(func(vs []DocumentVersion) []DocumentVersion { vs[0], vs[1] = vs[1], vs[0]; return vs }), "q", opts, tpl), false},
		{"document added", CorpusAnswerKey(with(func(vs []DocumentVersion) []DocumentVersion {
			return append(vs, DocumentVersion{URI: "s3://d/c.txt", ETag: "e4", Size: 1})
		}), "q", opts, tpl), false},
		{"document removed", CorpusAnswerKey(base[:1], "q", opts, tpl), false},
		{"question", CorpusAnswerKey(base, "q2", opts, tpl), false},
		{"options", CorpusAnswerKey(base, "q", other, tpl), false},
		{"templates", CorpusAnswerKey(base, "q", opts, memagent.Templates{Update: "u2", Final: "f"}), false},
		{"single document", AnswerKey("s3://d/a.txt", "e1", "q", opts, tpl), false},
		{"corpus of one vs its document", CorpusAnswerKey(base[:1], "q", opts, tpl) + "|" + AnswerKey("s3://d/a.txt", "e1", "q", opts, tpl), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.key == key; got != tt.same {
				t.Errorf("key %s equals %s: %v, want %v", tt.key, key, got, tt.same)
			}
		})
	}
	if a, b := CorpusAnswerKey(base[:1], "q", opts, tpl), AnswerKey("s3://d/a.txt", "e1", "q", opts, tpl); a == b {
		t.Errorf("a corpus of one document has the document's key %s", a)
	}
	if sampleKey(key, 0) != key || sampleKey(key, 1) == key || sampleKey(key, 1) == sampleKey(key, 2) {
		t.Errorf("sample keys: 0 %s, 1 %s, 2 %s of %s", sampleKey(key, 0), sampleKey(key, 1), sampleKey(key, 2), key)
	}
}

// TestResolveBatchPageCorpus: a corpus item is keyed by every document's
// version, reused only while none changed, run with its documents and the
// sum of their sizes, and failed when one of them is missing or not
// readable.
func TestResolveBatchPageCorpus(t *testing.T) {
	a, store := batchActivities(t)
	docs := []string{"s3://docs/c1.txt", "s3://docs/c2.txt", "s3://docs/c3.txt"}
	for i, d := range docs {
		putObject(t, store, d, []byte(strings.Repeat("x", 10*(i+1))))
	}
	items := []report.ManifestItem{
		{Seq: 0, ID: "corpus", Documents: docs, Question: "q", Answers: []string{"paris"}},
		{Seq: 1, ID: "gap", Documents: []string{docs[0], "s3://docs/missing.txt", docs[2]}, Question: "q"},
		{Seq: 2, ID: "single", Document: docs[0], Question: "q"},
	}
	var page bytes.Buffer
	for _, it := range items {
		line, _ := json.Marshal(it)
		page.Write(append(line, '\n'))
	}
	work := "s3://memagent/batches/wf/work/r/"
	putObject(t, store, work+PagePath(0), page.Bytes())
	resolve := func() *actwire.ResolvePageOutput {
		t.Helper()
		out, err := a.resolveBatchPage(context.Background(), actwire.ResolvePageInput{WorkPrefix: work, Page: 0})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	settled := func(out *actwire.ResolvePageOutput) map[string]api.BatchItemResult {
		t.Helper()
		m := make(map[string]api.BatchItemResult)
		for _, line := range bytes.Split(bytes.TrimSpace(getObject(t, store, out.Part)), []byte{'\n'}) {
			var r api.BatchItemResult
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatal(err)
			}
			m[r.ID] = r
		}
		return m
	}

	out := resolve()
	if out.Failed != 1 || out.Reused != 0 || len(out.Run) != 2 {
		t.Fatalf("first resolve: %+v", out)
	}
	// Longest first: the corpus (10+20+30 bytes) before the single document.
	run := out.Run[0]
	if run.ID != "corpus" || run.Document != "" || strings.Join(run.Documents, ",") != strings.Join(docs, ",") || run.DocumentBytes != 60 {
		t.Errorf("corpus run item = %+v", run)
	}
	if out.Run[1].ID != "single" || out.Run[1].DocumentBytes != 10 {
		t.Errorf("single run item = %+v", out.Run[1])
	}
	if out.Run[0].OutputPrefix == out.Run[1].OutputPrefix {
		t.Errorf("corpus and single document share the answer prefix %s", run.OutputPrefix)
	}
	gap := settled(out)["gap"]
	if gap.Status != api.ItemFailed || gap.ErrorType != api.ErrDocumentNotFound || !strings.Contains(gap.Error, "s3://docs/missing.txt does not exist") || len(gap.Documents) != 3 {
		t.Errorf("item with a missing document = %+v", gap)
	}

	// The corpus's answer, as its child would have written it.
	sources := []api.SourceRef{{Document: docs[1], Name: "c2.txt"}}
	opts := api.ModelOptions{}.WithDefaults()
	opts.Model = "fake"
	earlier, _ := json.Marshal(api.DocumentQAResult{WorkflowID: "old/0", Answer: "Paris", AnswerFound: true, Chunks: 1,
		Document: "s3://memagent/converted/corpora/x/text.txt", Documents: docs, AnswerSources: sources,
		Question: "q", Model: "fake", Options: opts, ResultURI: run.OutputPrefix + "result.json"})
	putObject(t, store, run.OutputPrefix+"result.json", earlier)
	out = resolve()
	if out.Reused != 1 || len(out.Run) != 1 || out.Run[0].ID != "single" {
		t.Fatalf("after the answer: %+v", out)
	}
	r := settled(out)["corpus"]
	if r.Status != api.ItemReused || len(r.Documents) != 3 || len(r.AnswerSources) != 1 || r.AnswerSources[0].Document != docs[1] ||
		r.Scores == nil || !r.Scores.ExactMatch {
		t.Errorf("reused corpus item = %+v", r)
	}

	// The same answer planted for another corpus is not taken.
	planted, _ := json.Marshal(api.DocumentQAResult{WorkflowID: "old/1", Answer: "planted", AnswerFound: true,
		Documents: docs[:2], Question: "q", Model: "fake", Options: opts, ResultURI: run.OutputPrefix + "result.json"})
	putObject(t, store, run.OutputPrefix+"result.json", planted)
	if out := resolve(); out.Reused != 0 || len(out.Run) != 2 {
		t.Errorf("an answer about other documents was reused: %+v", out)
	}
	putObject(t, store, run.OutputPrefix+"result.json", earlier)

	// The second document changes: a new key, run again.
	putObject(t, store, docs[1], []byte(strings.Repeat("y", 20)))
	out = resolve()
	if out.Reused != 0 || len(out.Run) != 2 || out.Run[0].ID != "corpus" || out.Run[0].OutputPrefix == run.OutputPrefix {
		t.Errorf("after the second document changed: %+v", out)
	}
	if info, err := store.Head(context.Background(), s3store.Location{Bucket: "docs", Key: "c2.txt"}); err != nil || info.Size != 20 {
		t.Fatalf("head c2: %+v %v", info, err)
	}
}
