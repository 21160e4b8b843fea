package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/pluginkit"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/worker/config"
)

// TestScheduleEndToEnd drives a schedule through its life on the embedded
// stack: created from a local manifest, seen by the SDK's schedule list and
// by `schedule list`, triggered and waited for, its BatchQA run writing a
// dated report under the schedule's default prefix; then paused, described
// and deleted.
func TestScheduleEndToEnd(t *testing.T) {
	d := stack(t)
	startWorker(t)
	id := "e2e-nightly"
	c := dialTest(t)
	t.Cleanup(func() { _ = c.ScheduleClient().GetHandle(context.Background(), id).Delete(context.Background()) })

	var lines []string
	for i := range 3 {
		doc := putDoc(t, fmt.Sprintf("schedule-e2e/doc-%d.txt", i), 3000, uint64(20+i))
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("q%d", i), "document": doc, "question": demoQuestion, "answers": []string{demoAnswer}})
		lines = append(lines, string(line))
	}
	manifest := filepath.Join(t.TempDir(), "nightly.jsonl")
	if err := os.WriteFile(manifest, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	out, stderr, err := runCLI(t, "schedule", "create", "--id", id, "--manifest", manifest, "--cron", "0 2 * * *",
		"--concurrency", "3", "--chunk-tokens", "2000", "--note", "e2e")
	if err != nil {
		t.Fatalf("schedule create: %v\n%s", err, stderr)
	}
	if !strings.Contains(out, "created schedule "+id) || !strings.Contains(out, "next run: ") {
		t.Errorf("create printed %q", out)
	}
	if _, _, err := runCLI(t, "schedule", "create", "--id", id, "--manifest", manifest, "--every", "24h"); err == nil || !strings.Contains(err.Error(), "already exists; use delete first or pick another --id") {
		t.Errorf("second create: err = %v, want already exists", err)
	}

	// The SDK's own list sees it (visibility is written a moment later).
	eventually(t, "SDK schedule list shows "+id, func() (bool, string) {
		it, err := c.ScheduleClient().List(context.Background(), client.ScheduleListOptions{PageSize: 100})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				return false, err.Error()
			}
			if e.ID == id && e.WorkflowType.Name == api.BatchQAName {
				return true, ""
			}
			seen = append(seen, e.ID)
		}
		return false, fmt.Sprintf("schedules %q", seen)
	})
	var rows []scheduleRow
	eventually(t, "schedule list --json shows "+id, func() (bool, string) {
		out, stderr, err := runCLI(t, "schedule", "list", "--json")
		if err != nil {
			return false, err.Error() + stderr
		}
		rows = nil
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			return false, out
		}
		for _, r := range rows {
			if r.ID == id {
				return r.Spec == "cron 0 2 * * *" && !r.Paused && r.NextRun != nil, fmt.Sprintf("%+v", r)
			}
		}
		return false, out
	})
	if out, _, err := runCLI(t, "schedule", "list"); err != nil || !strings.Contains(out, id) || !strings.Contains(out, "NEXT RUN") {
		t.Errorf("schedule list: %v\n%s", err, out)
	}

	// Trigger and wait: the run is the schedule's BatchQA over the
	// uploaded manifest, and its report lands in a dated folder.
	before := len(d.Simulator.Calls())
	out, stderr, err = runCLI(t, "schedule", "trigger", id, "--wait", "--json")
	if err != nil {
		t.Fatalf("schedule trigger --wait: %v\n%s", err, stderr)
	}
	var res api.BatchQAResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("trigger --json printed %q: %v", out, err)
	}
	if res.Items != 3 || res.Succeeded+res.Skipped != 3 || res.Failed != 0 {
		t.Errorf("batch result = %+v, want 3 items, none failed", res)
	}
	if len(d.Simulator.Calls()) == before && res.Skipped != 3 {
		t.Error("the triggered batch made no model call")
	}
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("s3://%s/reports/%s/", cfg.Bucket, id)
	dated, ok := strings.CutPrefix(res.ReportURI, prefix)
	folder, file, _ := strings.Cut(dated, "/")
	if !ok || file != "report.json" {
		t.Fatalf("report at %q, want %s<date>/report.json", res.ReportURI, prefix)
	}
	if _, err := time.Parse(api.DatedReportLayout, folder); err != nil {
		t.Errorf("report folder %q is not a UTC start time (%s): %v", folder, api.DatedReportLayout, err)
	}
	store, err := pluginkit.NewStore(context.Background(), cfg.Options)
	if err != nil {
		t.Fatal(err)
	}
	loc, _ := s3store.ParseURI(res.ReportURI)
	data, err := store.ReadAll(context.Background(), loc)
	if err != nil {
		t.Fatalf("read %s: %v", res.ReportURI, err)
	}
	var rep api.BatchReport
	if err := json.Unmarshal(data, &rep); err != nil || rep.Overall.Items != 3 || !strings.HasPrefix(rep.WorkflowID, "batch-"+id+"-") {
		t.Errorf("report.json: %v, %d items, workflow %q; want 3 items from a batch-%s-… run", err, rep.Overall.Items, rep.WorkflowID, id)
	}
	if !strings.HasPrefix(rep.Manifest, "s3://"+cfg.Bucket+"/manifests/sha256/") {
		t.Errorf("manifest %q, want the uploaded copy", rep.Manifest)
	}

	// Pause, then describe: paused with the note, the run among the
	// recent actions, completed.
	if _, stderr, err := runCLI(t, "schedule", "pause", id, "--note", "maintenance window"); err != nil {
		t.Fatalf("pause: %v\n%s", err, stderr)
	}
	out, stderr, err = runCLI(t, "schedule", "describe", id, "--json")
	if err != nil {
		t.Fatalf("describe: %v\n%s", err, stderr)
	}
	var v scheduleView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("describe --json printed %q: %v", out, err)
	}
	if !v.Paused || v.Note != "maintenance window" || v.Overlap != "skip" || v.Workflow != api.BatchQAName {
		t.Errorf("describe = paused %v, note %q, overlap %q, workflow %q", v.Paused, v.Note, v.Overlap, v.Workflow)
	}
	if v.Input == nil || !v.Input.DatedReport || v.Input.ReportPrefix != prefix || v.Input.Concurrency != 3 || v.Input.Options.ChunkTokens != 2000 {
		t.Errorf("describe input = %+v", v.Input)
	}
	if n := len(v.RecentActions); n == 0 || v.RecentActions[n-1].WorkflowID != rep.WorkflowID || v.RecentActions[n-1].Status != "completed" {
		t.Errorf("recent actions = %+v, want the run %s, completed", v.RecentActions, rep.WorkflowID)
	}
	out, _, err = runCLI(t, "schedule", "describe", id)
	if err != nil || !strings.Contains(out, "paused (maintenance window)") || !strings.Contains(out, rep.WorkflowID) {
		t.Errorf("describe: %v\n%s", err, out)
	}
	if _, _, err := runCLI(t, "schedule", "unpause", id); err != nil {
		t.Errorf("unpause: %v", err)
	}

	if _, stderr, err := runCLI(t, "schedule", "delete", id); err != nil {
		t.Fatalf("delete: %v\n%s", err, stderr)
	}
	if _, _, err := runCLI(t, "schedule", "describe", id); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("describe after delete: err = %v, want does not exist", err)
	}
}

// TestScheduleEncryptsItsAction: with codec keys, the schedule's action
// (the BatchQA input) and memo reach Temporal encrypted, and describe reads
// them back with the same keys.
func TestScheduleEncryptsItsAction(t *testing.T) {
	stack(t)
	t.Setenv("MEMAGENT_CODEC_KEYS", "k1:"+base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32))))
	id := "e2e-encrypted"
	manifest := putDoc(t, "schedule-e2e/encrypted.jsonl", 300, 1)
	c := dialTest(t)
	t.Cleanup(func() { _ = c.ScheduleClient().GetHandle(context.Background(), id).Delete(context.Background()) })
	if _, stderr, err := runCLI(t, "schedule", "create", "--id", id, "--manifest", manifest, "--every", "7d"); err != nil {
		t.Fatalf("create: %v\n%s", err, stderr)
	}
	resp, err := c.WorkflowService().DescribeSchedule(context.Background(), &workflowservice.DescribeScheduleRequest{Namespace: os.Getenv("TEMPORAL_NAMESPACE"), ScheduleId: id})
	if err != nil {
		t.Fatal(err)
	}
	payloads := []*commonpb.Payload{resp.GetSchedule().GetAction().GetStartWorkflow().GetInput().GetPayloads()[0]}
	for _, p := range resp.GetMemo().GetFields() {
		payloads = append(payloads, p)
	}
	for _, p := range payloads {
		if enc := string(p.GetMetadata()["encoding"]); enc != "binary/encrypted" || strings.Contains(string(p.GetData()), "encrypted.jsonl") {
			t.Errorf("payload stored as %q (%d bytes), want binary/encrypted", enc, len(p.GetData()))
		}
	}
	out, stderr, err := runCLI(t, "schedule", "describe", id)
	if err != nil || !strings.Contains(out, "Manifest:  "+manifest) || !strings.Contains(out, "Spec:      every 7d") {
		t.Errorf("describe: %v\n%s%s", err, out, stderr)
	}
}

// TestScheduleServerRefusesBadSpec: the CLI checks only a cron spec's
// shape; the Temporal server judges its fields at create. A spec it
// refuses is bad input (exit 2) naming --cron and the server's reason, and
// no schedule is left; a spec with names and ranges it accepts is created.
func TestScheduleServerRefusesBadSpec(t *testing.T) {
	stack(t)
	manifest := putDoc(t, "schedule-e2e/spec.jsonl", 300, 2)
	c := dialTest(t)
	for i, tc := range []struct {
		cron, reason string // reason "" = accepted
	}{
		{"0 25 * * *", "Hour is not in range [0-23]"},
		{"*/0 * * * *", "Minute has invalid Step"},
		{"0 0 * foo *", "Month is not in range [1-12]"},
		{"0 0 * * 5-1", "End is before Start"},
		{"0 6 * jan-mar mon-fri", ""},
	} {
		t.Run(tc.cron, func(t *testing.T) {
			id := fmt.Sprintf("e2e-spec-%d", i)
			t.Cleanup(func() { _ = c.ScheduleClient().GetHandle(context.Background(), id).Delete(context.Background()) })
			out, stderr, err := runCLI(t, "schedule", "create", "--id", id, "--manifest", manifest, "--cron", tc.cron)
			_, derr := c.ScheduleClient().GetHandle(context.Background(), id).Describe(context.Background())
			if tc.reason == "" {
				if err != nil || derr != nil {
					t.Fatalf("create --cron %q: %v (describe: %v)\n%s%s", tc.cron, err, derr, out, stderr)
				}
				return
			}
			if got := exitCode(err); got != ExitBadInput {
				t.Errorf("create --cron %q: exit %d (%v), want %d", tc.cron, got, err, ExitBadInput)
			}
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("--cron %q", tc.cron)) || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("create --cron %q: err = %v, want one naming --cron and %q", tc.cron, err, tc.reason)
			}
			if !isNotFound(derr) {
				t.Errorf("describe %s after a refused create: err = %v, want not found", id, derr)
			}
		})
	}
}
