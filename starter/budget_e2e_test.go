package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/config"
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
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := &session{cfg: cfg, logger: testLogger(t)}
	if err := s.connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.close()
	var res api.DocumentQAResult
	if err := s.temporal.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil {
		t.Fatalf("the resumed run: %v", err)
	}
	if res.Usage.Calls != res.Chunks+1 || res.Usage.RepeatedCalls != 0 || len(d.Simulator.Calls()) != res.Chunks+1 || res.Answer != demoAnswer {
		t.Errorf("resumed run: %d calls (%d repeated), simulator %d, chunks %d, answer %q; want chunks + 1 calls, none repeated, and %s",
			res.Usage.Calls, res.Usage.RepeatedCalls, len(d.Simulator.Calls()), res.Chunks, res.Answer, demoAnswer)
	}

	_, _, err = runCLI(t, "ask", "--doc", path, "--question", demoQuestion, "--chunk-tokens", "1000", "--max-tokens", "10", "--fresh")
	if err == nil || !strings.Contains(err.Error(), api.ErrOverBudget) {
		t.Errorf("ask --max-tokens 10: %v, want %s", err, api.ErrOverBudget)
	}
}
