package review

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/reviewer"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/signoff"
	"github.com/memagent/memagent/internal/testdeps"
	"github.com/memagent/memagent/starter/cli/clitest"
)

// reuseQuestions are asked of psql's manual page (Debian's
// postgresql-doc-15); the second review asks the first two again and a
// third anew.
var reuseQuestions = []string{
	"Which option makes psql connect to another host?",
	"What does the \\gexec meta-command do?",
	"Which variable sets the prompt psql shows?",
}

// TestReviewReuseMarksEveryOutput is issue 52's "a review with two reused
// answers": a review of a real manual asked again with two of its
// questions and a new one. The two reuse every chunk and their answers
// (no model call: the simulator saw none for them), the new one reads
// every chunk; the progress counts read and reused tokens apart (not
// "0/121K tokens"), and every output marks the two as reused with 0
// calls: the text table, the progress line, status (text and JSON), watch,
// grid.json, grid.csv, report.html and the desk's rows. Its sign-off is
// then listed by starter runs right after it, with its state.
func TestReviewReuseMarksEveryOutput(t *testing.T) {
	manual := testdeps.Manual(t, "postgresql-doc-15", "usr/share/doc/postgresql-doc-15/html/app-psql.html")
	d := clitest.Stack(t)
	_, store := clitest.Store(t)
	clitest.StartWorker(t)

	first := reviewOf(t, manual, reuseQuestions[:2])
	for _, r := range first.Rows {
		if r.AnswerReused || r.Usage.Calls != first.Chunks+1 {
			t.Fatalf("first review, %s: answer_reused %v, %d calls; want a whole reading, %d calls", r.ID, r.AnswerReused, r.Usage.Calls, first.Chunks+1)
		}
	}
	chunks, tokens := first.Chunks, first.Tokens

	d.Simulator.Reset()
	args := []string{"review", "--doc", manual}
	for _, q := range reuseQuestions {
		args = append(args, "--question", q)
	}
	out, stderr, err := clitest.RunCLI(t, args...)
	if err != nil {
		t.Fatalf("second review: %v\n%s", err, stderr)
	}
	t.Logf("second review:\n%s\n%s", stderr, out)

	// The model saw the new question only: its chunks and its answer.
	var updates, finals int
	for _, c := range d.Simulator.Calls() {
		if c.Question != reuseQuestions[2] {
			t.Errorf("the simulator was asked %q (%s) though its answer was reused", c.Question, c.Kind)
		}
		switch c.Kind {
		case simulator.KindUpdate:
			updates++
		case simulator.KindFinal:
			finals++
		}
	}
	if updates != chunks || finals != 1 {
		t.Errorf("the simulator saw %d memory updates and %d answers, want %d and 1", updates, finals, chunks)
	}

	id := regexp.MustCompile(`(?m)^Workflow: (\S+) `).FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("the review printed no workflow id:\n%s", out)
	}
	grid := readGrid(t, store, out)

	// grid.json: two rows reused with no call, the third read whole.
	for i, r := range grid.Rows {
		reused := i < 2
		calls := 0
		if !reused {
			calls = chunks + 1
		}
		if r.AnswerReused != reused || r.Usage.Calls != calls || (r.ChunksReused == chunks) != reused || r.ChunksRead != chunks {
			t.Errorf("grid.json %s: answer_reused %v, %d calls, %d of %d chunks reused; want answer_reused %v, %d calls",
				r.ID, r.AnswerReused, r.Usage.Calls, r.ChunksReused, r.ChunksRead, reused, calls)
		}
		if reused && r.Answer != first.Rows[i].Answer {
			t.Errorf("grid.json %s: answer %q, the first review's was %q", r.ID, r.Answer, first.Rows[i].Answer)
		}
	}
	if grid.Usage.Calls != chunks+1 {
		t.Errorf("grid.json usage: %d calls, want %d (the new question's)", grid.Usage.Calls, chunks+1)
	}

	// The text table and its summary.
	for _, want := range []string{
		fmt.Sprintf("answer, %d/%d chunks", chunks, chunks),
		fmt.Sprintf("Model:    %s, %d calls", grid.Model, chunks+1),
		fmt.Sprintf("Reused:   %d of %d chunk readings from memory checkpoints of earlier readings (%d read now); 2 answers with their whole reading, no call",
			2*chunks, 3*chunks, chunks),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the review's table lacks %q", want)
		}
	}
	for _, r := range grid.Rows[:2] {
		if !regexp.MustCompile(`(?m)^` + r.ID + `\s.*answer, \d+/\d+ chunks\s+0\s+0\+0$`).MatchString(out) {
			t.Errorf("the table's row %s does not say reused with 0 calls and 0 tokens", r.ID)
		}
	}

	// The progress line: read and reused apart, over the questions'
	// readings.
	wantLine := fmt.Sprintf("chunk readings %d read, %d reused, 2 answers reused", chunks, 2*chunks)
	if !strings.Contains(stderr, wantLine) || !strings.Contains(stderr, " reused)") || strings.Contains(stderr, "done: chunk "+strconv.Itoa(chunks)+"/"+strconv.Itoa(chunks)+", 3/3 questions done, 0/") {
		t.Errorf("the progress lacks %q and the tokens read and reused:\n%s", wantLine, stderr)
	}

	// status, text and JSON.
	st, serr, err := clitest.RunCLI(t, "status", id[1])
	if err != nil {
		t.Fatalf("status: %v\n%s", err, serr)
	}
	for _, want := range []string{
		fmt.Sprintf("tokens:    %d/%d (100.0%%)\n", tokens, tokens),
		fmt.Sprintf("updates:   %d/%d memory updates (%d read, %d reused)", 3*chunks, 3*chunks, chunks, 2*chunks),
		fmt.Sprintf("readings:  %d/%d tokens over all questions: %d read, %d reused\n", 3*tokens, 3*tokens, tokens, 2*tokens),
		fmt.Sprintf("calls:     %d ", chunks+1),
		"reused:    2 answers, with their whole reading, no call\n",
		fmt.Sprintf("%d + answer", chunks),
	} {
		if !strings.Contains(st, want) {
			t.Errorf("status lacks %q:\n%s", want, st)
		}
	}
	sj, serr, err := clitest.RunCLI(t, "status", id[1], "--output", "json")
	if err != nil {
		t.Fatalf("status --output json: %v\n%s", err, serr)
	}
	var p api.ReviewProgress
	if err := json.Unmarshal([]byte(sj), &p); err != nil {
		t.Fatal(err)
	}
	if p.TokensDone != tokens || p.TokensTotal != tokens || p.ChunksRead != chunks || p.ChunksReused != 2*chunks ||
		p.TokensRead != tokens || p.TokensReused != 2*tokens || p.AnswersReused != 2 || p.Usage.Calls != chunks+1 {
		t.Errorf("status --output json: %s", sj)
	}
	for i, q := range p.Questions {
		if q.AnswerReused != (i < 2) {
			t.Errorf("status --output json, %s: answer_reused %v", q.ID, q.AnswerReused)
		}
	}

	// watch of the closed review: its last progress and the grid.
	wout, werr, err := clitest.RunCLI(t, "watch", id[1])
	if err != nil {
		t.Fatalf("watch: %v\n%s", err, werr)
	}
	if !strings.Contains(werr+wout, wantLine) || !strings.Contains(wout, fmt.Sprintf("answer, %d/%d chunks", chunks, chunks)) {
		t.Errorf("watch lacks the reuse:\n%s\n%s", werr, wout)
	}

	// grid.csv.
	data, err := store.ReadAll(context.Background(), mustLoc(t, grid.CSVURI))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for i, rec := range recs[1:] {
		want, calls := "answer", "0"
		if i >= 2 {
			want, calls = "", strconv.Itoa(chunks+1)
		}
		if rec[col["reused"]] != want || rec[col["calls"]] != calls {
			t.Errorf("grid.csv %s: reused %q, calls %s; want %q, %s", rec[col["id"]], rec[col["reused"]], rec[col["calls"]], want, calls)
		}
	}

	// report.html.
	data, err = store.ReadAll(context.Background(), mustLoc(t, grid.HTMLURI))
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	if n := strings.Count(page, `<td class="n">0 <span class="reused"`); n != 2 {
		t.Errorf("report.html marks %d cells of calls reused, want 2", n)
	}
	if !strings.Contains(page, "2 answer(s) reused with their whole reading, no call") {
		t.Error("report.html does not say 2 answers were reused")
	}

	// The desk's rows.
	for i, r := range signoff.ReviewRows(grid) {
		if r.Reused != (i < 2) {
			t.Errorf("desk row %s: reused %v", r.Cell, r.Reused)
		}
	}

	// starter runs lists the review's sign-off right after it, with its
	// state.
	file := filepath.Join(t.TempDir(), "reviewers")
	if err := os.WriteFile(file, []byte("carol "+reviewer.HashToken("carol-secret")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(reviewer.Env, "tokens:"+file)
	t.Setenv(reviewer.TokenEnv, "carol-secret")
	if _, serr, err := clitest.RunCLI(t, "signoff", id[1], "--start", "--levels", "1"); err != nil {
		t.Fatalf("signoff --start: %v\n%s", err, serr)
	}
	rj, serr, err := clitest.RunCLI(t, "runs", "--output", "json")
	if err != nil {
		t.Fatalf("runs: %v\n%s", err, serr)
	}
	var runs []struct {
		WorkflowID   string `json:"workflow_id"`
		WorkflowType string `json:"workflow_type"`
		Status       string `json:"status"`
		SignOffState string `json:"signoff_state"`
		SignsOff     string `json:"signs_off"`
	}
	if err := json.Unmarshal([]byte(rj), &runs); err != nil {
		t.Fatal(err)
	}
	at := -1
	for i, r := range runs {
		if r.WorkflowID == id[1] {
			at = i
		}
	}
	if at < 0 || at+1 >= len(runs) {
		t.Fatalf("runs lists no sign-off after %s:\n%s", id[1], rj)
	}
	so := runs[at+1]
	if so.WorkflowType != api.SignOffName || so.WorkflowID != api.SignOffWorkflowID(id[1]) || so.SignsOff != id[1] ||
		so.Status != api.SignOffWaitingLevel1 || so.SignOffState != api.SignOffWaitingLevel1 {
		t.Errorf("the row after the review is %+v, want its sign-off, %s", so, api.SignOffWaitingLevel1)
	}
	rt, serr, err := clitest.RunCLI(t, "runs", "--type", "signoff", "--status", "waiting")
	if err != nil {
		t.Fatalf("runs --type signoff: %v\n%s", err, serr)
	}
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(api.SignOffWorkflowID(id[1])) + `\s+signoff\s+` + api.SignOffWaitingLevel1 + `\s+-\s.*signs off ` + regexp.QuoteMeta(id[1]) + `$`).MatchString(rt) {
		t.Errorf("runs --type signoff lacks the review's sign-off, waiting for level 1:\n%s", rt)
	}
}

// readGrid reads grid.json at the URI the review's table printed.
func readGrid(t *testing.T, store *s3store.Store, out string) api.ReviewGrid {
	t.Helper()
	m := regexp.MustCompile(`(?m)^Grid:\s+(\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the review printed no grid:\n%s", out)
	}
	data, err := store.ReadAll(context.Background(), mustLoc(t, m[1]))
	if err != nil {
		t.Fatal(err)
	}
	var g api.ReviewGrid
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

func mustLoc(t *testing.T, uri string) s3store.Location {
	t.Helper()
	loc, err := s3store.ParseURI(uri)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}
