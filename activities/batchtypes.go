package activities

import (
	"time"

	"github.com/memagent/memagent/internal/memagent"
)

// Outcomes of one batch item.
const (
	ItemAnswered = "answered"
	// ItemReused is an item answered before with the same document
	// (object version), question, model and options: its answer is reused.
	ItemReused = "reused"
	ItemFailed = "failed"
)

// BatchItemResult is one item of a BatchQA report, a line of its
// results JSON Lines and a row of its CSV.
type BatchItemResult struct {
	// Seq is the item's position in the manifest, from 0.
	Seq         int               `json:"seq"`
	ID          string            `json:"id"`
	Document    string            `json:"document"`
	Question    string            `json:"question"`
	GoldAnswers []string          `json:"gold_answers,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Status      string            `json:"status"`
	Answer      string            `json:"answer,omitempty"`
	AnswerFound bool              `json:"answer_found,omitempty"`
	Scores      *memagent.Scores  `json:"scores,omitempty"`
	Chunks      int               `json:"chunks,omitempty"`
	// Tokens is the document's length in tokens.
	Tokens     int64  `json:"tokens,omitempty"`
	Usage      Usage  `json:"usage"`
	WorkflowID string `json:"workflow_id,omitempty"`
	ResultURI  string `json:"result_uri,omitempty"`
	// Error and ErrorType describe a failed item (ErrorType is the
	// memagent.* error type when there is one).
	Error     string `json:"error,omitempty"`
	ErrorType string `json:"error_type,omitempty"`
}

// ScoreAggregate sums up a set of batch items. The score means are over the
// items that have gold answers and an answer (answered or reused); failed
// items count in Failed and in no mean.
type ScoreAggregate struct {
	Items    int `json:"items"`
	Answered int `json:"answered"`
	Reused   int `json:"reused"`
	Failed   int `json:"failed"`
	// Scored is how many items the means are over.
	Scored         int     `json:"scored"`
	ExactMatch     float64 `json:"exact_match"`
	SubstringMatch float64 `json:"substring_match"`
	F1             float64 `json:"f1"`
	// MeanTokens is the mean document length in tokens of the items that
	// have one.
	MeanTokens float64 `json:"mean_tokens"`
	Usage      Usage   `json:"usage"`
}

// BatchReport is report.json of a BatchQA run.
type BatchReport struct {
	Name       string         `json:"name"`
	WorkflowID string         `json:"workflow_id"`
	Manifest   string         `json:"manifest"`
	Model      string         `json:"model"`
	Options    ModelOptions   `json:"options"`
	StartedAt  time.Time      `json:"started_at"`
	FinishedAt time.Time      `json:"finished_at"`
	Overall    ScoreAggregate `json:"overall"`
	// ByLabel maps a label name (for example "length") to its values and
	// their aggregates.
	ByLabel map[string]map[string]ScoreAggregate `json:"by_label,omitempty"`
	// ResultsURI is the per-item JSON Lines; CSVURI, SVGURI and HTMLURI the
	// CSV, the chart of score against document length and the page.
	ResultsURI string `json:"results_uri"`
	CSVURI     string `json:"csv_uri"`
	SVGURI     string `json:"svg_uri"`
	HTMLURI    string `json:"html_uri"`
}
