package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/api"
)

var updateReview = flag.Bool("update-review", false, "rewrite testdata/review_grid.* from the current renderers")

const hostile = `<script>alert("x")</script>`

// sampleGrid has a done row with evidence, a row with hostile text
// everywhere a document, a question or a model can put text, and a failed
// row.
func sampleGrid() api.ReviewGrid {
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	return api.ReviewGrid{
		Version: api.ReviewGridVersion, WorkflowID: "memagent-review-0123456789abcdef", RunID: "run-1",
		Document: "s3://memagent/converted/v1/ab/text.txt", DocumentSHA256: "ab12",
		Source: "s3://memagent/documents/sha256/ab/contract.pdf", Format: "pdf",
		Bytes: 2486695, Tokens: 500076, Chunks: 101, Model: "memagent-simulator", Tokenizer: "qwen2.5",
		ChunkTokens: 5000, MemoryMaxTokens: 1024, EvidenceRule: EvidenceRule, Runs: 6,
		StartedAt: at, FinishedAt: at.Add(42 * time.Second),
		Usage:  api.ReviewUsage{Calls: 23, PromptTokens: 120000, CompletionTokens: 900},
		Prefix: "s3://memagent/reviews/w/r/", JSONURI: "s3://memagent/reviews/w/r/grid.json",
		CSVURI: "s3://memagent/reviews/w/r/grid.csv", HTMLURI: "s3://memagent/reviews/w/r/report.html",
		Rows: []api.ReviewRow{
			{
				ID: "q1", Question: "What is the access code for the north gate?", GoldAnswers: []string{"7391-ALPHA"},
				Status: api.ReviewStatusDone, Answer: "7391-ALPHA", AnswerFound: true, AnswerMethod: "boxed",
				Scores: &api.Scores{ExactMatch: true, SubstringMatch: true, F1: 1, BestGold: "7391-ALPHA"},
				Evidence: []api.Evidence{{
					Chunk: 17, Start: 420000, End: 445000,
					Passage: &api.EvidencePassage{Start: 431000, End: 431079, Text: "The access code for the north gate is 7391-ALPHA.",
						Pages: &api.PageRef{Unit: api.UnitPage, First: 17, Last: 17}},
					Added:          []string{"7391", "alpha", "access", "code"},
					SupportsAnswer: true,
					Pages:          &api.PageRef{Unit: api.UnitPage, First: 16, Last: 17},
				}, {Chunk: 40, Start: 990000, End: 1010000, Added: []string{"gate", "lantern"},
					Pages: &api.PageRef{Unit: api.UnitPage, First: 38, Last: 39}}},
				ChunksRead: 101, Usage: api.ReviewUsage{Calls: 102, PromptTokens: 60000, CompletionTokens: 450},
				ResultURI: "s3://memagent/reviews/w/r/questions/q1/result.json", TracePrefix: "s3://memagent/reviews/w/r/questions/q1/chunks/",
				Grounding: &api.Grounding{Status: api.GroundingVerbatim, Start: 431040, End: 431050, FoundIn: api.GroundingInPassage,
					Pages: &api.PageRef{Unit: api.UnitPage, First: 17, Last: 17}, Quote: "The access code for the north gate is 7391-ALPHA."},
				AnswerPages: "p. 17", ContextPages: "pp. 38–39",
			},
			{
				ID: "q2", Question: "=HYPERLINK(\"http://x\") " + hostile, GoldAnswers: []string{"-1", `"><img src=x onerror=alert(1)>`},
				Status: api.ReviewStatusDone, Answer: `@SUM(A1) </td></tr></table>` + hostile, AnswerFound: false,
				Evidence: []api.Evidence{{
					Chunk: 3, Start: 10, End: 20,
					Passage: &api.EvidencePassage{Start: 12, End: 18, Text: "code " + hostile + " <b>bold</b> & more"},
					Added:   []string{"code", "script"},
				}},
				ChunksRead: 101, Usage: api.ReviewUsage{Calls: 102},
				TracePrefix: "s3://memagent/reviews/w/r/questions/q2/chunks/",
				Grounding:   &api.Grounding{Status: api.GroundingNotFound},
			},
			{
				ID: "q3", Question: "Who signs?", Status: api.ReviewStatusFailed, ChunksRead: 4,
				Error: "update memory at chunk 4: bad request " + hostile, ErrorType: "memagent.ModelBadRequest",
				TracePrefix: "s3://memagent/reviews/w/r/questions/q3/chunks/",
			},
			{
				// Asked before of the same text: every chunk and the answer
				// reused, no call.
				ID: "q4", Question: "Who keeps the lantern?", Status: api.ReviewStatusDone, Answer: "the warden", AnswerFound: true,
				ChunksRead: 101, ChunksReused: 101, AnswerReused: true, ReusedReading: api.ReusedEarlierReading,
				ResultURI: "s3://memagent/reviews/w/r/questions/q4/result.json", TracePrefix: "s3://memagent/reviews/w/r/questions/q4/chunks/",
			},
		},
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateReview {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (record it with: go test ./internal/report -run TestWriteReview -update-review)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the renderer's output; if the change is intended, run go test ./internal/report -run TestWriteReview -update-review", path)
	}
}

func TestWriteReviewJSON(t *testing.T) {
	g := sampleGrid()
	var buf bytes.Buffer
	if err := WriteReviewJSON(&buf, g); err != nil {
		t.Fatal(err)
	}
	var back api.ReviewGrid
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, g) {
		t.Errorf("grid.json does not read back as the grid it was written from")
	}
	// The wire names are stable and snake_case.
	for _, field := range []string{`"workflow_id"`, `"evidence_rule"`, `"rows"`, `"gold_answers"`, `"supports_answer"`, `"passage"`, `"chunks_read"`, `"prompt_tokens"`, `"json_uri"`} {
		if !bytes.Contains(buf.Bytes(), []byte(field)) {
			t.Errorf("grid.json has no %s field", field)
		}
	}
	golden(t, "review_grid.json", buf.Bytes())
}

func TestWriteReviewCSV(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteReviewCSV(&buf, sampleGrid()); err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(bytes.NewReader(buf.Bytes())).ReadAll()
	if err != nil {
		t.Fatalf("grid.csv does not parse as CSV: %v", err)
	}
	if len(records) != 5 {
		t.Fatalf("grid.csv has %d records, want a header and 4 rows", len(records))
	}
	if !reflect.DeepEqual(records[0], ReviewCSVHeader) {
		t.Errorf("header = %q", records[0])
	}
	col := func(row int, name string) string {
		for i, h := range records[0] {
			if h == name {
				return records[row][i]
			}
		}
		t.Fatalf("no column %q", name)
		return ""
	}
	tests := []struct {
		row       int
		col, want string
	}{
		{1, "evidence_chunks", "17; 40"},
		{1, "evidence_ranges", "420000-445000; 990000-1010000"},
		{1, "passage_ranges", "431000-431079; "},
		{1, "supporting_chunks", "17"},
		{1, "exact_match", "true"},
		{1, "f1", "1.0000"},
		{1, "prompt_tokens", "60000"},
		{1, "answer", "7391-ALPHA"},
		// Formulas are defused; the rest of the text is kept as it is.
		{2, "question", `'=HYPERLINK("http://x") ` + hostile},
		{2, "answer", `'@SUM(A1) </td></tr></table>` + hostile},
		{2, "gold_answers", `'-1 | "><img src=x onerror=alert(1)>`},
		{2, "exact_match", ""},
		{3, "status", "failed"},
		{3, "error_type", "memagent.ModelBadRequest"},
		{3, "evidence_chunks", ""},
		// A reused answer says so, with no call; a row read now says
		// nothing was reused.
		{4, "reused", "answer"},
		{4, "chunks_reused", "101"},
		{4, "calls", "0"},
		{1, "reused", ""},
		{1, "chunks_reused", "0"},
	}
	for _, tt := range tests {
		if got := col(tt.row, tt.col); got != tt.want {
			t.Errorf("row %d %s = %q, want %q", tt.row, tt.col, got, tt.want)
		}
	}
	golden(t, "review_grid.csv", buf.Bytes())
}

func TestWriteReviewHTML(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteReviewHTML(&buf, sampleGrid()); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	// Hostile text stays text: no markup of its own gets through.
	for _, bad := range []string{"<script", "<img", "<b>bold", "</td></tr></table><script", "onerror=alert(1)>"} {
		if strings.Contains(page, bad) {
			t.Errorf("report.html contains %q unescaped", bad)
		}
	}
	for _, want := range []string{
		"&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;",
		"&lt;b&gt;bold&lt;/b&gt; &amp; more",
		// Self-contained and script-free even if escaping failed.
		`content="default-src 'none'; style-src 'unsafe-inline'`,
		// The evidence: where, the passage with its new words marked, and
		// whether it supports the answer.
		`<a href="#q1-e1">p. 17 · chunk 17</a> · <span class="range">420,000–445,000</span>`,
		// A converted document's pages: the passage's beside it, the
		// chunk's where there is no passage.
		`<strong class="page">p. 17</strong> · chunk 17`,
		`<a href="#q1-e2">pp. 38–39 · chunk 40</a>`,
		"contract.pdf</code> (pdf), converted to text",
		"passage 431,000–431,079",
		"The <mark>access</mark> <mark>code</mark> for the north gate is <mark>7391</mark>-<mark>ALPHA</mark>.",
		"✓ still in the final memory",
		"memagent.ModelBadRequest",
		"101 chunks of up to 5,000 qwen2.5 tokens",
		// A reused answer is marked, in the grid and beside its passages.
		`<td class="n">0 <span class="reused" title="answer and every chunk reused from an earlier reading: no call">reused</span></td>`,
		`<span class="reused">reused</span>: the answer and all 101 chunks from an earlier reading, no call`,
		"1 answer(s) reused with their whole reading, no call",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	for _, external := range []string{`href="http`, `src="`, "<link", "@import", "url("} {
		if strings.Contains(page, external) {
			t.Errorf("report.html references something outside itself: %q", external)
		}
	}
	golden(t, "review_grid.html", buf.Bytes())
}

func TestReviewHighlight(t *testing.T) {
	got := reviewHighlight("Gate: 7391-ALPHA, gate.", []string{"gate", "alpha"})
	want := []reviewSegment{{"Gate", true}, {": 7391-", false}, {"ALPHA", true}, {", ", false}, {"gate", true}, {".", false}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reviewHighlight = %+v, want %+v", got, want)
	}
}

// TestReviewCorpusCitations: a corpus grid's CSV and HTML name each
// evidence entry's document beside its pages, and cite the row's answer
// by document.
func TestReviewCorpusCitations(t *testing.T) {
	p4 := &api.PageRef{Unit: api.UnitPage, First: 4, Last: 4}
	g := api.ReviewGrid{Version: api.ReviewGridVersion, Documents: []string{"s3://m/notes.txt", "s3://m/deposition-12.pdf"},
		Rows: []api.ReviewRow{{
			ID: "q1", Question: "When?", Status: api.ReviewStatusDone, Answer: "1999", AnswerFound: true,
			Evidence: []api.Evidence{
				{Chunk: 0, Start: 0, End: 10, Document: "s3://m/notes.txt"},
				{Chunk: 1, Start: 10, End: 20, Document: "s3://m/deposition-12.pdf", Pages: p4, SupportsAnswer: true},
			},
			AnswerSources: []api.SourceRef{{Document: "s3://m/deposition-12.pdf", Name: "deposition-12.pdf", Pages: p4}},
		}}}
	var buf bytes.Buffer
	if err := WriteReviewCSV(&buf, g); err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range records[0] {
		col[h] = i
	}
	row := records[1]
	for _, c := range []struct{ name, want string }{
		{"evidence_documents", "notes.txt; deposition-12.pdf"},
		{"evidence_pages", "; p. 4"},
		{"answer_sources", "deposition-12.pdf p. 4"},
	} {
		if got := row[col[c.name]]; got != c.want {
			t.Errorf("%s = %q, want %q", c.name, got, c.want)
		}
	}
	buf.Reset()
	if err := WriteReviewHTML(&buf, g); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{`Found on: <strong class="page">deposition-12.pdf p. 4</strong>`,
		`<strong class="page">notes.txt</strong> · chunk 0`, `deposition-12.pdf p. 4 · chunk 1</a>`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestReviewQuoteByPage: a grounding quote across pages shows in grid.csv
// and report.html a part a page, each with its page.
func TestReviewQuoteByPage(t *testing.T) {
	g := sampleGrid()
	page := func(n int) *api.PageRef { return &api.PageRef{Unit: api.UnitPage, First: n, Last: n} }
	g.Rows[0].Grounding = &api.Grounding{Status: api.GroundingVerbatim, Start: 10, End: 30, Quote: "the code begins",
		Pages:      &api.PageRef{Unit: api.UnitPage, First: 16, Last: 17},
		QuoteParts: []api.QuotePart{{Text: "the code begins", Pages: page(16)}, {Text: "here on top", Pages: page(17)}}}
	var csv, html bytes.Buffer
	if err := WriteReviewCSV(&csv, g); err != nil {
		t.Fatal(err)
	}
	if err := WriteReviewHTML(&html, g); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(csv.String(), "the code begins [p. 16]\nhere on top [p. 17]") {
		t.Errorf("grid.csv lacks the quote a part a page:\n%s", csv.String())
	}
	if !strings.Contains(html.String(), "<blockquote>the code begins [p. 16]\nhere on top [p. 17]</blockquote>") {
		t.Errorf("report.html lacks the quote a part a page")
	}
}
