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
func (a *Activities) writeBatchReport(ctx context.Context, in actwire.ReportInput) (*api.BatchReport, error) {
	if in.Items <= 0 {
		return nil, badInput(fmt.Errorf("items (%d) must be positive", in.Items))
	}
	if in.Samples < 0 || in.Samples > api.MaxSamples {
		return nil, badInput(fmt.Errorf("samples (%d) must be within [1, %d]", in.Samples, api.MaxSamples))
	}
	samples := max(in.Samples, 1)
	if in.Items > MaxBatchUnits/samples {
		return nil, badInput(fmt.Errorf("items (%d) × samples (%d) is over the limit of %d outcomes", in.Items, samples, MaxBatchUnits))
	}
	prefix := in.ReportPrefix
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if _, err := s3store.ParseURI(prefix + api.ReportJSONName); err != nil {
		return nil, badInput(fmt.Errorf("report prefix: %w", err))
	}
	if err := a.allowOutput(ctx, "report_prefix", prefix); err != nil {
		return nil, err
	}
	for _, p := range in.Parts {
		if !strings.HasPrefix(p, prefix+"work/") {
			return nil, forbidden("outcome part %s is not under the batch's work prefix (%swork/)", p, prefix)
		}
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
	spool, err := os.CreateTemp("", "memagent-batch-*.jsonl")
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	// One span per outcome: sample k of item seq is at seq*samples+k.
	spans := make([]itemSpan, in.Items*samples)
	var off int64
	w := bufio.NewWriterSize(spool, 256<<10)
	err = a.readParts(ctx, in.Parts, func(r api.BatchItemResult, line []byte) error {
		if r.Seq < 0 || r.Seq >= in.Items {
			return temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("outcome of item %d is outside the manifest's %d items", r.Seq, in.Items), ErrBatchIncomplete, nil)
		}
		if r.Sample < 0 || r.Sample >= samples {
			return temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("outcome of item %d is of sample %d, outside the batch's %d samples", r.Seq, r.Sample, samples), ErrBatchIncomplete, nil)
		}
		// A later part's outcome of the same item wins (it cannot happen
		// in a batch that was not reset, but a report must not count twice).
		spans[r.Seq*samples+r.Sample] = itemSpan{off: off + 1, n: int32(len(line))}
		n, err := w.Write(line)
		off += int64(n)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := w.Flush(); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	for u, s := range spans {
		if s.off == 0 {
			what := fmt.Sprintf("item %d of %d", u/samples, in.Items)
			if samples > 1 {
				what = fmt.Sprintf("sample %d of item %d of %d", u%samples, u/samples, in.Items)
			}
			return nil, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("%s has no outcome in the batch's %d part(s)", what, len(in.Parts)), ErrBatchIncomplete, nil)
		}
	}

	rep := &api.BatchReport{
		RunID: in.RunID,
		Name:  in.Name, WorkflowID: in.WorkflowID, Manifest: in.Manifest, Model: in.Model,
		Options: in.Options.WithDefaults(), StartedAt: in.StartedAt, FinishedAt: time.Now().UTC(),
		ResultsURI: prefix + api.ReportResultsName, CSVURI: prefix + api.ReportCSVName,
		SVGURI: prefix + api.ReportSVGName, HTMLURI: prefix + api.ReportHTMLName, ReportURI: prefix + api.ReportJSONName,
	}
	rep.Options.Model = in.Model
	if samples > 1 {
		rep.Samples, rep.GroupsURI = samples, prefix+api.ReportGroupsName
	}

	// First pass over the items in order: label keys and values.
	labelValues := make(map[string]map[string]bool)
	omitted := make(map[string]bool)
	if err := eachSpooled(ctx, spool, spans, func(r api.BatchItemResult, _ []byte) error {
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
		return nil, err
	}
	labelKeys := report.SortedKeys(labelValues)
	for k := range omitted {
		rep.LabelsOmitted = append(rep.LabelsOmitted, k)
	}
	sort.Strings(rep.LabelsOmitted)

	// Second pass: aggregates, results.jsonl, results.csv, the chart's
	// points and the page's rows.
	results, err := os.CreateTemp("", "memagent-results-*.jsonl")
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	defer os.Remove(results.Name())
	defer results.Close()
	csvFile, err := os.CreateTemp("", "memagent-results-*.csv")
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	defer os.Remove(csvFile.Name())
	defer csvFile.Close()
	rw := bufio.NewWriterSize(results, 256<<10)
	cw := csv.NewWriter(bufio.NewWriterSize(csvFile, 256<<10))
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
	if err := cw.Write(header); err != nil {
		return nil, err
	}
	var all report.BatchAggregator
	groups := report.NewBatchGroupAggregator(samples)
	var groupLines bytes.Buffer
	groupEnc := json.NewEncoder(&groupLines)
	var group *report.BatchGroup
	by := make(map[string]map[string]*report.BatchAggregator)
	var points []report.BatchChartPoint
	var failures, rows [][]string
	failedTotal := 0
	if err := eachSpooled(ctx, spool, spans, func(r api.BatchItemResult, line []byte) error {
		all.Add(r)
		if samples > 1 {
			if group != nil && group.Seq() != r.Seq {
				groups.Add(group)
				if err := groupEnc.Encode(group.Result()); err != nil {
					return err
				}
				group = nil
			}
			if group == nil {
				group = report.NewBatchGroup(r.Seq, r.ID)
			}
			group.Add(r)
		}
		for _, k := range labelKeys {
			v, ok := r.Labels[k]
			if !ok {
				continue
			}
			if by[k] == nil {
				by[k] = make(map[string]*report.BatchAggregator)
			}
			if by[k][v] == nil {
				by[k][v] = &report.BatchAggregator{}
			}
			by[k][v].Add(r)
		}
		rw.Write(line)
		rw.WriteByte('\n')
		row := report.BatchCSVRow(r)
		if samples > 1 {
			row = slices.Insert(row, 1, strconv.Itoa(r.Sample))
		}
		for _, k := range labelKeys {
			row = append(row, report.CSVText(r.Labels[k]))
		}
		row = append(row, report.BatchCSVExtra(r)...)
		if err := cw.Write(row); err != nil {
			return err
		}
		if r.Status != api.ItemFailed && r.Scores != nil && len(r.GoldAnswers) > 0 {
			points = append(points, report.BatchChartPoint{Tokens: r.Tokens, F1: r.Scores.F1, Substring: r.Scores.SubstringMatch, Recall: r.Scores.Recall})
		}
		if r.Status == api.ItemFailed {
			failedTotal++
			if len(failures) < maxHTMLItems {
				failures = append(failures, []string{strconv.Itoa(r.Seq), r.ID, report.BatchDocument(r), r.ErrorType, r.Error})
			}
		}
		if cmp != nil {
			if err := cmp.add(r); err != nil {
				return err
			}
		}
		if len(rows) < maxHTMLItems {
			row := report.BatchHTMLItemRow(r)
			if samples > 1 {
				row[0] = fmt.Sprintf("%d #%d", r.Seq, r.Sample)
			}
			rows = append(rows, row)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if group != nil {
		groups.Add(group)
		if err := groupEnc.Encode(group.Result()); err != nil {
			return nil, err
		}
	}
	if err := rw.Flush(); err != nil {
		return nil, err
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return nil, err
	}
	rep.Overall = all.Result()
	if samples > 1 {
		g := groups.Result()
		rep.Groups = &g
	}
	if len(by) > 0 {
		rep.ByLabel = report.FinishBatchLabels(by)
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

	chart := report.BatchChart(fmt.Sprintf("%s: score against document length", in.Name), points)
	var page bytes.Buffer
	bp := report.NewBatchPage(rep, labelKeys, chart, failures, failedTotal, rows)
	if cmp != nil {
		bp.Changes = cmp.section.Section(cmp.summary)
		bp.Links = append(bp.Links, report.BatchLink{Name: api.ReportChangesName, Href: api.ReportChangesName})
	}
	if err := report.WriteBatchHTML(&page, bp); err != nil {
		return nil, fmt.Errorf("render report page: %w", err)
	}
	repJSON, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return nil, err
	}
	type reportFile struct {
		name, contentType string
		file              *os.File
		data              []byte
	}
	var groupFiles []reportFile
	if samples > 1 {
		groupFiles = append(groupFiles, reportFile{api.ReportGroupsName, "application/x-ndjson", nil, groupLines.Bytes()})
	}
	if changes != nil {
		groupFiles = append(groupFiles, reportFile{api.ReportChangesName, "application/json", changes, nil})
	}
	for _, f := range append(groupFiles, []reportFile{
		{api.ReportResultsName, "application/x-ndjson", results, nil},
		{api.ReportCSVName, "text/csv; charset=utf-8", csvFile, nil},
		{api.ReportSVGName, "image/svg+xml", nil, []byte(chart)},
		{api.ReportHTMLName, "text/html; charset=utf-8", nil, page.Bytes()},
		// report.json last: its presence means the report is complete.
		{api.ReportJSONName, "application/json", nil, repJSON},
	}...) {
		loc, _ := s3store.ParseURI(prefix + f.name)
		if f.file != nil {
			if err := a.putFile(ctx, loc, f.file, f.contentType); err != nil {
				return nil, err
			}
		} else if err := a.Store.Put(ctx, loc, f.data, f.contentType); err != nil {
			return nil, fmt.Errorf("write %s: %w", loc, err)
		}
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx)
		}
	}
	a.logger().InfoContext(ctx, "batch report written", "report", rep.ReportURI, "items", rep.Overall.Items,
		"answered", rep.Overall.Answered, "reused", rep.Overall.Reused, "failed", rep.Overall.Failed)
	if c := rep.Changes; c != nil {
		a.logger().InfoContext(ctx, "batch compared with the previous report", "previous", c.PreviousReport,
			"new", c.New, "changed", c.Changed, "unchanged", c.Unchanged, "removed", c.Removed, "failed", c.Failed)
	}
	return rep, nil
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
