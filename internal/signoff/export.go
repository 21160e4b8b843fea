package signoff

import (
	"encoding/csv"
	"fmt"
	"io"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/report"
)

// Columns are the decided grid's columns, in order, in the CSV and the
// workbook alike.
var Columns = []string{
	"cell", "question", "document", "model_answer", "final_answer", "decision", "decided_level", "reviewer", "decided_at",
	"comment", "reason", "level1_decision", "level1_reviewer", "level1_at", "level2_decision", "level2_reviewer", "level2_at",
	"evidence_document", "evidence_page", "evidence_quote", "grounding",
}

// Record is one cell of the decided grid: its row and its decisions.
type Record struct {
	Row  Row
	Cell api.SignOffCell
}

// Join pairs each cell of grid with its row, in the grid's order; a cell
// whose row is missing is an error (the rows are not the grid's).
func Join(grid api.SignOffGrid, rows []Row) ([]Record, error) {
	byCell := make(map[string]Row, len(rows))
	for _, r := range rows {
		byCell[r.Cell] = r
	}
	out := make([]Record, 0, len(grid.Cells))
	for _, c := range grid.Cells {
		r, ok := byCell[c.ID]
		if !ok {
			return nil, fmt.Errorf("cell %s is not in the grid read from %s", c.ID, grid.Subject.GridURI)
		}
		out = append(out, Record{Row: r, Cell: c})
	}
	return out, nil
}

// FinalAnswer is the answer that stands: the edited one, the model's when
// accepted, none when rejected or pending.
func (r Record) FinalAnswer() string {
	d := r.Cell.Decided()
	switch {
	case d == nil:
		return ""
	case d.Decision == api.DecisionEdited:
		return d.FinalAnswer
	case d.Decision == api.DecisionAccepted:
		return r.Row.ModelAnswer
	}
	return ""
}

func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// Values are the record's cells, in Columns' order.
func (r Record) Values() []string {
	d := r.Cell.Decided()
	var level, reviewer, at, comment, reason string
	if d != nil {
		level, reviewer, at, comment, reason = fmt.Sprint(d.Level), d.Reviewer, when(d.At), d.Comment, d.Reason
	}
	lv := func(d *api.Decision) (string, string, string) {
		if d == nil {
			return "", "", ""
		}
		return d.Decision, d.Reviewer, when(d.At)
	}
	l1d, l1r, l1a := lv(r.Cell.Level1)
	l2d, l2r, l2a := lv(r.Cell.Level2)
	grounding := ""
	if r.Row.Grounding != nil {
		grounding = r.Row.Grounding.Status
	}
	return []string{
		r.Cell.ID, r.Row.Question, DocumentName(r.Row.Document), r.Row.ModelAnswer, r.FinalAnswer(), r.Cell.Status, level, reviewer, at,
		comment, reason, l1d, l1r, l1a, l2d, l2r, l2a,
		DocumentName(r.Row.EvidenceDocument()), r.Row.EvidencePage(), r.Row.EvidenceQuote(), grounding,
	}
}

// WriteCSV writes the records as CSV with a header line. Text a caller or
// a model chose is kept from running as a spreadsheet formula.
func WriteCSV(w io.Writer, records []Record) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(Columns); err != nil {
		return err
	}
	for _, r := range records {
		vals := r.Values()
		for i, v := range vals {
			vals[i] = report.CSVText(v)
		}
		if err := cw.Write(vals); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// SheetName is the workbook's sheet of decisions.
const SheetName = "Decisions"

// WriteXLSX writes the records as an XLSX workbook: one sheet, a header
// row, a row a cell, its used range declared (A1 to the last column of the
// last row). Every value is a string cell, never a formula.
func WriteXLSX(w io.Writer, grid api.SignOffGrid, records []Record) error {
	return writeXLSX(w, grid, records, nil)
}

func writeXLSX(w io.Writer, grid api.SignOffGrid, records []Record, val *api.ValidationReport) error {
	f := excelize.NewFile()
	defer f.Close()
	if err := f.SetSheetName("Sheet1", SheetName); err != nil {
		return err
	}
	// The sheet's used range (its dimension element), which the stream
	// writer copies as it starts and never updates: the header and a row
	// a record, every column.
	last, err := excelize.CoordinatesToCellName(len(Columns), len(records)+1)
	if err != nil {
		return err
	}
	if err := f.SetSheetDimension(SheetName, "A1:"+last); err != nil {
		return err
	}
	sw, err := f.NewStreamWriter(SheetName)
	if err != nil {
		return err
	}
	row := func(n int, vals []string) error {
		cells := make([]any, len(vals))
		for i, v := range vals {
			cells[i] = excelize.Cell{Value: v}
		}
		cell, err := excelize.CoordinatesToCellName(1, n)
		if err != nil {
			return err
		}
		return sw.SetRow(cell, cells)
	}
	if err := row(1, Columns); err != nil {
		return err
	}
	for i, r := range records {
		if err := row(i+2, r.Values()); err != nil {
			return err
		}
	}
	if err := sw.Flush(); err != nil {
		return err
	}
	if val != nil {
		if err := addValidationSheet(f, *val); err != nil {
			return err
		}
	}
	props := &excelize.DocProperties{
		Title:       "Decided grid of " + grid.Subject.Kind + " " + grid.Subject.WorkflowID,
		Description: fmt.Sprintf("sign-off %s, %s", grid.WorkflowID, grid.State),
		Creator:     "memagent",
	}
	if err := f.SetDocProps(props); err != nil {
		return err
	}
	_, err = f.WriteTo(w)
	return err
}

// ReadXLSX reads a workbook WriteXLSX wrote: its header and rows.
func ReadXLSX(r io.Reader) ([][]string, error) {
	f, err := excelize.OpenReader(r)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.GetRows(SheetName)
}
