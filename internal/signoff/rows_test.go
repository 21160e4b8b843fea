package signoff

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
)

// TestRowsSayReused: a review's reused answer and a batch's reused item
// are marked in the desk's rows; answers asked now are not.
func TestRowsSayReused(t *testing.T) {
	g := api.ReviewGrid{Document: "s3://b/doc.txt", Rows: []api.ReviewRow{
		{ID: "q1", Status: api.ReviewStatusDone, Answer: "a", ChunksRead: 3, ChunksReused: 3, AnswerReused: true},
		{ID: "q2", Status: api.ReviewStatusDone, Answer: "b", ChunksRead: 3, ChunksReused: 2},
	}}
	rows := ReviewRows(g)
	if !rows[0].Reused || rows[1].Reused {
		t.Errorf("review rows reused = %v, %v; want true, false", rows[0].Reused, rows[1].Reused)
	}
	var lines []string
	for i, st := range []string{api.ItemReused, api.ItemAnswered} {
		b, _ := json.Marshal(api.BatchItemResult{Seq: i, Status: st, Question: "q", Answer: "a"})
		lines = append(lines, string(b))
	}
	brows, err := BatchRows([]byte(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	if !brows[0].Reused || brows[1].Reused {
		t.Errorf("batch rows reused = %v, %v; want true, false", brows[0].Reused, brows[1].Reused)
	}
	b, _ := json.Marshal(rows[0])
	if !strings.Contains(string(b), `"reused":true`) {
		t.Errorf("a reused row's JSON %s lacks \"reused\":true", b)
	}
}

// TestDocumentName: a cell names its document by the URI's file name, and
// a cell without a document (no evidence) names none, not ".".
func TestDocumentName(t *testing.T) {
	for uri, want := range map[string]string{
		"s3://m/documents/sha256/ab/asymptote.pdf": "asymptote.pdf",
		"s3://m/docs/a.txt":                        "a.txt",
		"":                                         "",
	} {
		if got := DocumentName(uri); got != want {
			t.Errorf("DocumentName(%q) = %q, want %q", uri, got, want)
		}
	}
}
