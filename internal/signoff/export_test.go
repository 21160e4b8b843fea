package signoff

import (
	"archive/zip"
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/memagent/memagent/api"
)

func testGrid() (api.SignOffGrid, []Row) {
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	g := api.SignOffGrid{WorkflowID: "rev/signoff", Subject: api.SignOffSubject{Kind: api.SubjectReview, WorkflowID: "rev"}, State: api.SignOffSignedOff,
		Cells: []api.SignOffCell{
			{ID: "q1", Status: api.DecisionAccepted, Level1: &api.Decision{Level: 1, Decision: api.DecisionAccepted, Reviewer: "alice", At: at}},
			{ID: "q2", Status: api.DecisionEdited,
				Level1: &api.Decision{Level: 1, Decision: api.DecisionEdited, FinalAnswer: "=HYPERLINK(\"x\")", Reason: "why", Reviewer: "alice", At: at},
				Level2: &api.Decision{Level: 2, Decision: api.DecisionAccepted, Reviewer: "bob", At: at.Add(time.Hour)}},
			{ID: "q3", Status: api.DecisionPending},
		}}
	rows := []Row{
		{Cell: "q1", Question: "Who?", Document: "s3://b/documents/sha256/ab/manual.pdf", ModelAnswer: "Frank",
			Grounding: &api.Grounding{Status: api.GroundingVerbatim, Pages: &api.PageRef{Unit: api.UnitPage, First: 17, Last: 17, FirstLabel: "13", LastLabel: "13"}, Quote: "Frank converted it"}},
		{Cell: "q2", Question: "What?", Document: "s3://b/documents/sha256/ab/manual.pdf", ModelAnswer: "@SUM(A1)"},
		{Cell: "q3", Question: "When?", Document: "s3://b/documents/sha256/ab/manual.pdf", ModelAnswer: "1999"},
	}
	return g, rows
}

// TestExport: the CSV and the workbook hold every cell with its decisions
// and evidence, and neither runs what a model or a reviewer wrote as a
// formula.
func TestExport(t *testing.T) {
	g, rows := testGrid()
	recs, err := Join(g, rows)
	if err != nil {
		t.Fatal(err)
	}
	var c bytes.Buffer
	if err := WriteCSV(&c, recs); err != nil {
		t.Fatal(err)
	}
	got, err := csv.NewReader(&c).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := func(name string) int { return slices.Index(Columns, name) }
	if len(got) != 4 || !slices.Equal(got[0], Columns) {
		t.Fatalf("csv: %q", got)
	}
	q1, q2, q3 := got[1], got[2], got[3]
	checks := []struct{ name, got, want string }{
		{"q1 final answer", q1[col("final_answer")], "Frank"},
		{"q1 evidence page", q1[col("evidence_page")], "p. 13 (PDF p. 17)"},
		{"q1 evidence document", q1[col("evidence_document")], "manual.pdf"},
		{"q1 reviewer", q1[col("reviewer")], "alice"},
		{"q2 decision", q2[col("decision")], api.DecisionEdited},
		{"q2 final answer, not a formula", q2[col("final_answer")], `'=HYPERLINK("x")`},
		{"q2 model answer, not a formula", q2[col("model_answer")], "'@SUM(A1)"},
		{"q2 level 2", q2[col("level2_reviewer")], "bob"},
		{"q2 decided by", q2[col("reviewer")], "alice"},
		{"q3 pending", q3[col("decision")], api.DecisionPending},
		{"q3 no final answer", q3[col("final_answer")], ""},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", c.name, c.got, c.want)
		}
	}
	var x bytes.Buffer
	if err := WriteXLSX(&x, g, recs); err != nil {
		t.Fatal(err)
	}
	back, err := ReadXLSX(&x)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 4 || back[2][col("final_answer")] != `=HYPERLINK("x")` || back[1][col("evidence_quote")] != "Frank converted it" {
		t.Errorf("workbook read back: %q", back)
	}
	if _, err := Join(g, rows[:2]); err == nil {
		t.Error("Join with a cell's row missing: no error")
	}
}

// TestEvidenceQuoteByPage: a quote of an answer that crosses a page
// boundary is exported a part a line, each with its page, so that each
// line is words of the one page it names.
func TestEvidenceQuoteByPage(t *testing.T) {
	p16 := &api.PageRef{Unit: api.UnitPage, First: 16, Last: 16}
	p17 := &api.PageRef{Unit: api.UnitPage, First: 17, Last: 17}
	r := Row{Grounding: &api.Grounding{Status: api.GroundingVerbatim, Quote: "the answer begins",
		Pages:      &api.PageRef{Unit: api.UnitPage, First: 16, Last: 17},
		QuoteParts: []api.QuotePart{{Text: "the answer begins", Pages: p16}, {Text: "right here at the top", Pages: p17}}}}
	if got, want := r.EvidenceQuote(), "the answer begins [p. 16]\nright here at the top [p. 17]"; got != want {
		t.Errorf("EvidenceQuote() = %q, want %q", got, want)
	}
	r.Grounding.QuoteParts = nil
	if got := r.EvidenceQuote(); got != "the answer begins" {
		t.Errorf("EvidenceQuote() on one page = %q", got)
	}
}

// TestXLSXDeclaresItsUsedRange reads the workbook's sheet XML: its
// dimension element is the range the header and the rows fill (A1 to the
// last column of the last row), which readers use to size the sheet, not
// A1.
func TestXLSXDeclaresItsUsedRange(t *testing.T) {
	for _, n := range []int{0, 1, 40} {
		t.Run(fmt.Sprintf("%d records", n), func(t *testing.T) {
			recs := make([]Record, n)
			for i := range recs {
				recs[i] = Record{Cell: api.SignOffCell{ID: fmt.Sprintf("q%d", i)}}
			}
			var x bytes.Buffer
			if err := WriteXLSX(&x, api.SignOffGrid{}, recs); err != nil {
				t.Fatal(err)
			}
			zr, err := zip.NewReader(bytes.NewReader(x.Bytes()), int64(x.Len()))
			if err != nil {
				t.Fatal(err)
			}
			var sheet []byte
			for _, f := range zr.File {
				if f.Name == "xl/worksheets/sheet1.xml" {
					rc, err := f.Open()
					if err != nil {
						t.Fatal(err)
					}
					sheet, err = io.ReadAll(rc)
					rc.Close()
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			var ws struct {
				Dimension struct {
					Ref string `xml:"ref,attr"`
				} `xml:"dimension"`
				Rows []struct {
					Cells []struct {
						Ref string `xml:"r,attr"`
					} `xml:"c"`
				} `xml:"sheetData>row"`
			}
			if err := xml.Unmarshal(sheet, &ws); err != nil {
				t.Fatalf("sheet XML: %v\n%s", err, sheet)
			}
			// The range the header and the rows fill: every column, a row
			// a record.
			last, err := excelize.CoordinatesToCellName(len(Columns), n+1)
			if err != nil {
				t.Fatal(err)
			}
			if want := "A1:" + last; ws.Dimension.Ref != want || len(ws.Rows) != n+1 {
				t.Errorf("dimension %q over %d rows, want %q over %d", ws.Dimension.Ref, len(ws.Rows), want, n+1)
			}
			header := ws.Rows[0].Cells
			if got, want := header[len(header)-1].Ref, strings.TrimRight(last, "0123456789")+"1"; got != want {
				t.Errorf("the header ends at %s, want %s", got, want)
			}
		})
	}
}
