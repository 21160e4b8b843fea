package clientconf

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestSDKLoggerLevels: the SDK's own info lines go to debug, but a task
// that failed (the server refusing a workflow task's completion) shows at
// warn, where an operator's default level sees it.
func TestSDKLoggerLevels(t *testing.T) {
	var buf bytes.Buffer
	l := NewTemporalLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	l.Info("Started Worker", "Namespace", "default")
	l.Info("Task processing failed with error", "Error", "BadSearchAttributes")
	l.Warn("Failed to process workflow task.", "Attempt", 2)
	out := buf.String()
	if strings.Contains(out, "Started Worker") {
		t.Errorf("the SDK's info line shows at info:\n%s", out)
	}
	for _, want := range []string{"level=WARN msg=\"Task processing failed with error\"", "level=WARN msg=\"Failed to process workflow task.\""} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s in:\n%s", want, out)
		}
	}
}
