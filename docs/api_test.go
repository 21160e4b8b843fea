package docs_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/testdeps"
	"github.com/memagent/memagent/worker/workerapp/workerapptest"
)

// apiTestMarker, on the line before a ```sh fence, marks a block of
// docs/API.md that TestAPIExamples runs. "<!-- api-test needs=TOOL -->"
// runs the block only when TOOL is on PATH.
const apiTestMarker = "<!-- api-test"

// block is one marked shell block.
type block struct {
	line  int    // of the fence
	needs string // a tool the block needs beyond bash, curl and jq
	code  string
}

// markedBlocks returns the marked ```sh blocks of a Markdown file, in order.
func markedBlocks(path string) ([]block, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		blocks []block
		cur    *block
		marked *block
		n      int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case cur != nil && line == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.code += line + "\n"
		case marked != nil:
			if line != "```sh" {
				return nil, fmt.Errorf("%s:%d: an api-test marker must be followed by a ```sh fence, found %q", path, n, line)
			}
			marked.line = n
			cur, marked = marked, nil
		case strings.HasPrefix(line, apiTestMarker):
			rest := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(line, apiTestMarker), "-->"))
			b := &block{}
			if rest != "" {
				tool, ok := strings.CutPrefix(rest, "needs=")
				if !ok || tool == "" || strings.ContainsAny(tool, " \t") {
					return nil, fmt.Errorf("%s:%d: marker %q: want <!-- api-test --> or <!-- api-test needs=TOOL -->", path, n, line)
				}
				b.needs = tool
			}
			marked = b
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil || marked != nil {
		return nil, fmt.Errorf("%s: a marked block is not closed", path)
	}
	return blocks, nil
}

func TestMarkedBlocks(t *testing.T) {
	for _, tc := range []struct {
		name, md string
		want     []block
		wantErr  string
	}{
		{"marked and unmarked", "# t\n```sh\nexport A=1\n```\n<!-- api-test -->\n```sh\necho a\n\necho b\n```\ntext\n<!-- api-test needs=aws -->\n```sh\naws s3 ls\n```\n",
			[]block{{line: 6, code: "echo a\n\necho b\n"}, {line: 13, needs: "aws", code: "aws s3 ls\n"}}, ""},
		{"marker without fence", "<!-- api-test -->\ntext\n", nil, "must be followed by a ```sh fence"},
		{"bad needs", "<!-- api-test needs= -->\n```sh\nx\n```\n", nil, "want <!-- api-test -->"},
		{"unclosed", "<!-- api-test -->\n```sh\nx\n", nil, "not closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.md")
			if err := os.WriteFile(path, []byte(tc.md), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := markedBlocks(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestAPIExamples runs the marked shell blocks of docs/API.md, in order and
// as one bash script, against the embedded stack with a worker, in the
// environment that `devstack` prints: the curl commands that start,
// follow and read DocumentQA, ReviewDocument and BatchQA through Temporal's
// HTTP API, describe, query and signal a batch's child and query a
// sign-off by the ids memagent derives (api.BatchItemWorkflowID,
// api.SignOffWorkflowID), and the S3 uploads.
func TestAPIExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded Temporal server")
	}
	for _, tool := range []string{"bash", "curl", "jq"} {
		testdeps.Command(t, tool, "docs/API.md's examples need bash, curl and jq: apt-get install curl jq")
	}
	blocks, err := markedBlocks("API.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) < 5 {
		t.Fatalf("found %d api-test blocks in API.md, want at least 5 (helpers, upload, the three workflows)", len(blocks))
	}
	script := "set -euo pipefail\n"
	for _, b := range blocks {
		if b.needs != "" {
			if _, err := exec.LookPath(b.needs); err != nil {
				t.Logf("API.md:%d not run: %s is not on PATH", b.line, b.needs)
				continue
			}
		}
		script += fmt.Sprintf("# API.md:%d\n%s", b.line, b.code)
	}

	st := workerapptest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = t.TempDir()
	cmd.Env = st.Env()
	began := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("the examples ran in %s:\n%s", time.Since(began).Round(time.Millisecond), out)
	if err != nil {
		t.Fatalf("the examples failed: %v (output above)", err)
	}
	for _, c := range []struct {
		what string
		re   string
		min  int
	}{
		// DocumentQA's result, its result.json, the review's row and the
		// batch's results.jsonl line.
		{"the planted answer", `"answer": ?"4417-ORCHID"`, 4},
		// The review's row and the batch's results.jsonl line.
		{"the second planted answer", `"answer": ?"licensee"`, 2},
		{"DocumentQA scored against its gold answer", `"exact_match": true`, 1},
		{"the review's grid.csv", `(?m)^vault,What is the vault combination\?,done,4417-ORCHID,`, 1},
		{"the batch's result", `"succeeded": 2`, 1},
		// A batch child and a sign-off, by the ids memagent derives,
		// through the HTTP API: the child described, queried and
		// signaled while paused at its grant, the sign-off queried.
		{"the child described", `\{"child":"batch-budget-[0-9]+\.0","type":"memagent\.DocumentQA","status":"WORKFLOW_EXECUTION_STATUS_RUNNING","parent":"batch-budget-[0-9]+"\}`, 1},
		{"the child queried, paused at its grant", `\{"child_stage":"paused","chunks_done":[1-9]`, 1},
		{"the signal's answer", `\{"signaled":"batch-budget-[0-9]+\.0"\}`, 1},
		{"the child signaled", `\{"signals":\[("memagent\.[a-z-]+",)*"memagent\.budget-grant"`, 1},
		{"the batch's budget raised", `\{"raised":\{"max_calls":500`, 1},
		{"the batch with the budget", `\{"batch_succeeded":2,"items":2\}`, 1},
		{"a decision sent to the sign-off's chain", `\{"decided":\{"id":"0","status":"accepted"\}\}`, 1},
		{"the sign-off queried", `\{"signoff":"batch-budget-[0-9]+\.signoff","state":"waiting-level-1","pending":2,"subject":"batch-budget-[0-9]+","cells":\["0","1"\]\}`, 1},
	} {
		if n := len(regexp.MustCompile(c.re).FindAllIndex(out, -1)); n < c.min {
			t.Errorf("%s: %q matches %d times in the output, want at least %d", c.what, c.re, n, c.min)
		}
	}
}
