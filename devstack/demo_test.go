package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/starter/cli"
)

// TestDemoAnswers runs `devstack demo` as the README's first command does
// (in memory, and over a shorter document): the embedded stack, a worker
// in process and the simulator find the planted fact, and the output says
// what was expected.
func TestDemoAnswers(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "") // restored after the test
	os.Unsetenv("OPENAI_BASE_URL")  // the demo takes a set one for a real model server
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	args := []string{"demo", "--in-memory", "--tokens", "6000", "--chunk-tokens", "2000"}
	err := cli.Run(ctx, args, &stdout, &stderr, cli.WithName("devstack"), cli.WithDevStack(startDevStack))
	if err != nil {
		t.Fatalf("devstack demo: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	for _, want := range []string{"Answer:   7391-ALPHA\n", "Expected: 7391-ALPHA\n", "inference simulator"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("devstack demo printed no %q:\n%s", want, stdout.String())
		}
	}
}

// TestDemoHelpNamesDevstack: `devstack demo --help` describes the demo
// itself under the devstack's name, not the starter's pointer to it.
func TestDemoHelpNamesDevstack(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := cli.Run(context.Background(), []string{"demo", "--help"}, &stdout, &stderr, cli.WithName("devstack"), cli.WithDevStack(startDevStack))
	if cli.ExitCode(err) != 0 {
		t.Fatalf("devstack demo --help: %v", err)
	}
	help := stderr.String()
	if !strings.Contains(help, "devstack demo") || !strings.Contains(help, "--tokens") || strings.Contains(help, "Moved") {
		t.Errorf("devstack demo --help printed:\n%s", help)
	}
}
