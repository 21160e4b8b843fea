package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
)

// TestJSONOnFailure: with --json (or -o json), a command that fails still
// prints one JSON object on stdout, with its status, exit code and message.
func TestJSONOnFailure(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.txt")
	for _, args := range [][]string{
		{"ask", "--doc", missing, "--question", "q", "--json"},
		{"ask", "--doc", missing, "--question", "q", "-o", "json"},
		{"review", "--doc", missing, "--question", "q", "--output=json"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, &stdout, &stderr)
		if exitCode(err) != ExitBadInput {
			t.Errorf("%v: exit %d (%v), want %d", args, exitCode(err), err, ExitBadInput)
		}
		var got failureOutput
		if jerr := json.Unmarshal(stdout.Bytes(), &got); jerr != nil {
			t.Errorf("%v: stdout %q is not one JSON object: %v", args, stdout.String(), jerr)
			continue
		}
		if got.Status != "bad_input" || got.ExitCode != ExitBadInput || got.Message == "" {
			t.Errorf("%v: %+v, want status bad_input, exit_code 2 and the message", args, got)
		}
	}
	var stdout bytes.Buffer
	_ = run(context.Background(), []string{"ask", "--doc", missing, "--question", "q"}, &stdout, &bytes.Buffer{})
	if stdout.Len() != 0 {
		t.Errorf("without --json, a failure printed %q on stdout", stdout.String())
	}
}
