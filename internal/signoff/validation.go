package signoff

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/xuri/excelize/v2"

	"github.com/memagent/memagent/api"
)

// ValidationSheetName is the workbook's sheet of a finished validation
// (docs/VALIDATION.md): beside the decisions in the sign-off's decided
// workbook, alone in the validation's own report.xlsx.
const ValidationSheetName = "Validation"

// Headers of the Validation sheet's tables, in the order they come. Each
// table starts with a row holding its title alone, then its header row,
// then its rows; an empty row ends it.
var (
	ValidationFigureColumns = []string{
		"scope", "figure", "estimate", "lower", "upper", "confidence", "answered", "not_found",
		"answered_sampled", "not_found_sampled", "right", "wrong_held", "missed", "note",
	}
	ValidationThresholdColumns = []string{"threshold", "figure", "op", "value", "question", "bound", "passed", "why"}
	ValidationStratumColumns   = []string{"question", "stratum", "population", "sampled", "population_hash"}
	ValidationCellColumns      = []string{
		"cell", "question", "document", "stratum", "model_answer", "answer_pages",
		"verdict", "has_answer", "answer", "page", "comment", "reviewer", "decided_at", "decisions",
	}
)

// WriteXLSXWithValidation is WriteXLSX with a Validation sheet after the
// decisions when val, a finished validation of the same batch or review,
// is given.
func WriteXLSXWithValidation(w io.Writer, grid api.SignOffGrid, records []Record, val *api.ValidationReport) error {
	return writeXLSX(w, grid, records, val)
}

// WriteValidationXLSX writes a workbook of the validation alone: its
// Validation sheet.
func WriteValidationXLSX(w io.Writer, rep api.ValidationReport) error {
	f := excelize.NewFile()
	defer f.Close()
	if err := f.SetSheetName("Sheet1", ValidationSheetName); err != nil {
		return err
	}
	if err := addValidationSheet(f, rep); err != nil {
		return err
	}
	if err := f.SetDocProps(&excelize.DocProperties{
		Title: "Validation of " + rep.Kind + " " + rep.Subject, Description: "validation " + rep.WorkflowID, Creator: "memagent",
	}); err != nil {
		return err
	}
	_, err := f.WriteTo(w)
	return err
}

// addValidationSheet fills the Validation sheet (creating it when the
// workbook lacks it) with what recomputes every figure: the recipe of the
// sample (seed, population hashes, sizes per stratum), the figures with
// their intervals and method, the thresholds with pass or fail, and one
// row a sampled cell with the decision that counts and every decision
// made on it. Text stays text (never a formula); numbers are numbers.
func addValidationSheet(f *excelize.File, rep api.ValidationReport) error {
	if i, err := f.GetSheetIndex(ValidationSheetName); err != nil {
		return err
	} else if i < 0 {
		if _, err := f.NewSheet(ValidationSheetName); err != nil {
			return err
		}
	}
	n := 0
	row := func(vals ...any) error {
		n++
		cell, err := excelize.CoordinatesToCellName(1, n)
		if err != nil {
			return err
		}
		return f.SetSheetRow(ValidationSheetName, cell, &vals)
	}
	strs := func(ss []string) []any {
		out := make([]any, len(ss))
		for i, s := range ss {
			out[i] = s
		}
		return out
	}
	signedBy, signedAt, comment := "", "", ""
	if e := rep.Finished; e != nil {
		signedBy, signedAt, comment = e.Reviewer, when(e.At), e.Comment
	}
	facts := [][2]any{
		{"validation", rep.WorkflowID}, {"kind", rep.Kind}, {"subject", rep.Subject}, {"subject_run_id", rep.SubjectRun},
		{"seed", rep.Seed}, {"population_hash", rep.PopulationHash}, {"confidence", rep.Confidence},
		{"margin", rep.Margin}, {"sample_size", rep.SampleSize}, {"blind", rep.Blind}, {"four_eyes", rep.FourEyes},
		{"interval_method", rep.IntervalMethod + " (precision, elusion)"}, {"combined_method", rep.CombinedMethod + " (richness, recall)"},
		{"overall_method", rep.OverallMethod}, {"stop_margin", rep.StopMargin}, {"within_margin", rep.WithinMargin},
		{"passed", rep.Passed}, {"signed_off_by", signedBy}, {"signed_off_at", signedAt}, {"sign_off_comment", comment},
		{"report_uri", rep.ReportURI}, {"audit_log", "validation/audit.jsonl, one accepted Update a line"},
	}
	if err := row("Validation of " + rep.Kind + " " + rep.Subject); err != nil {
		return err
	}
	for _, kv := range facts {
		if err := row(kv[0], kv[1]); err != nil {
			return err
		}
	}
	table := func(title string, header []string, rows [][]any) error {
		if err := row(); err != nil {
			return err
		}
		if err := row(title); err != nil {
			return err
		}
		if err := row(strs(header)...); err != nil {
			return err
		}
		for _, r := range rows {
			if err := row(r...); err != nil {
				return err
			}
		}
		return nil
	}
	var figs [][]any
	for _, q := range append([]api.ValidationFigures{rep.Overall}, rep.Questions...) {
		scope := "overall"
		if q.Question != "" {
			scope = q.Question
		}
		for _, fg := range []struct {
			name string
			iv   api.ValidationInterval
			ok   bool
		}{{api.FigurePrecision, q.Precision, true}, {api.FigureElusion, q.Elusion, true}, {api.FigureRichness, q.Richness, true}, {api.FigureRecall, q.Recall, q.RecallDefined}} {
			r := []any{scope, fg.name, fg.iv.Estimate, fg.iv.Lower, fg.iv.Upper, q.Confidence, q.Answered, q.NotFound,
				q.AnsweredSampled, q.NotFoundSampled, q.Right, q.WrongHeld, q.Missed, q.Error}
			if q.Error != "" || !fg.ok {
				r[2], r[3], r[4] = "", "", ""
				if !fg.ok && q.Error == "" {
					r[13] = "undefined: the sample found no cell that holds an answer"
				}
			}
			figs = append(figs, r)
		}
	}
	if err := table("figures", ValidationFigureColumns, figs); err != nil {
		return err
	}
	var ths [][]any
	for _, o := range rep.Thresholds {
		pass := "fail"
		if o.Passed {
			pass = "pass"
		}
		t := o.Threshold
		ths = append(ths, []any{t.String(), t.Figure, t.Op, t.Value, t.Question, o.Bound, pass, o.Why})
	}
	if err := table("thresholds", ValidationThresholdColumns, ths); err != nil {
		return err
	}
	var sts [][]any
	for _, s := range rep.Strata {
		sts = append(sts, []any{s.Question, s.Stratum, s.Population, len(s.Sampled), s.PopulationHash})
	}
	if err := table("strata", ValidationStratumColumns, sts); err != nil {
		return err
	}
	decisions := map[string][]string{}
	for _, e := range rep.Entries {
		if e.Action != "decide" {
			continue
		}
		d := fmt.Sprintf("#%d %s %s", e.Seq, e.Reviewer, e.Verdict)
		if e.HasAnswer {
			d += " (has answer)"
		}
		decisions[e.Cell] = append(decisions[e.Cell], d+" "+when(e.At))
	}
	var cells [][]any
	for _, c := range rep.Cells {
		r := []any{c.ID, c.Question, DocumentName(c.Document), c.Stratum, c.ModelAnswer, c.AnswerPages, "", "", "", "", "", "", "", strings.Join(decisions[c.ID], "; ")}
		if d := c.Decision; d != nil {
			r[6], r[7], r[8], r[10], r[11], r[12] = d.Verdict, d.HasAnswer, d.Answer, d.Comment, d.Reviewer, when(d.At)
			if d.Page > 0 {
				r[9] = d.Page
			}
		}
		cells = append(cells, r)
	}
	return table("cells", ValidationCellColumns, cells)
}

// ReadValidationSheet reads the Validation sheet of a workbook
// WriteXLSXWithValidation or WriteValidationXLSX wrote, as text.
func ReadValidationSheet(r io.Reader) ([][]string, error) {
	f, err := excelize.OpenReader(r)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.GetRows(ValidationSheetName)
}

// WriteValidationAudit writes a validation's audit log: one JSON object a
// line for each accepted Update (decide, reveal, finish), in order, with
// the reviewer, their client identity, the time and the Update's id, as
// the sign-off's audit.jsonl is written.
func WriteValidationAudit(w io.Writer, entries []api.ValidationEntry) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, e := range entries {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return nil
}
