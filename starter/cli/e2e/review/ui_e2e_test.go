package review

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/dev/devenv"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/testdeps"
	"github.com/memagent/memagent/starter/cli/clitest"
	"github.com/memagent/memagent/starter/cli/e2e/desktest"
)

// TestWebUIShowsRun is scripts/ui-check.sh's check in Go: the dev clitest.Stack's
// Web UI lists a run under its document's MemagentDocument filter, and not
// a run over another document, and the run's page names the document. It
// needs Chromium, which CI does not have by default.
func TestWebUIShowsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second dev clitest.Stack with the Web UI and a browser; skipped in -short mode")
	}
	testdeps.File(t, desktest.Chromium, "the Web UI cannot be checked without Chromium: apt-get install -y chromium (as root), or run scripts/ui-check.sh")
	// The shared clitest.Stack runs without the Web UI: this test has its own.
	d, err := devenv.Start(context.Background(), devenv.Options{
		FreePorts: true, Simulator: true,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		t.Fatalf("start dev clitest.Stack with the Web UI: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	for k, v := range map[string]string{
		"TEMPORAL_ADDRESS": d.Stack.TemporalAddress, "TEMPORAL_NAMESPACE": d.Stack.Namespace,
		"AWS_ENDPOINT_URL_S3": d.Stack.S3Endpoint, "AWS_ACCESS_KEY_ID": d.Stack.S3AccessKey,
		"AWS_SECRET_ACCESS_KEY": d.Stack.S3SecretKey, "AWS_REGION": d.Stack.Region, "MEMAGENT_BUCKET": d.Stack.Bucket,
		"OPENAI_BASE_URL": d.SimulatorURL, "MEMAGENT_TASK_QUEUE": "e2e-ui", "MEMAGENT_LOG_LEVEL": "error",
	} {
		t.Setenv(k, v)
	}
	clitest.StartWorker(t)

	type asked struct {
		WorkflowID string `json:"workflow_id"`
		RunID      string `json:"run_id"`
		Document   string `json:"document"`
	}
	ask := func(tokens int, question string) asked {
		t.Helper()
		path, _ := clitest.WriteDoc(t, tokens)
		out, stderr, err := clitest.RunCLI(t, "ask", "--doc", path, "--question", question, "--json")
		if err != nil {
			t.Fatalf("ask: %v\n%s", err, stderr)
		}
		var a asked
		if err := json.Unmarshal([]byte(out), &a); err != nil {
			t.Fatalf("ask --json printed %q: %v", out, err)
		}
		return a
	}
	run := ask(12_000, docgen.Question)
	other := ask(6_000, "Who signed the lease?")

	ui := d.Stack.UIURL + "/namespaces/" + url.PathEscape(d.Stack.Namespace) + "/workflows"
	list := ui + "?query=" + url.QueryEscape(`MemagentDocument="`+run.Document+`"`)
	page := ui + "/" + url.PathEscape(run.WorkflowID) + "/" + url.PathEscape(run.RunID) + "/history"
	expectPage(t, list, []string{run.WorkflowID, run.Document, "MemagentDocument"}, []string{other.WorkflowID})
	expectPage(t, page, []string{run.WorkflowID, run.Document}, nil)
}

// expectPage renders url in headless Chromium until its text holds every
// want and no unwanted, or fails after a few tries: the UI renders from its
// API a moment after load.
func expectPage(t *testing.T, url string, want, unwanted []string) {
	t.Helper()
	var dom string
	for try := 0; try < 5; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, desktest.Chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
			"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--user-data-dir="+t.TempDir(), "--virtual-time-budget=10000", "--window-size=1400,1000", "--dump-dom", url).Output()
		cancel()
		if err != nil {
			t.Fatalf("chromium --dump-dom %s: %v", url, err)
		}
		dom = string(out)
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(dom, w)
		}
		for _, u := range unwanted {
			ok = ok && !strings.Contains(dom, u)
		}
		if ok {
			return
		}
		time.Sleep(time.Second)
	}
	for _, w := range want {
		if !strings.Contains(dom, w) {
			t.Errorf("%s: the page lacks %q", url, w)
		}
	}
	for _, u := range unwanted {
		if strings.Contains(dom, u) {
			t.Errorf("%s: the page shows %q, want it filtered out", url, u)
		}
	}
}
