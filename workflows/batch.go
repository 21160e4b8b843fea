package workflows

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/activities"
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

// partBytes bounds the outcomes buffered for one part (and so one activity
// input in history), whatever their count.
const partBytes = 512 << 10

// BatchQAInput starts a BatchQA run. It is JSON on the wire.
type BatchQAInput struct {
	// Manifest is the s3:// URI of the manifest.
	Manifest string `json:"manifest" contract:"required,maxlen=1024"`
	// Format is ManifestJSONL or ManifestMemAgent; empty means detected
	// from the content.
	Format string `json:"format,omitempty" contract:"enum=jsonl|memagent"`
	// Name labels the batch in reports and in the MemagentBatch search
	// attribute of its runs; default the workflow id.
	Name    string                  `json:"name,omitempty" contract:"maxlen=255"`
	Options activities.ModelOptions `json:"options"`
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
	// (workflow id <batch id>/<seq> for sample 0, <batch id>/<seq>.s<k>
	// for sample k), with its own output prefix, scores and usage; the
	// report has a line per sample and sums up each item's samples
	// (BatchReport.Groups). Items per run, the window and the counts of
	// the progress and result count samples.
	Samples int `json:"samples,omitempty" contract:"min=0,max=64"`
}

// batchRunInput is what a BatchQA run decodes: the published input and, on
// a run the workflow continued as new itself, the state its previous run
// handed over. The state is not part of the contract; checkCarry refuses
// one a caller sent.
type batchRunInput struct {
	BatchQAInput
	State *BatchState `json:"state,omitempty"`
}

// BatchState is what one BatchQA run hands to the next. Items never enter
// it: they stay in S3 pages, and the state holds counts and locations.
type BatchState struct {
	// From is the run id of the run that handed this state over.
	From string `json:"from,omitempty"`
	// StartedAt is the first run's start; it names a dated report.
	StartedAt time.Time `json:"started_at"`
	Name      string    `json:"name"`
	// Expanded is ExpandManifest's output; empty until the manifest is
	// expanded.
	Expanded activities.ExpandOutput `json:"expanded"`
	// NextPage is the first page not yet resolved. Every item of the
	// pages before it has an outcome in one of Parts: a run drains its
	// children before it continues-as-new.
	NextPage int `json:"next_page"`
	Started  int `json:"started"`
	Answered int `json:"answered"`
	Reused   int `json:"reused"`
	Failed   int `json:"failed"`
	// Usage sums the model usage of the children that answered.
	Usage activities.Usage `json:"usage"`
	// Parts are the outcome parts, relative to Expanded.WorkPrefix.
	Parts []string `json:"parts,omitempty"`
	Runs  int      `json:"runs"`
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
	Overall activities.ScoreAggregate `json:"overall"`
	// Samples is how many times each item was answered, when more than
	// once, and Groups the report's aggregate of the items' samples.
	Samples int                        `json:"samples,omitempty"`
	Groups  *activities.GroupAggregate `json:"groups,omitempty"`
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
	PagesResolved int              `json:"pages_resolved"`
	Run           int              `json:"run"`
	Usage         activities.Usage `json:"usage"`
	ReportPrefix  string           `json:"report_prefix,omitempty"`
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
	if in.Samples < 0 || in.Samples > activities.MaxSamples {
		return fmt.Errorf("samples (%d) must be within [1, %d]", in.Samples, activities.MaxSamples)
	}
	if len(in.Name) > MaxKeywordBytes {
		return fmt.Errorf("name is %d bytes, over %d: shorten it", len(in.Name), MaxKeywordBytes)
	}
	if err := in.scheduling().validate(); err != nil {
		return err
	}
	return in.Options.Validate()
}

func (in BatchQAInput) scheduling() scheduling {
	return scheduling{Priority: in.Priority, FairnessKey: in.FairnessKey, FairnessWeight: in.FairnessWeight}
}

func validS3Object(uri string) bool {
	rest, ok := strings.CutPrefix(uri, "s3://")
	if !ok {
		return false
	}
	b, k, ok := strings.Cut(rest, "/")
	return ok && b != "" && k != ""
}

// withDefaults fills the zero knobs.
func (in BatchQAInput) withDefaults() BatchQAInput {
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

// BatchQA answers the questions of a manifest, one DocumentQA child per item.
//
// The first run expands the manifest into pages in S3 (ExpandManifest).
// Each page is then resolved (ResolveBatchPage): items already answered
// with the same document version, question, model and options are reused,
// items whose document is missing fail at once, and the rest run as
// DocumentQA children, at most Concurrency at a time, in a sliding window.
// A child's failure is the item's outcome, never the batch's. Outcomes are
// written to S3 in parts; a run continues-as-new at a page boundary after
// ItemsPerRun items (or when Temporal suggests it), once its children have
// finished. The last run writes the report (WriteBatchReport).
//
// Its one argument is a BatchQAInput as JSON, decoded strictly like
// DocumentQA's; start it by name (BatchQAName).
func BatchQA(ctx workflow.Context, input converter.RawValue) (_ *BatchQAResult, err error) {
	edge := newBoundary(ctx)
	// The query answers from the start, so a caller polling it sees
	// "failed" even for input that does not decode, as DocumentQA's does.
	var b *batchRun
	early := BatchStageExpanding
	if err := workflow.SetQueryHandler(ctx, ProgressQuery, func() (BatchProgress, error) {
		if b == nil {
			return BatchProgress{Stage: early}, nil
		}
		b.refresh()
		return b.progress, nil
	}); err != nil {
		return nil, err
	}
	refuse := func(err error) error {
		early = StageFailed
		if edge.lifecycle {
			_ = workflow.UpsertTypedSearchAttributes(ctx, StatusKey.ValueSet(StageFailed))
		}
		return err
	}
	var run batchRunInput
	if err := edge.decode(input, &run); err != nil {
		return nil, refuse(err)
	}
	in := run.BatchQAInput
	if err := in.Validate(); err != nil {
		return nil, refuse(badInput(err))
	}
	in = in.withDefaults()
	info := workflow.GetInfo(ctx)
	st := run.State
	if st != nil {
		if err := checkCarry(ctx, st.From); err != nil {
			return nil, refuse(err)
		}
	}
	if st == nil {
		st = &BatchState{StartedAt: workflow.Now(ctx), Name: in.Name}
		if st.Name == "" {
			st.Name = info.WorkflowExecution.ID
		}
	}
	st.Runs++
	b = &batchRun{ctx: ctx, in: in, st: st, workflowID: info.WorkflowExecution.ID,
		prio: in.scheduling().taskPriority(ctx, PriorityBatch)}
	b.progress.Stage = BatchStageRunning
	if st.Expanded.WorkPrefix == "" {
		b.progress.Stage = BatchStageExpanding
	}
	defer func() {
		if s := edge.closedStatus(err); s != "" && s != StageDone {
			b.publish(s)
		}
	}()
	b.publish(b.progress.Stage, BatchKey.ValueSet(KeywordValue(st.Name)))

	if st.Expanded.WorkPrefix == "" {
		dated := ""
		if in.DatedReport {
			dated = st.StartedAt.UTC().Format(DatedReportLayout)
		}
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout:   12 * time.Hour,
			HeartbeatTimeout:      2 * time.Minute,
			RetryPolicy:           retryPolicy(),
			Priority:              b.prio,
			DisableEagerExecution: skipsEagerExecution(b.prio),
			Summary:               "expand manifest",
		})
		if err := workflow.ExecuteActivity(actx, activities.ExpandManifestName, activities.ExpandInput{
			Manifest: in.Manifest, Format: in.Format, ReportPrefix: in.ReportPrefix, Dated: dated,
			WorkflowID: info.WorkflowExecution.ID, RunKey: chainID(info), PageSize: in.PageSize,
			Options: in.Options, Samples: in.Samples,
		}).Get(ctx, &st.Expanded); err != nil {
			return nil, stageError("expand manifest", err)
		}
		updates := []temporal.SearchAttributeUpdate{}
		if st.Expanded.Model != "" {
			updates = append(updates, ModelKey.ValueSet(KeywordValue(st.Expanded.Model)))
		}
		b.publish(BatchStageRunning, updates...)
	}

	if err := b.runItems(); err != nil {
		return nil, err
	}
	if st.NextPage < st.Expanded.Pages {
		st.From = info.WorkflowExecution.RunID
		return nil, workflow.NewContinueAsNewError(ctx, BatchQAName, batchRunInput{BatchQAInput: in, State: st})
	}

	b.publish(BatchStageReporting)
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:   2 * time.Hour,
		HeartbeatTimeout:      2 * time.Minute,
		RetryPolicy:           retryPolicy(),
		Priority:              b.prio,
		DisableEagerExecution: skipsEagerExecution(b.prio),
		Summary:               "write report",
	})
	parts := make([]string, len(st.Parts))
	for i, p := range st.Parts {
		parts[i] = st.Expanded.WorkPrefix + p
	}
	var rep activities.BatchReport
	if err := workflow.ExecuteActivity(actx, activities.WriteBatchReportName, activities.ReportInput{
		Name: st.Name, WorkflowID: info.WorkflowExecution.ID, Manifest: in.Manifest,
		Model: st.Expanded.Model, Options: in.Options, StartedAt: st.StartedAt,
		ReportPrefix: st.Expanded.ReportPrefix, Parts: parts, Items: st.Expanded.Items,
		RunID: info.WorkflowExecution.RunID, Samples: in.Samples,
	}).Get(ctx, &rep); err != nil {
		return nil, stageError("write report", err)
	}
	b.publish(BatchStageDone)
	// A report kept from an earlier run moves this one to runs/<run id>/.
	reportPrefix := st.Expanded.ReportPrefix
	if p, ok := strings.CutSuffix(rep.ReportURI, "report.json"); ok && p != "" {
		reportPrefix = p
	}
	return &BatchQAResult{
		Name: st.Name, Items: st.Expanded.Items, Succeeded: st.Answered, Failed: st.Failed, Skipped: st.Reused,
		ReportPrefix: reportPrefix, ReportURI: reportPrefix + "report.json",
		HTMLURI: rep.HTMLURI, WorkflowID: info.WorkflowExecution.ID, Runs: st.Runs, Model: st.Expanded.Model,
		Overall: rep.Overall, Samples: rep.Samples, Groups: rep.Groups,
	}, nil
}

// batchRun is one run of BatchQA: its state and the window of children.
type batchRun struct {
	ctx        workflow.Context
	in         BatchQAInput
	st         *BatchState
	workflowID string
	// prio is what the batch's activities and children carry; an item's
	// own fairness key replaces the batch's for its child.
	prio     temporal.Priority
	progress BatchProgress
	// status is the MemagentStatus last upserted.
	status string

	running  int
	buffer   []activities.BatchItemResult
	bufBytes int
	parts    int // parts written by this run
}

// window is how many children run at once: the input's concurrency, else
// twice the pool capacity the expanding worker reported (at most
// MaxDefaultWindow), else DefaultBatchConcurrency.
func (b *batchRun) window() int {
	switch c := b.st.Expanded.PoolCapacity; {
	case b.in.Concurrency > 0:
		return b.in.Concurrency
	case c > 0:
		return min(2*c, MaxDefaultWindow)
	}
	return DefaultBatchConcurrency
}

// refresh copies the state into the progress.
func (b *batchRun) refresh() {
	st := b.st
	p := &b.progress
	p.Name, p.Items, p.Pages, p.PagesResolved = st.Name, st.Expanded.Items, st.Expanded.Pages, st.NextPage
	if b.in.Samples > 1 {
		p.Samples = b.in.Samples
	}
	p.Started, p.Running, p.Answered, p.Reused, p.Failed = st.Started, b.running, st.Answered, st.Reused, st.Failed
	p.Done = st.Answered + st.Reused + st.Failed
	p.Run, p.Usage, p.ReportPrefix = st.Runs, st.Usage, st.Expanded.ReportPrefix
}

// publish sets the stage, the current details and, with it, search
// attribute updates. A rejected upsert is logged: what operators see must
// never fail the batch.
func (b *batchRun) publish(stage string, updates ...temporal.SearchAttributeUpdate) {
	b.progress.Stage = stage
	b.refresh()
	workflow.SetCurrentDetails(b.ctx, batchDetails(b.progress))
	if stage != b.status {
		updates = append(updates, StatusKey.ValueSet(stage))
		b.status = stage
	}
	if len(updates) == 0 {
		return
	}
	if err := workflow.UpsertTypedSearchAttributes(b.ctx, updates...); err != nil {
		workflow.GetLogger(b.ctx).Warn("upsert search attributes", "err", err)
	}
}

// batchDetails renders progress as one markdown line, such as
// "**running** · 340/1000 items · 16 running · 2 failed · 10 reused".
func batchDetails(p BatchProgress) string {
	line := fmt.Sprintf("**%s**", p.Stage)
	switch {
	case p.Items > 0 && p.Samples > 1:
		line += fmt.Sprintf(" · %d/%d samples (%d items × %d) · %d running", p.Done, p.Items*p.Samples, p.Items, p.Samples, p.Running)
	case p.Items > 0:
		line += fmt.Sprintf(" · %d/%d items · %d running", p.Done, p.Items, p.Running)
	}
	if p.Failed > 0 {
		line += fmt.Sprintf(" · %d failed", p.Failed)
	}
	if p.Reused > 0 {
		line += fmt.Sprintf(" · %d reused", p.Reused)
	}
	if p.Run > 1 {
		line += fmt.Sprintf(" · run %d", p.Run)
	}
	return line
}

// pageFuture is a ResolveBatchPage call in flight.
type pageFuture struct {
	page int
	f    workflow.Future
}

// runItems runs the items of the pages from st.NextPage on, until they are
// all done or this run has handled enough of them; it returns with no child
// running and every outcome written.
func (b *batchRun) runItems() error {
	ctx, st := b.ctx, b.st
	sel := workflow.NewSelector(ctx)
	var queue []activities.BatchRunItem
	var ahead *pageFuture
	handled := 0 // items started or settled by this run
	stopping := false
	resolve := func(page int) workflow.Future {
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout:   30 * time.Minute,
			HeartbeatTimeout:      time.Minute,
			RetryPolicy:           retryPolicy(),
			Priority:              b.prio,
			DisableEagerExecution: skipsEagerExecution(b.prio),
			Summary:               fmt.Sprintf("resolve page %d/%d", page+1, st.Expanded.Pages),
		})
		opts := b.in.Options
		opts.Model = st.Expanded.Model
		return workflow.ExecuteActivity(actx, activities.ResolveBatchPageName, activities.ResolvePageInput{
			WorkPrefix: st.Expanded.WorkPrefix, Page: page, Options: opts, Samples: b.in.Samples,
		})
	}
	for {
		for b.running < b.window() && !stopping {
			if len(queue) > 0 {
				b.startChild(sel, queue[0])
				queue = queue[1:]
				handled++
				continue
			}
			if st.NextPage >= st.Expanded.Pages {
				break
			}
			// A run ends at a page boundary, so the next one starts at a
			// fresh page and no item is carried in the state.
			if handled >= b.in.ItemsPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
				stopping = true
				break
			}
			f := ahead
			ahead = nil
			if f == nil || f.page != st.NextPage {
				f = &pageFuture{page: st.NextPage, f: resolve(st.NextPage)}
			}
			var out activities.ResolvePageOutput
			if err := f.f.Get(ctx, &out); err != nil {
				return stageError(fmt.Sprintf("resolve page %d", f.page), err)
			}
			st.NextPage++
			st.Reused += out.Reused
			st.Failed += out.Failed
			handled += out.Reused + out.Failed
			if out.Part != "" {
				st.Parts = append(st.Parts, strings.TrimPrefix(out.Part, st.Expanded.WorkPrefix))
			}
			queue = out.Run
			// Resolve the next page while this one's children run, so the
			// window does not stall at page boundaries.
			if st.NextPage < st.Expanded.Pages && handled+len(queue) < b.in.ItemsPerRun {
				ahead = &pageFuture{page: st.NextPage, f: resolve(st.NextPage)}
			}
			b.publish(BatchStageRunning)
		}
		if b.running == 0 {
			break
		}
		sel.Select(ctx)
		if len(b.buffer) >= b.in.ResultsPerPart || b.bufBytes >= partBytes {
			if err := b.flush(); err != nil {
				return err
			}
		}
	}
	if ahead != nil {
		// Let a look-ahead that will not be used finish, so it never writes
		// while the next run resolves the same page.
		_ = ahead.f.Get(ctx, nil)
	}
	return b.flush()
}

// startChild starts the DocumentQA child of one item and adds its outcome
// to the selector.
func (b *batchRun) startChild(sel workflow.Selector, it activities.BatchRunItem) {
	st := b.st
	opts := b.in.Options
	opts.Model = st.Expanded.Model
	prio := b.prio
	if it.FairnessKey != "" && it.FairnessKey != prio.FairnessKey {
		prio.FairnessKey, prio.FairnessWeight = it.FairnessKey, 0
	}
	in := DocumentQAInput{
		Document: it.Document, Question: it.Question, GoldAnswers: it.GoldAnswers, Options: opts,
		OutputPrefix: it.OutputPrefix, BatchID: st.Name, ChunksPerRun: b.in.ChunksPerRun,
		Priority: prio.PriorityKey, FairnessKey: prio.FairnessKey, FairnessWeight: float64(prio.FairnessWeight),
	}
	id := SampleWorkflowID(b.workflowID, it.Seq, it.Sample)
	summary := fmt.Sprintf("%s #%d · Q#%s · %s", st.Name, it.Seq, QuestionDigest(it.Question), it.Document)
	if it.Sample > 0 {
		summary = fmt.Sprintf("%s #%d sample %d · Q#%s · %s", st.Name, it.Seq, it.Sample, QuestionDigest(it.Question), it.Document)
	}
	cctx := workflow.WithChildOptions(b.ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            id,
		Priority:              prio,
		TypedSearchAttributes: StartSearchAttributes(in),
		Memo:                  map[string]any{"model_options": opts.WithDefaults()},
		// The question stays out of the summary, which is not encrypted.
		StaticSummary: summary,
	})
	f := workflow.ExecuteChildWorkflow(cctx, DocumentQAName, in)
	b.running++
	st.Started++
	sel.AddFuture(f, func(f workflow.Future) {
		b.running--
		var res DocumentQAResult
		err := f.Get(b.ctx, &res)
		r := activities.BatchItemResult{
			Seq: it.Seq, Sample: it.Sample, ID: it.ID, Document: it.Document, Question: it.Question,
			GoldAnswers: it.GoldAnswers, Labels: it.Labels, WorkflowID: id,
		}
		if err != nil {
			r.Status = activities.ItemFailed
			r.Error, r.ErrorType = childFailure(err)
			st.Failed++
		} else {
			r.Status = activities.ItemAnswered
			r.Answer, r.AnswerFound, r.Scores = res.Answer, res.AnswerFound, res.Scores
			r.Chunks, r.Tokens, r.Usage, r.ResultURI = res.Chunks, res.Tokens, res.Usage, res.ResultURI
			r.AnswerPages = res.AnswerPages
			st.Answered++
			st.Usage = st.Usage.Add(res.Usage)
		}
		b.buffer = append(b.buffer, r)
		b.bufBytes += resultSize(r, it.Bytes)
		b.refresh()
		workflow.SetCurrentDetails(b.ctx, batchDetails(b.progress))
	})
}

// SampleWorkflowID is the workflow id of the DocumentQA run of one sample
// of a batch item: <batch id>/<seq> for sample 0 (the id of the item's only
// run in a batch without samples), <batch id>/<seq>.s<k> for sample k.
func SampleWorkflowID(batchID string, seq, sample int) string {
	if sample == 0 {
		return fmt.Sprintf("%s/%d", batchID, seq)
	}
	return fmt.Sprintf("%s/%d.s%d", batchID, seq, sample)
}

// flush writes the buffered outcomes as one part.
func (b *batchRun) flush() error {
	if len(b.buffer) == 0 {
		return nil
	}
	slices.SortFunc(b.buffer, func(x, y activities.BatchItemResult) int {
		if x.Seq != y.Seq {
			return x.Seq - y.Seq
		}
		return x.Sample - y.Sample
	})
	name := fmt.Sprintf("parts/run-%04d-%04d.jsonl", b.st.Runs, b.parts)
	actx := workflow.WithActivityOptions(b.ctx, workflow.ActivityOptions{
		StartToCloseTimeout:   10 * time.Minute,
		RetryPolicy:           retryPolicy(),
		Priority:              b.prio,
		DisableEagerExecution: skipsEagerExecution(b.prio),
		Summary:               fmt.Sprintf("write %d outcomes", len(b.buffer)),
	})
	if err := workflow.ExecuteActivity(actx, activities.WriteBatchResultsName, activities.WriteResultsInput{
		URI: b.st.Expanded.WorkPrefix + name, Results: b.buffer,
	}).Get(b.ctx, nil); err != nil {
		return stageError("write outcomes", err)
	}
	b.st.Parts = append(b.st.Parts, name)
	b.parts++
	b.buffer, b.bufBytes = nil, 0
	return nil
}

// resultSize estimates an outcome's size in history from the size of its
// item (measured by the activity, as ranging over labels here would not be
// deterministic) and what the run added.
func resultSize(r activities.BatchItemResult, itemBytes int) int {
	return 256 + itemBytes + len(r.Answer) + len(r.Error) + len(r.ResultURI) + len(r.WorkflowID)
}

// childFailure turns a child's failure into the item's error message and
// type: the memagent.* type of the activity that failed when there is one.
func childFailure(err error) (msg, typ string) {
	var appErr *temporal.ApplicationError
	var timeout *temporal.TimeoutError
	var canceled *temporal.CanceledError
	var terminated *temporal.TerminatedError
	switch {
	case errors.As(err, &appErr):
		return appErr.Message(), appErr.Type()
	case errors.As(err, &timeout):
		return timeout.Error(), "Timeout"
	case errors.As(err, &canceled):
		return "canceled", "Canceled"
	case errors.As(err, &terminated):
		return "terminated", "Terminated"
	}
	return err.Error(), ""
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
