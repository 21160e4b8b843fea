package review

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/reviewer"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/starter/cli"
	"github.com/memagent/memagent/starter/cli/clitest"
)

// TestSignOffBatchWithTheCLI signs a batch's items off from the starter
// alone, at one level: the cells are the items (seq), each decision is
// recorded under the reviewer the token names, a token not in the file
// decides nothing, and the decided grid lands beside the batch's report.
func TestSignOffBatchWithTheCLI(t *testing.T) {
	clitest.Stack(t)
	clitest.StartWorker(t)
	doc, _ := clitest.WriteDoc(t, 3000)
	m := clitest.WriteManifest(t,
		`{"id":"a","document":"`+doc+`","question":"`+docgen.Question+`","answers":["`+docgen.Answer+`"]}`,
		`{"id":"b","document":"`+doc+`","question":"Who signed the lease?"}`)
	out, _ := clitest.RunBatch(t, "--manifest", m, "--name", "signoff-batch", "--json")
	id := out.Result.WorkflowID

	file := filepath.Join(t.TempDir(), "reviewers")
	if err := os.WriteFile(file, []byte("carol "+reviewer.HashToken("carol-secret")+"\n"), 0o600); err != nil {
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
	starter(0, "signoff", id, "--start", "--levels", "1")
	t.Setenv(reviewer.TokenEnv, "not-a-reviewer")
	if msg := starter(cli.ExitBadInput, "decide", id, "--cell", "0", "--accept"); !strings.Contains(msg, "not in "+file) {
		t.Errorf("an unknown token: %q", msg)
	}
	t.Setenv(reviewer.TokenEnv, "carol-secret")
	starter(0, "decide", id, "--cell", "0", "--accept", "--comment", "checked against the document")
	starter(0, "decide", id, "--cell", "1", "--reject", "--reason", "the document names no lease")
	var g api.SignOffGrid
	if err := json.Unmarshal([]byte(starter(0, "signoff", id, "--level", "1", "-o", "json")), &g); err != nil {
		t.Fatal(err)
	}
	if g.Subject.Kind != api.SubjectBatch || len(g.Cells) != 2 || !strings.HasPrefix(g.Subject.AuditURI, out.Result.ReportPrefix+"signoff/") {
		t.Errorf("sign-off %+v, want the batch's two items, audited beside its report (%s)", g, out.Result.ReportPrefix)
	}
	for _, c := range g.Cells {
		if c.Level1 == nil || c.Level1.Reviewer != "carol" || !strings.Contains(c.Level1.ClientIdentity, "(reviewer carol)") {
			t.Errorf("cell %s: %+v, want carol's decision through the starter", c.ID, c.Level1)
		}
	}
	// Once signed off the grid is final, and written beside the report.
	// The decided grid is written a moment after the last sign-off.
	clitest.Eventually(t, "the decided grid", func() (bool, string) {
		status := starter(0, "signoff", id)
		return strings.Contains(status, "State:    signed-off") && strings.Contains(status, "decided.xlsx"), status
	})
	if msg := starter(cli.ExitBadInput, "decide", id, "--cell", "0", "--reject", "--reason", "late"); !strings.Contains(msg, "the grid is final") {
		t.Errorf("a decision after the sign-off: %q", msg)
	}
	_, store := clitest.Store(t)
	loc, err := s3store.ParseURI(out.Result.ReportPrefix + "signoff/decided.csv")
	if err != nil {
		t.Fatal(err)
	}
	csv, err := store.ReadAll(t.Context(), loc)
	if err != nil {
		t.Fatalf("decided.csv: %v", err)
	}
	if !strings.Contains(string(csv), ",accepted,1,carol,") || !strings.Contains(string(csv), ",rejected,1,carol,") {
		t.Errorf("decided.csv:\n%s", csv)
	}
}
