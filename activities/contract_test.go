package activities

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/contract"
	"github.com/memagent/memagent/internal/report"
)

// A line of results.jsonl is a manifest line: feeding a batch's results
// back as the manifest of a new batch asks the same questions with the
// same gold answers.
func TestResultsJSONLReadsBackAsManifest(t *testing.T) {
	results := []api.BatchItemResult{
		{Seq: 0, ID: "a", Document: "s3://b/d1.txt", Question: "Who?", GoldAnswers: []string{"Ann"}, Labels: map[string]string{"task": "niah"},
			Status: api.ItemAnswered, Answer: "Ann", AnswerFound: true, Scores: &api.Scores{ExactMatch: true}, Chunks: 3, Tokens: 900,
			Usage: api.Usage{Calls: 4}, WorkflowID: "w", ResultURI: "s3://b/r.json"},
		{Seq: 1, ID: "b", Document: "s3://b/d2.txt", Question: "What?", Status: api.ItemFailed, Error: "boom", ErrorType: api.ErrDocumentNotFound},
		{Seq: 2, ID: "c", Documents: []string{"s3://b/d1.txt", "s3://b/d2.txt"}, Question: "Where?", Status: api.ItemAnswered,
			Answer: "Rome", AnswerFound: true, AnswerSources: []api.SourceRef{{Document: "s3://b/d2.txt", Name: "d2.txt"}}},
	}
	var buf bytes.Buffer
	for _, r := range results {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(append(line, '\n'))
	}
	mr, err := report.NewManifestReader(&buf, report.FormatJSONL)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range results {
		it, err := mr.Next()
		if err != nil {
			t.Fatalf("item %s: %v", want.ID, err)
		}
		if it.ID != want.ID || it.Document != want.Document || !slices.Equal(it.Documents, want.Documents) || it.Question != want.Question ||
			!slices.Equal(it.Answers, want.GoldAnswers) || !reflect.DeepEqual(it.Labels, want.Labels) {
			t.Errorf("read back %+v, want the manifest fields of %+v", it, want)
		}
	}
}

// Every member of a results line is known to the manifest reader.
func TestResultLineKeysCoverBatchItemResult(t *testing.T) {
	manifest := []string{"id", "document", "documents", "question", "gold_answers", "labels"}
	for _, f := range contract.Fields(reflect.TypeFor[api.BatchItemResult]()) {
		if !slices.Contains(manifest, f.Name) && !slices.Contains(report.ResultLineKeys, f.Name) {
			t.Errorf("BatchItemResult member %q is not in report.ResultLineKeys: a results.jsonl line would not read back as a manifest line", f.Name)
		}
	}
}
