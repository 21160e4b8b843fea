package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/devenv"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/worker/config"
)

// TestBudgetPausesAndResumes: ask --max-calls 3 on a document of more
// chunks stops after 3 calls with exit 4 and status paused; starter budget
// lets it finish, and the run's calls are the document's chunks + 1, none
// paid twice. A max_tokens below the document's own tokens fails at once.
func TestBudgetPausesAndResumes(t *testing.T) {
	d := stack(t)
	startWorker(t)
	path, _ := writeDoc(t, 12_000)
	d.Simulator.Reset()
	out, _, err := runCLI(t, "ask", "--doc", path, "--question", demoQuestion, "--chunk-tokens", "1000", "--max-calls", "3", "--fresh", "--json")
	if exitCode(err) != ExitPaused {
		t.Fatalf("ask --max-calls 3: %v (exit %d), want exit %d", err, exitCode(err), ExitPaused)
	}
	var failure failureOutput
	if jerr := json.Unmarshal([]byte(out), &failure); jerr != nil || failure.Status != "paused" {
		t.Errorf("ask --json printed %q (%v), want status paused", out, jerr)
	}
	m := regexp.MustCompile(`run (\S+) paused`).FindStringSubmatch(err.Error())
	if m == nil || !strings.Contains(err.Error(), "starter budget "+m[1]) {
		t.Fatalf("the pause %q does not name the run and starter budget", err)
	}
	id := m[1]
	if n := len(d.Simulator.Calls()); n != 3 {
		t.Errorf("%d model calls before the pause, want 3", n)
	}
	if _, _, err := runCLI(t, "budget", id, "--max-calls", "2"); exitCode(err) != ExitBadInput {
		t.Errorf("a budget below what was spent: %v (exit %d), want exit %d", err, exitCode(err), ExitBadInput)
	}
	if out, stderr, err := runCLI(t, "budget", id, "--max-calls", "100"); err != nil {
		t.Fatalf("budget: %v\n%s%s", err, out, stderr)
	}
	var res api.DocumentQAResult
	awaitResult(t, id, &res)
	if res.Usage.Calls != res.Chunks+1 || res.Usage.RepeatedCalls != 0 || len(d.Simulator.Calls()) != res.Chunks+1 || res.Answer != demoAnswer {
		t.Errorf("resumed run: %d calls (%d repeated), simulator %d, chunks %d, answer %q; want chunks + 1 calls, none repeated, and %s",
			res.Usage.Calls, res.Usage.RepeatedCalls, len(d.Simulator.Calls()), res.Chunks, res.Answer, demoAnswer)
	}

	_, _, err = runCLI(t, "ask", "--doc", path, "--question", demoQuestion, "--chunk-tokens", "1000", "--max-tokens", "10", "--fresh")
	if err == nil || !strings.Contains(err.Error(), api.ErrOverBudget) {
		t.Errorf("ask --max-tokens 10: %v, want %s", err, api.ErrOverBudget)
	}
}

// pausedRun runs a starter command that must pause at its budget (exit 4)
// and returns the run's workflow id from the message.
func pausedRun(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, err := runCLI(t, args...)
	if exitCode(err) != ExitPaused {
		t.Fatalf("%s: %v (exit %d), want exit %d\n%s%s", args[0], err, exitCode(err), ExitPaused, out, stderr)
	}
	m := regexp.MustCompile(`run (\S+) paused`).FindStringSubmatch(err.Error())
	if m == nil || !strings.Contains(err.Error(), "starter budget "+m[1]) {
		t.Fatalf("the pause %q does not name the run and starter budget", err)
	}
	return m[1]
}

// paidCalls counts the simulator's memory updates and final answers,
// and fails the test if a call (the same question, chunk and memory) was
// paid twice.
func paidCalls(t *testing.T, d *devenv.Env) (updates, finals int) {
	t.Helper()
	return paidOnce(t, d.Simulator)
}

// paidOnce is paidCalls of one simulator.
func paidOnce(t *testing.T, sim *simulator.Server) (updates, finals int) {
	t.Helper()
	type key struct{ kind, question, memory, chunk string }
	seen := map[key]bool{}
	for _, c := range sim.Calls() {
		k := key{c.Kind, c.Question, c.MemoryIn, c.ChunkSHA256}
		if seen[k] {
			t.Errorf("a call was paid twice: %s of chunk %s", c.Kind, c.ChunkSHA256)
		}
		seen[k] = true
		if c.ChunkSHA256 == "" {
			finals++
		} else {
			updates++
		}
	}
	return updates, finals
}

// holdsAndRaises checks that the paused run id made exactly calls model
// calls and makes no more, then raises its budget with starter budget.
func holdsAndRaises(t *testing.T, d *devenv.Env, id string, calls int) {
	t.Helper()
	waitCalls(t, d, calls)
	time.Sleep(2 * time.Second) // no call may follow the last one allowed
	if n := len(d.Simulator.Calls()); n != calls {
		t.Fatalf("%d model calls while paused at a budget of %d", n, calls)
	}
	if out, stderr, err := runCLI(t, "budget", id, "--max-calls", "1000"); err != nil {
		t.Fatalf("budget: %v\n%s%s", err, out, stderr)
	}
}

// waitCalls waits until the simulator has answered n calls.
func waitCalls(t *testing.T, d *devenv.Env, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for len(d.Simulator.Calls()) < n && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
}

// testSession is a session connected to the test's stack (Temporal and
// S3), closed when the test ends, with a context that bounds the test.
func testSession(t *testing.T, limit time.Duration) (context.Context, *session) {
	t.Helper()
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)
	s := &session{cfg: cfg.Client(), logger: testLogger(t)}
	if err := s.connect(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	return ctx, s
}

// awaitResult waits for workflow id's result.
func awaitResult(t *testing.T, id string, out any) {
	t.Helper()
	ctx, s := testSession(t, 3*time.Minute)
	if err := s.temporal.GetWorkflow(ctx, id, "").Get(ctx, out); err != nil {
		t.Fatalf("%s: %v", id, err)
	}
}

// TestReviewBudgetPausesAndResumes: a review of two questions with
// --max-calls 5 makes exactly 5 calls, pauses (exit 4, status paused), and
// after starter budget finishes with every question's chunks + 1 calls,
// none paid twice.
func TestReviewBudgetPausesAndResumes(t *testing.T) {
	d := stack(t)
	startWorker(t)
	path, _ := writeDoc(t, 8_000)
	d.Simulator.Reset()
	id := pausedRun(t, "review", "--doc", path, "--question", demoQuestion, "--question", "What is the vault code?",
		"--chunk-tokens", "1000", "--max-calls", "5", "--fresh", "--reuse", "none", "--json")
	holdsAndRaises(t, d, id, 5)
	var g api.ReviewGrid
	awaitResult(t, id, &g)
	updates, finals := paidCalls(t, d)
	if finals != 2 || updates != 2*g.Chunks || g.Usage.Calls != 2*(g.Chunks+1) {
		t.Errorf("review: %d updates and %d finals at the simulator, usage %d calls, %d chunks; want 2 × chunks updates, 2 finals, 2 × (chunks + 1) calls",
			updates, finals, g.Usage.Calls, g.Chunks)
	}
}

// TestBatchBudgetPausesAndResumes: a batch of three items with
// --max-calls 20 hands its children grants that never sum past 20 calls,
// pauses (exit 4, status paused) with the children paused, and after
// starter budget finishes every item with chunks + 1 calls, none paid twice.
func TestBatchBudgetPausesAndResumes(t *testing.T) {
	d := stack(t)
	startWorker(t)
	path, _ := writeDoc(t, 8_000)
	var manifest bytes.Buffer
	for i := range 3 {
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("i%d", i), "document": path,
			"question": fmt.Sprintf("%s (variant %d)", demoQuestion, i)})
		manifest.Write(append(line, '\n'))
	}
	mpath := filepath.Join(t.TempDir(), "manifest.jsonl")
	if err := os.WriteFile(mpath, manifest.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	d.Simulator.Reset()
	id := pausedRun(t, "batch", "--manifest", mpath, "--chunk-tokens", "1000", "--concurrency", "2", "--max-calls", "20", "--json")
	holdsAndRaises(t, d, id, 20)
	var res api.BatchQAResult
	awaitResult(t, id, &res)
	updates, finals := paidCalls(t, d)
	if res.Succeeded != 3 || finals != 3 || updates%3 != 0 {
		t.Fatalf("batch: %d of 3 answered, %d final calls, %d memory updates; want 3, 3 and the same count per item", res.Succeeded, finals, updates)
	}
}
