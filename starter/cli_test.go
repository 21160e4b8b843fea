package main

import (
	"context"
	"io"
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
