package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// exitCase is one row of docs/EXIT-CODES.md's table of error cases.
type exitCase struct {
	name  string
	args  []string
	stack bool
	exit  int
}

// readExitCases parses the table between its markers in docs/EXIT-CODES.md.
func readExitCases(t *testing.T) []exitCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "EXIT-CODES.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start := strings.Index(text, "<!-- exit-code cases:")
	end := strings.Index(text, "<!-- end exit-code cases -->")
	if start < 0 || end < start {
		t.Fatal("docs/EXIT-CODES.md has no table of exit-code cases between its markers")
	}
	var cases []exitCase
	for _, line := range strings.Split(text[start:end], "\n")[1:] {
		cells := strings.Split(line, "|")
		if len(cells) != 6 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") || strings.TrimSpace(cells[1]) == "case" {
			continue
		}
		cmd := strings.Trim(strings.TrimSpace(cells[2]), "`")
		code, err := strconv.Atoi(strings.TrimSpace(cells[4]))
		if err != nil {
			t.Fatalf("row %q: exit %q is not a number", line, cells[4])
		}
		cases = append(cases, exitCase{name: strings.TrimSpace(cells[1]), args: strings.Fields(cmd),
			stack: strings.TrimSpace(cells[3]) == "stack", exit: code})
	}
	if len(cases) < 20 {
		t.Fatalf("docs/EXIT-CODES.md lists %d cases; the table did not parse", len(cases))
	}
	return cases
}

// exitFixtures makes the files the table's placeholders name.
func exitFixtures(t *testing.T, doc string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	var q101 strings.Builder
	for i := range 101 {
		q101.WriteString("What is item " + strconv.Itoa(i) + "?\n")
	}
	sub := filepath.Join(dir, "folder")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"$DOC":         doc,
		"$MISSING":     filepath.Join(dir, "no-such-file.txt"),
		"$EMPTY":       writeFile(t, dir, "empty.txt", nil),
		"$BINARY":      writeFile(t, dir, "image.bin", []byte{0x89, 'P', 'N', 'G', 0, 0, 0, 0x0d, 0xff, 0xfe, 0, 1, 2, 3}),
		"$LATIN1":      writeFile(t, dir, "latin1.txt", []byte("Caf\xe9 cr\xe8me, na\xefve r\xe9sum\xe9, and more text in ISO-8859-1.\n")),
		"$DIR":         sub,
		"$Q101":        writeFile(t, dir, "questions.txt", []byte(q101.String())),
		"$BADMANIFEST": writeFile(t, dir, "manifest.jsonl", []byte(`{"document": "s3://b/k.txt", "question": "Q"}`+"\n{not json\n")),
	}
}

func expand(args []string, vars map[string]string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if v, ok := vars[a]; ok {
			a = v
		}
		out[i] = a
	}
	return out
}

// TestExitCodeTable runs every case of docs/EXIT-CODES.md that must fail
// before the starter connects to anything, with Temporal and S3 pointed at
// closed ports: a case that got as far as dialling would exit 1.
func TestExitCodeTable(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "doc.txt")
	if err := os.WriteFile(doc, []byte("The vault code is 7391-ALPHA.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := exitFixtures(t, doc)
	t.Setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	for _, c := range readExitCases(t) {
		if c.stack {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			checkExit(t, c, expand(c.args, vars), 20*time.Second)
		})
	}
}

// TestExitCodeTableOnStack runs the table's cases marked stack against
// the embedded dev stack with a worker.
func TestExitCodeTableOnStack(t *testing.T) {
	d := stack(t)
	startWorker(t)
	doc, _ := writeDoc(t, 3_000)
	vars := exitFixtures(t, doc)
	vars["$S3MISSING"] = "s3://" + d.Stack.Bucket + "/exit-codes/no-such-object.txt"
	vars["$PARTIALBATCH"] = partialBatch(t, doc)
	vars["$OUT"] = filepath.Join(t.TempDir(), "out.jsonl")
	vars["$PAUSED"], vars["$CANCELED"], vars["$TERMINATED"] = stoppedRuns(t, doc)
	for _, c := range readExitCases(t) {
		if !c.stack {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			checkExit(t, c, expand(c.args, vars), 2*time.Minute)
		})
	}
}

func checkExit(t *testing.T, c exitCase, args []string, limit time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := run(ctx, append(args, "--json"), &stdout, &stderr)
	if got := exitCode(err); got != c.exit {
		t.Errorf("starter %s: exit %d (%v), want %d", strings.Join(args, " "), got, err, c.exit)
	}
	if c.exit != 0 && !strings.HasPrefix(strings.TrimSpace(stdout.String()), "{") {
		t.Errorf("starter %s --json printed %q, want one JSON object", strings.Join(args, " "), stdout.String())
	}
}

// stoppedRuns starts three questions about doc and leaves one paused at
// its budget, one canceled and one terminated, for the table's $PAUSED,
// $CANCELED and $TERMINATED.
func stoppedRuns(t *testing.T, doc string) (paused, canceled, terminated string) {
	t.Helper()
	pause := func(question string) string {
		out, _, err := runCLI(t, "ask", "--doc", doc, "--question", question, "--chunk-tokens", "500", "--max-calls", "1", "--fresh", "--json")
		var f failureOutput
		if exitCode(err) != ExitPaused || json.Unmarshal([]byte(out), &f) != nil || f.WorkflowID == "" {
			t.Fatalf("ask --max-calls 1: %v (exit %d), printed %q; want a paused run", err, exitCode(err), out)
		}
		return f.WorkflowID
	}
	paused, canceled, terminated = pause("Which run pauses?"), pause("Which run is canceled?"), pause("Which run is terminated?")
	if out, stderr, err := runCLI(t, "cancel", canceled); err != nil {
		t.Fatalf("cancel: %v\n%s%s", err, out, stderr)
	}
	if out, stderr, err := runCLI(t, "terminate", terminated, "--reason", "exit-code table"); err != nil {
		t.Fatalf("terminate: %v\n%s%s", err, out, stderr)
	}
	return paused, canceled, terminated
}

// partialBatch asks a question of doc, then runs a batch of one item that
// asks it again with the default reuse: the item's run starts from the
// ask's memory checkpoint (or takes an earlier batch's answer), so its
// rollouts lack turns. It returns the batch's workflow id.
func partialBatch(t *testing.T, doc string) string {
	t.Helper()
	question := "Which turns did the exit-code table's batch skip?"
	if _, stderr, err := runCLI(t, "ask", "--doc", doc, "--question", question, "--json"); err != nil {
		t.Fatalf("ask: %v\n%s", err, stderr)
	}
	line, _ := json.Marshal(map[string]any{"id": "partial", "document": doc, "question": question, "answers": []string{"none"}})
	out, _ := runBatchCLI(t, "--manifest", writeManifest(t, string(line)), "--name", "exit-codes-partial", "--json")
	if out.Result.Succeeded+out.Result.Skipped != 1 {
		t.Fatalf("batch = %+v, want its item answered", out.Result)
	}
	return out.Result.WorkflowID
}
