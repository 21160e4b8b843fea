package activities

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/report"
	"github.com/memagent/memagent/internal/s3store"
)

// folderLister is a store that lists the folders right under a prefix;
// s3store.Store is one. Finding a batch's previous dated report needs it.
type folderLister interface {
	ListFolders(ctx context.Context, bucket, prefix string) ([]string, error)
}

// errNoLister is a store that cannot list: "previous" cannot be found.
var errNoLister = errors.New("the worker's object store cannot list prefixes, which finding the previous dated report needs: pass compare_with as the s3:// prefix of the report to compare with")

// compareBase is where a comparison looks: the prefix of the report named
// by compareWith, or, for api.CompareWithPrevious, the folder that holds
// the dated report folders (the parent of reportPrefix). Both end in '/'.
func compareBase(compareWith, reportPrefix string) (string, error) {
	if compareWith != api.CompareWithPrevious {
		p := compareWith
		if !strings.HasSuffix(p, "/") {
			p += "/"
		}
		if _, err := s3store.ParseURI(p + api.ReportJSONName); err != nil {
			return "", fmt.Errorf("compare_with: %w", err)
		}
		return p, nil
	}
	dir := strings.TrimSuffix(reportPrefix, "/")
	i := strings.LastIndexByte(dir, '/')
	if i < 0 || !strings.Contains(dir[:i], "s3://") || len(dir[:i]) <= len("s3://") {
		return "", fmt.Errorf("report prefix %s has no parent folder to hold earlier dated reports", reportPrefix)
	}
	base := dir[:i+1]
	if _, err := s3store.ParseURI(base + api.ReportJSONName); err != nil {
		return "", fmt.Errorf("compare_with previous: %w", err)
	}
	return base, nil
}

// allowCompare checks, before a batch runs any item, that the report it
// will compare with is one it may read (allowInput: the read prefixes,
// never a run's output area nor another workflow's claimed prefix, but
// for a scheduled run its schedule's earlier reports), as a manifest must
// be.
func (a *Activities) allowCompare(ctx context.Context, compareWith, reportPrefix string, r reader) error {
	if compareWith == "" {
		return nil
	}
	base, err := compareBase(compareWith, reportPrefix)
	if err != nil {
		return badInput(err)
	}
	if err := a.allowInput(ctx, "compare_with", base+api.ReportJSONName, r); err != nil {
		return err
	}
	if compareWith == api.CompareWithPrevious {
		if _, ok := a.Store.(folderLister); !ok {
			return badInput(errNoLister)
		}
	}
	return nil
}

// findPrevious returns the prefix of the report to compare with, "" when
// there is none (no report.json there yet, or no earlier dated folder).
// For api.CompareWithPrevious it is the latest dated folder under the
// parent of reportPrefix whose time (the folder's name up to its first 18
// characters, api.DatedReportLayout) is earlier than this report's and
// that holds a complete report (report.json is written last).
func (a *Activities) findPrevious(ctx context.Context, compareWith, reportPrefix string) (string, error) {
	base, err := compareBase(compareWith, reportPrefix)
	if err != nil {
		return "", badInput(err)
	}
	// The batch's own report prefix says whether a schedule started it:
	// only that schedule's runs claim inside its prefix.
	schedule, err := a.scheduleOfReport(ctx, reportPrefix)
	if err != nil {
		return "", fmt.Errorf("check the owners of %s: %w", reportPrefix, err)
	}
	r := reader{ScheduleID: schedule}
	if err := a.allowInput(ctx, "compare_with", base+api.ReportJSONName, r); err != nil {
		return "", err
	}
	var candidates []string
	if compareWith != api.CompareWithPrevious {
		candidates = []string{base}
	} else {
		lister, ok := a.Store.(folderLister)
		if !ok {
			return "", badInput(errNoLister)
		}
		own, ok := datedFolder(strings.TrimPrefix(reportPrefix, base))
		if !ok {
			return "", badInput(fmt.Errorf("report prefix %s is not a dated folder (%s) under %s", reportPrefix, api.DatedReportLayout, base))
		}
		loc, _ := s3store.ParseURI(base + api.ReportJSONName)
		dir := strings.TrimSuffix(loc.Key, api.ReportJSONName)
		folders, err := lister.ListFolders(ctx, loc.Bucket, dir)
		if err != nil {
			return "", fmt.Errorf("list earlier reports under %s: %w", base, err)
		}
		for _, f := range folders {
			if t, ok := datedFolder(f); ok && t < own {
				candidates = append(candidates, base+f)
			}
		}
		// Latest first; a folder named after its run (a dated prefix
		// another workflow held) sorts after the plain one of the same
		// second, as it came later.
		slices.Sort(candidates)
		slices.Reverse(candidates)
	}
	for _, p := range candidates {
		if compareWith == api.CompareWithPrevious {
			if err := a.allowInput(ctx, "compare_with", p+api.ReportJSONName, r); err != nil {
				// Another workflow's report (a batch that was not this
				// schedule's run): not this batch's to read.
				a.logger().InfoContext(ctx, "earlier report skipped: not this batch's to read", "report", p)
				continue
			}
		}
		loc, _ := s3store.ParseURI(p + api.ReportJSONName)
		_, err := a.Store.Head(ctx, loc)
		if errors.Is(err, s3store.ErrNotFound) {
			continue // a batch that never finished its report
		}
		if err != nil {
			return "", fmt.Errorf("earlier report %s: %w", loc, err)
		}
		return p, nil
	}
	return "", nil
}

// datedFolder returns the time part of a dated report folder's name
// ("2026-01-02T020000Z/" or "2026-01-02T020000Z-<run>/"), and whether it
// is one.
func datedFolder(name string) (string, bool) {
	name = strings.TrimSuffix(name, "/")
	n := len(api.DatedReportLayout)
	if len(name) < n || strings.Contains(name, "/") || (len(name) > n && name[n] != '-') {
		return "", false
	}
	if _, err := time.Parse(api.DatedReportLayout, name[:n]); err != nil {
		return "", false
	}
	return name[:n], true
}

// previousItems is the previous report's items, spooled to local disk
// and found by report.ChangeKey.
type previousItems struct {
	spool *os.File
	spans map[string]itemSpan
	// order is the keys in the previous report's order, for the removed.
	order []string
	seen  map[string]bool
}

// loadPrevious reads the report under prefix: its report.json (when it
// started) and its results.jsonl, spooled.
func (a *Activities) loadPrevious(ctx context.Context, prefix string) (*api.BatchReport, *previousItems, error) {
	loc, _ := s3store.ParseURI(prefix + api.ReportJSONName)
	data, err := a.Store.ReadAll(ctx, loc)
	if err != nil {
		return nil, nil, storeError(err, "earlier report "+loc.String())
	}
	var rep api.BatchReport
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, nil, badInput(fmt.Errorf("earlier report %s: %w", loc, err))
	}
	spool, err := os.CreateTemp("", "memagent-previous-*.jsonl")
	if err != nil {
		return nil, nil, fmt.Errorf("spool: %w", err)
	}
	prev := &previousItems{spool: spool, spans: map[string]itemSpan{}, seen: map[string]bool{}}
	w := bufio.NewWriterSize(spool, 256<<10)
	var off int64
	// results.jsonl beside report.json, never where report.json points:
	// only what is under the checked prefix is read.
	err = a.readParts(ctx, []string{prefix + api.ReportResultsName}, func(r api.BatchItemResult, line []byte) error {
		k := report.ChangeKey(r)
		if _, dup := prev.spans[k]; !dup {
			prev.order = append(prev.order, k)
		}
		prev.spans[k] = itemSpan{off: off + 1, n: int32(len(line))}
		n, err := w.Write(line)
		off += int64(n)
		return err
	})
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		prev.close()
		return nil, nil, err
	}
	return &rep, prev, nil
}

// take returns the previous item of the same key, once, or nil.
func (p *previousItems) take(key string) (*api.BatchItemResult, error) {
	s, ok := p.spans[key]
	if !ok || p.seen[key] {
		return nil, nil
	}
	p.seen[key] = true
	return p.read(s)
}

func (p *previousItems) read(s itemSpan) (*api.BatchItemResult, error) {
	buf := make([]byte, s.n)
	if _, err := p.spool.ReadAt(buf, s.off-1); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	var r api.BatchItemResult
	if err := json.Unmarshal(buf, &r); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	return &r, nil
}

// removed calls f with each previous item no take asked for, in the
// previous report's order.
func (p *previousItems) removed(f func(r *api.BatchItemResult) error) error {
	for _, k := range p.order {
		if p.seen[k] {
			continue
		}
		r, err := p.read(p.spans[k])
		if err != nil {
			return err
		}
		if err := f(r); err != nil {
			return err
		}
	}
	return nil
}

func (p *previousItems) close() {
	if p == nil || p.spool == nil {
		return
	}
	p.spool.Close()
	os.Remove(p.spool.Name())
}

// comparison is a report's comparison with the previous one while the
// report is written: the summary, the page's section and changes.json's
// item lines, spooled.
type comparison struct {
	prev    *previousItems
	summary api.ChangeSummary
	section *report.ChangesSection
	lines   *os.File
	w       *bufio.Writer
}

// startComparison finds and loads the report to compare with; nil when
// the batch compares with none. A batch a Schedule started compares only
// when it may: a previous report it may not read or find is no
// comparison (logged), where a caller's explicit compare_with fails.
func (a *Activities) startComparison(ctx context.Context, compareWith string, auto bool, reportPrefix string) (*comparison, error) {
	if compareWith == "" {
		return nil, nil
	}
	prevPrefix, err := a.findPrevious(ctx, compareWith, reportPrefix)
	var appErr *temporal.ApplicationError
	if err != nil && auto && errors.As(err, &appErr) && appErr.NonRetryable() {
		a.logger().WarnContext(ctx, "scheduled batch does not compare with its previous report", "err", err)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c := &comparison{section: report.NewChangesSection()}
	if prevPrefix != "" {
		rep, prev, err := a.loadPrevious(ctx, prevPrefix)
		if err != nil {
			return nil, err
		}
		c.prev = prev
		c.summary.PreviousReport, c.summary.Since = prevPrefix+api.ReportJSONName, rep.StartedAt
	}
	if c.lines, err = os.CreateTemp("", "memagent-changes-*.json"); err != nil {
		c.close()
		return nil, fmt.Errorf("spool: %w", err)
	}
	c.w = bufio.NewWriterSize(c.lines, 256<<10)
	return c, nil
}

// add compares one item of this report.
func (c *comparison) add(r api.BatchItemResult) error {
	var old *api.BatchItemResult
	if c.prev != nil {
		var err error
		if old, err = c.prev.take(report.ChangeKey(r)); err != nil {
			return err
		}
	}
	return c.write(report.CompareItem(old, &r))
}

func (c *comparison) write(ch api.ItemChange) error {
	report.CountChange(&c.summary, ch)
	c.section.Add(ch)
	line, err := json.Marshal(ch)
	if err != nil {
		return err
	}
	if c.summary.New+c.summary.Changed+c.summary.Unchanged+c.summary.Removed+c.summary.Failed > 1 {
		c.w.WriteByte(',')
	}
	c.w.WriteByte('\n')
	_, err = c.w.Write(line)
	return err
}

// finish lists the removed items and writes changes.json to a local file
// whose summary says it is at changesURI, for the report to upload.
func (c *comparison) finish(changesURI, reportURI string) (*os.File, error) {
	if c.prev != nil {
		if err := c.prev.removed(func(r *api.BatchItemResult) error { return c.write(report.CompareItem(r, nil)) }); err != nil {
			return nil, err
		}
	}
	if err := c.w.Flush(); err != nil {
		return nil, err
	}
	c.summary.ChangesURI = changesURI
	enc, err := json.Marshal(api.ChangesReport{ChangeSummary: c.summary, Report: reportURI, Items: []api.ItemChange{}})
	if err != nil {
		return nil, err
	}
	head, ok := strings.CutSuffix(string(enc), "]}")
	if !ok {
		return nil, errors.New("changes.json: unexpected encoding of its head")
	}
	f, err := os.CreateTemp("", "memagent-changes-*.json")
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	w := bufio.NewWriterSize(f, 256<<10)
	w.WriteString(head)
	if _, err := c.lines.Seek(0, 0); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	if _, err := w.ReadFrom(c.lines); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	w.WriteString("\n]}\n")
	if err := w.Flush(); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

func (c *comparison) close() {
	if c == nil {
		return
	}
	c.prev.close()
	if c.lines != nil {
		c.lines.Close()
		os.Remove(c.lines.Name())
	}
}
