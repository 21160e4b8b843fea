package signoff

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"path"

	"github.com/memagent/memagent/api"
)

// MaxGridBytes bounds a grid.json or results.jsonl read for a sign-off.
const MaxGridBytes = 64 << 20

// Row is what a cell shows of the review or batch it belongs to.
type Row struct {
	Cell        string `json:"cell"`
	Question    string `json:"question"`
	Document    string `json:"document"`
	Status      string `json:"status"`
	ModelAnswer string `json:"model_answer"`
	AnswerFound bool   `json:"answer_found"`
	// AnswerPages cites where the answer is (the grounding's page first).
	AnswerPages string         `json:"answer_pages,omitempty"`
	Grounding   *api.Grounding `json:"grounding,omitempty"`
	// Evidence are a review row's evidence entries (a batch item has
	// none in its report).
	Evidence []api.Evidence `json:"evidence,omitempty"`
	Error    string         `json:"error,omitempty"`
	// Reused says the answer was not asked of the model for this run: a
	// review's question took it with its whole reading from an earlier
	// one (api.ReviewRow.AnswerReused), a batch item from an earlier
	// report (api.ItemReused).
	Reused bool `json:"reused,omitempty"`
}

// EvidenceDocument is the document the row's grounding is in: the corpus
// member it names, else the row's document.
func (r Row) EvidenceDocument() string {
	if r.Grounding != nil && r.Grounding.Document != "" {
		return r.Grounding.Document
	}
	return r.Document
}

// EvidencePage is the grounding's page as a reader cites it ("p. 13 (PDF
// p. 17)"), "" when the answer was not found on a page.
func (r Row) EvidencePage() string {
	if !r.Grounding.Found() {
		return ""
	}
	return r.Grounding.Pages.String()
}

// EvidenceQuote is the grounding's quote, "" when not found: for an
// occurrence across pages, its parts a line each with their pages
// (api.Grounding.QuoteByPage).
func (r Row) EvidenceQuote() string {
	if !r.Grounding.Found() {
		return ""
	}
	return r.Grounding.QuoteByPage()
}

// ReviewRows are the rows of a review's grid, in grid order.
func ReviewRows(g api.ReviewGrid) []Row {
	doc := g.Document
	if g.Source != "" {
		doc = g.Source
	}
	rows := make([]Row, 0, len(g.Rows))
	for _, r := range g.Rows {
		rows = append(rows, Row{
			Cell: r.ID, Question: r.Question, Document: doc, Status: r.Status, ModelAnswer: r.Answer, AnswerFound: r.AnswerFound,
			AnswerPages: r.AnswerPages, Grounding: r.Grounding, Evidence: r.Evidence, Error: r.Error, Reused: r.AnswerReused,
		})
	}
	return rows
}

// DecodeReviewGrid reads grid.json.
func DecodeReviewGrid(data []byte) (api.ReviewGrid, error) {
	var g api.ReviewGrid
	if err := json.Unmarshal(data, &g); err != nil {
		return g, fmt.Errorf("grid.json: %w", err)
	}
	return g, nil
}

// BatchRows are the rows of a batch's results.jsonl, one per item and
// sample, in the file's order.
func BatchRows(results []byte) ([]Row, error) {
	var rows []Row
	sc := bufio.NewScanner(bytes.NewReader(results))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var it api.BatchItemResult
		if err := json.Unmarshal(line, &it); err != nil {
			return nil, fmt.Errorf("results.jsonl line %d: %w", n, err)
		}
		doc := it.Document
		if doc == "" && len(it.Documents) > 0 {
			doc = it.Documents[0]
		}
		rows = append(rows, Row{
			Cell: api.SignOffCellID(it.Seq, it.Sample), Question: it.Question, Document: doc, Status: it.Status,
			ModelAnswer: it.Answer, AnswerFound: it.AnswerFound, AnswerPages: it.AnswerPages, Grounding: it.Grounding, Error: it.Error,
			Reused: it.Status == api.ItemReused,
		})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("results.jsonl: %w", err)
	}
	return rows, nil
}

// DocumentName is a document URI's last segment, as a cell shows it
// ("asymptote.pdf" of s3://…/documents/sha256/<hex>/asymptote.pdf), and ""
// for no URI (a cell without evidence), not path.Base's ".".
func DocumentName(uri string) string {
	if uri == "" {
		return ""
	}
	return path.Base(uri)
}
