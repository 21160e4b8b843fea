package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/memagent/memagent/internal/memagent"
)

// ReviewGridVersion is the current ReviewGrid.Version.
const ReviewGridVersion = 1

// Statuses of a ReviewRow.
const (
	ReviewStatusDone   = "done"
	ReviewStatusFailed = "failed"
)

// ReviewGrid is the outcome of a ReviewDocument run: one row per question,
// with its answer, the evidence of where in the document its memory
// changed, and what it cost. It is the workflow's result and, as grid.json,
// the file a program reads. It is JSON on the wire: fields are added, never
// renamed.
type ReviewGrid struct {
	Version    int    `json:"version"`
	WorkflowID string `json:"workflow_id"`
	// RunID is the run that wrote the grid (after continue-as-new or a
	// reset, not the first); FirstRunID is the first run of its chain, the
	// one whose id names the default output prefix.
	RunID      string `json:"run_id"`
	FirstRunID string `json:"first_run_id,omitempty"`
	// Document is the s3:// URI the byte ranges refer to (a cleaned copy
	// when invalid UTF-8 was replaced; see InvalidBytesReplaced).
	Document       string `json:"document"`
	DocumentSHA256 string `json:"document_sha256"`
	Bytes          int64  `json:"bytes"`
	Tokens         int64  `json:"tokens"`
	Chunks         int    `json:"chunks"`
	// InvalidBytesReplaced counts the bytes replaced under the "replace"
	// UTF-8 policy.
	InvalidBytesReplaced int64 `json:"invalid_bytes_replaced,omitempty"`
	// Source is the PDF, DOCX or HTML document Document was converted
	// from, and Format its format; empty for text.
	Source          string `json:"source,omitempty"`
	Format          string `json:"format,omitempty"`
	Model           string `json:"model"`
	Tokenizer       string `json:"tokenizer"`
	ChunkTokens     int    `json:"chunk_tokens"`
	MemoryMaxTokens int    `json:"memory_max_tokens"`
	// EvidenceRule is the rule that decided material changes
	// (ReviewEvidenceRule when the grid was made).
	EvidenceRule string `json:"evidence_rule"`
	// Runs is how many runs (continue-as-new generations) the review took.
	Runs       int         `json:"runs"`
	StartedAt  time.Time   `json:"started_at"`
	FinishedAt time.Time   `json:"finished_at"`
	Usage      ReviewUsage `json:"usage"`
	Rows       []ReviewRow `json:"rows"`
	// Prefix is the s3:// prefix everything was written under; JSONURI,
	// CSVURI and HTMLURI are grid.json, grid.csv and report.html there.
	Prefix  string `json:"prefix"`
	JSONURI string `json:"json_uri"`
	CSVURI  string `json:"csv_uri"`
	HTMLURI string `json:"html_uri"`
}

// ReviewRow is one question of a review.
type ReviewRow struct {
	ID          string   `json:"id"`
	Question    string   `json:"question"`
	GoldAnswers []string `json:"gold_answers,omitempty"`
	// Status is ReviewStatusDone or ReviewStatusFailed.
	Status       string           `json:"status"`
	Answer       string           `json:"answer"`
	AnswerFound  bool             `json:"answer_found"`
	AnswerMethod string           `json:"answer_method,omitempty"`
	Scores       *memagent.Scores `json:"scores,omitempty"`
	// Evidence lists, in document order, the chunks at which the
	// question's memory changed materially.
	Evidence []ReviewEvidence `json:"evidence"`
	// EvidenceDropped counts entries dropped to keep the evidence bounded
	// (those the memory had forgotten since, first).
	EvidenceDropped int `json:"evidence_dropped,omitempty"`
	// ChunksRead is how many chunks the question's memory read.
	ChunksRead int         `json:"chunks_read"`
	Usage      ReviewUsage `json:"usage"`
	// ResultURI is the question's result.json; TracePrefix holds its
	// per-chunk traces (NNNNNN.json).
	ResultURI   string `json:"result_uri,omitempty"`
	TracePrefix string `json:"trace_prefix"`
	// Error and ErrorType say why a failed question failed.
	Error     string `json:"error,omitempty"`
	ErrorType string `json:"error_type,omitempty"`
}

// ReviewEvidence is one chunk at which a question's memory changed
// materially.
type ReviewEvidence struct {
	Chunk int `json:"chunk"`
	// Start and End are the chunk's byte range [Start, End) in the
	// document.
	Start int64 `json:"start"`
	End   int64 `json:"end"`
	// Passage is the sentence of the chunk that best accounts for the
	// change, when one was found.
	Passage *ReviewPassage `json:"passage,omitempty"`
	// Added are new content words the chunk brought into the memory (see
	// ReviewChange): the entry's fingerprint.
	Added []string `json:"added,omitempty"`
	// SupportsAnswer reports that the final memory, from which the answer
	// was given, still holds at least half of Added.
	SupportsAnswer bool `json:"supports_answer"`
	// Pages are the pages (or sections) of a converted document the chunk
	// came from.
	Pages *memagent.PageRef `json:"pages,omitempty"`
}

// ReviewPassage is a byte range [Start, End) of the document and, in the
// written report only, its text.
type ReviewPassage struct {
	Start int64  `json:"start"`
	End   int64  `json:"end"`
	Text  string `json:"text,omitempty"`
	// Pages are the page (or pages, or section) of a converted document
	// the passage is on.
	Pages *memagent.PageRef `json:"pages,omitempty"`
}

// Cite is where an evidence entry is in the source: its passage's pages,
// or else its chunk's; "" for a text document.
func (e ReviewEvidence) Cite() string {
	if e.Passage != nil && e.Passage.Pages != nil {
		return e.Passage.Pages.String()
	}
	return e.Pages.String()
}

// ReviewUsage sums the tokens the model server reported. It has the fields
// and JSON of activities.Usage, so either converts to the other.
type ReviewUsage struct {
	Calls            int   `json:"calls"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	CachedTokens     int64 `json:"cached_tokens,omitempty"`
	// RepeatedCalls counts calls that repeated one already paid for.
	RepeatedCalls int `json:"repeated_calls,omitempty"`
}

// WriteReviewJSON writes g as indented JSON: grid.json.
func WriteReviewJSON(w io.Writer, g ReviewGrid) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(g)
}

// ReviewCSVHeader is the header row of grid.csv.
var ReviewCSVHeader = []string{
	"id", "question", "status", "answer", "answer_found", "gold_answers",
	"exact_match", "substring_match", "f1",
	"evidence_chunks", "evidence_ranges", "passage_ranges", "supporting_chunks", "evidence_dropped",
	"chunks_read", "calls", "prompt_tokens", "completion_tokens", "result_uri", "error_type", "error",
	"evidence_pages",
}

// WriteReviewCSV writes g as CSV (RFC 4180), one row per question, with
// ReviewCSVHeader. Lists within a cell are separated by "; " (gold answers
// by " | "); a byte range is "start-end", end exclusive; evidence_pages
// cites each evidence entry's page ("p. 17") or section, empty for text. Text cells that a
// spreadsheet would run as a formula (starting with =, +, -, @, tab or
// carriage return) get a leading apostrophe.
func WriteReviewCSV(w io.Writer, g ReviewGrid) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(ReviewCSVHeader); err != nil {
		return err
	}
	for _, r := range g.Rows {
		var chunks, ranges, passages, supporting, pages []string
		for _, e := range r.Evidence {
			pages = append(pages, e.Cite())
			c := strconv.Itoa(e.Chunk)
			chunks = append(chunks, c)
			ranges = append(ranges, fmt.Sprintf("%d-%d", e.Start, e.End))
			if e.Passage != nil {
				passages = append(passages, fmt.Sprintf("%d-%d", e.Passage.Start, e.Passage.End))
			} else {
				passages = append(passages, "")
			}
			if e.SupportsAnswer {
				supporting = append(supporting, c)
			}
		}
		var em, sm, f1 string
		if r.Scores != nil {
			em, sm = strconv.FormatBool(r.Scores.ExactMatch), strconv.FormatBool(r.Scores.SubstringMatch)
			f1 = strconv.FormatFloat(r.Scores.F1, 'f', 4, 64)
		}
		row := []string{
			CSVText(r.ID), CSVText(r.Question), r.Status, CSVText(r.Answer),
			strconv.FormatBool(r.AnswerFound), CSVText(strings.Join(r.GoldAnswers, " | ")),
			em, sm, f1,
			strings.Join(chunks, "; "), strings.Join(ranges, "; "), strings.Join(passages, "; "),
			strings.Join(supporting, "; "), strconv.Itoa(r.EvidenceDropped),
			strconv.Itoa(r.ChunksRead), strconv.Itoa(r.Usage.Calls),
			strconv.FormatInt(r.Usage.PromptTokens, 10), strconv.FormatInt(r.Usage.CompletionTokens, 10),
			r.ResultURI, r.ErrorType, CSVText(r.Error),
			CSVText(strings.Join(pages, "; ")),
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// CSVText is s as a CSV cell that a spreadsheet shows as text: a cell
// starting with =, +, -, @, tab or carriage return, which a spreadsheet
// would run as a formula, gets a leading apostrophe (OWASP's CSV injection
// advice). Every cell that holds what a caller chose goes through it.
func CSVText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
