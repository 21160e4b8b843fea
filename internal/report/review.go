package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/memagent/memagent/api"
)

// WriteReviewJSON writes g as indented JSON: grid.json.
func WriteReviewJSON(w io.Writer, g api.ReviewGrid) error {
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
	"evidence_pages", "grounding", "grounding_pages", "grounding_range", "grounding_quote",
	"evidence_documents", "answer_sources", "found_on", "context", "scan",
	"chunks_reused", "reused",
}

// Values of ReuseMark and of grid.csv's reused column.
const (
	// ReusedAnswer is a question whose answer came with its whole
	// reading from an earlier one: no call was made for it.
	ReusedAnswer = "answer"
	// ReusedChunks is a question that took some of its chunks from a
	// memory checkpoint and read the rest (and asked for its answer).
	ReusedChunks = "chunks"
)

// ReuseKind says what a row reused: ReusedAnswer, ReusedChunks, or "".
func ReuseKind(r api.ReviewRow) string {
	switch {
	case r.AnswerReused:
		return ReusedAnswer
	case r.ChunksReused > 0:
		return ReusedChunks
	}
	return ""
}

// ReuseMark says what a row reused, for a person: "answer, 12/12 chunks"
// (no call was made), "9/12 chunks", or "-".
func ReuseMark(r api.ReviewRow, chunks int) string {
	switch ReuseKind(r) {
	case ReusedAnswer:
		return fmt.Sprintf("answer, %d/%d chunks", r.ChunksReused, chunks)
	case ReusedChunks:
		return fmt.Sprintf("%d/%d chunks", r.ChunksReused, chunks)
	}
	return "-"
}

// WriteReviewCSV writes g as CSV (RFC 4180), one row per question, with
// ReviewCSVHeader. Lists within a cell are separated by "; " (gold answers
// by " | "); a byte range is "start-end", end exclusive; evidence_pages
// cites each evidence entry's page ("p. 17") or section, empty for text;
// grounding is the answer's grounding status, with the page, byte range
// and quote of where it was found; evidence_documents names each evidence
// entry's corpus document (empty for one document) beside evidence_pages,
// and answer_sources cites the answer's evidence by document and page
// (api.CiteSources, "deposition-12.pdf p. 4; exhibit-3.docx § 2");
// found_on and context are where the answer was found and its context, as
// report.html prints them (ReviewCitation). Text cells that a
// spreadsheet would run as a formula (starting with =, +, -, @, tab or
// carriage return) get a leading apostrophe. scan is ScanCheck when the
// grounding's page or an evidence entry's is a scanned page a human should
// check (OCR under api.OCRCheckConfidence), ScanRead when one is a scan
// read by OCR, else empty (ScanMark). chunks_reused counts the chunks
// taken from a memory checkpoint of an earlier reading (of chunks_read),
// and reused is ReuseKind: "answer" when the answer came with the whole
// reading (calls is then 0), "chunks" when only chunks did.
func WriteReviewCSV(w io.Writer, g api.ReviewGrid) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(ReviewCSVHeader); err != nil {
		return err
	}
	for _, r := range g.Rows {
		var chunks, ranges, passages, supporting, pages, docs []string
		refs := []*api.PageRef{}
		if r.Grounding != nil {
			refs = append(refs, r.Grounding.Pages)
		}
		for _, e := range r.Evidence {
			refs = append(refs, evidencePages(e))
			pages = append(pages, e.Cite())
			docs = append(docs, EvidenceDocumentName(e))
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
		var foundOn, context string
		if r.AnswerFound {
			foundOn, context = ReviewCitation(r)
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
			groundingStatus(r.Grounding), groundingPages(r.Grounding), groundingRange(r.Grounding), CSVText(groundingQuote(r.Grounding)),
			CSVText(strings.Join(docs, "; ")), CSVText(api.CiteSources(r.AnswerSources)),
			CSVText(foundOn), CSVText(context), ScanMark(refs...),
			strconv.Itoa(r.ChunksReused), ReuseKind(r),
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// EvidenceDocumentName is the name (the last element of the key) of the
// corpus document an evidence entry is in, empty for a single document's
// entries, which name none.
func EvidenceDocumentName(e api.Evidence) string {
	if e.Document == "" {
		return ""
	}
	return path.Base(e.Document)
}

// EvidenceCite cites an evidence entry as a reader reads it: its
// document's name, when it has one, and its pages or section
// ("deposition-12.pdf p. 4", "notes.txt"), else its pages alone (e.Cite).
func EvidenceCite(e api.Evidence) string {
	if e.Document == "" {
		return e.Cite()
	}
	return api.SourceRef{Document: e.Document, Name: EvidenceDocumentName(e), Pages: evidencePages(e)}.String()
}

// evidencePages are the pages e.Cite cites: the passage's, else the
// chunk's.
func evidencePages(e api.Evidence) *api.PageRef {
	if e.Passage != nil && e.Passage.Pages != nil {
		return e.Passage.Pages
	}
	return e.Pages
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

func groundingRange(g *api.Grounding) string {
	if !g.Found() {
		return ""
	}
	return fmt.Sprintf("%d-%d", g.Start, g.End)
}
