package api

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/internal/contract"
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

// Defaults and bounds of BatchQAInput.
const (
	// DefaultBatchConcurrency is the window when the pool's capacity is
	// unknown.
	DefaultBatchConcurrency = 16
	// MaxDefaultWindow bounds the window sized from the pool, as MemAgent's
	// own evaluation harness keeps 256 samples in flight.
	MaxDefaultWindow = 256
	// MaxBatchConcurrency stays well below Temporal's default limit of
	// pending child workflows per run (2,000).
	MaxBatchConcurrency = 1000
	// DefaultItemsPerRun is how many items one run handles before it
	// continues-as-new (at the next page boundary), unless Temporal
	// suggests it earlier.
	DefaultItemsPerRun = 500
	// DefaultPageSize is how many manifest items go in one page; a page is
	// the unit one ResolveBatchPage activity settles.
	DefaultPageSize = 100
	MaxPageSize     = 500
	// DefaultResultsPerPart is how many outcomes are buffered before they
	// are written to S3 as one part.
	DefaultResultsPerPart = 200
)

// Stages of a batch, reported by BatchProgress and, as the MemagentStatus
// search attribute, on the batch's own run.
const (
	BatchStageExpanding = "expanding"
	BatchStageRunning   = "running"
	BatchStageReporting = "reporting"
	BatchStageDone      = StageDone
	BatchStageFailed    = StageFailed
)

// DatedReportLayout formats the batch's UTC start time as the folder of a
// dated report.
const DatedReportLayout = "2006-01-02T150405Z"

// BatchQAInput starts a BatchQA run. It is JSON on the wire.
type BatchQAInput struct {
	// Manifest is the s3:// URI of the manifest.
	Manifest string `json:"manifest" contract:"required,maxlen=1024"`
	// Format is ManifestJSONL or ManifestMemAgent; empty means detected
	// from the content.
	Format string `json:"format,omitempty" contract:"enum=jsonl|memagent"`
	// Name labels the batch in reports and in the MemagentBatch search
	// attribute of its runs; default the workflow id.
	Name    string       `json:"name,omitempty" contract:"maxlen=255"`
	Options ModelOptions `json:"options"`
	// Concurrency is how many DocumentQA children run at once; default
	// twice the model pool's capacity as the worker reports it (each child
	// has one model call at a time, and the second half waits at the pool
	// ready for a free slot), at most 256; 16 when the pool does not say.
	Concurrency int `json:"concurrency,omitempty" contract:"min=0,max=1000"`
	// ReportPrefix is the s3:// prefix of the report; default
	// s3://<worker bucket>/batches/<workflow id>/.
	ReportPrefix string `json:"report_prefix,omitempty" contract:"maxlen=1024"`
	// DatedReport puts the report under <ReportPrefix><UTC start time of
	// the batch, 2006-01-02T150405Z>/, so that each run of a schedule keeps
	// its own report.
	DatedReport bool `json:"dated_report,omitempty"`
	// ItemsPerRun overrides DefaultItemsPerRun.
	ItemsPerRun int `json:"items_per_run,omitempty" contract:"min=0,max=100000"`
	// PageSize overrides DefaultPageSize (at most MaxPageSize).
	PageSize int `json:"page_size,omitempty" contract:"min=0,max=500"`
	// ResultsPerPart overrides DefaultResultsPerPart.
	ResultsPerPart int `json:"results_per_part,omitempty" contract:"min=0,max=100000"`
	// ChunksPerRun is passed to every DocumentQA child (0: its default).
	ChunksPerRun int `json:"chunks_per_run,omitempty" contract:"min=0,max=10000"`
	// CarryAfterSeconds is the longest a run waits, at the page boundary
	// where it continues as new, for the children it started itself
	// before it carries the ones still running over to the next run
	// (default DefaultCarryAfterSeconds). It carries them sooner once no
	// child has closed and no signal has come for a quiet period (250 ms
	// to 2 s, longer for a longer run history), so the next run refills
	// the window within about a second. Children that finish meanwhile
	// settle in the run that started them; a long document's child does
	// not hold the window.
	CarryAfterSeconds int `json:"carry_after_seconds,omitempty" contract:"min=0,max=3600"`
	// Reuse says what the batch may take from earlier readings: an
	// earlier batch's answer to the same item (kept under answers/ in the
	// worker's bucket, reused whole), and a memory checkpoint for a child
	// to start from (DocumentQAInput.Reuse). ReuseAuto (the default) takes
	// both, except in a rollout group (samples > 1), which takes neither:
	// every sample reads every chunk in its own run, so that its rollouts
	// are whole (docs/ROLLOUTS.md). ReuseNone takes neither, whatever the
	// samples (devstack eval run sends it). ReuseAlways takes both, rollout
	// groups included; a sample that took either lacks the turns it did
	// not read, and export rollouts reports it. See ReadsWhole.
	Reuse string `json:"reuse,omitempty" contract:"enum=auto|none|always"`
	// Priority orders this run's tasks on a shared task queue that is
	// backed up: 1 highest … 5 lowest; 0 means the priority the run was
	// started with, else 4. Its children and their activities carry it.
	Priority int `json:"priority,omitempty" contract:"min=0,max=5"`
	// FairnessKey shares the task queue fairly between keys of the same
	// priority (a tenant, a client, a matter); default the key the run was
	// started with. Children inherit it unless their manifest item
	// sets its own. At most 64 bytes.
	FairnessKey string `json:"fairness_key,omitempty" contract:"maxlen=64"`
	// FairnessWeight is the key's share relative to other keys (default 1,
	// at most 1000): a key of weight 2 gets twice the tasks of a key of 1.
	FairnessWeight float64 `json:"fairness_weight,omitempty" contract:"min=0,max=1000"`
	// Samples is how many times each item is answered, independently, at
	// the options' temperature (a rollout group, as GRPO samples it); 0
	// means 1, at most 64. Each sample is a DocumentQA run of its own
	// (workflow id <batch id>.<seq> for sample 0, <batch id>.<seq>.s<k>
	// for sample k; <batch id>/<seq> in a batch started before that form),
	// with its own output prefix, scores and usage; the
	// report has a line per sample and sums up each item's samples
	// (BatchReport.Groups). Items per run, the window and the counts of
	// the progress and result count samples.
	Samples int `json:"samples,omitempty" contract:"min=0,max=64"`
	// Budget bounds what the whole batch may spend, over all its items
	// and samples (items reused from an earlier report cost nothing). The
	// batch hands its children the budget in grants, a few calls at a
	// time, so the calls of all children together never pass max_calls;
	// a batch that has granted all of it shows the status paused, with
	// the children that wait for a grant paused too, and goes on when the
	// raise-budget Update raises it (or ends when canceled). A failed
	// child counts as its whole grant. max_tokens is checked against the
	// tokens each child has spent before each call, so the calls in
	// flight (at most one per running child) may pass it.
	Budget *Budget `json:"budget,omitempty"`
	// CompareWith compares the report with an earlier one, item by item
	// (by manifest id and sample): changes.json beside the report, a
	// "What changed" section in report.html, the counts in the result
	// and the MemagentChangedItems search attribute. It is the s3://
	// prefix of the earlier report (the folder of its report.json), or
	// CompareWithPrevious ("previous", with dated_report and a
	// report_prefix): the latest earlier dated report under report_prefix.
	// A batch started by a Temporal Schedule with dated_report and a
	// report_prefix compares with the previous one unless this is set.
	// The earlier report is read under the worker's read prefixes, like a
	// manifest, and never under a prefix another workflow claimed (a batch
	// a schedule started reads its schedule's earlier reports); none there
	// means every item is new.
	CompareWith string `json:"compare_with,omitempty" contract:"maxlen=1024"`
	// NotifyURL, an http or https URL, gets a POST of a
	// ChangeNotification (JSON) once the report is written, one attempt
	// of 30 s; a batch whose notification does not succeed still
	// completes, with notify "failed" in its result. The caller learns
	// whether it was delivered, never what the host answered nor how
	// long it took to (every undelivered attempt lasts 30 s). The worker
	// reaches no loopback, link-local or private address its operator did
	// not allow. The URL may hold a token: only its scheme and host are
	// ever logged or shown.
	NotifyURL string `json:"notify_url,omitempty" contract:"maxlen=2048"`
	// Validation, when set, has the report provisional until a validation
	// of the batch finishes and passes (ValidationGate): report.json, the
	// page, the result and the notification say so (ReportValidation).
	Validation *ValidationGate `json:"validation,omitempty"`
}

// BatchQAResult is BatchQA's result.
type BatchQAResult struct {
	Name string `json:"name"`
	// Items is how many items the manifest has; Succeeded, Failed and
	// Skipped count samples, Items × Samples in all.
	Items     int `json:"items"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	// Skipped counts items answered before with the same document,
	// question, model and options, whose earlier answer was reused.
	Skipped int `json:"skipped"`
	// ReportPrefix is the s3:// prefix the report was written under;
	// ReportURI is its JSON (report.json), HTMLURI its page (report.html).
	ReportPrefix string `json:"report_prefix"`
	ReportURI    string `json:"report_uri"`
	HTMLURI      string `json:"html_uri"`
	// WorkflowID is the batch's workflow id, Runs how many runs it took
	// (continue-as-new), Model the model the items were answered with.
	WorkflowID string `json:"workflow_id"`
	Runs       int    `json:"runs"`
	Model      string `json:"model"`
	// Overall is the report's overall aggregate (report.json has the rest).
	Overall ScoreAggregate `json:"overall"`
	// Samples is how many times each item was answered, when more than
	// once, and Groups the report's aggregate of the items' samples.
	Samples int             `json:"samples,omitempty"`
	Groups  *GroupAggregate `json:"groups,omitempty"`
	// Changes compares the report with the previous one (compare_with, or
	// a scheduled dated batch); absent when the batch compared with none.
	Changes *ChangeSummary `json:"changes,omitempty"`
	// Notify is NotifySent (delivered) or NotifyFailed (not delivered)
	// when the input has a notify_url.
	Notify string `json:"notify,omitempty"`
	// Validation is the report's state when the input has a validation
	// gate: provisional as the batch completes (report.json has the
	// state the validation marked since).
	Validation *ReportValidation `json:"validation,omitempty"`
}

// BatchProgress is what BatchQA's progress query (ProgressQuery) returns.
// Done counts items with an outcome: Answered + Reused + Failed. With
// samples > 1 the counts are of samples, Items × Samples in all.
type BatchProgress struct {
	Name     string `json:"name"`
	Stage    string `json:"stage"`
	Items    int    `json:"items"`
	Samples  int    `json:"samples,omitempty"`
	Started  int    `json:"started"`
	Running  int    `json:"running"`
	Done     int    `json:"done"`
	Answered int    `json:"answered"`
	Reused   int    `json:"reused"`
	Failed   int    `json:"failed"`
	Pages    int    `json:"pages"`
	// PagesResolved counts pages whose items have been started or settled.
	PagesResolved int    `json:"pages_resolved"`
	Run           int    `json:"run"`
	Usage         Usage  `json:"usage"`
	ReportPrefix  string `json:"report_prefix,omitempty"`
	// Budget is the batch's budget, when it has one: Usage counts only
	// the children that answered, this what the budget counts.
	Budget *BatchBudget `json:"budget,omitempty"`
}

// BatchBudget is a batch's budget as its progress shows it.
type BatchBudget struct {
	// Limit is the budget, as raise-budget last set it.
	Limit Budget `json:"limit"`
	// Committed is what the children that closed spent (a failed child
	// counts its whole grant) and what the running ones hold as grants:
	// calls within Limit.MaxCalls, tokens (prompt and completion) within
	// Limit.MaxTokens but for what children spent past their grants.
	Committed Budget `json:"committed"`
	// Waiting counts the running children that spent their grant and wait
	// for another.
	Waiting int `json:"waiting"`
}

// ReuseAlways is a BatchQAInput.Reuse that takes earlier answers and
// memory checkpoints in rollout groups too.
const ReuseAlways = "always"

// ReadsWhole reports whether every item and sample of the batch reads
// every chunk in its own DocumentQA run: no earlier answer is reused and
// no child starts from a memory checkpoint. It is so for reuse "none", and
// for a rollout group (samples > 1) unless reuse is "always".
func (in BatchQAInput) ReadsWhole() bool {
	switch in.Reuse {
	case ReuseNone:
		return true
	case ReuseAlways:
		return false
	}
	return in.Samples > 1
}

// Validate reports input that can never succeed.
func (in BatchQAInput) Validate() error {
	// workflowcheck flags the reflection contract.Check walks the
	// input with; the check is a pure function of the input.
	//workflowcheck:ignore
	if err := contract.Check(in); err != nil {
		return err
	}
	if strings.TrimSpace(in.Manifest) == "" {
		return errors.New("manifest is empty: set manifest to an s3:// URI")
	}
	if !validS3Object(in.Manifest) {
		return fmt.Errorf("manifest %q is not an s3://bucket/key URI", in.Manifest)
	}
	switch in.Format {
	case "", ManifestJSONL, ManifestMemAgent:
	default:
		return fmt.Errorf("format %q is not %q or %q (or empty, to detect it)", in.Format, ManifestJSONL, ManifestMemAgent)
	}
	if in.Concurrency < 0 || in.Concurrency > MaxBatchConcurrency {
		return fmt.Errorf("concurrency (%d) must be within [1, %d]", in.Concurrency, MaxBatchConcurrency)
	}
	if in.ReportPrefix != "" {
		if rest, ok := strings.CutPrefix(in.ReportPrefix, "s3://"); !ok || rest == "" || strings.HasPrefix(rest, "/") {
			return fmt.Errorf("report_prefix %q is not an s3://bucket/prefix URI", in.ReportPrefix)
		}
	}
	if in.ItemsPerRun < 0 {
		return fmt.Errorf("items_per_run (%d) must not be negative", in.ItemsPerRun)
	}
	if in.PageSize < 0 || in.PageSize > MaxPageSize {
		return fmt.Errorf("page_size (%d) must be within [1, %d]", in.PageSize, MaxPageSize)
	}
	if in.ResultsPerPart < 0 {
		return fmt.Errorf("results_per_part (%d) must not be negative", in.ResultsPerPart)
	}
	if in.ChunksPerRun < 0 {
		return fmt.Errorf("chunks_per_run (%d) must not be negative", in.ChunksPerRun)
	}
	if in.Samples < 0 || in.Samples > MaxSamples {
		return fmt.Errorf("samples (%d) must be within [1, %d]", in.Samples, MaxSamples)
	}
	if len(in.Name) > MaxKeywordBytes {
		return fmt.Errorf("name is %d bytes, over %d: shorten it", len(in.Name), MaxKeywordBytes)
	}
	if err := checkCompareWith(in); err != nil {
		return err
	}
	if in.Validation != nil {
		if err := in.Validation.Validate(); err != nil {
			return err
		}
	}
	if in.NotifyURL != "" {
		if err := CheckNotifyURL(in.NotifyURL); err != nil {
			return err
		}
	}
	if err := in.Scheduling().Validate(); err != nil {
		return err
	}
	return in.Options.Validate()
}

// Scheduling returns the input's priority, fairness key and weight.
func (in BatchQAInput) Scheduling() Scheduling {
	return Scheduling{Priority: in.Priority, FairnessKey: in.FairnessKey, FairnessWeight: in.FairnessWeight}
}

func validS3Object(uri string) bool {
	rest, ok := strings.CutPrefix(uri, "s3://")
	if !ok {
		return false
	}
	b, k, ok := strings.Cut(rest, "/")
	return ok && b != "" && k != ""
}

// WithDefaults fills the zero paging knobs (items per run, page size,
// results per part). It is deterministic and safe in workflow code.
func (in BatchQAInput) WithDefaults() BatchQAInput {
	if in.ItemsPerRun == 0 {
		in.ItemsPerRun = DefaultItemsPerRun
	}
	if in.PageSize == 0 {
		in.PageSize = DefaultPageSize
	}
	if in.ResultsPerPart == 0 {
		in.ResultsPerPart = DefaultResultsPerPart
	}
	return in
}

// BatchStartSearchAttributes are the search attributes a BatchQA run has
// from its start, so that it is findable by its name (MemagentBatch, the
// name or else the workflow id) before a worker has taken its first task.
func BatchStartSearchAttributes(in BatchQAInput, workflowID string) temporal.SearchAttributes {
	name := in.Name
	if name == "" {
		name = workflowID
	}
	u := []temporal.SearchAttributeUpdate{
		BatchKey.ValueSet(KeywordValue(name)),
		StatusKey.ValueSet(BatchStageExpanding),
	}
	if in.Options.Model != "" {
		u = append(u, ModelKey.ValueSet(KeywordValue(in.Options.Model)))
	}
	return temporal.NewSearchAttributes(u...)
}

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
	Seq int `json:"seq"`
	// Sample is which of the item's samples this is (a BatchQA with
	// samples > 1 answers each item that many times), from 0.
	Sample      int               `json:"sample,omitempty"`
	ID          string            `json:"id"`
	Document    string            `json:"document"`
	Question    string            `json:"question"`
	GoldAnswers []string          `json:"gold_answers,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Status      string            `json:"status"`
	Answer      string            `json:"answer,omitempty"`
	AnswerFound bool              `json:"answer_found,omitempty"`
	Scores      *Scores           `json:"scores,omitempty"`
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
	// AnswerPages cites the pages (or sections) of a converted document
	// the answer's evidence is on, as DocumentQA's result does.
	AnswerPages string `json:"answer_pages,omitempty"`
	// Grounding says whether and where the answer occurs in the
	// document's text, as DocumentQA's result does.
	Grounding *Grounding `json:"grounding,omitempty"`
	// Documents is the item's corpus, in reading order, when the manifest
	// line named documents (Document is then empty).
	Documents []string `json:"documents,omitempty"`
	// AnswerSources cites the evidence that supports the answer by
	// document and page, as DocumentQA's result does (CiteSources renders
	// it).
	AnswerSources []SourceRef `json:"answer_sources,omitempty"`
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
	// Recall is the mean fraction of each item's gold answers found in its
	// answer (Scores.Recall), for sets whose gold answers are all
	// expected rather than aliases.
	Recall float64 `json:"recall"`
	// MeanTokens is the mean document length in tokens of the items that
	// have one.
	MeanTokens float64 `json:"mean_tokens"`
	Usage      Usage   `json:"usage"`
	// NotFound counts the answered or reused items whose answer's
	// grounding is not_found: an answer that is nowhere in the document.
	NotFound int `json:"not_found,omitempty"`
}

// GroupAggregate sums up the rollout groups of a batch whose items were
// answered more than once (BatchQA's samples): each item's samples are a
// group, and each group has a mean and a best score over its scored
// samples. The fields are means of those over the groups with at least one
// scored sample; exact and substring match count 1 for a match.
type GroupAggregate struct {
	// Items is how many groups (manifest items) there are, Samples how many
	// samples each has.
	Items   int `json:"items"`
	Samples int `json:"samples"`
	// Scored is how many groups the means are over.
	Scored             int     `json:"scored"`
	MeanExactMatch     float64 `json:"mean_exact_match"`
	BestExactMatch     float64 `json:"best_exact_match"`
	MeanSubstringMatch float64 `json:"mean_substring_match"`
	BestSubstringMatch float64 `json:"best_substring_match"`
	MeanF1             float64 `json:"mean_f1"`
	BestF1             float64 `json:"best_f1"`
}

// GroupResult is one item's line of groups.jsonl: its samples' outcomes
// summed up, with the mean and best score over the scored ones.
type GroupResult struct {
	Seq      int    `json:"seq"`
	ID       string `json:"id"`
	Samples  int    `json:"samples"`
	Answered int    `json:"answered"`
	Reused   int    `json:"reused"`
	Failed   int    `json:"failed"`
	// Scored counts the samples with scores; the means and bests are over
	// them, and zero when there are none.
	Scored             int     `json:"scored"`
	MeanExactMatch     float64 `json:"mean_exact_match"`
	BestExactMatch     float64 `json:"best_exact_match"`
	MeanSubstringMatch float64 `json:"mean_substring_match"`
	BestSubstringMatch float64 `json:"best_substring_match"`
	MeanF1             float64 `json:"mean_f1"`
	BestF1             float64 `json:"best_f1"`
	Usage              Usage   `json:"usage"`
}

// BatchReport is report.json of a BatchQA run.
type BatchReport struct {
	Name       string `json:"name"`
	WorkflowID string `json:"workflow_id"`
	// RunID is the batch run that wrote the report.
	RunID      string         `json:"run_id,omitempty"`
	Manifest   string         `json:"manifest"`
	Model      string         `json:"model"`
	Options    ModelOptions   `json:"options"`
	StartedAt  time.Time      `json:"started_at"`
	FinishedAt time.Time      `json:"finished_at"`
	Overall    ScoreAggregate `json:"overall"`
	// ByLabel maps a label name (for example "length") to its values and
	// their aggregates.
	ByLabel map[string]map[string]ScoreAggregate `json:"by_label,omitempty"`
	// LabelsOmitted are labels with too many distinct values (more than
	// 100, such as a raw token count) to get an aggregate per value.
	LabelsOmitted []string `json:"labels_omitted,omitempty"`
	// ResultsURI is the per-item JSON Lines; CSVURI, SVGURI and HTMLURI the
	// CSV, the chart of score against document length and the page.
	ResultsURI string `json:"results_uri"`
	CSVURI     string `json:"csv_uri"`
	SVGURI     string `json:"svg_uri"`
	HTMLURI    string `json:"html_uri"`
	// ReportURI is this report.json.
	ReportURI string `json:"report_uri,omitempty"`
	// Samples is how many times each item was answered, when more than
	// once: Overall, ByLabel, results.jsonl and the CSV then count samples
	// (one line each), Groups sums up the items, and GroupsURI is
	// groups.jsonl, one line (GroupResult) per item.
	Samples   int             `json:"samples,omitempty"`
	Groups    *GroupAggregate `json:"groups,omitempty"`
	GroupsURI string          `json:"groups_uri,omitempty"`
	// Changes compares this report with the previous one; its ChangesURI
	// is changes.json. Absent when the batch compared with none.
	Changes *ChangeSummary `json:"changes,omitempty"`
	// Validation is the report's state when the batch has a validation
	// gate (BatchQAInput.Validation): provisional, then final or
	// validation_failed once the first validation of the batch finishes.
	Validation *ReportValidation `json:"validation,omitempty"`
}

// MaxSamples bounds how many times a batch answers each item.
const MaxSamples = 64

// Report files under the report prefix.
const (
	ReportJSONName    = "report.json"
	ReportResultsName = "results.jsonl"
	ReportCSVName     = "results.csv"
	ReportSVGName     = "chart.svg"
	ReportHTMLName    = "report.html"
	// ReportGroupsName is the per-item summary of a batch with samples > 1.
	ReportGroupsName = "groups.jsonl"
)

// DefaultCarryAfterSeconds is BatchQAInput.CarryAfterSeconds's default.
const DefaultCarryAfterSeconds = 15

// ItemDoneSignal is the signal a batch's DocumentQA child sends its batch
// as it closes, answered or failed; its argument is an ItemDone. It only
// wakes the batch: the batch reads the child's outcome from Temporal, so a
// signal from anyone else can neither add nor change an outcome.
const ItemDoneSignal = "memagent.item-done"

// CarriedSignal is the signal a batch sends each DocumentQA child it
// carries over a continue-as-new of its own (no argument): the child then
// sends ItemDoneSignal as it closes. A child the batch never carried closes
// as the child of the run that awaits it, and sends nothing.
const CarriedSignal = "memagent.carried"

// ItemDone names the child that is closing.
type ItemDone struct {
	WorkflowID string `json:"workflow_id"`
}
