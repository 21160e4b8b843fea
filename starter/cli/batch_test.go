package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/memclient"
)

// TestBatchChecksBeforeStarting needs no stack: bad flags and bad local
// manifests are refused before anything is dialled or uploaded.
func TestBatchChecksBeforeStarting(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"document": "s3://b/k", "question": "q"}`+"\n"+`{"document": "s3://b/k"}`+"\n"+`{"document": "doc.txt", "question": "q"}`+"\n"), 0o644)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no manifest", nil, "no manifest"},
		{"concurrency", []string{"--manifest", bad, "--concurrency", "-1"}, "--concurrency (-1)"},
		{"format", []string{"--manifest", bad, "--format", "csv"}, `format "csv"`},
		{"report prefix", []string{"--manifest", bad, "--report-prefix", "/tmp/r"}, "is not an s3://bucket/prefix URI"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), append([]string{"batch"}, tt.args...), &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}

	n, err := checkManifest(strings.NewReader(`{"document": "s3://b/k", "question": "q"}`+"\n"), "")
	if err != nil || n != 1 {
		t.Errorf("good manifest: %d items, %v", n, err)
	}
	f, _ := os.Open(bad)
	defer f.Close()
	_, err = checkManifest(f, "")
	if err == nil || !strings.Contains(err.Error(), `2 bad item(s): line 2: missing question: set "question"; line 3: document "doc.txt" is not an s3:// URI`) {
		t.Errorf("bad manifest: %v", err)
	}
	if _, err := checkManifest(strings.NewReader("[]"), ""); err == nil || !strings.Contains(err.Error(), "no items") {
		t.Errorf("empty array: %v", err)
	}
	if id := memclient.BatchWorkflowID("night ly/1", time.Date(2025, 1, 2, 3, 4, 5, 6e6, time.UTC)); id != "memagent-batch-night_ly_1-20250102T030405.006Z" {
		t.Errorf("BatchWorkflowID = %q", id)
	}
}
