package activities

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/report"
	"github.com/memagent/memagent/internal/s3store"
)

// maxHTMLItems bounds the item rows of the HTML page; the CSV has them all.
const maxHTMLItems = 1000

// itemSpan locates one outcome's line in the report's spool file.
type itemSpan struct {
	off int64
	n   int32
}

// writeBatchReport reads the outcome parts (streaming, through a spool file
// on local disk, so that outcomes are not held in memory: what is held is
// 16 bytes an outcome, at most MaxBatchUnits of them), puts the items
// in manifest order and writes, under the report prefix: report.json
// (BatchReport: the overall aggregate and one per value of every label),
// results.jsonl and results.csv (one item a line), chart.svg (score against
// document length) and report.html (a page with all of it).
//
// It runs in stages: check the input (checkReportInput), spool the
// outcomes (spoolOutcomes), aggregate them in two passes over the spool
// (scanLabels, then reportAggregate with the item tables and the
// comparison fed alongside), render the chart, page and report.json
// (renderReport) and upload it all, report.json last (uploadReport).
func (a *Activities) writeBatchReport(ctx context.Context, in actwire.ReportInput) (*api.BatchReport, error) {
	samples, prefix, err := a.checkReportInput(ctx, in)
	if err != nil {
		return nil, err
	}
	// The comparison looks beside the prefix the batch claimed, before a
	// report kept there moves this one to runs/<run id>/.
	cmp, err := a.startComparison(ctx, in.CompareWith, in.CompareAuto, prefix)
	if err != nil {
		return nil, err
	}
	defer cmp.close()
	prefix, err = a.ownReportPrefix(ctx, prefix, in.RunID)
	if err != nil {
		return nil, err
	}
	spool, err := a.spoolOutcomes(ctx, in, samples)
	if err != nil {
		return nil, err
	}
	defer spool.close()

	rep := newBatchReport(in, prefix, samples)
	labelKeys, omitted, err := spool.scanLabels(ctx)
	if err != nil {
		return nil, err
	}
	rep.LabelsOmitted = omitted
	tables, err := newReportTables(samples, labelKeys)
	if err != nil {
		return nil, err
	}
	defer tables.close()
	agg := newReportAggregate(samples, labelKeys)
	if err := spool.each(ctx, func(r api.BatchItemResult, line []byte) error {
		if err := agg.add(r); err != nil {
			return err
		}
		if err := tables.add(r, line); err != nil {
			return err
		}
		if cmp != nil {
			return cmp.add(r)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := agg.finish(rep); err != nil {
		return nil, err
	}
	if err := tables.flush(); err != nil {
		return nil, err
	}

	var changes *os.File
	if cmp != nil {
		if changes, err = cmp.finish(prefix+api.ReportChangesName, rep.ReportURI); err != nil {
			return nil, fmt.Errorf("changes: %w", err)
		}
		defer os.Remove(changes.Name())
		defer changes.Close()
		sum := cmp.summary
		rep.Changes = &sum
	}
	out, err := renderReport(in.Name, rep, labelKeys, agg, cmp)
	if err != nil {
		return nil, err
	}
	if err := a.uploadReport(ctx, prefix, out.files(samples, changes, tables)); err != nil {
		return nil, err
	}
	a.logReport(ctx, rep)
	return rep, nil
}

// checkReportInput refuses a report input that is out of bounds or names a
// place the worker may not write (the report prefix) or read as this
// batch's work (an outcome part outside the prefix's work/). It returns the
// number of samples an item (at least 1) and the prefix, ending in "/".
func (a *Activities) checkReportInput(ctx context.Context, in actwire.ReportInput) (samples int, prefix string, err error) {
	if in.Items <= 0 {
		return 0, "", badInput(fmt.Errorf("items (%d) must be positive", in.Items))
	}
	if in.Samples < 0 || in.Samples > api.MaxSamples {
		return 0, "", badInput(fmt.Errorf("samples (%d) must be within [1, %d]", in.Samples, api.MaxSamples))
	}
	samples = max(in.Samples, 1)
	if in.Items > MaxBatchUnits/samples {
		return 0, "", badInput(fmt.Errorf("items (%d) × samples (%d) is over the limit of %d outcomes", in.Items, samples, MaxBatchUnits))
	}
	prefix = in.ReportPrefix
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if _, err := s3store.ParseURI(prefix + api.ReportJSONName); err != nil {
		return 0, "", badInput(fmt.Errorf("report prefix: %w", err))
	}
	if err := a.allowOutput(ctx, "report_prefix", prefix); err != nil {
		return 0, "", err
	}
	for _, p := range in.Parts {
		if !strings.HasPrefix(p, prefix+"work/") {
			return 0, "", forbidden("outcome part %s is not under the batch's work prefix (%swork/)", p, prefix)
		}
	}
	return samples, prefix, nil
}

// outcomeSpool holds a batch's outcomes on local disk, one line each, and
// where each is: sample k of item seq is spans[seq*samples+k]. Every span
// is set (spoolOutcomes checks it), so the spool reads back as the whole
// batch in manifest order.
type outcomeSpool struct {
	file    *os.File
	spans   []itemSpan
	samples int
}

// spoolOutcomes copies the outcome parts to a spool file, refusing an
// outcome outside the batch and a batch with an outcome missing
// (ErrBatchIncomplete). Of two outcomes of the same item, the later part's
// wins.
func (a *Activities) spoolOutcomes(ctx context.Context, in actwire.ReportInput, samples int) (*outcomeSpool, error) {
	f, err := os.CreateTemp("", "memagent-batch-*.jsonl")
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	s := &outcomeSpool{file: f, spans: make([]itemSpan, in.Items*samples), samples: samples}
	if err := s.fill(ctx, a, in); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// fill writes the outcomes of in's parts to the spool and checks that
// every outcome of the batch is there.
func (s *outcomeSpool) fill(ctx context.Context, a *Activities, in actwire.ReportInput) error {
	var off int64
	w := bufio.NewWriterSize(s.file, 256<<10)
	err := a.readParts(ctx, in.Parts, func(r api.BatchItemResult, line []byte) error {
		if r.Seq < 0 || r.Seq >= in.Items {
			return temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("outcome of item %d is outside the manifest's %d items", r.Seq, in.Items), ErrBatchIncomplete, nil)
		}
		if r.Sample < 0 || r.Sample >= s.samples {
			return temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("outcome of item %d is of sample %d, outside the batch's %d samples", r.Seq, r.Sample, s.samples), ErrBatchIncomplete, nil)
		}
		// A later part's outcome of the same item wins (it cannot happen
		// in a batch that was not reset, but a report must not count twice).
		s.spans[r.Seq*s.samples+r.Sample] = itemSpan{off: off + 1, n: int32(len(line))}
		n, err := w.Write(line)
		off += int64(n)
		return err
	})
	if err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	for u, sp := range s.spans {
		if sp.off == 0 {
			what := fmt.Sprintf("item %d of %d", u/s.samples, in.Items)
			if s.samples > 1 {
				what = fmt.Sprintf("sample %d of item %d of %d", u%s.samples, u/s.samples, in.Items)
			}
			return temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("%s has no outcome in the batch's %d part(s)", what, len(in.Parts)), ErrBatchIncomplete, nil)
		}
	}
	return nil
}

// each calls f with every outcome, in manifest order.
func (s *outcomeSpool) each(ctx context.Context, f func(r api.BatchItemResult, line []byte) error) error {
	return eachSpooled(ctx, s.file, s.spans, f)
}

// close removes the spool file.
func (s *outcomeSpool) close() {
	s.file.Close()
	os.Remove(s.file.Name())
}

// scanLabels is the first pass over the outcomes: the label keys the
// report breaks down by, sorted, and those it omits (sorted) because they
// have more than report.MaxBatchLabelValues values.
func (s *outcomeSpool) scanLabels(ctx context.Context) (keys, omittedKeys []string, err error) {
	labelValues := make(map[string]map[string]bool)
	omitted := make(map[string]bool)
	if err := s.each(ctx, func(r api.BatchItemResult, _ []byte) error {
		for k, v := range r.Labels {
			if omitted[k] {
				continue
			}
			if labelValues[k] == nil {
				labelValues[k] = make(map[string]bool)
			}
			labelValues[k][v] = true
			if len(labelValues[k]) > report.MaxBatchLabelValues {
				omitted[k] = true
				delete(labelValues, k)
			}
		}
		return nil
	}); err != nil {
		return nil, nil, err
	}
	for k := range omitted {
		omittedKeys = append(omittedKeys, k)
	}
	sort.Strings(omittedKeys)
	return report.SortedKeys(labelValues), omittedKeys, nil
}

// newBatchReport is the report's header: what ran, when, and where its
// files go. The aggregates are filled in later.
func newBatchReport(in actwire.ReportInput, prefix string, samples int) *api.BatchReport {
	rep := &api.BatchReport{
		RunID: in.RunID,
		Name:  in.Name, WorkflowID: in.WorkflowID, Manifest: in.Manifest, Model: in.Model,
		Options: in.Options.WithDefaults(), StartedAt: in.StartedAt, FinishedAt: time.Now().UTC(),
		ResultsURI: prefix + api.ReportResultsName, CSVURI: prefix + api.ReportCSVName,
		SVGURI: prefix + api.ReportSVGName, HTMLURI: prefix + api.ReportHTMLName, ReportURI: prefix + api.ReportJSONName,
	}
	rep.Options.Model = in.Model
	if in.Validation != nil {
		rep.Validation = &api.ReportValidation{State: api.ReportProvisional, Gate: in.Validation.WithDefaults(), Validation: api.ValidationWorkflowID(in.WorkflowID)}
	}
	if samples > 1 {
		rep.Samples, rep.GroupsURI = samples, prefix+api.ReportGroupsName
	}
	return rep
}

// reportTables writes results.jsonl (each outcome's line as it came) and
// results.csv (a row an outcome, a column per label key) to local files,
// one outcome at a time in manifest order.
type reportTables struct {
	samples      int
	labelKeys    []string
	results, csv *os.File
	resultsW     *bufio.Writer
	csvW         *csv.Writer
}

// newReportTables creates the two files and writes the CSV's header.
func newReportTables(samples int, labelKeys []string) (*reportTables, error) {
	t := &reportTables{samples: samples, labelKeys: labelKeys}
	var err error
	if t.results, err = os.CreateTemp("", "memagent-results-*.jsonl"); err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	if t.csv, err = os.CreateTemp("", "memagent-results-*.csv"); err != nil {
		t.close()
		return nil, fmt.Errorf("results: %w", err)
	}
	t.resultsW = bufio.NewWriterSize(t.results, 256<<10)
	t.csvW = csv.NewWriter(bufio.NewWriterSize(t.csv, 256<<10))
	header := []string{"seq", "id", "status", "document", "question", "gold_answers", "answer", "answer_found",
		"exact_match", "substring_match", "f1", "recall", "chunks", "tokens", "calls", "prompt_tokens", "completion_tokens",
		"error_type", "error", "workflow_id", "result_uri", "answer_pages", "grounding", "grounding_pages", "grounding_quote"}
	if samples > 1 {
		header = slices.Insert(header, 1, "sample")
	}
	for _, k := range labelKeys {
		header = append(header, "label:"+k)
	}
	header = append(header, report.BatchCSVExtraHeader...)
	if err := t.csvW.Write(header); err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

// add writes one outcome: its line to results.jsonl, its row to the CSV.
func (t *reportTables) add(r api.BatchItemResult, line []byte) error {
	t.resultsW.Write(line)
	t.resultsW.WriteByte('\n')
	row := report.BatchCSVRow(r)
	if t.samples > 1 {
		row = slices.Insert(row, 1, strconv.Itoa(r.Sample))
	}
	for _, k := range t.labelKeys {
		row = append(row, report.CSVText(r.Labels[k]))
	}
	row = append(row, report.BatchCSVExtra(r)...)
	return t.csvW.Write(row)
}

// flush writes out what the two files buffer.
func (t *reportTables) flush() error {
	if err := t.resultsW.Flush(); err != nil {
		return err
	}
	t.csvW.Flush()
	return t.csvW.Error()
}

// close removes the two files.
func (t *reportTables) close() {
	for _, f := range []*os.File{t.csv, t.results} {
		if f != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}
}

// reportAggregate is the second pass over the outcomes, in manifest order:
// the overall aggregate, one per value of every label key, one per item
// of samples (a group, its line kept for groups.jsonl), and what the page
// shows: the chart's points, the failures and the item rows (the first
// maxHTMLItems of each).
type reportAggregate struct {
	samples     int
	labelKeys   []string
	all         report.BatchAggregator
	by          map[string]map[string]*report.BatchAggregator
	groups      report.BatchGroupAggregator
	group       *report.BatchGroup
	groupLines  bytes.Buffer
	groupEnc    *json.Encoder
	points      []report.BatchChartPoint
	failures    [][]string
	rows        [][]string
	failedTotal int
}

func newReportAggregate(samples int, labelKeys []string) *reportAggregate {
	g := &reportAggregate{samples: samples, labelKeys: labelKeys,
		by: make(map[string]map[string]*report.BatchAggregator), groups: report.NewBatchGroupAggregator(samples)}
	g.groupEnc = json.NewEncoder(&g.groupLines)
	return g
}

// add counts one outcome.
func (g *reportAggregate) add(r api.BatchItemResult) error {
	g.all.Add(r)
	if g.samples > 1 {
		if err := g.addSample(r); err != nil {
			return err
		}
	}
	g.addLabels(r)
	if r.Status != api.ItemFailed && r.Scores != nil && len(r.GoldAnswers) > 0 {
		g.points = append(g.points, report.BatchChartPoint{Tokens: r.Tokens, F1: r.Scores.F1, Substring: r.Scores.SubstringMatch, Recall: r.Scores.Recall})
	}
	if r.Status == api.ItemFailed {
		g.failedTotal++
		if len(g.failures) < maxHTMLItems {
			g.failures = append(g.failures, []string{strconv.Itoa(r.Seq), r.ID, report.BatchDocument(r), r.ErrorType, r.Error})
		}
	}
	if len(g.rows) < maxHTMLItems {
		row := report.BatchHTMLItemRow(r)
		if g.samples > 1 {
			row[0] = fmt.Sprintf("%d #%d", r.Seq, r.Sample)
		}
		g.rows = append(g.rows, row)
	}
	return nil
}

// addSample adds a sample to its item's group; the first sample of the
// next item closes the group before.
func (g *reportAggregate) addSample(r api.BatchItemResult) error {
	if g.group != nil && g.group.Seq() != r.Seq {
		if err := g.closeGroup(); err != nil {
			return err
		}
	}
	if g.group == nil {
		g.group = report.NewBatchGroup(r.Seq, r.ID)
	}
	g.group.Add(r)
	return nil
}

// closeGroup counts the open group and keeps its line.
func (g *reportAggregate) closeGroup() error {
	g.groups.Add(g.group)
	err := g.groupEnc.Encode(g.group.Result())
	g.group = nil
	return err
}

// addLabels adds an outcome to the aggregate of each of its label values.
func (g *reportAggregate) addLabels(r api.BatchItemResult) {
	for _, k := range g.labelKeys {
		v, ok := r.Labels[k]
		if !ok {
			continue
		}
		if g.by[k] == nil {
			g.by[k] = make(map[string]*report.BatchAggregator)
		}
		if g.by[k][v] == nil {
			g.by[k][v] = &report.BatchAggregator{}
		}
		g.by[k][v].Add(r)
	}
}

// finish closes the last group and puts the aggregates in rep.
func (g *reportAggregate) finish(rep *api.BatchReport) error {
	if g.group != nil {
		if err := g.closeGroup(); err != nil {
			return err
		}
	}
	rep.Overall = g.all.Result()
	if g.samples > 1 {
		gr := g.groups.Result()
		rep.Groups = &gr
	}
	if len(g.by) > 0 {
		rep.ByLabel = report.FinishBatchLabels(g.by)
	}
	return nil
}

// renderedReport is what renderReport makes of a finished report: the
// chart, the page and report.json, plus groups.jsonl's lines.
type renderedReport struct {
	chart      string
	page       bytes.Buffer
	json       []byte
	groupLines []byte
}

// renderReport renders the chart of score against document length, the
// HTML page (with the comparison's section and link when there is one)
// and report.json.
func renderReport(name string, rep *api.BatchReport, labelKeys []string, agg *reportAggregate, cmp *comparison) (*renderedReport, error) {
	out := &renderedReport{groupLines: agg.groupLines.Bytes()}
	out.chart = report.BatchChart(fmt.Sprintf("%s: score against document length", name), agg.points)
	bp := report.NewBatchPage(rep, labelKeys, out.chart, agg.failures, agg.failedTotal, agg.rows)
	if cmp != nil {
		bp.Changes = cmp.section.Section(cmp.summary)
		bp.Links = append(bp.Links, report.BatchLink{Name: api.ReportChangesName, Href: api.ReportChangesName})
	}
	if err := report.WriteBatchHTML(&out.page, bp); err != nil {
		return nil, fmt.Errorf("render report page: %w", err)
	}
	var err error
	if out.json, err = json.MarshalIndent(rep, "", "  "); err != nil {
		return nil, err
	}
	return out, nil
}

// reportFile is one file of a report: a local file or bytes in memory.
type reportFile struct {
	name, contentType string
	file              *os.File
	data              []byte
}

// files lists the report's files in upload order: groups.jsonl and
// changes.json when there are any, the tables, the chart, the page, and
// report.json last.
func (out *renderedReport) files(samples int, changes *os.File, tables *reportTables) []reportFile {
	var files []reportFile
	if samples > 1 {
		files = append(files, reportFile{api.ReportGroupsName, "application/x-ndjson", nil, out.groupLines})
	}
	if changes != nil {
		files = append(files, reportFile{api.ReportChangesName, "application/json", changes, nil})
	}
	return append(files, []reportFile{
		{api.ReportResultsName, "application/x-ndjson", tables.results, nil},
		{api.ReportCSVName, "text/csv; charset=utf-8", tables.csv, nil},
		{api.ReportSVGName, "image/svg+xml", nil, []byte(out.chart)},
		{api.ReportHTMLName, "text/html; charset=utf-8", nil, out.page.Bytes()},
		// report.json last: its presence means the report is complete.
		{api.ReportJSONName, "application/json", nil, out.json},
	}...)
}

// uploadReport writes files under prefix in order, heartbeating after
// each: the last one written (report.json) marks the report complete.
func (a *Activities) uploadReport(ctx context.Context, prefix string, files []reportFile) error {
	for _, f := range files {
		loc, _ := s3store.ParseURI(prefix + f.name)
		if f.file != nil {
			if err := a.putFile(ctx, loc, f.file, f.contentType); err != nil {
				return err
			}
		} else if err := a.Store.Put(ctx, loc, f.data, f.contentType); err != nil {
			return fmt.Errorf("write %s: %w", loc, err)
		}
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx)
		}
	}
	return nil
}

// logReport logs a written report's counts and its comparison's.
func (a *Activities) logReport(ctx context.Context, rep *api.BatchReport) {
	a.logger().InfoContext(ctx, "batch report written", "report", rep.ReportURI, "items", rep.Overall.Items,
		"answered", rep.Overall.Answered, "reused", rep.Overall.Reused, "failed", rep.Overall.Failed)
	if c := rep.Changes; c != nil {
		a.logger().InfoContext(ctx, "batch compared with the previous report", "previous", c.PreviousReport,
			"new", c.New, "changed", c.Changed, "unchanged", c.Unchanged, "removed", c.Removed, "failed", c.Failed)
	}
}

// putFile uploads a spooled file from its start.
func (a *Activities) putFile(ctx context.Context, loc s3store.Location, f *os.File, contentType string) error {
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if err := a.Store.PutReader(ctx, loc, f, size, contentType); err != nil {
		return fmt.Errorf("write %s: %w", loc, err)
	}
	return nil
}

// eachSpooled calls f with every item of the spool, in seq order.
func eachSpooled(ctx context.Context, spool *os.File, spans []itemSpan, f func(r api.BatchItemResult, line []byte) error) error {
	var buf []byte
	for seq, s := range spans {
		if seq%5000 == 4999 && activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx)
		}
		if cap(buf) < int(s.n) {
			buf = make([]byte, s.n)
		}
		buf = buf[:s.n]
		if _, err := spool.ReadAt(buf, s.off-1); err != nil {
			return fmt.Errorf("spool: item %d: %w", seq, err)
		}
		var r api.BatchItemResult
		if err := json.Unmarshal(buf, &r); err != nil {
			return fmt.Errorf("spool: item %d: %w", seq, err)
		}
		if err := f(r, buf); err != nil {
			return err
		}
	}
	return nil
}

// ownReportPrefix returns where a run's report goes: prefix, unless a
// complete report of another run is there (a reset, or a re-run of the same
// workflow id), which is kept: then prefix + runs/<runID>/.
func (a *Activities) ownReportPrefix(ctx context.Context, prefix, runID string) (string, error) {
	if runID == "" {
		return prefix, nil
	}
	loc, _ := s3store.ParseURI(prefix + api.ReportJSONName)
	other, err := a.heldByOtherRun(ctx, loc, runID)
	if err != nil || !other {
		return prefix, err
	}
	return prefix + "runs/" + runID + "/", nil
}
