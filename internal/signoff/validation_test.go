package signoff

import (
	"bufio"
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/validation"
)

// testValidation is a finished validation of 3 answered and 2 not-found
// cells of one question, all sampled: a cell decided twice (the later
// decision counts), a reveal, a formula-looking answer.
func testValidation(t *testing.T) api.ValidationReport {
	t.Helper()
	at := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	q := "Who?"
	entries := []api.ValidationEntry{
		{Seq: 1, Action: "decide", Cell: "c1", Verdict: api.VerdictRight, Reviewer: "carol", ClientIdentity: "cli", At: at},
		{Seq: 2, Action: "decide", Cell: "c2", Verdict: api.VerdictRight, Reviewer: "carol", ClientIdentity: "cli", At: at.Add(time.Minute)},
		{Seq: 3, Action: "reveal", Cell: "c3", Reviewer: "carol", ClientIdentity: "cli", At: at.Add(2 * time.Minute)},
		{Seq: 4, Action: "decide", Cell: "c3", Verdict: api.VerdictWrong, HasAnswer: true, Answer: "=SUM(A1)", Page: 4, Reviewer: "dave", ClientIdentity: "desk", At: at.Add(3 * time.Minute)},
		{Seq: 5, Action: "decide", Cell: "c4", Verdict: api.VerdictNoAnswer, Reviewer: "dave", ClientIdentity: "desk", At: at.Add(4 * time.Minute)},
		{Seq: 6, Action: "decide", Cell: "c5", Verdict: api.VerdictNoAnswer, Reviewer: "dave", ClientIdentity: "desk", At: at.Add(5 * time.Minute)},
		{Seq: 7, Action: "decide", Cell: "c2", Verdict: api.VerdictWrong, Reviewer: "dave", ClientIdentity: "desk", At: at.Add(6 * time.Minute)},
		{Seq: 8, Action: "finish", Comment: "checked", Reviewer: "erin", ClientIdentity: "cli", At: at.Add(7 * time.Minute)},
	}
	latest := map[string]int{}
	for i, e := range entries {
		if e.Action == "decide" {
			latest[e.Cell] = i
		}
	}
	var cells []api.ValidationCell
	for _, c := range []struct{ id, stratum, answer string }{
		{"c1", api.StratumAnswered, "Frank"}, {"c2", api.StratumAnswered, "Anna"}, {"c3", api.StratumAnswered, "Bob"},
		{"c4", api.StratumNotFound, ""}, {"c5", api.StratumNotFound, ""},
	} {
		e := entries[latest[c.id]]
		cells = append(cells, api.ValidationCell{ID: c.id, Question: q, Document: "s3://b/documents/sha256/ab/manual.pdf", Stratum: c.stratum, ModelAnswer: c.answer, Decision: &e})
	}
	d := validation.Decisions{Answered: 3, NotFound: 2, AnsweredSampled: 3, Right: 1, WrongHeld: 1, NotFoundSampled: 2}
	est, err := validation.Estimate(d, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	iv := func(i validation.Interval) api.ValidationInterval {
		return api.ValidationInterval{Estimate: i.Estimate, Lower: i.Lower, Upper: i.Upper}
	}
	fig := api.ValidationFigures{Confidence: 0.95, Answered: 3, NotFound: 2, AnsweredSampled: 3, NotFoundSampled: 2, Right: 1, WrongHeld: 1,
		Precision: iv(est.Precision), Elusion: iv(est.Elusion), Richness: iv(est.Richness), Recall: iv(est.Recall), RecallDefined: est.RecallDefined}
	perQ := fig
	perQ.Question = q
	fin := entries[7]
	return api.ValidationReport{
		WorkflowID: "b.validate", Kind: api.SubjectBatch, Subject: "b", SubjectRun: "run-1", Blind: true, Confidence: 0.95, Margin: 0.1,
		Seed: "b.validate", PopulationHash: "pophash",
		Strata: []api.ValidationStratum{
			{Question: q, Stratum: api.StratumAnswered, Population: 3, PopulationHash: "h-answered", Sampled: []string{"c1", "c2", "c3"}},
			{Question: q, Stratum: api.StratumNotFound, Population: 2, PopulationHash: "h-notfound", Sampled: []string{"c4", "c5"}},
		},
		Cells: cells, Overall: fig, Questions: []api.ValidationFigures{perQ},
		Thresholds: []api.ValidationOutcome{{Threshold: api.ValidationThreshold{Figure: api.FigurePrecision, Op: ">=", Value: 0.01}, Bound: fig.Precision.Lower, Passed: true}},
		Passed:     true, Finished: &fin, IntervalMethod: api.MethodClopperPearson, CombinedMethod: api.MethodRecall, Entries: entries,
		ReportURI: "s3://b/batches/b/validation/report.json",
	}
}

// tableOf finds a table of the Validation sheet by its title: its header
// row and rows.
func tableOf(t *testing.T, rows [][]string, title string) ([]string, [][]string) {
	t.Helper()
	for i, r := range rows {
		if len(r) == 1 && r[0] == title && i+1 < len(rows) {
			var body [][]string
			for _, b := range rows[i+2:] {
				if len(b) == 0 {
					break
				}
				body = append(body, b)
			}
			return rows[i+1], body
		}
	}
	t.Fatalf("no table %q in the sheet:\n%q", title, rows)
	return nil, nil
}

// fact is the value of a name/value row at the sheet's top.
func fact(rows [][]string, name string) string {
	for _, r := range rows {
		if len(r) == 0 {
			break
		}
		if len(r) == 2 && r[0] == name {
			return r[1]
		}
	}
	return "<none>"
}

// TestValidationSheet reads the decided workbook with a Validation sheet
// back, and recomputes every figure from the sheet alone: the counts from
// the cells' decisions, the intervals from the counts
// (validation.Estimate), both equal to the figures the sheet states. The
// audit log reads back as the entries, one a line.
func TestValidationSheet(t *testing.T) {
	rep := testValidation(t)
	g, rows := testGrid()
	recs, err := Join(g, rows)
	if err != nil {
		t.Fatal(err)
	}
	var x bytes.Buffer
	if err := WriteXLSXWithValidation(&x, g, recs, &rep); err != nil {
		t.Fatal(err)
	}
	data := x.Bytes()
	if dec, err := ReadXLSX(bytes.NewReader(data)); err != nil || len(dec) != 4 {
		t.Fatalf("the decisions sheet beside it: %v, %d rows", err, len(dec))
	}
	sheet, err := ReadValidationSheet(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"seed": "b.validate", "population_hash": "pophash", "subject_run_id": "run-1", "confidence": "0.95",
		"passed": "TRUE", "signed_off_by": "erin", "signed_off_at": "2026-11-29T08:07:00Z",
	} {
		if got := fact(sheet, name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	hs, strata := tableOf(t, sheet, "strata")
	if !slices.Equal(hs, ValidationStratumColumns) || len(strata) != 2 || strata[0][2] != "3" || strata[0][3] != "3" || strata[1][4] != "h-notfound" {
		t.Errorf("strata: %q %q", hs, strata)
	}
	hc, cells := tableOf(t, sheet, "cells")
	if !slices.Equal(hc, ValidationCellColumns) || len(cells) != 5 {
		t.Fatalf("cells: %q %q", hc, cells)
	}
	col := func(name string) int { return slices.Index(ValidationCellColumns, name) }
	var d validation.Decisions
	for _, c := range cells {
		for len(c) < len(ValidationCellColumns) {
			c = append(c, "")
		}
		if c[col("stratum")] == api.StratumAnswered {
			d.Answered, d.AnsweredSampled = d.Answered+1, d.AnsweredSampled+1
			switch {
			case c[col("verdict")] == api.VerdictRight:
				d.Right++
			case c[col("has_answer")] == "TRUE":
				d.WrongHeld++
			}
		} else {
			d.NotFound, d.NotFoundSampled = d.NotFound+1, d.NotFoundSampled+1
			if c[col("verdict")] == api.VerdictHasAnswer {
				d.Missed++
			}
		}
		if c[col("cell")] == "c2" {
			if c[col("verdict")] != api.VerdictWrong || c[col("reviewer")] != "dave" ||
				c[col("decisions")] != "#2 carol right 2026-11-29T08:01:00Z; #7 dave wrong 2026-11-29T08:06:00Z" {
				t.Errorf("c2, decided twice: %q", c)
			}
		}
		if c[col("cell")] == "c3" && (c[col("answer")] != "=SUM(A1)" || c[col("page")] != "4" || c[col("model_answer")] != "Bob") {
			t.Errorf("c3: %q", c)
		}
	}
	est, err := validation.Estimate(d, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	hf, figs := tableOf(t, sheet, "figures")
	if !slices.Equal(hf, ValidationFigureColumns) || len(figs) != 8 {
		t.Fatalf("figures: %q %q", hf, figs)
	}
	want := map[string]validation.Interval{
		api.FigurePrecision: est.Precision, api.FigureElusion: est.Elusion, api.FigureRichness: est.Richness, api.FigureRecall: est.Recall,
	}
	for _, f := range figs[:4] {
		w := want[f[1]]
		for i, x := range []float64{w.Estimate, w.Lower, w.Upper} {
			got, err := strconv.ParseFloat(f[2+i], 64)
			if err != nil || !near(got, x) {
				t.Errorf("%s column %s: %q, recomputed from the cells %v", f[1], hf[2+i], f[2+i], x)
			}
		}
	}
	_, ths := tableOf(t, sheet, "thresholds")
	if len(ths) != 1 || ths[0][0] != "precision>=0.01" || ths[0][6] != "pass" {
		t.Errorf("thresholds: %q", ths)
	}

	var audit bytes.Buffer
	if err := WriteValidationAudit(&audit, rep.Entries); err != nil {
		t.Fatal(err)
	}
	var back []api.ValidationEntry
	sc := bufio.NewScanner(&audit)
	for sc.Scan() {
		var e api.ValidationEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		back = append(back, e)
	}
	if len(back) != len(rep.Entries) || back[3].Answer != "=SUM(A1)" || back[7].Action != "finish" || back[6].ClientIdentity != "desk" || !back[6].At.Equal(rep.Entries[6].At) {
		t.Errorf("audit log read back: %+v", back)
	}

	x.Reset()
	if err := WriteValidationXLSX(&x, rep); err != nil {
		t.Fatal(err)
	}
	alone, err := ReadValidationSheet(&x)
	if err != nil || !slices.EqualFunc(alone, sheet, slices.Equal) {
		t.Errorf("the validation's own workbook differs from the sheet in the decided one: %v", err)
	}
}

func near(a, b float64) bool {
	d := a - b
	return d < 1e-12 && d > -1e-12
}
