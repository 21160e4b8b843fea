package activities

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/report"
	"github.com/memagent/memagent/internal/s3store"
)

// expandProgress is ExpandManifest's heartbeat: the resume point of a retry.
type expandProgress struct {
	// Pages were written completely; a retry reads the manifest again
	// (to check every item and its id) but does not write them again.
	Pages int `json:"pages"`
	Items int `json:"items"`
}

// expandManifest streams the manifest once: it checks every item (errors
// name the line or item number, and fail the batch as memagent.BadInput
// before any item runs), stores each distinct context of a MemAgent
// manifest once under its SHA-256 (s3://<bucket>/contexts/sha256/<hex>.txt,
// skipping those already there), and writes the items in pages of JSON
// Lines under the batch's work prefix.
//
// It runs in stages: check the input (checkExpandInput), claim the report
// prefix (claimReportPrefix), open the manifest (openManifest), read and
// page its items (expandItems, writing through a pageWriter) and write the
// last page once the whole manifest is known good.
func (a *Activities) expandManifest(ctx context.Context, in actwire.ExpandInput) (*actwire.ExpandOutput, error) {
	plan, err := a.checkExpandInput(ctx, in)
	if err != nil {
		return nil, err
	}
	out := &actwire.ExpandOutput{Model: a.modelName(in.Options), PoolCapacity: a.poolCapacity()}
	if out.ReportPrefix, err = a.claimReportPrefix(ctx, in); err != nil {
		return nil, err
	}
	if err := a.allowCompare(ctx, in.CompareWith, out.ReportPrefix, reader{ScheduleID: in.ScheduleID}); err != nil {
		return nil, err
	}
	out.WorkPrefix = out.ReportPrefix + "work/" + in.RunKey + "/"
	m, err := a.openManifest(ctx, in.Manifest, plan.loc, in.Format)
	if err != nil {
		return nil, err
	}
	defer m.body.Close()
	out.Format = m.reader.Format()

	pages := &pageWriter{a: a, ctx: ctx, out: out, resume: m.resume.Pages, size: plan.pageSize, maxBytes: plan.pageBytes}
	m.hb.details = func() any { return pages.progress }
	contexts := make(map[string]bool) // sha256 → seen in this call
	if err := a.expandItems(ctx, in.Manifest, m, pages, contexts); err != nil {
		return nil, err
	}
	if out.Items == 0 {
		return nil, badInput(fmt.Errorf("manifest %s has no items", in.Manifest))
	}
	if out.Items > MaxBatchUnits/plan.samples {
		return nil, badInput(fmt.Errorf("manifest %s has %d items × %d samples, over the limit of %d outcomes: split it into several batches", in.Manifest, out.Items, plan.samples, MaxBatchUnits))
	}
	if err := pages.flush(); err != nil {
		return nil, err
	}
	out.Contexts = len(contexts)
	a.logger().InfoContext(ctx, "manifest expanded", "manifest", in.Manifest, "format", out.Format,
		"items", out.Items, "pages", out.Pages, "contexts", out.Contexts, "contexts_written", out.ContextsWritten)
	return out, nil
}

// expandPlan is an expansion's checked input: where the manifest is, the
// runs an item becomes, and the bounds of a page in items and bytes (both
// shrunk by the samples, since each item becomes that many runs in
// ResolveBatchPage's output).
type expandPlan struct {
	loc       s3store.Location
	samples   int
	pageSize  int
	pageBytes int
}

// checkExpandInput refuses a manifest the worker may not read and options
// or bounds out of range, as memagent.BadInput.
func (a *Activities) checkExpandInput(ctx context.Context, in actwire.ExpandInput) (expandPlan, error) {
	loc, err := s3store.ParseURI(in.Manifest)
	if err != nil {
		return expandPlan{}, badInput(fmt.Errorf("manifest: %w", err))
	}
	if err := in.Options.Validate(); err != nil {
		return expandPlan{}, badInput(err)
	}
	if err := a.allowInput(ctx, "manifest", in.Manifest, reader{}); err != nil {
		return expandPlan{}, err
	}
	pageSize := in.PageSize
	if pageSize == 0 {
		pageSize = defaultPageSize
	}
	if pageSize < 0 || pageSize > maxPageSize {
		return expandPlan{}, badInput(fmt.Errorf("page_size (%d) must be within [1, %d]", pageSize, maxPageSize))
	}
	if in.Samples < 0 || in.Samples > api.MaxSamples {
		return expandPlan{}, badInput(fmt.Errorf("samples (%d) must be within [1, %d]", in.Samples, api.MaxSamples))
	}
	samples := max(in.Samples, 1)
	return expandPlan{loc: loc, samples: samples, pageSize: max(pageSize/samples, 1), pageBytes: pageBytes / samples}, nil
}

// claimReportPrefix resolves the batch's report prefix and, when the caller
// named one, claims it for this workflow. With dated_report each run of a
// schedule claims its own dated prefix under the one it shares. A dated
// prefix is predictable, so another workflow may have claimed it ahead:
// the run then claims one that also names its first run, which nobody can
// know in advance, rather than fail.
func (a *Activities) claimReportPrefix(ctx context.Context, in actwire.ExpandInput) (string, error) {
	prefix, err := a.reportPrefix(in)
	if err != nil {
		return "", badInput(err)
	}
	if in.ReportPrefix == "" {
		return prefix, nil
	}
	c := claim{WorkflowID: in.WorkflowID, FirstRunID: in.RunKey, ScheduleID: in.ScheduleID}
	if in.Dated != "" && in.ScheduleID != "" {
		a.claimForSchedule(ctx, strings.TrimSuffix(prefix, in.Dated+"/"), in.ScheduleID)
	}
	err = a.claimPrefix(ctx, "report_prefix", prefix, c)
	var appErr *temporal.ApplicationError
	if err != nil && in.Dated != "" && errors.As(err, &appErr) && appErr.Type() == api.ErrForbidden && in.RunKey != "" {
		a.logger().WarnContext(ctx, "dated report prefix held by another workflow; using one that names this run", "prefix", prefix)
		prefix = strings.TrimSuffix(prefix, "/") + "-" + in.RunKey + "/"
		err = a.claimPrefix(ctx, "report_prefix", prefix, c)
	}
	if err != nil {
		return "", err
	}
	return prefix, nil
}

// openedManifest is a manifest being read: its body, heartbeating as it
// is read, the item reader over it, and where a retried attempt resumes.
type openedManifest struct {
	body   io.ReadCloser
	hb     *progressReader
	reader *report.ManifestReader
	resume expandProgress
}

// openManifest opens the manifest at loc (uri as the caller wrote it) at
// its current version and recognises its format. A missing manifest, or
// one in no format it knows, is memagent.BadInput.
func (a *Activities) openManifest(ctx context.Context, uri string, loc s3store.Location, format string) (*openedManifest, error) {
	info, err := a.Store.Head(ctx, loc)
	if errors.Is(err, s3store.ErrNotFound) {
		return nil, badInput(fmt.Errorf("manifest %s does not exist: check the URI and that the worker's credentials can read it", uri))
	}
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", uri, err)
	}
	m := &openedManifest{}
	if activity.IsActivity(ctx) && activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &m.resume)
	}
	if m.body, err = a.Store.Open(ctx, loc, info.ETag); err != nil {
		return nil, storeError(err, uri)
	}
	m.hb = &progressReader{ctx: ctx, r: m.body, every: a.heartbeatEvery(ctx), details: func() any { return m.resume }}
	if m.reader, err = report.NewManifestReader(m.hb, format); err != nil {
		m.body.Close()
		if m.hb.err != nil {
			return nil, storeError(m.hb.err, uri)
		}
		return nil, badInput(fmt.Errorf("manifest %s: %w", uri, err))
	}
	return m, nil
}

// expandItems reads the manifest's items to the end and pages them. Once
// an item is bad it keeps checking, to list more problems, but pages
// nothing more; it stops at maxManifestErrors bad items or at an error
// that is not an item's.
func (a *Activities) expandItems(ctx context.Context, uri string, m *openedManifest, pages *pageWriter, contexts map[string]bool) error {
	var problems []string
	bad := 0
	for {
		it, err := m.reader.Next()
		var itemErr *report.ManifestError
		switch {
		case err == io.EOF:
		case errors.As(err, &itemErr):
			bad++
			if len(problems) < maxManifestErrors {
				problems = append(problems, itemErr.Error())
			}
			if bad >= maxManifestErrors {
				return badInput(manifestError(uri, problems, bad, false))
			}
			continue
		case m.hb.err != nil:
			return storeError(m.hb.err, uri)
		case err != nil:
			problems = append(problems, err.Error())
			return badInput(manifestError(uri, problems, bad+1, false))
		}
		if err == io.EOF {
			break
		}
		if bad > 0 {
			continue
		}
		if err := a.expandItem(ctx, it, pages, contexts); err != nil {
			return err
		}
	}
	if bad > 0 {
		return badInput(manifestError(uri, problems, bad, true))
	}
	return nil
}

// expandItem puts one good item on a page, its MemAgent context (if it has
// one) stored apart and named by the item's document.
func (a *Activities) expandItem(ctx context.Context, it report.ManifestItem, pages *pageWriter, contexts map[string]bool) error {
	if it.Context != "" {
		uri, written, err := a.storeContext(ctx, it.Context, contexts)
		if err != nil {
			return err
		}
		it.Document, it.Context = uri, ""
		if written {
			pages.out.ContextsWritten++
		}
	}
	line, err := json.Marshal(it)
	if err != nil {
		return fmt.Errorf("encode item %d: %w", it.Seq, err)
	}
	return pages.add(line)
}

// pageWriter writes items to pages of at most size items and about
// maxBytes bytes under the work prefix, counting items and pages in out.
// Pages a retried attempt already wrote (those before resume) are not
// written again; progress, the heartbeat, says how far it got.
type pageWriter struct {
	a         *Activities
	ctx       context.Context
	out       *actwire.ExpandOutput
	resume    int
	size      int
	maxBytes  int
	page      bytes.Buffer
	pageItems int
	progress  expandProgress
}

// add adds an item's line, writing the page before it when the line would
// take it over maxBytes and the page after it when it is full.
func (w *pageWriter) add(line []byte) error {
	if w.pageItems > 0 && w.page.Len()+len(line) > w.maxBytes {
		if err := w.flush(); err != nil {
			return err
		}
	}
	w.page.Write(line)
	w.page.WriteByte('\n')
	w.pageItems++
	w.out.Items++
	if w.pageItems >= w.size {
		return w.flush()
	}
	return nil
}

// flush writes the page, if it has items, and heartbeats the progress.
func (w *pageWriter) flush() error {
	if w.pageItems == 0 {
		return nil
	}
	if w.out.Pages >= w.resume {
		ploc, err := s3store.ParseURI(w.out.WorkPrefix + PagePath(w.out.Pages))
		if err != nil {
			return badInput(err)
		}
		if err := w.a.Store.Put(w.ctx, ploc, w.page.Bytes(), "application/x-ndjson"); err != nil {
			return fmt.Errorf("write page %d: %w", w.out.Pages, err)
		}
	}
	w.out.Pages++
	w.page.Reset()
	w.pageItems = 0
	w.progress = expandProgress{Pages: w.out.Pages, Items: w.out.Items}
	if activity.IsActivity(w.ctx) {
		activity.RecordHeartbeat(w.ctx, w.progress)
	}
	return nil
}

func manifestError(uri string, problems []string, bad int, complete bool) error {
	msg := fmt.Sprintf("manifest %s: %d bad item(s): %s", uri, bad, strings.Join(problems, "; "))
	switch {
	case bad > len(problems):
		msg += fmt.Sprintf("; and %d more", bad-len(problems))
	case !complete:
		msg += "; stopped checking there"
	}
	return errors.New(msg + ": fix the manifest and start the batch again")
}

// reportPrefix resolves the report's prefix, ending in "/".
func (a *Activities) reportPrefix(in actwire.ExpandInput) (string, error) {
	p := in.ReportPrefix
	if p == "" {
		if a.Bucket == "" {
			return "", errors.New("no report_prefix and the worker has no bucket: pass report_prefix")
		}
		p = "s3://" + a.Bucket + "/batches/" + in.WorkflowID + "/"
	}
	if !strings.HasSuffix(p, "/") {
		p += "/"
	}
	if in.Dated != "" {
		p += in.Dated + "/"
	}
	if _, err := s3store.ParseURI(p + "report.json"); err != nil {
		return "", fmt.Errorf("report_prefix %q: %w", in.ReportPrefix, err)
	}
	return p, nil
}

// storeContext stores a MemAgent context under its SHA-256 unless it is
// there already, and returns its URI and whether it was written.
func (a *Activities) storeContext(ctx context.Context, text string, seen map[string]bool) (string, bool, error) {
	sum := sha256.Sum256([]byte(text))
	hexSum := hex.EncodeToString(sum[:])
	loc := s3store.Location{Bucket: a.Bucket, Key: "contexts/sha256/" + hexSum + ".txt"}
	if seen[hexSum] {
		return loc.String(), false, nil
	}
	_, err := a.Store.Head(ctx, loc)
	switch {
	case err == nil:
		seen[hexSum] = true
		return loc.String(), false, nil
	case !errors.Is(err, s3store.ErrNotFound):
		return "", false, fmt.Errorf("check context %s: %w", loc, err)
	}
	if err := a.Store.Put(ctx, loc, []byte(text), "text/plain; charset=utf-8"); err != nil {
		return "", false, fmt.Errorf("write context %s: %w", loc, err)
	}
	seen[hexSum] = true
	return loc.String(), true, nil
}
