package workflows

import (
	"errors"

	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/activities"
)

// BatchQAName is the registered name of BatchQA.
const BatchQAName = "memagent.BatchQA"

// Manifest formats BatchQA reads.
const (
	// ManifestJSONL is JSON Lines of {"id", "document", "question",
	// "answers" (optional gold answers), "labels" (optional string map)}.
	ManifestJSONL = "jsonl"
	// ManifestMemAgent is MemAgent's evaluation JSON: an array of objects
	// with the document text in "context", the question in "input" and the
	// gold answers in "answers"; other scalar fields become labels.
	ManifestMemAgent = "memagent"
)

// BatchQAInput starts a BatchQA run. It is JSON on the wire.
type BatchQAInput struct {
	// Manifest is the s3:// URI of the manifest.
	Manifest string `json:"manifest"`
	// Format is ManifestJSONL or ManifestMemAgent; empty means detected
	// from the content.
	Format string `json:"format,omitempty"`
	// Name labels the batch in reports and in the MemagentBatch search
	// attribute of its runs; default the workflow id.
	Name    string                  `json:"name,omitempty"`
	Options activities.ModelOptions `json:"options"`
	// Concurrency is how many DocumentQA children run at once; default 16.
	Concurrency int `json:"concurrency,omitempty"`
	// ReportPrefix is the s3:// prefix of the report; default
	// s3://<worker bucket>/batches/<workflow id>/.
	ReportPrefix string `json:"report_prefix,omitempty"`
	// DatedReport puts the report under <ReportPrefix><UTC start time of
	// the batch, 2006-01-02T150405Z>/, so that each run of a schedule keeps
	// its own report.
	DatedReport bool `json:"dated_report,omitempty"`
	// State is set by the workflow itself when it continues-as-new.
	State *BatchState `json:"state,omitempty"`
}

// BatchState is what one BatchQA run hands to the next.
type BatchState struct{}

// BatchQAResult is BatchQA's result.
type BatchQAResult struct {
	Name      string `json:"name"`
	Items     int    `json:"items"`
	Succeeded int    `json:"succeeded"`
	Failed    int    `json:"failed"`
	// Skipped counts items answered before with the same document,
	// question, model and options, whose earlier answer was reused.
	Skipped int `json:"skipped"`
	// ReportPrefix is the s3:// prefix the report was written under;
	// ReportURI is its JSON (report.json), HTMLURI its page (report.html).
	ReportPrefix string `json:"report_prefix"`
	ReportURI    string `json:"report_uri"`
	HTMLURI      string `json:"html_uri"`
}

// BatchQA answers the questions of a manifest, one DocumentQA child per item.
func BatchQA(ctx workflow.Context, in BatchQAInput) (*BatchQAResult, error) {
	return nil, errors.New("not implemented")
}
