package batch

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/tokenizer"
	"github.com/memagent/memagent/starter/cli/clitest"
)

// TestBatchCorpusEndToEnd: a manifest line with documents (three text
// documents, the fact in the second) is answered as one corpus; its
// results.jsonl line names the documents and its answer_sources the second
// document; the same manifest again reuses the answer without a model
// call; and once the second document changes, the next batch runs the
// corpus item again while the unchanged single-document item is reused.
func TestBatchCorpusEndToEnd(t *testing.T) {
	d := clitest.Stack(t)
	clitest.StartWorker(t)
	cfg, store := clitest.Store(t)
	ctx := context.Background()
	prefix := fmt.Sprintf("batch-corpus-%d/", time.Now().UnixNano())
	put := func(name string, data []byte) string {
		t.Helper()
		loc := s3store.Location{Bucket: cfg.Bucket, Key: prefix + name}
		if err := store.Put(ctx, loc, data, "text/plain"); err != nil {
			t.Fatal(err)
		}
		return loc.String()
	}
	withFact := func(seed uint64) []byte {
		var b bytes.Buffer
		b.Write(clitest.FillerText(seed, 2))
		b.WriteString(docgen.Fact + "\n\n")
		b.Write(clitest.FillerText(seed+1, 2))
		return b.Bytes()
	}
	docs := []string{put("intro.txt", clitest.FillerText(11, 3)), put("deposition-12.txt", withFact(12)), put("annex.txt", clitest.FillerText(14, 3))}
	tok, _ := tokenizer.New(tokenizer.Qwen)
	single := put("single.txt", []byte(docgen.Needle(tok, 1200, 0.5, 15)))

	var manifest bytes.Buffer
	for _, line := range []map[string]any{
		{"id": "corpus", "documents": docs, "question": docgen.Question, "answers": []string{docgen.Answer}},
		{"id": "single", "document": single, "question": docgen.Question, "answers": []string{docgen.Answer}},
	} {
		b, _ := json.Marshal(line)
		manifest.Write(append(b, '\n'))
	}
	path := clitest.WriteFile(t, t.TempDir(), "manifest.jsonl", manifest.Bytes())
	batch := func(name string) (api.BatchQAResult, []api.BatchItemResult, api.BatchReport, int) {
		t.Helper()
		d.Simulator.Reset()
		out, _ := clitest.RunBatch(t, "--manifest", path, "--name", name, "--chunk-tokens", "800", "--json")
		items := clitest.ReadResults(t, store, out.Report.ResultsURI)
		if len(items) != 2 {
			t.Fatalf("%s: results.jsonl has %d lines, want 2", name, len(items))
		}
		return out.Result, items, out.Report, len(d.Simulator.Calls())
	}
	second := docs[1]
	checkCorpus := func(what string, r api.BatchItemResult, status string) {
		t.Helper()
		if r.ID != "corpus" || r.Status != status || r.Answer != docgen.Answer {
			t.Errorf("%s: corpus item status %s answer %q (%s), want %s %q", what, r.Status, r.Answer, r.Error, status, docgen.Answer)
		}
		if r.Document != "" || !slices.Equal(r.Documents, docs) {
			t.Errorf("%s: corpus item document %q documents %q, want documents %q", what, r.Document, r.Documents, docs)
		}
		named := false
		for _, s := range r.AnswerSources {
			named = named || s.Document == second
		}
		if !named || !strings.Contains(api.CiteSources(r.AnswerSources), "deposition-12.txt") {
			t.Errorf("%s: answer_sources %+v do not name %s", what, r.AnswerSources, second)
		}
	}

	res, items, rep, calls := batch("corpus-1")
	if res.Succeeded != 2 || res.Failed != 0 || calls == 0 {
		t.Fatalf("first batch: %+v, %d calls", res, calls)
	}
	checkCorpus("first batch", items[0], api.ItemAnswered)
	if items[1].Status != api.ItemAnswered || items[1].Document != single || len(items[1].Documents) != 0 {
		t.Errorf("first batch: single item %+v", items[1])
	}
	// results.csv cites the answer by document in found_on.
	loc, _ := s3store.ParseURI(rep.CSVURI)
	data, err := store.ReadAll(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("results.csv: %v, %d rows", err, len(rows))
	}
	col := slices.Index(rows[0], "found_on")
	if dc := slices.Index(rows[0], "documents"); col < 0 || dc < 0 || !strings.Contains(rows[1][col], "deposition-12.txt") ||
		rows[1][dc] != strings.Join(docs, " | ") {
		t.Errorf("results.csv header %q, corpus row %q", rows[0], rows[1])
	}

	// The same manifest again: both answers reused, no model call.
	res, items, _, calls = batch("corpus-2")
	if res.Skipped != 2 || calls != 0 {
		t.Errorf("second batch: %+v, %d calls; want both reused and no call", res, calls)
	}
	checkCorpus("second batch", items[0], api.ItemReused)

	// The second document changes: the corpus item runs again, the
	// single document's answer is still reused.
	put("deposition-12.txt", withFact(22))
	res, items, _, calls = batch("corpus-3")
	if res.Succeeded != 1 || res.Skipped != 1 || calls == 0 {
		t.Errorf("after the second document changed: %+v, %d calls; want the corpus run again and the single item reused", res, calls)
	}
	checkCorpus("after the change", items[0], api.ItemAnswered)
	if items[1].Status != api.ItemReused {
		t.Errorf("after the change: single item %s, want reused", items[1].Status)
	}
}
