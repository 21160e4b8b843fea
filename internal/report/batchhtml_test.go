package report

import (
	"bytes"
	"encoding/xml"
	"github.com/memagent/memagent/api"
	"io"
	"slices"
	"strings"
	"testing"
)

const batchHostile = `<script>alert("x")</script>&'`

// xmlWellFormed fails the test if s is not well-formed XML.
func xmlWellFormed(t *testing.T, s string) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(s))
	for {
		_, err := dec.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, s)
		}
	}
}

func TestBatchChart(t *testing.T) {
	var pts []BatchChartPoint
	for i, tok := range []int64{900, 8000, 8100, 32000, 128000, 0} {
		pts = append(pts, BatchChartPoint{Tokens: tok, F1: float64(i) / 5, Substring: i%2 == 0})
	}
	svg := BatchChart("batch "+batchHostile, pts)
	xmlWellFormed(t, svg)
	if strings.Contains(svg, "<script") {
		t.Error("the title was not escaped")
	}
	if !strings.Contains(svg, "&lt;script&gt;") {
		t.Error("the escaped title is missing")
	}
	// Five items with a length: five faint dots; the axis spans 100 to 1M
	// with a label per decade.
	if got := strings.Count(svg, `fill-opacity="0.25"/>`); got != 1 {
		t.Errorf("legend dots: %d, want 1", got)
	}
	if got := strings.Count(svg, "<circle") - strings.Count(svg, "<title>"); got < 5 {
		t.Errorf("too few circles: %d", got)
	}
	for _, tick := range []string{">100<", ">1K<", ">10K<", ">100K<", ">1M<"} {
		if !strings.Contains(svg, tick) {
			t.Errorf("axis label %s missing", tick)
		}
	}
	if !strings.Contains(svg, ">5 item(s)<") {
		t.Error("the item count leaves out items without a length, or is missing")
	}
	for _, legend := range []string{">substring match (mean)<", ">F1 (mean)<", ">recall (mean)<"} {
		if !strings.Contains(svg, legend) {
			t.Errorf("legend %s missing", legend)
		}
	}

	// Beyond 2,000 items only the binned means are drawn.
	many := make([]BatchChartPoint, 5000)
	for i := range many {
		many[i] = BatchChartPoint{Tokens: int64(1000 + i*10), F1: 0.5}
	}
	big := BatchChart("big", many)
	xmlWellFormed(t, big)
	if len(big) > 20000 {
		t.Errorf("chart of 5,000 items is %d bytes: points were not binned", len(big))
	}

	// The recall line's points are the binned mean recall: two items in
	// one bin with recall 0.25 and 0.75 give one point of 0.500.
	two := BatchChart("recall", []BatchChartPoint{{Tokens: 5000, Recall: 0.25, Substring: true}, {Tokens: 5001, Recall: 0.75, Substring: true}})
	xmlWellFormed(t, two)
	for _, want := range []string{"recall (mean): 0.500 over 2 item(s)", "substring match (mean): 1.000 over 2 item(s)", `stroke-dasharray="6 4"`} {
		if !strings.Contains(two, want) {
			t.Errorf("chart of two items lacks %q", want)
		}
	}

	empty := BatchChart("empty", nil)
	xmlWellFormed(t, empty)
	if !strings.Contains(empty, "no answered item") {
		t.Error("an empty chart says nothing")
	}
}

func TestWriteBatchHTML(t *testing.T) {
	chart := BatchChart("c", []BatchChartPoint{{Tokens: 1000, F1: 1, Substring: true}})
	var buf bytes.Buffer
	err := WriteBatchHTML(&buf, BatchPage{
		Title: "Batch " + batchHostile,
		Facts: [][2]string{{"Manifest", "s3://b/" + batchHostile}},
		Links: []BatchLink{{Name: "results.csv", Href: "results.csv"}, {Name: "bad", Href: "javascript:alert(1)"}},
		Tables: []BatchTable{{
			Title: "By " + batchHostile, Header: []string{"k", "n"}, Numeric: []bool{false, true},
			Rows: [][]string{{batchHostile, "3"}},
		}},
		Chart: chart,
	})
	if err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if strings.Contains(page, "<script") || strings.Contains(page, "javascript:") {
		t.Errorf("page lets markup or a script URL through:\n%s", page)
	}
	for _, want := range []string{"<!DOCTYPE html>", "&lt;script&gt;", `<a href="results.csv">results.csv</a>`,
		`<td class="n">3</td>`, "<svg", "</svg>", "Score against document length"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "http://") && !strings.Contains(page, "http://www.w3.org/2000/svg") {
		t.Error("page refers to an external resource")
	}
}

func TestCSVText(t *testing.T) {
	for in, want := range map[string]string{
		"=SUM(A1)": "'=SUM(A1)", "+1": "'+1", "-1": "'-1", "@x": "'@x", "plain": "plain", "": "",
	} {
		if got := CSVText(in); got != want {
			t.Errorf("CSVText(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestBatchPageGrounding checks that the items table shows each answer's
// pages and grounding, and the aggregates count the answers not found.
func TestBatchPageGrounding(t *testing.T) {
	items := []api.BatchItemResult{
		{Seq: 0, ID: "a", Status: api.ItemAnswered, Answer: "7391-ALPHA", AnswerFound: true, AnswerPages: "p. 17",
			Grounding: &api.Grounding{Status: api.GroundingVerbatim, Pages: &api.PageRef{Unit: api.UnitPage, First: 17, Last: 17}, Quote: "code is 7391-ALPHA."}},
		{Seq: 1, ID: "b", Status: api.ItemAnswered, Answer: "Bremen", AnswerFound: true, Grounding: &api.Grounding{Status: api.GroundingNotFound}},
		{Seq: 2, ID: "c", Status: api.ItemReused, Answer: "unknown", Grounding: &api.Grounding{Status: api.GroundingNoAnswer}},
	}
	var agg BatchAggregator
	var rows [][]string
	for _, it := range items {
		agg.Add(it)
		rows = append(rows, BatchHTMLItemRow(it))
	}
	overall := agg.Result()
	if overall.NotFound != 1 {
		t.Errorf("not found = %d, want 1", overall.NotFound)
	}
	if got := BatchCSVRow(items[0]); !slices.Contains(got, "verbatim") || !slices.Contains(got, "p. 17") || !slices.Contains(got, "code is 7391-ALPHA.") {
		t.Errorf("CSV row %q lacks the grounding", got)
	}
	temp, topP := float32(0.7), float32(0.95)
	rep := &api.BatchReport{Name: "n", Overall: overall, Options: api.ModelOptions{Temperature: &temp, TopP: &topP}}
	var buf bytes.Buffer
	if err := WriteBatchHTML(&buf, NewBatchPage(rep, nil, "", nil, 0, rows)); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{"<th>found on</th>", "<th>grounding</th>", "<td>p. 17</td>", "<td>verbatim, p. 17</td>", "<td>not_found</td>",
		"<th>not found</th>", `<td class="n">1</td>`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestBatchCitation(t *testing.T) {
	p4 := &api.PageRef{Unit: api.UnitPage, First: 4, Last: 4}
	sources := []api.SourceRef{{Document: "s3://m/deposition-12.pdf", Name: "deposition-12.pdf", Pages: p4},
		{Document: "s3://m/notes.txt", Name: "notes.txt"}}
	tests := []struct {
		name      string
		r         api.BatchItemResult
		citation  string
		document  string
		documents string
	}{
		{"one document", api.BatchItemResult{Document: "s3://m/a.pdf", AnswerPages: "p. 17"}, "p. 17", "s3://m/a.pdf", ""},
		{"text document", api.BatchItemResult{Document: "s3://m/a.txt"}, "", "s3://m/a.txt", ""},
		{"corpus", api.BatchItemResult{Documents: []string{"s3://m/notes.txt", "s3://m/deposition-12.pdf", "s3://m/x.txt"}, AnswerSources: sources,
			AnswerPages: "p. 4"}, "deposition-12.pdf p. 4; notes.txt", "s3://m/notes.txt (+2 documents)", "s3://m/notes.txt | s3://m/deposition-12.pdf | s3://m/x.txt"},
		{"corpus of one", api.BatchItemResult{Documents: []string{"s3://m/notes.txt"}}, "", "s3://m/notes.txt", "s3://m/notes.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BatchCitation(tt.r); got != tt.citation {
				t.Errorf("citation %q, want %q", got, tt.citation)
			}
			if got := BatchDocument(tt.r); got != tt.document {
				t.Errorf("document %q, want %q", got, tt.document)
			}
			if got := BatchCSVExtra(tt.r); len(got) != len(BatchCSVExtraHeader) || got[0] != tt.documents || got[1] != tt.citation {
				t.Errorf("CSV cells %q, want [%q %q]", got, tt.documents, tt.citation)
			}
			if got := BatchHTMLItemRow(tt.r); tt.citation != "" && !slices.Contains(got, tt.citation) {
				t.Errorf("HTML row %q lacks %q", got, tt.citation)
			}
		})
	}
}

// TestBatchChartGolden pins the chart's SVG byte for byte: items with and
// without a length, both kinds of match, a mean per bin. Record it with
// go test ./internal/report -run TestBatchChartGolden -update-review.
func TestBatchChartGolden(t *testing.T) {
	var pts []BatchChartPoint
	for i, tok := range []int64{900, 8000, 8100, 32000, 128000, 0, 450000, 3000} {
		pts = append(pts, BatchChartPoint{Tokens: tok, F1: float64(i) / 7, Recall: float64(7-i) / 7, Substring: i%3 == 0})
	}
	golden(t, "batch_chart.svg", []byte(BatchChart("batch <one>", pts)))
	golden(t, "batch_chart_empty.svg", []byte(BatchChart("empty", nil)))
}
