package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/api"
)

func TestPrintReviewStatus(t *testing.T) {
	p := reviewAt(api.StageAnswering, 10, 1)
	p.InFlight = 1
	p.Questions[0].Answer, p.Questions[0].AnswerFound, p.Questions[0].Evidence = "7391-ALPHA\n\x1b[2J", true, 2
	p.Questions[1].Status = api.QuestionAnswering
	p.Questions = append(p.Questions, api.ReviewQuestionProgress{ID: "bad", Status: api.QuestionFailed, ChunksDone: 3, ErrorType: api.ErrPromptTooLong})
	var out bytes.Buffer
	printReviewStatus(&out, p)
	got := out.String()
	for _, want := range []string{
		"stage:     answering (run 1)\n",
		"chunks:    10/10 (read or reused by every question still going)\n",
		"updates:   20/20 memory updates (1 in flight)\n",
		"questions: 3 (1 done, 1 answering, 1 failed)\n",
		"  q1   done       10/10   -       2         7391-ALPHA \uFFFD[2J\n",
		"  q2   answering  10/10   -       0         -\n",
		"  bad  failed     3/10    -       0         FAILED: " + api.ErrPromptTooLong + "\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("status lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\x1b") {
		t.Errorf("status prints a terminal escape from an answer:\n%q", got)
	}
}

// TestPrintReviewStatusReused: a review asked again prints what was read
// and what reused apart, and which answers were reused (issue 52: it said
// "tokens: 0/131268" though one question read every chunk).
func TestPrintReviewStatusReused(t *testing.T) {
	var out bytes.Buffer
	printReviewStatus(&out, reusedReview())
	got := out.String()
	for _, want := range []string{
		"chunks:    12/12 (read or reused by every question still going)\n",
		"tokens:    121000/121000 (100.0%)\n",
		"updates:   36/36 memory updates (12 read, 24 reused) (0 in flight)\n",
		"readings:  363000/363000 tokens over all questions: 121000 read, 242000 reused\n",
		"calls:     13 (0 prompt + 0 completion tokens)\n",
		"reused:    2 answers, with their whole reading, no call\n",
		"  ID  STATUS  CHUNKS  REUSED       EVIDENCE  ANSWER\n",
		"  q1  done    12/12   12 + answer  0         a\n",
		"  q3  done    12/12   -            0         a\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("status lacks %q:\n%s", want, got)
		}
	}
}

// TestPrintQAStatusReused: a question whose every chunk was reused says so.
func TestPrintQAStatusReused(t *testing.T) {
	var out bytes.Buffer
	printQAStatus(&out, api.Progress{Stage: api.StageDone, Run: 1, ChunksDone: 12, ChunksTotal: 12, TokensDone: 121_000, TokensTotal: 121_000,
		ChunksReused: 9, TokensReused: 90_000, Usage: api.Usage{Calls: 4}})
	want := "stage:  done (run 1)\nchunks: 12/12 (3 read, 9 reused)\ntokens: 121000/121000 (100.0%) (31000 read, 90000 reused)\ncalls:  4 (0 prompt + 0 completion tokens)\n"
	if got := out.String(); got != want {
		t.Errorf("printed\n%s\nwant\n%s", got, want)
	}
}

func TestPrintBatchStatus(t *testing.T) {
	var out bytes.Buffer
	printBatchStatus(&out, api.BatchProgress{Name: "nightly", Stage: api.BatchStageRunning, Items: 1000, Started: 340, Running: 16,
		Done: 324, Answered: 312, Reused: 10, Failed: 2, Pages: 10, PagesResolved: 4, Run: 2, ReportPrefix: "s3://b/batches/x/"})
	want := `batch:   nightly
stage:   running (run 2)
items:   324/1000 done: 312 answered, 10 reused, 2 failed
running: 16 (340 started in all)
pages:   4/10 resolved
calls:   0 (0 prompt + 0 completion tokens, answered items)
report:  s3://b/batches/x/
`
	if got := out.String(); got != want {
		t.Errorf("printed\n%s\nwant\n%s", got, want)
	}
}

func TestWriteStatusJSONNamesTheType(t *testing.T) {
	var out bytes.Buffer
	if err := writeStatusJSON(&out, "memagent-batch-n", api.BatchQAName, api.BatchProgress{Name: "n", Items: 3, Done: 1}); err != nil {
		t.Fatal(err)
	}
	var got struct {
		ID    string `json:"workflow_id"`
		Type  string `json:"workflow_type"`
		Name  string `json:"name"`
		Items int    `json:"items"`
		Done  int    `json:"done"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.Type != api.BatchQAName || got.ID != "memagent-batch-n" || got.Name != "n" || got.Items != 3 || got.Done != 1 {
		t.Errorf("printed %s (%v), want the progress with workflow_type %s", out.String(), err, api.BatchQAName)
	}
}

// TestPrintBatchReportFromResult: without report.json (starter watch), the
// result alone gives the aggregate and the report's files.
func TestPrintBatchReportFromResult(t *testing.T) {
	res := &api.BatchQAResult{Name: "nightly", Items: 3, Succeeded: 2, Failed: 1, WorkflowID: "memagent-batch-nightly-x", Runs: 2, Model: "sim",
		ReportPrefix: "s3://b/batches/x/", ReportURI: "s3://b/batches/x/report.json", HTMLURI: "s3://b/batches/x/report.html",
		Overall: api.ScoreAggregate{Items: 3, Answered: 2, Failed: 1, Scored: 2, ExactMatch: 0.5, SubstringMatch: 1, F1: 0.75, Usage: api.Usage{Calls: 8}}}
	var fromResult, fromReport bytes.Buffer
	printBatchReport(&fromResult, res, nil)
	printBatchReport(&fromReport, res, &api.BatchReport{Name: res.Name, Model: res.Model, Overall: res.Overall, HTMLURI: res.HTMLURI,
		ResultsURI: "s3://b/batches/x/results.jsonl", CSVURI: "s3://b/batches/x/results.csv"})
	want := `Batch:     nightly (memagent-batch-nightly-x, 2 run(s))
Items:     3: 2 answered, 0 reused, 1 failed
Scores:    exact 0.500 · substring 1.000 · F1 0.750 (over 2 items with gold answers)
Model:     sim, 8 calls, 0 prompt + 0 completion tokens
Report:    s3://b/batches/x/report.json
Page:      s3://b/batches/x/report.html
Results:   s3://b/batches/x/results.jsonl (CSV s3://b/batches/x/results.csv)
`
	if got := fromResult.String(); got != want {
		t.Errorf("from the result:\n%s\nwant\n%s", got, want)
	}
	if got := fromReport.String(); got != want {
		t.Errorf("from the report:\n%s\nwant\n%s", got, want)
	}
}

// TestPrintBatchReportChanges: a batch that compared prints its changes
// and how its notification went.
func TestPrintBatchReportChanges(t *testing.T) {
	res := &api.BatchQAResult{Name: "nightly", Items: 20, Succeeded: 5, Skipped: 15, WorkflowID: "batch-n", Runs: 1, Notify: api.NotifyFailed,
		ReportURI: "s3://b/r/2026-01-02T020000Z/report.json",
		Changes: &api.ChangeSummary{Since: time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC), PreviousReport: "s3://b/r/2026-01-01T020000Z/report.json",
			Changed: 5, Unchanged: 15, ChangesURI: "s3://b/r/2026-01-02T020000Z/changes.json"}}
	var out bytes.Buffer
	printBatchReport(&out, res, nil)
	for _, want := range []string{
		"Changes:   since 2026-01-01T02:00:00Z: 0 new, 5 changed, 15 unchanged, 0 removed, 0 failed (s3://b/r/2026-01-02T020000Z/changes.json)\n",
		"Notify:    failed\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed\n%s\nwant a line %q", out.String(), want)
		}
	}
	res.Changes = &api.ChangeSummary{New: 20}
	out.Reset()
	printBatchReport(&out, res, nil)
	if !strings.Contains(out.String(), "Changes:   no previous report: 20 new,") {
		t.Errorf("without a previous report, printed\n%s", out.String())
	}
}

func TestParseWorkflowID(t *testing.T) {
	tests := []struct {
		args    []string
		want    string
		history bool
		err     string
	}{
		{[]string{"wf-1"}, "wf-1", false, ""},
		{[]string{"--history", "wf-1"}, "wf-1", true, ""},
		{[]string{"wf-1", "--history"}, "wf-1", true, ""},
		{nil, "", false, "usage: starter status [flags] WORKFLOW_ID (got 0 arguments)"},
		{[]string{"wf-1", "wf-2"}, "", false, "(got 2 arguments)"},
	}
	for _, tt := range tests {
		cmd := parsedCommand(t, append([]string{"status"}, tt.args...)...)
		history, _ := cmd.Flags().GetBool("history")
		id, err := oneWorkflowID("status", cmd.Flags().Args())
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%q: error %v, want %q", tt.args, err, tt.err)
		case tt.err == "" && (err != nil || id != tt.want || history != tt.history):
			t.Errorf("%q: id %q history %v (%v), want %q %v", tt.args, id, history, err, tt.want, tt.history)
		}
	}
}
