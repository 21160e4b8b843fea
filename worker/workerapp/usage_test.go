package workerapp

import (
	"flag"
	"strings"
	"testing"
	"time"
)

// TestWriteFlags: the worker's, the dev stack's and the chaos suite's help
// lists flags as the starter's does, `--name type   usage (default …)`.
func TestWriteFlags(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.String("bucket", "memagent", "bucket for `NAME`s")
	fs.Duration("stop-timeout", 30*time.Second, "how long to wait")
	fs.Bool("in-memory", false, "keep state in memory")
	var b strings.Builder
	WriteFlags(&b, fs)
	want := "      --bucket NAME             bucket for NAMEs (default \"memagent\")\n" +
		"      --in-memory               keep state in memory\n" +
		"      --stop-timeout duration   how long to wait (default 30s)\n"
	if b.String() != want {
		t.Errorf("flags:\n%s\nwant\n%s", b.String(), want)
	}
}
