package review

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/reviewer"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/starter/cli"
	"github.com/memagent/memagent/starter/cli/clitest"
)

// TestValidateBatchWithTheCLI validates a small batch from the starter
// alone: the validation starts under <batch>.validate with its seed
// recorded, the sample is the whole of each small stratum, a reviewer who
// revealed a cell's model answer is refused its decision (blind), another
// decides it, the figures appear in status, and the report (JSON, HTML)
// is written beside the batch's report once signed off.
func TestValidateBatchWithTheCLI(t *testing.T) {
	clitest.Stack(t)
	clitest.StartWorker(t)
	doc1, _ := clitest.WriteDoc(t, 2000)
	doc2, _ := clitest.WriteDoc(t, 2500)
	var lines []string
	for i, d := range []string{doc1, doc2} {
		lines = append(lines,
			fmt.Sprintf(`{"id":"a%d","document":"%s","question":"%s"}`, i, d, docgen.Question),
			fmt.Sprintf(`{"id":"b%d","document":"%s","question":"Who signed the lease?"}`, i, d))
	}
	out, _ := clitest.RunBatch(t, "--manifest", clitest.WriteManifest(t, lines...), "--name", "validate-batch", "--json")
	batch := out.Result.WorkflowID

	file := filepath.Join(t.TempDir(), "reviewers")
	if err := os.WriteFile(file, []byte("carol "+reviewer.HashToken("carol-secret")+"\ndave "+reviewer.HashToken("dave-secret")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(reviewer.Env, "tokens:"+file)
	starter := func(wantExit int, args ...string) string {
		t.Helper()
		stdout, stderr, err := clitest.RunCLI(t, args...)
		if cli.ExitCode(err) != wantExit {
			t.Fatalf("%q: exit %d (%v), want %d\n%s", args, cli.ExitCode(err), err, wantExit, stderr)
		}
		if err != nil {
			return err.Error()
		}
		return stdout
	}
	if msg := starter(cli.ExitBadInput, "validate", batch, "--margin", "0.5"); !strings.Contains(msg, "not between 0 and 0.5") {
		t.Errorf("margin 0.5: %q", msg)
	}
	if msg := starter(cli.ExitBadInput, "validate", "no-such-batch"); !strings.Contains(msg, "no-such-batch") {
		t.Errorf("no such batch: %q", msg)
	}
	if msg := starter(cli.ExitBadInput, "validate", batch, "--sample", "3"); !strings.Contains(msg, "larger than the") {
		t.Errorf("a sample larger than its stratum: %q", msg)
	}
	// One cell a stratum first, then extended for ±20%, which takes
	// every stratum (of one or two cells) whole.
	starter(0, "validate", batch, "--sample", "1", "--threshold", "precision>=0.01")
	id := api.ValidationWorkflowID(batch)
	var vw api.ValidationView
	status := func() {
		stdout, stderr, err := clitest.RunCLI(t, "validate", "status", id, "-o", "json")
		if err != nil {
			t.Fatalf("status: %v\n%s", err, stderr)
		}
		if err := json.Unmarshal([]byte(stdout), &vw); err != nil {
			t.Fatal(err)
		}
	}
	status()
	drawn := map[string][]string{}
	for _, st := range vw.Strata {
		drawn[st.Question+"/"+st.Stratum] = st.Sampled
	}
	if len(vw.Cells) >= 4 {
		t.Fatalf("--sample 1 drew %d cells of 4: want a stratum of two for the extension", len(vw.Cells))
	}
	t.Setenv(reviewer.TokenEnv, "dave-secret")
	if msg := starter(0, "validate", "extend", id, "--margin", "0.2"); !strings.Contains(msg, "the sample is 4 cells") {
		t.Errorf("extend: %q", msg)
	}
	status()
	if vw.Seed != id || vw.PopulationHash == "" || len(vw.Cells) != 4 || !vw.Blind || vw.StopMargin != 0.2 {
		t.Fatalf("validation %+v, want the 4 cells of the batch sampled, blind, seeded by its id, held to ±20%%", vw)
	}
	for _, st := range vw.Strata {
		if was := drawn[st.Question+"/"+st.Stratum]; !slices.Equal(st.Sampled[:len(was)], was) {
			t.Errorf("stratum %s %s grown to %v, not from %v", st.Question, st.Stratum, st.Sampled, was)
		}
	}
	for _, c := range vw.Cells {
		if c.ModelAnswer != "" {
			t.Errorf("blind status shows cell %s's model answer %q", c.ID, c.ModelAnswer)
		}
	}
	first := vw.Cells[0]
	t.Setenv(reviewer.TokenEnv, "carol-secret")
	if shown := starter(0, "validate", "reveal", id, first.ID); !strings.Contains(shown, "model answer:") {
		t.Errorf("reveal: %q", shown)
	}
	verdict := func(c api.ValidationCell) string {
		if c.Stratum == api.StratumAnswered {
			return "--right"
		}
		return "--no-answer"
	}
	if msg := starter(cli.ExitBadInput, "validate", "decide", id, first.ID, verdict(first)); !strings.Contains(msg, "blind review: carol has seen the model's answer") {
		t.Errorf("carol decides what she saw: %q", msg)
	}
	for _, c := range vw.Cells[1:] {
		starter(0, "validate", "decide", id, c.ID, verdict(c))
	}
	t.Setenv(reviewer.TokenEnv, "dave-secret")
	starter(0, "validate", "decide", id, first.ID, verdict(first))
	// Every stratum is sampled whole: an extension has nothing to add,
	// and every interval is a point, within the margin.
	if msg := starter(cli.ExitBadInput, "validate", "extend", id); !strings.Contains(msg, "neither --margin nor --sample") {
		t.Errorf("extend without a size: %q", msg)
	}
	if msg := starter(cli.ExitBadInput, "validate", "extend", id, "--margin", "0.2"); !strings.Contains(msg, "every stratum's sample is that large already") {
		t.Errorf("extend a whole sample: %q", msg)
	}
	text := starter(0, "validate", "status", id)
	for _, s := range []string{"0 of 4 sampled cells pending", "precision", "elusion", "threshold precision>=0.01: pass", "margin ±0.2: every interval is within it"} {
		if !strings.Contains(text, s) {
			t.Errorf("status lacks %q:\n%s", s, text)
		}
	}
	var rep api.ValidationReport
	if err := json.Unmarshal([]byte(starter(0, "validate", "finish", id, "-o", "json")), &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.Passed || rep.Finished == nil || rep.Finished.Reviewer != "dave" || len(rep.Entries) != 7 || rep.Entries[0].Action != "extend" || len(rep.Entries[0].Grown) == 0 {
		t.Errorf("report: passed %v, finished %+v, entries %+v (want the extension, the reveal, 4 decisions, the sign-off)", rep.Passed, rep.Finished, rep.Entries)
	}
	if want := out.Result.ReportPrefix + "validation/report.json"; rep.ReportURI != want {
		t.Errorf("report at %q, want %q", rep.ReportURI, want)
	}
	_, store := clitest.Store(t)
	for _, uri := range []string{rep.ReportURI, rep.HTMLURI} {
		loc, err := s3store.ParseURI(uri)
		if err != nil {
			t.Fatal(err)
		}
		data, err := store.ReadAll(t.Context(), loc)
		if err != nil || !strings.Contains(string(data), id) {
			t.Errorf("%s: %v, %d bytes", uri, err, len(data))
		}
	}
	t.Logf("figures: %+v", rep.Overall)
}
