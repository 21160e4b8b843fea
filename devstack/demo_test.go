package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestDemoAnswers runs `devstack demo` as the README's first command does
// (in memory, and over a shorter document): the embedded stack, a worker
// in process and the simulator find the planted fact with the starter's
// ask, and the output says what was expected.
func TestDemoAnswers(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "") // restored after the test
	os.Unsetenv("OPENAI_BASE_URL")  // the demo takes a set one for a real model server
	for _, name := range stackEnv {
		t.Setenv(name, os.Getenv(name)) // the demo points its process at its stack
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	args := []string{"demo", "--in-memory", "--tokens", "6000", "--chunk-tokens", "2000"}
	err := runTools(ctx, args, &stdout, &stderr)
	if err != nil {
		t.Fatalf("devstack demo: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	for _, want := range []string{"Answer:   7391-ALPHA\n", "Expected: 7391-ALPHA\n", "inference simulator", "Workflow: memagent-qa-"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("devstack demo printed no %q:\n%s", want, stdout.String())
		}
	}
}

// TestDemoHelpNamesDevstack: `devstack demo --help` describes the demo
// itself under the devstack's name, with the ask flags it hands on.
func TestDemoHelpNamesDevstack(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := runTools(context.Background(), []string{"demo", "--help"}, &stdout, &stderr)
	if toolExitCode(err) != 0 {
		t.Fatalf("devstack demo --help: %v", err)
	}
	help := stderr.String()
	for _, want := range []string{"devstack demo", "--tokens", "--chunk-tokens", "--tokenizer"} {
		if !strings.Contains(help, want) {
			t.Errorf("devstack demo --help has no %q:\n%s", want, help)
		}
	}
}
