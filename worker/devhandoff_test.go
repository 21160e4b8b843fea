package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/memagent/memagent/worker/workerapp"
)

// TestDevWithoutDevstackIsAUsageError: a worker binary outside a checkout,
// with no memagent-devstack to hand over to, refuses --dev and --dev-stack
// saying where the dev stack is, and starts nothing.
func TestDevWithoutDevstackIsAUsageError(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("PATH", t.TempDir())
	for _, flag := range []string{"--dev", "--dev-stack"} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), []string{flag, "--in-memory"}, &stdout, &stderr)
		var usage *workerapp.UsageError
		if !errors.As(err, &usage) {
			t.Fatalf("worker %s: got %v, want a usage error", flag, err)
		}
		if !strings.Contains(err.Error(), "go run ./devstack") {
			t.Errorf("worker %s: %q does not say to run go run ./devstack", flag, err)
		}
		if stdout.Len() > 0 {
			t.Errorf("worker %s printed %q", flag, stdout.String())
		}
	}
}
