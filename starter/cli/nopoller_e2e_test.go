package cli

import (
	"strings"
	"testing"

	"github.com/memagent/memagent/worker/config"
)

// TestAskTimeoutSaysWhyNoWorkerTakesTheRun asks on the real server with
// --timeout where nobody takes the run's tasks: a task queue no worker
// polls, and one whose only worker is a versioned build that is not
// current. Each time ask stops waiting with exit code 3, says Temporal
// answered and why the run did not move, with what to do, and never that
// Temporal is unreachable.
func TestAskTimeoutSaysWhyNoWorkerTakesTheRun(t *testing.T) {
	stack(t)
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	path, _ := writeDoc(t, 2_000)
	for _, tc := range []struct {
		name, taskQueue string
		build           bool
		want            []string
	}{
		{"no worker", "words-nobody-polls", false,
			[]string{"Temporal answered, but no worker polls the run's task queue words-nobody-polls: start one (go run ./worker) with MEMAGENT_TASK_QUEUE=words-nobody-polls"}},
		{"no current build", "words-versioned", true,
			[]string{"Temporal answered, but no build of worker deployment words-deployment is current under Worker Versioning",
				"temporal worker deployment set-current-version --deployment-name words-deployment --build-id words-b1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.build {
				bc := cfg
				bc.TaskQueue = tc.taskQueue
				startBuild(t, bc, "words-deployment", "words-b1")
			}
			_, stderr, err := runCLI(t, "ask", "--doc", path, "--question", "Who takes this run?", "--task-queue", tc.taskQueue, "--timeout", "3s", "--fresh")
			if exitCode(err) != ExitStoppedWaiting {
				t.Fatalf("ask: %v (exit %d), want exit %d\n%s", err, exitCode(err), ExitStoppedWaiting, stderr)
			}
			for _, w := range append(tc.want, "--timeout reached: stopped waiting for run") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("ask's error:\n %v\nwant it to say:\n %s", err, w)
				}
			}
			if strings.Contains(stderr, "unreachable") {
				t.Errorf("ask said Temporal is unreachable while it answered:\n%s", stderr)
			}
		})
	}
}
