package review

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/reviewer"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/signoff"
	"github.com/memagent/memagent/starter/cli"
	"github.com/memagent/memagent/starter/cli/clitest"
)

// TestValidationGate runs two batches that require a validation on the
// embedded stack: each report is written provisional (report.json, the
// page, the result), the batch starts its validation as it completes,
// reviewers decide its sample from the starter, and the sign-off marks
// the report final when the gate's threshold passes (precision>=0.5,
// every answer decided right) and validation_failed when it does not
// (every answer decided wrong). The validation's audit log and workbook are read back from
// the store, and the decided workbook `starter export grid` writes holds
// the Validation sheet. Each batch has a notify_url (a server of the
// test): it gets the batch's notification, provisional, and once the
// validation marks the report the same notification again with the
// marked state, under an Idempotency-Key of its own.
func TestValidationGate(t *testing.T) {
	clitest.Stack(t)
	clitest.StartWorker(t)
	type post struct {
		key string
		n   api.ChangeNotification
	}
	var mu sync.Mutex
	var posts []post
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n api.ChangeNotification
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
			t.Errorf("notification body: %v", err)
		}
		mu.Lock()
		posts = append(posts, post{r.Header.Get("Idempotency-Key"), n})
		mu.Unlock()
	}))
	defer hook.Close()
	postsOf := func(batch string) []post {
		mu.Lock()
		defer mu.Unlock()
		var out []post
		for _, p := range posts {
			if p.n.WorkflowID == batch {
				out = append(out, p)
			}
		}
		return out
	}
	doc1, _ := clitest.WriteDoc(t, 2000)
	doc2, _ := clitest.WriteDoc(t, 2500)
	var lines []string
	for i, d := range []string{doc1, doc2} {
		lines = append(lines,
			fmt.Sprintf(`{"id":"a%d","document":"%s","question":"%s"}`, i, d, docgen.Question),
			fmt.Sprintf(`{"id":"b%d","document":"%s","question":"Who signed the lease?"}`, i, d))
	}
	manifest := clitest.WriteManifest(t, lines...)
	file := filepath.Join(t.TempDir(), "reviewers")
	if err := os.WriteFile(file, []byte("carol "+reviewer.HashToken("carol-secret")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(reviewer.Env, "tokens:"+file)
	t.Setenv(reviewer.TokenEnv, "carol-secret")
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
	_, store := clitest.Store(t)
	read := func(uri string) []byte {
		t.Helper()
		loc, err := s3store.ParseURI(uri)
		if err != nil {
			t.Fatal(err)
		}
		data, err := store.ReadAll(t.Context(), loc)
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		return data
	}
	state := func(res api.BatchQAResult) (string, string) {
		t.Helper()
		var rep api.BatchReport
		if err := json.Unmarshal(read(res.ReportURI), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Validation == nil {
			t.Fatalf("report %s has no validation state", res.ReportURI)
		}
		return rep.Validation.State, string(read(res.HTMLURI))
	}

	if msg := starter(cli.ExitBadInput, "batch", "--manifest", manifest, "--validate-margin", "0.2"); !strings.Contains(msg, "--validate-margin without --require-validation") {
		t.Errorf("a gate's flag without the gate: %q", msg)
	}
	for _, tc := range []struct {
		name, threshold, answered, want, page string
	}{
		{"passes", "precision>=0.5", "--right", api.ReportFinal, "Final: validation"},
		{"fails", "precision>=0.5", "--wrong", api.ReportValidationFailed, "Validation failed: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := clitest.RunBatch(t, "--manifest", manifest, "--name", "gate-"+tc.name, "--json",
				"--require-validation", "--validate-margin", "0.2", "--validate-threshold", tc.threshold,
				"--notify-url", hook.URL+"/hook?token=gate-secret")
			res := out.Result
			id := api.ValidationWorkflowID(res.WorkflowID)
			if v := res.Validation; v == nil || v.State != api.ReportProvisional || v.Validation != id || v.ValidationRunID == "" {
				t.Fatalf("result's validation %+v, want provisional, the validation %s started", v, id)
			}
			first := postsOf(res.WorkflowID)
			if res.Notify != api.NotifySent || len(first) != 1 || first[0].n.Validation == nil || first[0].n.Validation.State != api.ReportProvisional ||
				first[0].key != res.WorkflowID+"/"+first[0].n.RunID {
				t.Fatalf("notify %q, POSTs %+v: want one, provisional, keyed <batch>/<run>", res.Notify, first)
			}
			if st, page := state(res); st != api.ReportProvisional || !strings.Contains(page, "Provisional: this report is final once validation "+id) {
				t.Fatalf("report %s, page says provisional: %v", st, strings.Contains(page, "Provisional:"))
			}
			// The batch started the validation: its sample is drawn once
			// the batch has completed, and waits for reviewers.
			var vw api.ValidationView
			clitest.Eventually(t, "the gate's sample", func() (bool, string) {
				stdout, stderr, err := clitest.RunCLI(t, "validate", "status", id, "-o", "json")
				if err != nil {
					return false, stderr
				}
				if err := json.Unmarshal([]byte(stdout), &vw); err != nil {
					t.Fatal(err)
				}
				return true, ""
			})
			if vw.Subject != res.WorkflowID || vw.Margin != 0.2 || len(vw.Cells) == 0 || len(vw.Thresholds) != 1 {
				t.Fatalf("validation %+v, want the gate's settings over batch %s", vw, res.WorkflowID)
			}
			for _, c := range vw.Cells {
				verdict := "--no-answer"
				if c.Stratum == api.StratumAnswered {
					verdict = tc.answered
				}
				starter(0, "validate", "decide", id, c.ID, verdict)
			}
			var rep api.ValidationReport
			if err := json.Unmarshal([]byte(starter(0, "validate", "finish", id, "-o", "json")), &rep); err != nil {
				t.Fatal(err)
			}
			// The report is marked as the validation's report is written,
			// before the validation completes.
			st, page := state(res)
			if st != tc.want || !strings.Contains(page, tc.page) || strings.Contains(page, "Provisional:") {
				t.Errorf("report after the validation: %s, page marked %q: %v", st, tc.page, strings.Contains(page, tc.page))
			}
			t.Logf("%s: %s", tc.name, page[strings.Index(page, `id="memagent-report-state"`):][:200])
			// The marking POSTed again: the batch's notification with the
			// state the report now has, under the marking's own key. The
			// validation POSTs it as it completes, after the report.
			var got []post
			clitest.Eventually(t, "the marked report's notification", func() (bool, string) {
				got = postsOf(res.WorkflowID)
				return len(got) >= 2, fmt.Sprintf("%d POSTs", len(got))
			})
			marked := got[1].n
			var rj api.BatchReport
			if err := json.Unmarshal(read(res.ReportURI), &rj); err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || got[1].key != res.WorkflowID+"/"+first[0].n.RunID+"/validation" || marked.Validation == nil ||
				marked.Validation.State != tc.want || marked.Validation.ValidationRunID != rj.Validation.ValidationRunID || marked.Validation.SignedOffBy != "carol" ||
				(tc.want == api.ReportValidationFailed) != (marked.Validation.Why != "") {
				t.Errorf("POSTs after the validation: %+v; want a second, %s as report.json says (%+v), keyed <batch>/<run>/validation", got, tc.want, rj.Validation)
			}
			again := marked
			again.Validation = first[0].n.Validation
			if !reflect.DeepEqual(again, first[0].n) {
				t.Errorf("the marked notification %+v differs from the batch's %+v in more than its validation", marked, first[0].n)
			}

			prefix := strings.TrimSuffix(rep.ReportURI, "report.json")
			var audit []api.ValidationEntry
			sc := bufio.NewScanner(bytes.NewReader(read(prefix + "audit.jsonl")))
			for sc.Scan() {
				var e api.ValidationEntry
				if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
					t.Fatalf("audit line %q: %v", sc.Text(), err)
				}
				audit = append(audit, e)
			}
			if len(audit) != len(vw.Cells)+1 || audit[len(audit)-1].Action != "finish" || audit[0].Reviewer != "carol" || audit[0].At.IsZero() {
				t.Errorf("audit log: %+v, want a decision a cell and the sign-off", audit)
			}
			sheet, err := signoff.ReadValidationSheet(bytes.NewReader(read(prefix + "report.xlsx")))
			if err != nil {
				t.Fatal(err)
			}
			if !hasRow(sheet, "seed", id) || !hasRow(sheet, "population_hash", rep.PopulationHash) {
				t.Errorf("report.xlsx lacks the seed or the population hash:\n%q", sheet)
			}
			if tc.want != api.ReportFinal {
				return
			}
			// The decided workbook of the batch: the sign-off's grid and
			// the finished validation of the same run.
			starter(0, "signoff", res.WorkflowID, "--start", "--levels", "1")
			xlsx := filepath.Join(t.TempDir(), "decided.xlsx")
			var said string
			clitest.Eventually(t, "the decided workbook", func() (bool, string) {
				stdout, stderr, err := clitest.RunCLI(t, "export", "grid", res.WorkflowID, "--xlsx", xlsx)
				said = stdout
				return err == nil, stderr
			})
			if !strings.Contains(said, "sheet Validation, validation "+id) {
				t.Errorf("export grid says %q", said)
			}
			exported, err := os.ReadFile(xlsx)
			if err != nil {
				t.Fatal(err)
			}
			checkSheet := func(what string, data []byte) {
				t.Helper()
				if rows, err := signoff.ReadXLSX(bytes.NewReader(data)); err != nil || len(rows) != len(lines)+1 {
					t.Errorf("%s: the decisions sheet has %d rows (%v), want %d", what, len(rows), err, len(lines)+1)
				}
				got, err := signoff.ReadValidationSheet(bytes.NewReader(data))
				if err != nil {
					t.Fatal(err)
				}
				cells := 0
				for _, r := range got {
					if len(r) > 11 && slices.ContainsFunc(vw.Cells, func(c api.ValidationCell) bool { return c.ID == r[0] }) && r[11] == "carol" {
						cells++
					}
				}
				if cells != len(vw.Cells) || !hasRow(got, "passed", "TRUE") || !hasRow(got, "seed", id) {
					t.Errorf("%s: the Validation sheet has %d of %d cells decided by carol:\n%q", what, cells, len(vw.Cells), got)
				}
			}
			checkSheet("starter export grid", exported)
			// The decided workbook the worker writes as the sign-off
			// ends: the validation finished before it, so it is a sheet.
			for i := range lines {
				starter(0, "decide", res.WorkflowID, "--cell", fmt.Sprint(i), "--accept")
			}
			starter(0, "signoff", res.WorkflowID, "--level", "1")
			clitest.Eventually(t, "the decided grid", func() (bool, string) {
				status := starter(0, "signoff", res.WorkflowID)
				return strings.Contains(status, "decided.xlsx"), status
			})
			checkSheet("signoff/decided.xlsx", read(res.ReportPrefix+"signoff/decided.xlsx"))
		})
	}
}

func hasRow(rows [][]string, name, value string) bool {
	return slices.ContainsFunc(rows, func(r []string) bool { return len(r) >= 2 && r[0] == name && r[1] == value })
}
