package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/worker/config"
)

// TestCancelAndTerminate: a run no worker polls for is not silently stuck:
// cancel says no worker is polling and names terminate; terminate needs a
// reason and ends it; a closed run is refused with exit 2. With a worker,
// cancel closes a running question as canceled.
func TestCancelAndTerminate(t *testing.T) {
	stack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	path, _ := writeDoc(t, 200_000)

	// No worker on this queue.
	stranded := cfg
	stranded.TaskQueue = "nobody-" + time.Now().UTC().Format("150405.000000")
	s := &session{cfg: stranded.Client(), logger: testLogger(t)}
	if err := s.connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.close()
	run, err := s.start(ctx, askRequest{Doc: path, Question: demoQuestion, Options: api.ModelOptions{ChunkTokens: 500}})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	id := run.ID
	// Asking the same again does not wait forever on the stranded run.
	_, _, err = runCLI(t, "ask", "--doc", path, "--question", demoQuestion, "--chunk-tokens", "500", "--task-queue", stranded.TaskQueue)
	if err == nil || !strings.Contains(err.Error(), "no worker is polling its task queue "+stranded.TaskQueue) || !strings.Contains(err.Error(), "starter cancel "+id) {
		t.Errorf("ask joining a run no worker polls for: %v, want a refusal naming the queue and starter cancel", err)
	}
	if _, _, err := runCLI(t, "status", id); err == nil || !strings.Contains(err.Error(), "no worker is polling task queue "+stranded.TaskQueue) ||
		strings.Contains(err.Error(), "RST_STREAM") || strings.Contains(err.Error(), "deadline") {
		t.Errorf("status of a run no worker polls for: %v, want the missing worker and no transport error", err)
	}
	out, stderr, err := runCLI(t, "cancel", "--wait", "1s", id)
	if err != nil {
		t.Fatalf("cancel: %v\n%s", err, stderr)
	}
	if !strings.Contains(out, "no worker is polling task queue "+stranded.TaskQueue) || !strings.Contains(out, "starter terminate "+id) {
		t.Errorf("cancel of a run no worker polls for printed\n%s\nwant the missing worker and the terminate command", out)
	}
	if _, _, err := runCLI(t, "terminate", id); exitCode(err) != ExitBadInput {
		t.Errorf("terminate without --reason: %v (exit %d), want exit %d", err, exitCode(err), ExitBadInput)
	}
	out, stderr, err = runCLI(t, "terminate", id, "--reason", "started on a queue no worker polls")
	if err != nil || !strings.Contains(out, "terminated: started on a queue no worker polls") {
		t.Fatalf("terminate: %v\n%s%s", err, out, stderr)
	}
	eventually(t, "the terminated run listed as terminated, not as the stage it had", func() (bool, string) {
		rows := listJSON(t, "--status", "terminated", "--type", "question")
		for _, r := range rows {
			if r.WorkflowID == id {
				return r.Status == "terminated" && r.WorkflowType == api.DocumentQAName, fmt.Sprintf("%+v", r)
			}
		}
		return false, fmt.Sprintf("%d rows", len(rows))
	})
	for _, r := range listJSON(t, "--status", "preparing") {
		if r.WorkflowID == id {
			t.Errorf("runs --status preparing lists the terminated run %s", id)
		}
	}
	if _, _, err := runCLI(t, "cancel", id); exitCode(err) != ExitBadInput || !strings.Contains(err.Error(), "already closed (terminated)") {
		t.Errorf("cancel of a terminated run: %v (exit %d), want exit %d saying it is terminated", err, exitCode(err), ExitBadInput)
	}

	// With a worker, a running question closes as canceled.
	startWorker(t)
	s2 := &session{cfg: cfg.Client(), logger: testLogger(t)}
	if err := s2.connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer s2.close()
	run, err = s2.start(ctx, askRequest{Doc: path, Question: demoQuestion, Fresh: true, Options: api.ModelOptions{ChunkTokens: 500}})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	id = run.ID
	eventually(t, "the run reading", func() (bool, string) {
		var p api.Progress
		v, err := s2.temporal.QueryWorkflow(ctx, id, "", api.ProgressQuery)
		if err == nil {
			err = v.Get(&p)
		}
		if err != nil {
			return false, err.Error()
		}
		return p.ChunksDone > 0, p.Stage
	})
	out, stderr, err = runCLI(t, "cancel", id)
	if err != nil || !strings.Contains(out, id+" is canceled") {
		t.Errorf("cancel of a running question: %v\n%s%s\nwant it canceled", err, out, stderr)
	}
}
