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
func (a *Activities) expandManifest(ctx context.Context, in actwire.ExpandInput) (*actwire.ExpandOutput, error) {
	loc, err := s3store.ParseURI(in.Manifest)
	if err != nil {
		return nil, badInput(fmt.Errorf("manifest: %w", err))
	}
	if err := in.Options.Validate(); err != nil {
		return nil, badInput(err)
	}
	if err := a.allowInput(ctx, "manifest", in.Manifest, reader{}); err != nil {
		return nil, err
	}
	pageSize := in.PageSize
	if pageSize == 0 {
		pageSize = defaultPageSize
	}
	if pageSize < 0 || pageSize > maxPageSize {
		return nil, badInput(fmt.Errorf("page_size (%d) must be within [1, %d]", pageSize, maxPageSize))
	}
	if in.Samples < 0 || in.Samples > api.MaxSamples {
		return nil, badInput(fmt.Errorf("samples (%d) must be within [1, %d]", in.Samples, api.MaxSamples))
	}
	// Each item becomes samples runs in ResolveBatchPage's output: a page
	// holds that many times fewer items.
	samples := max(in.Samples, 1)
	pageSize = max(pageSize/samples, 1)
	maxPageBytes := pageBytes / samples
	out := &actwire.ExpandOutput{Model: a.modelName(in.Options), PoolCapacity: a.poolCapacity()}
	if out.ReportPrefix, err = a.reportPrefix(in); err != nil {
		return nil, badInput(err)
	}
	if in.ReportPrefix != "" {
		// The prefix as resolved: with dated_report each run of a schedule
		// claims its own dated prefix under the one it shares. A dated
		// prefix is predictable, so another workflow may have claimed it
		// ahead: the run then claims one that also names its first run,
		// which nobody can know in advance, rather than fail.
		c := claim{WorkflowID: in.WorkflowID, FirstRunID: in.RunKey, ScheduleID: in.ScheduleID}
		if in.Dated != "" && in.ScheduleID != "" {
			a.claimForSchedule(ctx, strings.TrimSuffix(out.ReportPrefix, in.Dated+"/"), in.ScheduleID)
		}
		err := a.claimPrefix(ctx, "report_prefix", out.ReportPrefix, c)
		var appErr *temporal.ApplicationError
		if err != nil && in.Dated != "" && errors.As(err, &appErr) && appErr.Type() == api.ErrForbidden && in.RunKey != "" {
			a.logger().WarnContext(ctx, "dated report prefix held by another workflow; using one that names this run", "prefix", out.ReportPrefix)
			out.ReportPrefix = strings.TrimSuffix(out.ReportPrefix, "/") + "-" + in.RunKey + "/"
			err = a.claimPrefix(ctx, "report_prefix", out.ReportPrefix, c)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := a.allowCompare(ctx, in.CompareWith, out.ReportPrefix, reader{ScheduleID: in.ScheduleID}); err != nil {
		return nil, err
	}
	out.WorkPrefix = out.ReportPrefix + "work/" + in.RunKey + "/"
	info, err := a.Store.Head(ctx, loc)
	if errors.Is(err, s3store.ErrNotFound) {
		return nil, badInput(fmt.Errorf("manifest %s does not exist: check the URI and that the worker's credentials can read it", in.Manifest))
	}
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", in.Manifest, err)
	}
	var resume expandProgress
	if activity.IsActivity(ctx) && activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &resume)
	}
	body, err := a.Store.Open(ctx, loc, info.ETag)
	if err != nil {
		return nil, storeError(err, in.Manifest)
	}
	defer body.Close()
	hb := &progressReader{ctx: ctx, r: body, every: a.heartbeatEvery(ctx), details: func() any { return resume }}
	mr, err := report.NewManifestReader(hb, in.Format)
	if err != nil {
		if hb.err != nil {
			return nil, storeError(hb.err, in.Manifest)
		}
		return nil, badInput(fmt.Errorf("manifest %s: %w", in.Manifest, err))
	}
	out.Format = mr.Format()

	var problems []string
	bad := 0
	var page bytes.Buffer
	pageItems := 0
	contexts := make(map[string]bool) // sha256 → seen in this call
	progress := expandProgress{}
	hb.details = func() any { return progress }
	writePage := func() error {
		if pageItems == 0 {
			return nil
		}
		if out.Pages >= resume.Pages {
			ploc, err := s3store.ParseURI(out.WorkPrefix + PagePath(out.Pages))
			if err != nil {
				return badInput(err)
			}
			if err := a.Store.Put(ctx, ploc, page.Bytes(), "application/x-ndjson"); err != nil {
				return fmt.Errorf("write page %d: %w", out.Pages, err)
			}
		}
		out.Pages++
		page.Reset()
		pageItems = 0
		progress = expandProgress{Pages: out.Pages, Items: out.Items}
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, progress)
		}
		return nil
	}
	for {
		it, err := mr.Next()
		var itemErr *report.ManifestError
		switch {
		case err == io.EOF:
		case errors.As(err, &itemErr):
			bad++
			if len(problems) < maxManifestErrors {
				problems = append(problems, itemErr.Error())
			}
			if bad >= maxManifestErrors {
				return nil, badInput(manifestError(in.Manifest, problems, bad, false))
			}
			continue
		case hb.err != nil:
			return nil, storeError(hb.err, in.Manifest)
		case err != nil:
			problems = append(problems, err.Error())
			return nil, badInput(manifestError(in.Manifest, problems, bad+1, false))
		}
		if err == io.EOF {
			break
		}
		if bad > 0 {
			// Keep checking, to list more problems, but write nothing.
			continue
		}
		if it.Context != "" {
			uri, written, err := a.storeContext(ctx, it.Context, contexts)
			if err != nil {
				return nil, err
			}
			it.Document, it.Context = uri, ""
			if written {
				out.ContextsWritten++
			}
		}
		line, err := json.Marshal(it)
		if err != nil {
			return nil, fmt.Errorf("encode item %d: %w", it.Seq, err)
		}
		if pageItems > 0 && page.Len()+len(line) > maxPageBytes {
			if err := writePage(); err != nil {
				return nil, err
			}
		}
		page.Write(line)
		page.WriteByte('\n')
		pageItems++
		out.Items++
		if pageItems >= pageSize {
			if err := writePage(); err != nil {
				return nil, err
			}
		}
	}
	if bad > 0 {
		return nil, badInput(manifestError(in.Manifest, problems, bad, true))
	}
	if out.Items == 0 {
		return nil, badInput(fmt.Errorf("manifest %s has no items", in.Manifest))
	}
	if out.Items > MaxBatchUnits/samples {
		return nil, badInput(fmt.Errorf("manifest %s has %d items × %d samples, over the limit of %d outcomes: split it into several batches", in.Manifest, out.Items, samples, MaxBatchUnits))
	}
	if err := writePage(); err != nil {
		return nil, err
	}
	out.Contexts = len(contexts)
	a.logger().InfoContext(ctx, "manifest expanded", "manifest", in.Manifest, "format", out.Format,
		"items", out.Items, "pages", out.Pages, "contexts", out.Contexts, "contexts_written", out.ContextsWritten)
	return out, nil
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
