package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// parsedCommand finds the command args name in the starter's tree and
// parses its flags, as run does, without running it.
func parsedCommand(t *testing.T, args ...string) *cobra.Command {
	t.Helper()
	root := newRoot(context.Background(), io.Discard, io.Discard)
	args = oneDashLongFlags(root, args)
	cmd, rest, err := root.Find(args)
	if err != nil {
		t.Fatalf("find %q: %v", args, err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return cmd
}

// ask's help lists what ask uses, not the worker's flags; the worker's
// flags are still accepted, for scripts that passed them.
func TestAskHelpShowsOnlyAskFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"ask", "--help"}, &stdout, &stderr); err != nil {
		t.Fatalf("ask --help: %v", err)
	}
	for _, f := range []string{"-doc", "-question", "-o, -output", "-json", "-temporal-address", "-bucket", "-model "} {
		if !strings.Contains(stderr.String(), "  "+f) {
			t.Errorf("ask --help does not list %s", f)
		}
	}
	for _, f := range []string{"chunk-cache-mb", "rate-limit", "max-in-flight", "model-url", "model-timeout"} {
		if strings.Contains(stderr.String(), f) {
			t.Errorf("ask --help lists the worker's --%s", f)
		}
	}
	cmd := parsedCommand(t, "ask", "--rate-limit", "2", "-json", "-doc", "-x", "--question=q")
	if j, _ := cmd.Flags().GetBool("json"); !j {
		t.Error("-json (one dash) was not read as --json")
	}
	if d, _ := cmd.Flags().GetString("doc"); d != "-x" {
		t.Errorf("-doc -x: doc = %q, want the value -x", d)
	}
}

func TestCompletionScript(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), []string{"completion", shell}, &stdout, &stderr); err != nil {
			t.Fatalf("completion %s: %v", shell, err)
		}
		if !strings.Contains(stdout.String(), "starter") || stdout.Len() < 1000 {
			t.Errorf("completion %s printed %d bytes to stdout", shell, stdout.Len())
		}
	}
}

func TestOutputFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		json bool
	}{
		{[]string{"runs"}, false},
		{[]string{"runs", "--json"}, true},
		{[]string{"runs", "-o", "json"}, true},
		{[]string{"runs", "--output=json", "--json=false"}, false},
		{[]string{"runs", "--output", "text"}, false},
	} {
		cmd := parsedCommand(t, tc.args...)
		if got, _ := cmd.Flags().GetBool("json"); got != tc.json {
			t.Errorf("%q: json %v, want %v", tc.args, got, tc.json)
		}
	}
	err := run(context.Background(), []string{"runs", "--output", "yaml"}, io.Discard, io.Discard)
	if exitCode(err) != ExitBadInput || !strings.Contains(err.Error(), "use text or json") {
		t.Errorf("--output yaml: %v (exit %d)", err, exitCode(err))
	}
}
