package client

import (
	"context"
	"strings"
	"testing"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/workflows"
)

// TestWorkflowID pins the derivation: ids of requests already started must
// not change, or the same request asked again would start a second run.
// The values are those `starter ask` derived when this package took over.
func TestWorkflowID(t *testing.T) {
	temp := float32(0.3)
	tests := []struct {
		name string
		in   workflows.DocumentQAInput
		want string
	}{
		{"defaults", workflows.DocumentQAInput{Document: "s3://b/d.txt", Question: "q?"}, "memagent-qa-105a1ff7419ddc9d"},
		{"golds and batch", workflows.DocumentQAInput{Document: "s3://b/d.txt", Question: "q?", GoldAnswers: []string{"a"}, BatchID: "x"}, "memagent-qa-4dd3a475bf2e2ced"},
		{"options", workflows.DocumentQAInput{Document: "s3://b/d.txt", Question: "q?", Options: activities.ModelOptions{ChunkTokens: 3000, Temperature: &temp}}, "memagent-qa-68f93f57081653db"},
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
	base := workflows.DocumentQAInput{Document: "s3://b/d.txt", Question: "q?"}
	// Explicit defaults are the same request as implicit ones.
	explicit := base
	explicit.Options = base.Options.WithDefaults()
	if WorkflowID(base) != WorkflowID(explicit) {
		t.Errorf("explicit default options changed the id")
	}
	// Continue-as-new state and output settings are not the request.
	withState := base
	withState.State = &workflows.QAState{Cursor: 3}
	withState.ChunksPerRun = 7
	if WorkflowID(base) != WorkflowID(withState) {
		t.Errorf("state or chunks_per_run changed the id")
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
		in   workflows.DocumentQAInput
		want string
	}{
		{"no document", workflows.DocumentQAInput{Question: "q?"}, "document is empty"},
		{"local path", workflows.DocumentQAInput{Document: "/tmp/d.txt", Question: "q?"}, "not an s3:// URI"},
		{"no question", workflows.DocumentQAInput{Document: "s3://b/d.txt"}, "question"},
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
	if got := New(nil, Options{}).taskQueue; got != workflows.DefaultTaskQueue {
		t.Errorf("task queue = %q, want %q", got, workflows.DefaultTaskQueue)
	}
}
