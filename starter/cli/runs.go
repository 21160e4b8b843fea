package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/clientconf"
)

// runFilter selects runs by their search attributes; empty fields match
// everything.
type runFilter struct {
	Document, Model, Status, Batch, Question string
	// Type is "question", "review", "batch" or "signoff"; empty means
	// all four.
	Type string
}

// runTypes are the --type values and the workflow types they select.
var runTypes = map[string]string{"question": api.DocumentQAName, "review": api.ReviewDocumentName, "batch": api.BatchQAName,
	"signoff": api.SignOffName}

// openStages are the MemagentStatus values of a run still going, over the
// three workflows; closedStatuses are how a run ended, as Temporal records
// it (a terminated or timed-out run cannot update its MemagentStatus, so
// these match on the execution status).
var (
	// A batch's own stage "running" is left out: --status running is
	// every open run, batches in that stage among them.
	openStages = []string{api.StagePreparing, api.StageReading, api.StageAnswering, api.StagePaused, api.StageWriting,
		api.BatchStageExpanding, api.BatchStageReporting, api.StageWaiting}
	closedStatuses = map[string]string{api.StageDone: "Completed", api.StageFailed: "Failed", api.StageCanceled: "Canceled",
		"terminated": "Terminated", "timed_out": "TimedOut"}
	statuses = append(append([]string{"running"}, openStages...), api.StageDone, api.StageFailed, api.StageCanceled, "terminated", "timed_out")
)

// query renders the filter as a visibility query. Runs that continued as
// new are left out: the chain's latest run stands for it, carrying the same
// attributes.
func (f runFilter) query() string {
	types := []string{quote(api.DocumentQAName), quote(api.ReviewDocumentName), quote(api.BatchQAName), quote(api.SignOffName)}
	if t, ok := runTypes[f.Type]; ok {
		types = []string{quote(t)}
	}
	q := []string{
		fmt.Sprintf("WorkflowType IN (%s)", strings.Join(types, ", ")),
		"ExecutionStatus != 'ContinuedAsNew'",
	}
	switch st, closed := closedStatuses[f.Status]; {
	case f.Status == "running":
		q = append(q, "ExecutionStatus = 'Running'")
	case closed:
		q = append(q, fmt.Sprintf("ExecutionStatus = '%s'", st))
	case f.Status != "":
		q = append(q, "ExecutionStatus = 'Running'")
	}
	add := func(attr, v string) {
		if v != "" {
			q = append(q, fmt.Sprintf("%s = %s", attr, quote(api.KeywordValue(v))))
		}
	}
	add(api.AttrDocument, f.Document)
	add(api.AttrModel, f.Model)
	if slices.Contains(openStages, f.Status) {
		add(api.AttrStatus, f.Status)
	}
	add(api.AttrBatch, f.Batch)
	if f.Question != "" {
		add(api.AttrQuestionDigest, api.QuestionDigest(f.Question))
	}
	return strings.Join(q, " AND ")
}

// quote renders s as a string literal of the visibility query language.
func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// runRow is one run as `runs` prints it.
type runRow struct {
	WorkflowID      string     `json:"workflow_id"`
	WorkflowType    string     `json:"workflow_type"`
	RunID           string     `json:"run_id"`
	Status          string     `json:"status"`
	ExecutionStatus string     `json:"execution_status"`
	ChunksDone      *int64     `json:"chunks_done,omitempty"`
	ChunksTotal     *int64     `json:"chunks_total,omitempty"`
	StartedAt       time.Time  `json:"started_at"`
	ClosedAt        *time.Time `json:"closed_at,omitempty"`
	Document        string     `json:"document,omitempty"`
	Model           string     `json:"model,omitempty"`
	Batch           string     `json:"batch,omitempty"`
	QuestionDigest  string     `json:"question_digest,omitempty"`
	// SignOffState is a sign-off's state (MemagentSignoff:
	// waiting-level-1, waiting-level-2, signed-off), which its Status
	// shows too unless Temporal closed it otherwise; SignsOff is the
	// workflow id of the review or batch it signs off, when known.
	SignOffState string `json:"signoff_state,omitempty"`
	SignsOff     string `json:"signs_off,omitempty"`
}

func bindRuns(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	fs := cmd.Flags()
	cfg, cfgErr := clientconf.Load()
	connectionFlags(cmd, &cfg)
	var f runFilter
	fs.StringVar(&f.Document, "document", "", "only runs over this document `URI` (s3://bucket/key)")
	fs.StringVar(&f.Status, "status", "", "only runs in this status: "+strings.Join(statuses, ", "))
	fs.StringVar(&f.Type, "type", "", "only runs of this kind: question, review, batch or signoff (default all)")
	fs.StringVar(&f.Batch, "batch", "", "only runs of this batch `ID`")
	fs.StringVar(&f.Question, "question", "", "only runs asking exactly this question (matched by its digest)")
	limit := fs.Int("limit", 20, "list at most `N` runs")
	asJSON := outputFlag(cmd, "print a JSON array instead of a table")
	return func(args []string) (err error) {
		if cfgErr != nil {
			return cfgErr
		}
		if len(args) > 0 {
			return fmt.Errorf("unexpected arguments %q: runs takes only flags", args)
		}
		// --model is the configuration's flag; here it filters, and only when
		// given on the command line, never from MEMAGENT_MODEL.
		fs.Visit(func(fl *pflag.Flag) {
			if fl.Name == "model" {
				f.Model = cfg.Model
			}
		})
		if f.Status != "" && !slices.Contains(statuses, f.Status) {
			return badRequest(fmt.Errorf("--status %q is not a status: use one of %s", f.Status, strings.Join(statuses, ", ")))
		}
		if _, ok := runTypes[f.Type]; f.Type != "" && !ok {
			return badRequest(fmt.Errorf("--type %q is not a kind of run: use question, review, batch or signoff", f.Type))
		}
		if *limit <= 0 {
			return badRequest(fmt.Errorf("--limit (%d) must be positive", *limit))
		}
		cfg.Normalize()
		c, err := cfg.Dial(ctx, cliLogger(stderr))
		if err != nil {
			return err
		}
		defer c.Close()
		rows, err := listRuns(ctx, c, cfg.TemporalNamespace, f, *limit)
		if err != nil {
			return err
		}
		lastProgress(ctx, rows, func(ctx context.Context, id string) (int64, error) {
			v, err := c.QueryWorkflow(ctx, id, "", api.ProgressQuery)
			if err != nil {
				return 0, err
			}
			var p struct {
				ChunksDone int64 `json:"chunks_done"`
			}
			return p.ChunksDone, v.Get(&p)
		})
		rows = besideSubjects(ctx, rows, func(ctx context.Context, r runRow) (string, error) {
			return signOffSubject(ctx, c, r)
		})
		if *asJSON {
			if rows == nil {
				rows = []runRow{}
			}
			return printJSON(stdout, rows)
		}
		if len(rows) == 0 {
			fmt.Fprintln(stdout, "no runs match")
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "WORKFLOW ID\tTYPE\tSTATUS\tCHUNKS\tSTARTED\tMODEL\tDOCUMENT")
		for _, r := range rows {
			id, chunks, doc := r.WorkflowID, count(r.ChunksDone)+"/"+count(r.ChunksTotal), orDash(r.Document)
			if r.WorkflowType == api.SignOffName {
				chunks = "-"
				if r.SignsOff != "" {
					doc = "signs off " + r.SignsOff
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", id, runTypeName(r.WorkflowType), r.Status, chunks,
				r.StartedAt.Local().Format("2006-01-02 15:04:05"), orDash(r.Model), doc)
		}
		return tw.Flush()
	}
}

// progressWait bounds how long runs waits for the progress of the runs
// that did not finish: a worker answers a query in milliseconds, and with
// none polling the table keeps the search attributes.
const progressWait = 3 * time.Second

// lastProgress sets the chunk count of every run that did not finish (a
// question or a review still going, paused, canceled, terminated, failed)
// to what its progress query says, when a worker answers within
// progressWait: the search attribute is upserted every few seconds at
// most, and a run canceled or terminated between two upserts keeps an
// older count. A batch counts items, not chunks, and is left as it is.
func lastProgress(ctx context.Context, rows []runRow, query func(ctx context.Context, id string) (int64, error)) {
	ctx, cancel := context.WithTimeout(ctx, progressWait)
	defer cancel()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range rows {
		r := &rows[i]
		if r.Status == api.StageDone || r.WorkflowType == api.BatchQAName || r.ChunksTotal == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			if n, err := query(ctx, r.WorkflowID); err == nil && (r.ChunksDone == nil || n > *r.ChunksDone) {
				r.ChunksDone = &n
			}
		}()
	}
	wg.Wait()
}

// lister is the part of client.Client that listRuns uses.
type lister interface {
	ListWorkflow(context.Context, *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error)
}

// listRuns returns up to limit runs matching f, newest first. Visibility
// returns running runs first, then closed ones by close time; the page is
// sorted by start time.
func listRuns(ctx context.Context, c lister, namespace string, f runFilter, limit int) ([]runRow, error) {
	var rows []runRow
	var token []byte
	for len(rows) < limit {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: namespace, Query: f.query(), PageSize: int32(min(limit-len(rows), 1000)), NextPageToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("list runs (%s): %w", f.query(), err)
		}
		for _, e := range resp.GetExecutions() {
			if len(rows) < limit {
				rows = append(rows, newRunRow(e))
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	slices.SortStableFunc(rows, func(a, b runRow) int { return b.StartedAt.Compare(a.StartedAt) })
	return rows, nil
}

func newRunRow(e *workflowpb.WorkflowExecutionInfo) runRow {
	sa := e.GetSearchAttributes().GetIndexedFields()
	r := runRow{
		WorkflowID:      e.GetExecution().GetWorkflowId(),
		WorkflowType:    e.GetType().GetName(),
		RunID:           e.GetExecution().GetRunId(),
		ExecutionStatus: e.GetStatus().String(),
		StartedAt:       e.GetStartTime().AsTime(),
		Document:        keyword(sa, api.AttrDocument),
		Model:           keyword(sa, api.AttrModel),
		Batch:           keyword(sa, api.AttrBatch),
		QuestionDigest:  keyword(sa, api.AttrQuestionDigest),
		ChunksDone:      integer(sa, api.AttrChunksDone),
		ChunksTotal:     integer(sa, api.AttrChunksTotal),
	}
	if e.GetCloseTime() != nil {
		t := e.GetCloseTime().AsTime()
		r.ClosedAt = &t
	}
	r.Status = displayStatus(keyword(sa, api.AttrStatus), e.GetStatus())
	if r.WorkflowType == api.SignOffName {
		r.SignOffState = keyword(sa, api.AttrSignoff)
		if r.SignOffState != "" && (r.Status == api.StageWaiting || r.Status == api.StageDone) {
			r.Status = r.SignOffState
		}
	}
	return r
}

// besideSubjects finds what each sign-off of rows signs off and lists it
// right after that review or batch when the review or batch is listed
// too (else where it started). A listed subject is matched by the id its
// sign-off has, in either form (api.SignOffSubjectOf); any other sign-off
// is asked, within progressWait, by subjectOf (its grid: the result of a
// completed one, the query of one still waiting).
func besideSubjects(ctx context.Context, rows []runRow, subjectOf func(context.Context, runRow) (string, error)) []runRow {
	listed := map[string]bool{}
	for _, r := range rows {
		if r.WorkflowType != api.SignOffName {
			listed[r.WorkflowID] = true
		}
	}
	ctx, cancel := context.WithTimeout(ctx, progressWait)
	defer cancel()
	var wg sync.WaitGroup
	for i := range rows {
		r := &rows[i]
		if r.WorkflowType != api.SignOffName {
			continue
		}
		if s, ok := api.SignOffSubjectOf(r.WorkflowID); ok && listed[s] {
			r.SignsOff = s
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if s, err := subjectOf(ctx, *r); err == nil {
				r.SignsOff = s
			}
		}()
	}
	wg.Wait()
	out := make([]runRow, 0, len(rows))
	for _, r := range rows {
		if r.WorkflowType == api.SignOffName && listed[r.SignsOff] {
			continue // listed after its subject
		}
		out = append(out, r)
		if r.WorkflowType == api.SignOffName {
			continue
		}
		for _, so := range rows {
			if so.WorkflowType == api.SignOffName && so.SignsOff == r.WorkflowID {
				out = append(out, so)
			}
		}
	}
	return out
}

// signOffSubject is the workflow id of what sign-off r signs off, from
// its grid: the result of a completed one, else its grid query (which
// needs a worker).
func signOffSubject(ctx context.Context, c client.Client, r runRow) (string, error) {
	var g struct {
		Subject struct {
			WorkflowID string `json:"workflow_id"`
		} `json:"subject"`
	}
	if r.ExecutionStatus == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED.String() {
		if err := c.GetWorkflow(ctx, r.WorkflowID, r.RunID).Get(ctx, &g); err != nil {
			return "", err
		}
		return g.Subject.WorkflowID, nil
	}
	v, err := c.QueryWorkflow(ctx, r.WorkflowID, r.RunID, api.SignOffGridQuery)
	if err != nil {
		return "", err
	}
	if err := v.Get(&g); err != nil {
		return "", err
	}
	return g.Subject.WorkflowID, nil
}

// displayStatus is the run's MemagentStatus, unless Temporal closed the run
// without the workflow's say (terminated, canceled, timed out), or the
// run predates the attribute.
func displayStatus(attr string, st enumspb.WorkflowExecutionStatus) string {
	switch st {
	case enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED, enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		return strings.ToLower(st.String())
	}
	if attr != "" {
		return attr
	}
	switch st {
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return api.StageDone
	case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
		return api.StageFailed
	}
	return strings.ToLower(st.String())
}

func keyword(sa map[string]*commonpb.Payload, name string) string {
	var s string
	if p, ok := sa[name]; ok {
		if err := converter.GetDefaultDataConverter().FromPayload(p, &s); err != nil {
			return ""
		}
	}
	return s
}

func integer(sa map[string]*commonpb.Payload, name string) *int64 {
	p, ok := sa[name]
	if !ok {
		return nil
	}
	var n int64
	if err := converter.GetDefaultDataConverter().FromPayload(p, &n); err != nil {
		return nil
	}
	return &n
}

func count(n *int64) string {
	if n == nil {
		return "?"
	}
	return fmt.Sprint(*n)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// runTypeName is a workflow type as --type names it.
func runTypeName(workflowType string) string {
	for name, t := range runTypes {
		if t == workflowType {
			return name
		}
	}
	return workflowType
}
