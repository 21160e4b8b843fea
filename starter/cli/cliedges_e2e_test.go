package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/worker/config"
)

// oneJSONLine decodes out, which must be one JSON object on one line,
// into v.
func oneJSONLine(t *testing.T, what, out string, v any) {
	t.Helper()
	if strings.Count(strings.TrimRight(out, "\n"), "\n") != 0 || !strings.HasPrefix(out, "{") {
		t.Errorf("%s printed %q, want one JSON object on one line", what, out)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Errorf("%s printed %q: %v", what, out, err)
	}
}

// TestWatchPausedCanceledTerminated: watch exits 4 on a run paused at its
// budget, and 5 with one line (no SDK error) once it is canceled or
// terminated; every --json object, success or failure, is one line with
// the run's workflow_id; runs shows the chunks a canceled review had read,
// as status does, not the search attribute's older count.
func TestWatchPausedCanceledTerminated(t *testing.T) {
	stack(t)
	startWorker(t)
	path, _ := writeDoc(t, 12_000)

	// A review paused at its budget: the --json failure names the run.
	out, _, err := runCLI(t, "review", "--doc", path, "--question", demoQuestion, "--question", "What is the vault code?",
		"--chunk-tokens", "1000", "--max-calls", "9", "--fresh", "--reuse", "none", "--json")
	if exitCode(err) != ExitPaused {
		t.Fatalf("review --max-calls 9: %v (exit %d), want %d", err, exitCode(err), ExitPaused)
	}
	var paused failureOutput
	oneJSONLine(t, "a paused review --json", out, &paused)
	id := paused.WorkflowID
	if paused.Status != "paused" || id == "" || !strings.Contains(paused.Message, id) {
		t.Fatalf("paused review: %+v, want status paused and its workflow_id", paused)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr strings.Builder
	err = run(ctx, []string{"watch", id}, &stdout, &stderr)
	if exitCode(err) != ExitPaused || !strings.Contains(err.Error(), "starter budget "+id) {
		t.Errorf("watch of a paused review: %v (exit %d), want exit %d naming starter budget", err, exitCode(err), ExitPaused)
	}
	out, _, err = runCLI(t, "watch", id, "-o", "json")
	oneJSONLine(t, "watch -o json of a paused review", out, &paused)
	if exitCode(err) != ExitPaused || paused.WorkflowID != id || paused.Status != "paused" {
		t.Errorf("watch -o json of a paused review: %+v (exit %d)", paused, exitCode(err))
	}

	// Canceled: watch says so in one line, with its own exit code.
	if out, stderr, err := runCLI(t, "cancel", id); err != nil {
		t.Fatalf("cancel: %v\n%s%s", err, out, stderr)
	}
	_, _, err = runCLI(t, "watch", id)
	if exitCode(err) != ExitCanceled || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "workflow execution error") ||
		!strings.Contains(err.Error(), id+" was canceled") {
		t.Errorf("watch of a canceled review: %q (exit %d), want one line saying it was canceled, exit %d", err, exitCode(err), ExitCanceled)
	}
	var canceled failureOutput
	out, _, _ = runCLI(t, "watch", id, "--json")
	oneJSONLine(t, "watch --json of a canceled review", out, &canceled)
	if canceled.Status != "canceled" || canceled.ExitCode != ExitCanceled || canceled.WorkflowID != id {
		t.Errorf("watch --json of a canceled review: %+v", canceled)
	}

	// runs shows how far the canceled review read, as status does.
	out, _, err = runCLI(t, "status", id, "--json")
	var st struct {
		WorkflowID string `json:"workflow_id"`
		ChunksDone int64  `json:"chunks_done"`
	}
	oneJSONLine(t, "status --json", out, &st)
	if err != nil || st.WorkflowID != id || st.ChunksDone < 2 {
		t.Fatalf("status of the canceled review: %+v (%v), want its id and at least 2 chunks read", st, err)
	}
	found := false
	for _, r := range listJSON(t, "--type", "review", "--status", "canceled") {
		if r.WorkflowID == id {
			found = true
			if r.ChunksDone == nil || *r.ChunksDone != st.ChunksDone {
				t.Errorf("runs shows %s/%s chunks for the canceled review, status %d", count(r.ChunksDone), count(r.ChunksTotal), st.ChunksDone)
			}
		}
	}
	if !found {
		t.Errorf("runs --status canceled does not list %s", id)
	}

	// Terminated, with no worker to act: the same exit code, one line.
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	cfg.TaskQueue = "nobody-" + time.Now().UTC().Format("150405.000000")
	s := &session{cfg: cfg.Client(), logger: testLogger(t)}
	if err := s.connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.close()
	r, err := s.start(ctx, askRequest{Doc: path, Question: demoQuestion, Fresh: true, Options: api.ModelOptions{ChunkTokens: 1000}})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	if out, stderr, err := runCLI(t, "terminate", r.ID, "--reason", "test"); err != nil {
		t.Fatalf("terminate: %v\n%s%s", err, out, stderr)
	}
	_, _, err = runCLI(t, "watch", r.ID)
	if exitCode(err) != ExitCanceled || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), r.ID+" was terminated") {
		t.Errorf("watch of a terminated run: %q (exit %d), want one line saying it was terminated, exit %d", err, exitCode(err), ExitCanceled)
	}
}
