package memclient

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/api"
)

// TestWorkflowID pins the derivation: ids of requests already started must
// not change, or the same request asked again would start a second run.
// The values are those `starter ask` derived when this package took over.
func TestWorkflowID(t *testing.T) {
	temp := float32(0.3)
	tests := []struct {
		name string
		in   api.DocumentQAInput
		want string
	}{
		{"defaults", api.DocumentQAInput{Document: "s3://b/d.txt", Question: "q?"}, "memagent-qa-105a1ff7419ddc9d"},
		{"golds and batch", api.DocumentQAInput{Document: "s3://b/d.txt", Question: "q?", GoldAnswers: []string{"a"}, BatchID: "x"}, "memagent-qa-4dd3a475bf2e2ced"},
		{"options", api.DocumentQAInput{Document: "s3://b/d.txt", Question: "q?", Options: api.ModelOptions{ChunkTokens: 3000, Temperature: &temp}}, "memagent-qa-68f93f57081653db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WorkflowID(tt.in); got != tt.want {
				t.Errorf("WorkflowID = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestWorkflowIDIgnoresWhatDoesNotChangeTheRequest(t *testing.T) {
	base := api.DocumentQAInput{Document: "s3://b/d.txt", Question: "q?"}
	// Explicit defaults are the same request as implicit ones.
	explicit := base
	explicit.Options = base.Options.WithDefaults()
	if WorkflowID(base) != WorkflowID(explicit) {
		t.Errorf("explicit default options changed the id")
	}
	// Output settings are not the request.
	withState := base
	withState.ChunksPerRun = 7
	if WorkflowID(base) != WorkflowID(withState) {
		t.Errorf("chunks_per_run changed the id")
	}
	other := base
	other.Question = "another?"
	if WorkflowID(base) == WorkflowID(other) {
		t.Errorf("a different question kept the id")
	}
}

// TestStartRejectsBadInput checks input before any call to Temporal (the
// client is nil: a call would panic).
func TestStartRejectsBadInput(t *testing.T) {
	c := New(nil, Options{})
	tests := []struct {
		name string
		in   api.DocumentQAInput
		want string
	}{
		{"no document", api.DocumentQAInput{Question: "q?"}, "document is empty"},
		{"local path", api.DocumentQAInput{Document: "/tmp/d.txt", Question: "q?"}, "not an s3:// URI"},
		{"no question", api.DocumentQAInput{Document: "s3://b/d.txt"}, "question"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Start(context.Background(), tt.in, StartOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Start error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestNewDefaultsTaskQueue(t *testing.T) {
	if got := New(nil, Options{}).taskQueue; got != api.DefaultTaskQueue {
		t.Errorf("task queue = %q, want %q", got, api.DefaultTaskQueue)
	}
}

// TestReviewWorkflowID pins the review's derivation: the values are those
// `starter review` derived when this package took it over.
func TestReviewWorkflowID(t *testing.T) {
	temp := float32(0.2)
	tests := []struct {
		name string
		in   api.ReviewInput
		want string
	}{
		{"defaults", api.ReviewInput{Document: "s3://b/d.txt", Questions: []api.ReviewQuestion{{Question: "Who?"}, {Question: "When?"}}},
			"memagent-review-1dd9c5306867301d"},
		{"ids, golds, options and prefix", api.ReviewInput{Document: "s3://b/d.txt",
			Questions: []api.ReviewQuestion{{ID: "x", Question: "Who?", GoldAnswers: []string{"Ann"}}},
			Options:   api.ModelOptions{ChunkTokens: 3000, Temperature: &temp}, OutputPrefix: "s3://o/p/"},
			"memagent-review-01dce25780230557"},
		{"one question", api.ReviewInput{Document: "s3://b/d", Questions: []api.ReviewQuestion{{Question: "Why?"}}},
			"memagent-review-c9dd3eeb87d3a9d8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ReviewWorkflowID(tt.in); got != tt.want {
				t.Errorf("ReviewWorkflowID = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestReviewWorkflowIDIgnoresSchedulingKnobs(t *testing.T) {
	in := api.ReviewInput{Document: "s3://b/d", Questions: []api.ReviewQuestion{{Question: "Why?"}}}
	base := ReviewWorkflowID(in)
	knobs := in
	knobs.Parallelism, knobs.MaxChunksAhead, knobs.ActivitiesPerRun, knobs.HeartbeatTimeoutSeconds = 7, 2, 30, 90
	knobs.Questions = []api.ReviewQuestion{{ID: "q1", Question: "Why?"}} // the default id, spelt out
	if got := ReviewWorkflowID(knobs); got != base {
		t.Errorf("scheduling knobs or a spelt-out default id changed the id: %s, want %s", got, base)
	}
	other := in
	other.Questions = []api.ReviewQuestion{{Question: "Why?", GoldAnswers: []string{"because"}}}
	if got := ReviewWorkflowID(other); got == base {
		t.Errorf("gold answers did not change the id %s", got)
	}
}

func TestBatchWorkflowID(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 6e6, time.FixedZone("CET", 3600))
	tests := []struct{ name, want string }{
		{"", "memagent-batch-20250102T020405.006Z"},
		{"night ly/1", "memagent-batch-night_ly_1-20250102T020405.006Z"},
		{"é-x", "memagent-batch-_-x-20250102T020405.006Z"},
		{strings.Repeat("n", 100), "memagent-batch-" + strings.Repeat("n", 80) + "-20250102T020405.006Z"},
	}
	for _, tt := range tests {
		if got := BatchWorkflowID(tt.name, at); got != tt.want {
			t.Errorf("BatchWorkflowID(%q) = %s, want %s", tt.name, got, tt.want)
		}
	}
}

// TestStartReviewAndBatchRejectBadInput checks input before any call to
// Temporal (the client is nil: a call would panic).
func TestStartReviewAndBatchRejectBadInput(t *testing.T) {
	c := New(nil, Options{})
	ctx := context.Background()
	reviews := []struct {
		name string
		in   api.ReviewInput
		want string
	}{
		{"no document", api.ReviewInput{Questions: []api.ReviewQuestion{{Question: "q?"}}}, "document is empty"},
		{"no questions", api.ReviewInput{Document: "s3://b/d"}, "questions is empty"},
		{"duplicate ids", api.ReviewInput{Document: "s3://b/d", Questions: []api.ReviewQuestion{{ID: "a", Question: "x?"}, {ID: "a", Question: "y?"}}}, `both have id "a"`},
	}
	for _, tt := range reviews {
		t.Run("review/"+tt.name, func(t *testing.T) {
			_, err := c.StartReview(ctx, tt.in, StartOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("StartReview error = %v, want one containing %q", err, tt.want)
			}
		})
	}
	batches := []struct {
		name string
		in   api.BatchQAInput
		want string
	}{
		{"no manifest", api.BatchQAInput{}, "manifest is empty"},
		{"local manifest", api.BatchQAInput{Manifest: "items.jsonl"}, "not an s3://bucket/key URI"},
		{"format", api.BatchQAInput{Manifest: "s3://b/m.jsonl", Format: "csv"}, `format "csv" must be one of`},
	}
	for _, tt := range batches {
		t.Run("batch/"+tt.name, func(t *testing.T) {
			_, err := c.StartBatch(ctx, tt.in, StartOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("StartBatch error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestMemo(t *testing.T) {
	if m := memo(nil, nil); m != nil {
		t.Errorf("memo of nothing = %v, want nil", m)
	}
	m := memo(map[string]any{"document_sha256": "ab", "questions": -1}, map[string]any{"questions": 2})
	if len(m) != 2 || m["document_sha256"] != "ab" || m["questions"] != 2 {
		t.Errorf("memo = %v, want the caller's entry and the client's own winning", m)
	}
}

// TestSummary pins the summary every DocumentQA run starts with, from a Go
// service or from `starter ask`: the question's digest, never the question
// (a UI without the codec server shows the summary as it is), and the
// document or the corpus.
func TestSummary(t *testing.T) {
	const q = "Who may terminate the agreement?"
	digest := api.QuestionDigest(q)
	tests := []struct {
		name string
		in   api.DocumentQAInput
		want string
	}{
		{"document", api.DocumentQAInput{Document: "s3://b/contract.txt", Question: q}, "Q#" + digest + " · s3://b/contract.txt"},
		{"corpus", api.DocumentQAInput{Documents: []string{"s3://b/a.txt", "s3://b/b.txt", "s3://b/c.txt"}, Question: q}, "Q#" + digest + " · s3://b/a.txt (+2 documents)"},
		{"corpus of one", api.DocumentQAInput{Documents: []string{"s3://b/a.txt"}, Question: q}, "Q#" + digest + " · s3://b/a.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summary(tt.in)
			if got != tt.want {
				t.Errorf("summary = %q, want %q", got, tt.want)
			}
			if strings.Contains(got, "terminate") {
				t.Errorf("summary %q carries the question", got)
			}
		})
	}
}

// TestStartEstimate checks the estimate's default id, the one `starter
// estimate` always derived, and that bad input is refused before any call
// to Temporal (the client is nil: a call would panic).
func TestStartEstimate(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 6007e3, time.FixedZone("CET", 3600))
	if got, want := EstimateWorkflowID(at), "memagent-estimate-20250102T020405.006007"; got != want {
		t.Errorf("EstimateWorkflowID = %s, want %s", got, want)
	}
	tests := []struct {
		name string
		in   api.EstimateInput
		want string
	}{
		{"no document", api.EstimateInput{Questions: []string{"q?"}}, "document is empty"},
		{"no questions", api.EstimateInput{Document: "s3://b/d"}, "questions is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(nil, Options{}).StartEstimate(context.Background(), tt.in, StartOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("StartEstimate error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}
