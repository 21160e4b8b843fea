package activities

import (
	"time"

	"github.com/memagent/memagent/api"
)

// ExpandInput asks ExpandManifest to check a manifest and cut it into pages.
type ExpandInput struct {
	// Manifest is the manifest's s3:// URI.
	Manifest string `json:"manifest"`
	// Format is "jsonl", "memagent" or empty (detected from the content).
	Format string `json:"format,omitempty"`
	// ReportPrefix is the report's s3:// prefix; empty means
	// s3://<worker bucket>/batches/<WorkflowID>/.
	ReportPrefix string `json:"report_prefix,omitempty"`
	// Dated, when set, is appended to the prefix as a folder (the batch's
	// UTC start time, 2006-01-02T150405Z).
	Dated string `json:"dated,omitempty"`
	// WorkflowID names the default report prefix; RunKey (the batch's first
	// run id) separates the working files of two batches that share a prefix.
	WorkflowID string `json:"workflow_id"`
	RunKey     string `json:"run_key"`
	// PageSize is how many items go in one page; default 100.
	PageSize int `json:"page_size,omitempty"`
	// Options are the batch's model options; the worker resolves the model.
	Options api.ModelOptions `json:"options"`
	// Samples is how many times each item is answered (0 means 1); pages
	// hold proportionally fewer items, so that a page's runs stay as small
	// in history as without samples.
	Samples int `json:"samples,omitempty"`
}

// ExpandOutput describes an expanded manifest. The items themselves stay
// in S3, in pages <WorkPrefix>items/000000.jsonl, …; only counts and
// locations enter workflow history.
type ExpandOutput struct {
	Format string `json:"format"`
	Items  int    `json:"items"`
	Pages  int    `json:"pages"`
	// Contexts counts the distinct contexts of a MemAgent manifest and
	// ContextsWritten those that were not in the bucket yet.
	Contexts        int `json:"contexts,omitempty"`
	ContextsWritten int `json:"contexts_written,omitempty"`
	// ReportPrefix is the resolved report prefix (ending in /), WorkPrefix
	// the prefix of the batch's working files (pages and result parts).
	ReportPrefix string `json:"report_prefix"`
	WorkPrefix   string `json:"work_prefix"`
	// Model is the model the items are answered with: the options' model,
	// or the worker's default.
	Model string `json:"model"`
	// PoolCapacity is how many model requests the expanding worker's pool
	// serves at once (endpoints × in-flight cap), 0 when unknown; a batch
	// without a concurrency sizes its window from it.
	PoolCapacity int `json:"pool_capacity,omitempty"`
}

// ResolvePageInput asks ResolveBatchPage which items of a page need a run.
type ResolvePageInput struct {
	WorkPrefix string `json:"work_prefix"`
	Page       int    `json:"page"`
	// Options carry the resolved model.
	Options api.ModelOptions `json:"options"`
	// Samples is how many times each item is answered (0 means 1).
	Samples int `json:"samples,omitempty"`
}

// BatchRunItem is a batch item that needs a DocumentQA run.
type BatchRunItem struct {
	Seq int `json:"seq"`
	// Sample is which of the item's samples this run is, from 0.
	Sample      int               `json:"sample,omitempty"`
	ID          string            `json:"id"`
	Document    string            `json:"document"`
	Question    string            `json:"question"`
	GoldAnswers []string          `json:"gold_answers,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	// OutputPrefix is where the run writes its traces and result.json:
	// s3://<bucket>/answers/<answer key>/, which is also the cache a later
	// batch finds the answer in (the key of a sample after the first
	// includes its index, so samples never reuse each other's answers).
	OutputPrefix string `json:"output_prefix"`
	// Bytes is the item's size as JSON, for the workflow to bound the
	// outcomes it buffers.
	Bytes int `json:"bytes,omitempty"`
	// FairnessKey is the manifest item's own fairness key, if any.
	FairnessKey string `json:"fairness_key,omitempty"`
	// DocumentBytes is the document's size; a page's items to run come
	// longest first, so the long documents do not make the batch's tail.
	DocumentBytes int64 `json:"document_bytes,omitempty"`
}

// ResolvePageOutput splits a page: the items that need a run, and the
// counts of those settled at once (reused answers, missing documents), whose
// outcomes were written to Part.
type ResolvePageOutput struct {
	Run    []BatchRunItem `json:"run,omitempty"`
	Reused int            `json:"reused"`
	Failed int            `json:"failed"`
	// Part is the s3:// URI of the settled items' outcomes (JSON Lines of
	// BatchItemResult), or empty when there were none.
	Part string `json:"part,omitempty"`
}

// WriteResultsInput asks WriteBatchResults to store outcomes as one part.
type WriteResultsInput struct {
	// URI is the part's s3:// URI; a retry overwrites it.
	URI     string                `json:"uri"`
	Results []api.BatchItemResult `json:"results"`
}

// ReportInput asks WriteBatchReport to assemble the report from the parts.
type ReportInput struct {
	Name       string           `json:"name"`
	WorkflowID string           `json:"workflow_id"`
	Manifest   string           `json:"manifest"`
	Model      string           `json:"model"`
	Options    api.ModelOptions `json:"options"`
	StartedAt  time.Time        `json:"started_at"`
	// ReportPrefix is where the report goes (ending in /).
	ReportPrefix string `json:"report_prefix"`
	// RunID is the batch run writing the report. A report.json of another
	// run already under ReportPrefix (a reset, or a re-run of the same id)
	// is kept, and this report goes under ReportPrefix + runs/<RunID>/.
	RunID string `json:"run_id,omitempty"`
	// Parts are the s3:// URIs of the outcome parts, in any order.
	Parts []string `json:"parts"`
	// Items is how many items the manifest has; an item missing from the
	// parts fails the activity.
	Items int `json:"items"`
	// Samples is how many times each item was answered (0 means 1); every
	// sample of every item must have an outcome.
	Samples int `json:"samples,omitempty"`
}
