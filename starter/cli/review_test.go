package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/memclient"
)

func TestReadReviewQuestions(t *testing.T) {
	dir := t.TempDir()
	lines := filepath.Join(dir, "q.txt")
	if err := os.WriteFile(lines, []byte("# a comment\nWho signs?\n\n  When?  \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	qs, err := readReviewQuestions(lines)
	if err != nil || len(qs) != 2 || qs[0].Question != "Who signs?" || qs[1].Question != "When?" {
		t.Errorf("lines: %+v, %v", qs, err)
	}
	arr := filepath.Join(dir, "q.json")
	if err := os.WriteFile(arr, []byte(` [{"id":"s","question":"Who signs?","answers":["Ann"]},{"question":"When?","gold_answers":["May"]}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	qs, err = readReviewQuestions(arr)
	if err != nil || len(qs) != 2 || qs[0].ID != "s" || qs[0].GoldAnswers[0] != "Ann" || qs[1].ID != "" || qs[1].GoldAnswers[0] != "May" {
		t.Errorf("json: %+v, %v", qs, err)
	}
}

func TestReviewWorkflowIDIsStable(t *testing.T) {
	in := api.ReviewInput{Document: "s3://b/d", Questions: []api.ReviewQuestion{{Question: "Why?"}}}
	a := memclient.ReviewWorkflowID(in)
	in.Parallelism, in.MaxChunksAhead = 7, 2
	in.Questions[0].ID = "q1" // the default, spelt out
	if b := memclient.ReviewWorkflowID(in); b != a {
		t.Errorf("scheduling knobs or a spelt-out default id changed the id: %s, %s", a, b)
	}
	in.Questions[0].GoldAnswers = []string{"because"}
	if c := memclient.ReviewWorkflowID(in); c == a || !strings.HasPrefix(c, "memagent-review-") {
		t.Errorf("another request kept the id %s", c)
	}
}

func TestPrintReviewGridIsOneLinePerQuestion(t *testing.T) {
	g := &api.ReviewResult{Rows: []api.ReviewRow{{ID: "q1", Status: "done", Answer: "line one\nline two \x1b[2J", AnswerFound: true}}}
	var b strings.Builder
	printReviewGrid(&b, g)
	if strings.Contains(b.String(), "\x1b") || !strings.Contains(b.String(), "line one line two") {
		t.Errorf("printed %q: want the answer on one line without terminal escapes", b.String())
	}
}

// TestPrintDocument: a converted document is named as the caller gave it
// (a reviewer trial read only the converted text's URI), with the text read
// from it on a line of its own; a text document on one line.
func TestPrintDocument(t *testing.T) {
	var b strings.Builder
	printDocument(&b, "s3://m/documents/sha256/ab/R-FAQ.pdf", "pdf", "s3://m/converted/v5/cd/text.txt", 6, 29438, 114934)
	if got, want := b.String(), "Document: s3://m/documents/sha256/ab/R-FAQ.pdf (pdf; 6 chunks, 29438 tokens)\n"+
		"Text:     s3://m/converted/v5/cd/text.txt (114934 bytes, converted from it)\n"; got != want {
		t.Errorf("converted:\n%s\nwant\n%s", got, want)
	}
	b.Reset()
	printDocument(&b, "", "", "s3://m/docs/a.txt", 2, 9000, 36000)
	if got, want := b.String(), "Document: s3://m/docs/a.txt (2 chunks, 9000 tokens, 36000 bytes)\n"; got != want {
		t.Errorf("text: %q, want %q", got, want)
	}
}
