package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/pluginkit"
	"github.com/memagent/memagent/internal/reviewer"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/worker/config"
)

// TestScheduleRequiresValidation: a schedule created with
// --require-validation starts batches whose report is provisional
// (trigger's result, report.json, the page), each batch starts its
// validation with the gate's settings as it completes, describe shows
// the gate, and the report of the scheduled run, in its dated folder, is
// marked final once a reviewer decides the sample and signs it off.
func TestScheduleRequiresValidation(t *testing.T) {
	stack(t)
	startWorker(t)
	id := "e2e-gated"
	c := dialTest(t)
	t.Cleanup(func() { _ = c.ScheduleClient().GetHandle(context.Background(), id).Delete(context.Background()) })
	var lines []string
	for i := range 3 {
		doc := putDoc(t, fmt.Sprintf("schedule-gate/doc-%d.txt", i), 3000, uint64(40+i))
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("q%d", i), "document": doc, "question": demoQuestion, "answers": []string{demoAnswer}})
		lines = append(lines, string(line))
	}
	manifest := filepath.Join(t.TempDir(), "gated.jsonl")
	if err := os.WriteFile(manifest, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, "schedule", "create", "--id", id, "--manifest", manifest, "--cron", "0 2 * * *",
		"--require-validation", "--validate-margin", "0.6"); err == nil || !strings.Contains(err.Error(), "--validate-margin 0.6 is not between 0 and 0.5") {
		t.Errorf("a gate's margin out of range: %v", err)
	}
	if _, stderr, err := runCLI(t, "schedule", "create", "--id", id, "--manifest", manifest, "--cron", "0 2 * * *",
		"--require-validation", "--validate-margin", "0.2", "--validate-threshold", "precision>=0.5"); err != nil {
		t.Fatalf("schedule create: %v\n%s", err, stderr)
	}
	out, _, err := runCLI(t, "schedule", "describe", id)
	if err != nil || !strings.Contains(out, "Validation: required (confidence 0.95, margin ±0.2, precision>=0.5)") {
		t.Errorf("describe: %v\n%s", err, out)
	}
	out, stderr, err := runCLI(t, "schedule", "trigger", id, "--wait", "--json")
	if err != nil {
		t.Fatalf("schedule trigger --wait: %v\n%s", err, stderr)
	}
	var res api.BatchQAResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("trigger --json printed %q: %v", out, err)
	}
	vid := api.ValidationWorkflowID(res.WorkflowID)
	if v := res.Validation; v == nil || v.State != api.ReportProvisional || v.Validation != vid {
		t.Fatalf("result's validation %+v, want provisional under %s", v, vid)
	}
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	store, err := pluginkit.NewStore(context.Background(), cfg.Options)
	if err != nil {
		t.Fatal(err)
	}
	report := func() (api.BatchReport, string) {
		t.Helper()
		var rep api.BatchReport
		for _, uri := range []string{res.ReportURI, res.HTMLURI} {
			loc, _ := s3store.ParseURI(uri)
			data, err := store.ReadAll(context.Background(), loc)
			if err != nil {
				t.Fatalf("read %s: %v", uri, err)
			}
			if uri == res.HTMLURI {
				return rep, string(data)
			}
			if err := json.Unmarshal(data, &rep); err != nil || rep.Validation == nil {
				t.Fatalf("report.json: %v, validation %+v", err, rep.Validation)
			}
		}
		return rep, ""
	}
	if rep, page := report(); rep.Validation.State != api.ReportProvisional || !strings.Contains(page, "Provisional: ") {
		t.Errorf("report %s, page provisional %v", rep.Validation.State, strings.Contains(page, "Provisional: "))
	}

	file := filepath.Join(t.TempDir(), "reviewers")
	if err := os.WriteFile(file, []byte("carol "+reviewer.HashToken("carol-secret")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(reviewer.Env, "tokens:"+file)
	t.Setenv(reviewer.TokenEnv, "carol-secret")
	var vw api.ValidationView
	eventually(t, "the scheduled batch's sample", func() (bool, string) {
		out, stderr, err := runCLI(t, "validate", "status", vid, "-o", "json")
		if err != nil {
			return false, stderr
		}
		return json.Unmarshal([]byte(out), &vw) == nil, out
	})
	for _, cell := range vw.Cells {
		verdict := "--no-answer"
		if cell.Stratum == api.StratumAnswered {
			verdict = "--right"
		}
		if _, stderr, err := runCLI(t, "validate", "decide", vid, cell.ID, verdict); err != nil {
			t.Fatalf("decide %s: %v\n%s", cell.ID, err, stderr)
		}
	}
	if _, stderr, err := runCLI(t, "validate", "finish", vid); err != nil {
		t.Fatalf("finish: %v\n%s", err, stderr)
	}
	rep, page := report()
	if v := rep.Validation; v.State != api.ReportFinal || v.SignedOffBy != "carol" || len(v.Thresholds) != 1 || !v.Thresholds[0].Passed || !strings.Contains(page, "Final: validation "+vid) {
		t.Errorf("report after the validation: %+v", v)
	}
}
