package validate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/reviewer"
	"github.com/memagent/memagent/internal/testdeps"
	"github.com/memagent/memagent/internal/validation"
	"github.com/memagent/memagent/starter/cli"
	"github.com/memagent/memagent/starter/cli/clitest"
	"github.com/memagent/memagent/starter/cli/e2e/desktest"
)

var deskScreenshots = flag.String("desk-screenshots", "", "save the validation test's screenshots of the desk in this folder (docs/ for docs/VALIDATION.md)")

// The batch: docs documents, each asked the first len(questions) of
// docgen's facts.
const (
	docs      = 50
	questions = 4
)

// Kinds of what a document holds of a question's fact.
const (
	plain   = "plain"   // the fact as it is: the simulator answers it right
	garbled = "garbled" // the fact with an aside the simulator takes for the answer: answered wrong
	hidden  = "hidden"  // the answer in a sentence with no word of the question: missed
	none    = "none"    // no answer in the document
)

// kindOf is what document i holds of question q's fact.
func kindOf(i, q int) string {
	switch k := (i*7 + q*3) % 10; {
	case k < 5:
		return plain
	case k == 5:
		return garbled
	case k == 6:
		return hidden
	}
	return none
}

// sentenceOf is how a document of kind says fact f.
func sentenceOf(kind string, f docgen.PlantedFact) string {
	switch kind {
	case garbled:
		i := strings.LastIndex(f.Text, " is ")
		return f.Text[:i] + ", according to the old quarry ledger," + f.Text[i:]
	case hidden:
		return "A handwritten note on the last shelf reads " + f.Answer + "."
	}
	return f.Text
}

// truth is what a reviewer finds in a cell's document.
type truth struct {
	holds  bool
	answer string
	page   int
}

// TestValidateFromTheDeskAndTheCLI is issue 51's end-to-end "done means":
// a batch of 200 items (50 generated PDFs, 4 questions; some documents
// hold no answer, some say it in words the simulator misreads or misses)
// is validated at 90% confidence and ±10%, blind, with four eyes. Alice
// decides cells at the desk in headless Chromium (the model's answer
// hidden from the page and the desk's API until she reveals it; after a
// reveal the desk says why she cannot decide the cell, and the
// validation refuses her decision); carol decides the rest from the
// starter; alice's sign-off is refused (four eyes) and erin signs off
// at the desk. Then: the report under the batch's report prefix
// (validation/report.json) holds the figures a recomputation from its
// decisions with internal/validation gives, every decision made is in
// its audit log under its reviewer (the desk's with the desk's client
// identity), and the sample redraws from the recorded seed and
// population hashes, with internal/validation's Draw and with the
// documented recipe in plain SHA-256.
func TestValidateFromTheDeskAndTheCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("a batch of 200 items and a browser; skipped in -short mode")
	}
	chromium := testdeps.File(t, desktest.Chromium, "the desk cannot be checked without Chromium: apt-get install -y chromium (as root)")
	clitest.Stack(t)
	clitest.StartWorker(t)
	_, store := clitest.Store(t)
	ctx := t.Context()

	// 50 PDFs of 3 pages; a document's facts stand on one page.
	facts := docgen.Facts()[:questions]
	dir := t.TempDir()
	truths := map[string]truth{} // cell id (the item's seq) → what its document holds
	var lines []string
	for i := range docs {
		var said []string
		page := i%3 + 1
		for q := range questions {
			if k := kindOf(i, q); k != none {
				said = append(said, sentenceOf(k, facts[q]))
			}
		}
		o := docconvtest.PDFOptions{Pages: 3, Seed: uint64(i + 1)}
		if len(said) > 0 {
			o.FactPage, o.Fact = page, strings.Join(said, " ")
		}
		path := clitest.WriteFile(t, dir, fmt.Sprintf("contract-%02d.pdf", i), docconvtest.PDF(o))
		for q := range questions {
			seq := len(lines)
			if k := kindOf(i, q); k != none {
				truths[fmt.Sprint(seq)] = truth{holds: true, answer: facts[q].Answer, page: page}
			}
			lines = append(lines, fmt.Sprintf(`{"id":"c%02d-q%d","document":%q,"question":%q}`, i, q, path, facts[q].Question))
		}
	}
	start := time.Now()
	// Not clitest.RunBatch, whose deadline is 6 minutes: alone the batch
	// takes well under one, but on a machine shared with other builds it
	// has taken more than six.
	stdout, stderr, err := clitest.RunCLIWithin(t, 20*time.Minute, "batch", "--manifest", clitest.WriteManifest(t, lines...), "--name", "validate-desk", "--json")
	if err != nil {
		t.Fatalf("batch: %v\n%s", err, stderr)
	}
	var out clitest.BatchJSON
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("batch --json printed %q: %v", stdout, err)
	}
	batch := out.Result.WorkflowID
	results := clitest.ReadResults(t, store, out.Report.ResultsURI)
	items := map[string]api.BatchItemResult{}
	for _, r := range results {
		items[api.SignOffCellID(r.Seq, r.Sample)] = r
	}
	t.Logf("batch %s: %d items in %v", batch, len(results), time.Since(start).Round(time.Millisecond))
	if len(results) != docs*questions {
		t.Fatalf("%d results, want %d", len(results), docs*questions)
	}

	// What a reviewer decides of a cell: the truth of its document.
	type decision struct {
		verdict   string
		hasAnswer bool
		answer    string
		page      int
	}
	decide := func(c api.ValidationCell) decision {
		tr, it := truths[c.ID], items[c.ID]
		if c.Stratum == api.StratumAnswered {
			if tr.holds && strings.EqualFold(strings.TrimSpace(it.Answer), tr.answer) {
				return decision{verdict: api.VerdictRight}
			}
			if tr.holds {
				return decision{verdict: api.VerdictWrong, hasAnswer: true, answer: tr.answer, page: tr.page}
			}
			return decision{verdict: api.VerdictWrong}
		}
		if tr.holds {
			return decision{verdict: api.VerdictHasAnswer, answer: tr.answer, page: tr.page}
		}
		return decision{verdict: api.VerdictNoAnswer}
	}

	phase := time.Now()
	// The reviewers.
	tokens := map[string]string{"alice": "alice-token-51a", "carol": "carol-token-51c", "erin": "erin-token-51e"}
	var file bytes.Buffer
	for _, name := range []string{"alice", "carol", "erin"} {
		fmt.Fprintf(&file, "%s %s\n", name, reviewer.HashToken(tokens[name]))
	}
	tokenFile := clitest.WriteFile(t, t.TempDir(), "reviewers", file.Bytes())
	t.Setenv(reviewer.Env, "tokens:"+tokenFile)
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

	// The validation: 90%, ±10%, blind (the default), four eyes.
	var vw api.ValidationView
	// A seed of its own (by default the validation's workflow id, which
	// names the batch's start time): every run draws the same sample.
	const seed = "issue-51-end-to-end"
	if err := json.Unmarshal([]byte(starter(0, "validate", batch, "--confidence", "0.9", "--margin", "0.1", "--four-eyes", "--seed", seed,
		"--threshold", "precision>=0.6", "--threshold", "elusion<=0.5", "--threshold", "recall>=0.5", "-o", "json")), &vw); err != nil {
		t.Fatal(err)
	}
	id := vw.WorkflowID
	if id != api.ValidationWorkflowID(batch) || vw.Seed != seed || !vw.Blind || !vw.FourEyes || vw.Confidence != 0.9 {
		t.Fatalf("validation %s: seed %q, blind %v, four eyes %v, confidence %v", id, vw.Seed, vw.Blind, vw.FourEyes, vw.Confidence)
	}
	cells := map[string]api.ValidationCell{}
	for _, c := range vw.Cells {
		cells[c.ID] = c
	}
	for _, st := range vw.Strata {
		t.Logf("stratum %q %s: %d cells, %d sampled", st.Question, st.Stratum, st.Population, len(st.Sampled))
	}

	// Alice's cells: one of each kind of decision the sample has, and a
	// few more, six in all; the cell she reveals: another answered one.
	var aliceCells []string
	var revealed string
	seen := map[string]bool{}
	for _, c := range vw.Cells {
		d := decide(c)
		if k := d.verdict + fmt.Sprint(d.hasAnswer); !seen[k] {
			seen[k] = true
			aliceCells = append(aliceCells, c.ID)
		}
	}
	for _, c := range vw.Cells {
		switch {
		case slices.Contains(aliceCells, c.ID):
		case len(aliceCells) < 6:
			aliceCells = append(aliceCells, c.ID)
		case revealed == "" && c.Stratum == api.StratumAnswered:
			revealed = c.ID
		}
	}
	if revealed == "" {
		t.Fatal("no answered cell left to reveal")
	}

	// The desk.
	base := desktest.Start(t, ctx)
	alice := desktest.SignIn(t, base, tokens["alice"])
	// Blind: the desk's API has no model answer for alice, nor its pages.
	var dv struct {
		View  api.ValidationView `json:"view"`
		Cells []struct {
			ID        string `json:"id"`
			FirstPage int    `json:"first_page"`
			PDF       bool   `json:"pdf"`
		} `json:"cells"`
	}
	alice.GetJSON(t, desktest.WithID("/api/validation", id), &dv)
	for i, c := range dv.View.Cells {
		if c.ModelAnswer != "" || c.AnswerPages != "" || c.Revealed {
			t.Errorf("blind: the desk shows alice cell %s's model answer %q (%q)", c.ID, c.ModelAnswer, c.AnswerPages)
		}
		want := 1
		if it := items[c.ID]; c.Stratum == api.StratumAnswered && it.Grounding.Found() && it.Grounding.Pages != nil {
			want = it.Grounding.Pages.First
		}
		if dv.Cells[i].FirstPage != want || !dv.Cells[i].PDF {
			t.Errorf("cell %s: the desk shows page %d first (pdf %v), want %d", c.ID, dv.Cells[i].FirstPage, dv.Cells[i].PDF, want)
		}
	}

	br := desktest.NewBrowser(t, ctx, chromium, 1150, `(document.getElementById("message") || document.body).textContent`, 60*time.Second)
	login := func(name string) {
		t.Helper()
		br.Do("sign in as "+name, chromedp.Navigate(base+"/login"), chromedp.WaitVisible(`input[name="token"]`),
			chromedp.SendKeys(`input[name="token"]`, tokens[name]+"\r"), chromedp.WaitVisible(`b#reviewer`))
		br.Wait("the list", `document.querySelector("b#reviewer").textContent === "`+name+`"`)
	}
	login("alice")
	// The list shows the validation beside the sign-offs.
	br.Wait("the validation in the list", fmt.Sprintf(`[...document.querySelectorAll("table.validations tr")].some((tr) => tr.textContent.includes(%q) && tr.querySelector("td.progress").textContent === "0/%d decided")`, id, len(vw.Cells)))
	if href := desktest.Eval[string](br, `document.querySelector("table.validations a").getAttribute("href")`); href != "/validation?id="+id {
		t.Errorf("the list links the validation to %q", href)
	}
	br.Do("open the validation", chromedp.Navigate(base+"/validation?id="+url.QueryEscape(id)))
	selected := func(cell string) string {
		return fmt.Sprintf(`document.getElementById("cell-title").textContent === "Cell %s" && document.getElementById("page-frame").classList.contains("loaded") && document.getElementById("page-img").complete`, cell)
	}
	br.Wait("the sample", fmt.Sprintf(`document.querySelectorAll("#cells tbody tr").length === %d`, len(vw.Cells)))
	open := func(cell string) {
		t.Helper()
		br.Do("select cell "+cell, chromedp.Click(fmt.Sprintf(`#cells tbody tr[data-cell="%s"]`, cell)))
		br.Wait("cell "+cell+" and its page", selected(cell))
	}
	shotBlind := false
	for _, cell := range aliceCells {
		c, d := cells[cell], decide(cells[cell])
		open(cell)
		// The page first shown: the cited one, page 1 of a not-found cell.
		want := "page 1"
		if it := items[cell]; c.Stratum == api.StratumAnswered && it.Grounding.Found() && it.Grounding.Pages != nil {
			want = fmt.Sprintf("page %d · the page the model's answer cites", it.Grounding.Pages.First)
		}
		if got := desktest.Eval[string](br, `document.getElementById("page-cite").textContent`); got != want {
			t.Errorf("cell %s: the desk shows %q first, want %q", cell, got, want)
		}
		if c.Stratum == api.StratumAnswered {
			if got := desktest.Eval[string](br, `document.getElementById("cell-answer").textContent`); strings.Contains(got, items[cell].Answer) || !strings.HasPrefix(got, "hidden") {
				t.Errorf("blind: cell %s shows its answer %q", cell, got)
			}
			if desktest.Eval[bool](br, `document.getElementById("cell").innerText.includes(`+jsString(items[cell].Answer)+`)`) {
				t.Errorf("blind: the page shows cell %s's model answer %q", cell, items[cell].Answer)
			}
			if !shotBlind {
				br.Shot(*deskScreenshots, "desk-validation.png")
				shotBlind = true
			}
		}
		radio := "#verdict-a"
		if d.verdict == api.VerdictWrong || d.verdict == api.VerdictHasAnswer {
			radio = "#verdict-b"
		}
		steps := []chromedp.Action[chromedp.Void]{chromedp.Click(radio)}
		if d.hasAnswer {
			steps = append(steps, chromedp.Click("#held"))
		}
		if d.answer != "" {
			steps = append(steps, chromedp.SetValue("#answer", d.answer), chromedp.SetValue("#answer-page", fmt.Sprint(d.page)))
		}
		steps = append(steps, chromedp.SetValue("#comment", "read at the desk"), chromedp.Click("#record"))
		br.Do("decide cell "+cell, steps...)
		br.Wait("cell "+cell+" decided", fmt.Sprintf(`(() => { const td = document.querySelector('#cells tbody tr[data-cell="%s"] td.decision'); return td && td.textContent.endsWith("· alice")%s; })()`,
			cell, map[bool]string{true: ` || td.textContent.includes("· alice (")`, false: ""}[d.answer != ""]))
	}

	// Alice reveals a cell's answer: the desk shows it, and says why she
	// can no longer decide the cell; the validation refuses her decision.
	open(revealed)
	br.Do("reveal", chromedp.Click("#reveal"))
	br.Wait("the model's answer", `document.getElementById("cell-answer").className === "revealed" && !document.getElementById("cannot").hidden && document.getElementById("decide-fields").disabled`)
	if got := desktest.Eval[string](br, `document.getElementById("cell-answer").textContent`); !strings.HasPrefix(got, items[revealed].Answer) {
		t.Errorf("revealed cell %s shows %q, want the model's answer %q", revealed, got, items[revealed].Answer)
	}
	if got := desktest.Eval[string](br, `document.getElementById("cannot").textContent`); !strings.Contains(got, "you revealed the model's answer of this cell") {
		t.Errorf("the desk says %q of a revealed cell", got)
	}
	br.Shot(*deskScreenshots, "desk-validation-revealed.png")
	alice.Expect(t, "a decision on a revealed cell", desktest.WithID("/api/validation/decide", id), fmt.Sprintf(`{"cell":%q,"verdict":"right"}`, revealed),
		nil, http.StatusConflict, "blind review: alice has seen the model's answer of cell "+revealed)
	alice.Expect(t, "a decision under another reviewer's name", desktest.WithID("/api/validation/decide", id), fmt.Sprintf(`{"cell":%q,"verdict":"right","reviewer":"carol"}`, revealed),
		nil, http.StatusForbidden, "you are signed in as alice")

	// Carol decides the rest from the starter.
	t.Setenv(reviewer.TokenEnv, tokens["carol"])
	carolCells := 0
	for _, c := range vw.Cells {
		if slices.Contains(aliceCells, c.ID) {
			continue
		}
		d := decide(c)
		args := []string{"validate", "decide", id, c.ID, "--" + strings.ReplaceAll(d.verdict, "_", "-")}
		if d.hasAnswer {
			args = append(args, "--has-answer")
		}
		if d.answer != "" {
			args = append(args, "--answer", d.answer, "--page", fmt.Sprint(d.page))
		}
		starter(0, args...)
		carolCells++
	}

	// Four eyes: alice decided cells, so she cannot sign off; erin does,
	// at the desk.
	alice.Expect(t, "a sign-off by a reviewer who decided", desktest.WithID("/api/validation/finish", id), `{}`, nil, http.StatusConflict, "four eyes: alice decided cell")
	br.Do("sign out", chromedp.Click(`form.logout button`), chromedp.WaitVisible(`input[name="token"]`))
	login("erin")
	br.Do("open the validation", chromedp.Navigate(base+"/validation?id="+url.QueryEscape(id)))
	br.Wait("every cell decided", fmt.Sprintf(`document.getElementById("state").textContent.includes("%d of %d sampled cells decided")`, len(vw.Cells), len(vw.Cells)))
	br.Wait("the figures", fmt.Sprintf(`document.querySelectorAll("#figures td[data-figure]").length === %d`, 4*(1+questions)))
	br.Shot(*deskScreenshots, "desk-validation-figures.png")
	br.Do("sign off", chromedp.SetValue("#finish-comment", "sample read; figures checked"), chromedp.Click("#finish"))
	br.Wait("signed off", `document.getElementById("state").textContent.startsWith("Signed off by erin")`)

	// The report.
	var rep api.ValidationReport
	clitest.ReadJSON(t, store, out.Result.ReportPrefix+"validation/report.json", &rep)
	if rep.Finished == nil || rep.Finished.Reviewer != "erin" || rep.Pending != 0 {
		t.Fatalf("report: finished %+v, %d pending", rep.Finished, rep.Pending)
	}

	// Every decision made is in the audit log, under its reviewer; the
	// reveal and the sign-off too, and nothing else.
	made := len(aliceCells) + carolCells
	var decides, reveals int
	for _, e := range rep.Entries {
		switch e.Action {
		case "decide":
			decides++
			d := decide(cells[e.Cell])
			wantReviewer := "carol"
			if slices.Contains(aliceCells, e.Cell) {
				wantReviewer = "alice"
				if !strings.Contains(e.ClientIdentity, "memagent-desk") || e.Comment != "read at the desk" {
					t.Errorf("audit %d: alice's decision through %q, comment %q: want the desk's", e.Seq, e.ClientIdentity, e.Comment)
				}
			}
			if e.Reviewer != wantReviewer || e.Verdict != d.verdict || e.HasAnswer != d.hasAnswer || e.Answer != d.answer || e.Page != d.page || e.UpdateID == "" {
				t.Errorf("audit %d: %+v, want %s's %+v", e.Seq, e, wantReviewer, d)
			}
		case "reveal":
			reveals++
			if e.Cell != revealed || e.Reviewer != "alice" || !strings.Contains(e.ClientIdentity, "memagent-desk") {
				t.Errorf("audit %d: %+v, want alice's reveal of %s at the desk", e.Seq, e, revealed)
			}
		case "finish":
			if e.Reviewer != "erin" || e.Seq != len(rep.Entries) {
				t.Errorf("audit %d: %+v, want erin's sign-off last", e.Seq, e)
			}
		}
	}
	if decides != made || reveals != 1 || len(rep.Entries) != made+2 || made != len(vw.Cells) {
		t.Errorf("audit log: %d decisions (want %d, one a sampled cell: %d), %d reveals, %d entries", decides, made, len(vw.Cells), reveals, len(rep.Entries))
	}

	// The figures, recomputed from the report's decisions.
	per := map[string]*validation.Decisions{}
	var all validation.Decisions
	for _, st := range rep.Strata {
		if per[st.Question] == nil {
			per[st.Question] = &validation.Decisions{}
		}
		for _, d := range []*validation.Decisions{per[st.Question], &all} {
			if st.Stratum == api.StratumAnswered {
				d.Answered += st.Population
			} else {
				d.NotFound += st.Population
			}
		}
	}
	last := map[string]api.ValidationEntry{}
	for _, e := range rep.Entries {
		if e.Action == "decide" {
			last[e.Cell] = e
		}
	}
	for _, c := range rep.Cells {
		e := last[c.ID]
		for _, d := range []*validation.Decisions{per[c.Question], &all} {
			if c.Stratum == api.StratumAnswered {
				d.AnsweredSampled++
				if e.Verdict == api.VerdictRight {
					d.Right++
				} else if e.HasAnswer {
					d.WrongHeld++
				}
			} else {
				d.NotFoundSampled++
				if e.Verdict == api.VerdictHasAnswer {
					d.Missed++
				}
			}
		}
	}
	// The overall figures are the stratified estimate over the questions
	// (each stratum weighted by its population); a question's, its own.
	check := func(what string, d validation.Decisions, f api.ValidationFigures, qs ...validation.Decisions) {
		t.Helper()
		if qs == nil {
			qs = []validation.Decisions{d}
		}
		est, err := validation.Stratified(qs, rep.Confidence)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if f.Answered != d.Answered || f.NotFound != d.NotFound || f.AnsweredSampled != d.AnsweredSampled || f.NotFoundSampled != d.NotFoundSampled ||
			f.Right != d.Right || f.WrongHeld != d.WrongHeld || f.Missed != d.Missed {
			t.Errorf("%s: report counts %+v, recomputed %+v", what, f, d)
		}
		for _, x := range []struct {
			name string
			got  api.ValidationInterval
			want validation.Interval
		}{{"precision", f.Precision, est.Precision}, {"elusion", f.Elusion, est.Elusion}, {"richness", f.Richness, est.Richness}, {"recall", f.Recall, est.Recall}} {
			if !near(x.got.Estimate, x.want.Estimate) || !near(x.got.Lower, x.want.Lower) || !near(x.got.Upper, x.want.Upper) {
				t.Errorf("%s %s: report %+v, recomputed %+v", what, x.name, x.got, x.want)
			}
			t.Logf("%-40s %-9s %6.1f%%  [%5.1f%%, %5.1f%%]", what, x.name, 100*x.got.Estimate, 100*x.got.Lower, 100*x.got.Upper)
		}
		t.Logf("%-40s answered %d (sampled %d: %d right, %d wrong with an answer held) · not found %d (sampled %d: %d missed)",
			what, f.Answered, f.AnsweredSampled, f.Right, f.WrongHeld, f.NotFound, f.NotFoundSampled, f.Missed)
	}
	var qs []validation.Decisions
	for _, d := range per {
		qs = append(qs, *d)
	}
	check("overall", all, rep.Overall, qs...)
	if len(rep.Questions) != questions {
		t.Errorf("%d questions' figures, want %d", len(rep.Questions), questions)
	}
	for _, f := range rep.Questions {
		check("question "+f.Question, *per[f.Question], f)
	}
	for _, o := range rep.Thresholds {
		t.Logf("threshold %s: passed %v (bound %.4f) %s", o.Threshold, o.Passed, o.Bound, o.Why)
	}

	// The redraw: the strata from the batch's results, each drawn again
	// from the recorded seed, with internal/validation's Draw and with the
	// documented recipe in plain SHA-256.
	type key struct{ question, stratum string }
	population := map[key][]string{}
	var everyone []string
	for _, r := range results {
		if r.Error != "" {
			continue
		}
		st := api.StratumNotFound
		if r.AnswerFound {
			st = api.StratumAnswered
		}
		cell := api.SignOffCellID(r.Seq, r.Sample)
		population[key{r.Question, st}] = append(population[key{r.Question, st}], cell)
		everyone = append(everyone, cell)
	}
	if h, _ := validation.PopulationHash(everyone); h != rep.PopulationHash {
		t.Errorf("population hash %s, recomputed %s", rep.PopulationHash, h)
	}
	if len(rep.Strata) != len(population) {
		t.Errorf("%d strata, the results make %d", len(rep.Strata), len(population))
	}
	for _, st := range rep.Strata {
		ids := population[key{st.Question, st.Stratum}]
		n, err := validation.SampleSize(len(ids), rep.Margin, rep.Confidence)
		if err != nil || n != len(st.Sampled) {
			t.Errorf("stratum %q %s: %d sampled, SampleSize says %d (%v)", st.Question, st.Stratum, len(st.Sampled), n, err)
		}
		sample, hash, err := validation.Draw(rep.Seed, ids, len(st.Sampled))
		if err != nil || hash != st.PopulationHash || !slices.Equal(sample, st.Sampled) {
			t.Errorf("stratum %q %s: redrawn %v (hash %s, %v), recorded %v (hash %s)", st.Question, st.Stratum, sample, hash, err, st.Sampled, st.PopulationHash)
		}
		if recipe := recipeDraw(rep.Seed, ids, len(st.Sampled)); !slices.Equal(recipe, st.Sampled) {
			t.Errorf("stratum %q %s: the documented recipe draws %v, recorded %v", st.Question, st.Stratum, recipe, st.Sampled)
		}
	}
	// The recipe as written, with sha256sum, for one cell.
	if sum, err := exec.LookPath("sha256sum"); err == nil {
		st := rep.Strata[0]
		cmd := exec.Command("sh", "-c", `printf '%s\n%s\n%s' "$1" "$2" "$3" | `+sum, "sh", rep.Seed, st.PopulationHash, st.Sampled[0])
		got, err := cmd.Output()
		k := sha256.Sum256([]byte(rep.Seed + "\n" + st.PopulationHash + "\n" + st.Sampled[0]))
		if err != nil || !strings.HasPrefix(string(got), hex.EncodeToString(k[:])) {
			t.Errorf("sha256sum of the recipe: %q (%v), want %x", got, err, k)
		}
	}
	t.Logf("validation %s: %d cells sampled of %d, %d decided at the desk by alice, %d from the starter by carol, signed off by erin, in %v; report %s",
		id, len(rep.Cells), len(everyone), len(aliceCells), carolCells, time.Since(phase).Round(time.Millisecond), rep.ReportURI)
}

// recipeDraw is the sample the documented recipe draws, computed apart
// from internal/validation: the population hash over the sorted ids one a
// line, then the n cells with the smallest SHA-256 of seed, hash and
// cell, one a line.
func recipeDraw(seed string, ids []string, n int) []string {
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	h := sha256.Sum256([]byte(strings.Join(sorted, "\n") + "\n"))
	pop := hex.EncodeToString(h[:])
	keys := map[string]string{}
	for _, id := range ids {
		k := sha256.Sum256([]byte(seed + "\n" + pop + "\n" + id))
		keys[id] = hex.EncodeToString(k[:])
	}
	slices.SortFunc(sorted, func(a, b string) int { return strings.Compare(keys[a], keys[b]) })
	return sorted[:n]
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12 }

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
