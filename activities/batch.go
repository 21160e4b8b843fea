package activities

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/report"
	"github.com/memagent/memagent/internal/s3store"
)

// Names of the BatchQA activities. They are part of the wire format.
const (
	ExpandManifestName    = "memagent.ExpandManifest"
	ResolveBatchPageName  = "memagent.ResolveBatchPage"
	WriteBatchResultsName = "memagent.WriteBatchResults"
	WriteBatchReportName  = "memagent.WriteBatchReport"
)

// ErrBatchIncomplete is the type of WriteBatchReport's failure when an item
// of the manifest has no outcome in the parts it was given.
const ErrBatchIncomplete = "memagent.BatchIncomplete"

// Batch defaults and bounds.
const (
	defaultPageSize = 100
	maxPageSize     = 500
	// pageBytes closes a page early, so that the items of one page (which
	// enter workflow history as ResolveBatchPage's output) stay small.
	pageBytes = 256 << 10
	// maxManifestErrors is how many bad items an expansion lists before it
	// gives up.
	maxManifestErrors = 10
	// resolveParallel bounds the S3 requests one ResolveBatchPage makes at
	// once.
	resolveParallel = 8
	// MaxBatchUnits bounds a batch's items × samples: the report keeps a
	// small record per outcome (16 bytes), 64 MB at this bound.
	MaxBatchUnits = 4_000_000
)

// registerBatch registers the activities of the BatchQA workflow.
func (a *Activities) registerBatch(r Registry) {
	r.RegisterActivityWithOptions(a.ExpandManifest, activity.RegisterOptions{Name: ExpandManifestName})
	r.RegisterActivityWithOptions(a.ResolveBatchPage, activity.RegisterOptions{Name: ResolveBatchPageName})
	r.RegisterActivityWithOptions(a.WriteBatchResults, activity.RegisterOptions{Name: WriteBatchResultsName})
	r.RegisterActivityWithOptions(a.WriteBatchReport, activity.RegisterOptions{Name: WriteBatchReportName})
}

// PagePath is the path of page n under a batch's work prefix.
func PagePath(n int) string { return fmt.Sprintf("items/%06d.jsonl", n) }

// expandProgress is ExpandManifest's heartbeat: the resume point of a retry.
type expandProgress struct {
	// Pages were written completely; a retry reads the manifest again
	// (to check every item and its id) but does not write them again.
	Pages int `json:"pages"`
	Items int `json:"items"`
}

// ExpandManifest streams the manifest once: it checks every item (errors
// name the line or item number, and fail the batch as memagent.BadInput
// before any item runs), stores each distinct context of a MemAgent
// manifest once under its SHA-256 (s3://<bucket>/contexts/sha256/<hex>.txt,
// skipping those already there), and writes the items in pages of JSON
// Lines under the batch's work prefix.
func (a *Activities) ExpandManifest(ctx context.Context, in ExpandInput) (*ExpandOutput, error) {
	loc, err := s3store.ParseURI(in.Manifest)
	if err != nil {
		return nil, badInput(fmt.Errorf("manifest: %w", err))
	}
	if err := in.Options.Validate(); err != nil {
		return nil, badInput(err)
	}
	if err := a.allowRead("manifest", in.Manifest); err != nil {
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
	out := &ExpandOutput{Model: a.modelName(in.Options), PoolCapacity: a.poolCapacity()}
	if out.ReportPrefix, err = a.reportPrefix(in); err != nil {
		return nil, badInput(err)
	}
	if in.ReportPrefix != "" {
		// The prefix as resolved: with dated_report each run of a schedule
		// claims its own dated prefix under the one it shares. A dated
		// prefix is predictable, so another workflow may have claimed it
		// ahead: the run then claims one that also names its first run,
		// which nobody can know in advance, rather than fail.
		c := claim{WorkflowID: in.WorkflowID, FirstRunID: in.RunKey}
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
func (a *Activities) reportPrefix(in ExpandInput) (string, error) {
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

// readPage reads the items of one page.
func (a *Activities) readPage(ctx context.Context, workPrefix string, n int) ([]report.ManifestItem, error) {
	loc, err := s3store.ParseURI(workPrefix + PagePath(n))
	if err != nil {
		return nil, badInput(err)
	}
	data, err := a.Store.ReadAll(ctx, loc)
	if errors.Is(err, s3store.ErrNotFound) {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("page %s does not exist: was the batch's work prefix deleted?", loc), api.ErrBadInput, err)
	}
	if err != nil {
		return nil, fmt.Errorf("read page %d: %w", n, err)
	}
	var items []report.ManifestItem
	for i, line := range bytes.Split(data, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var it report.ManifestItem
		if err := json.Unmarshal(line, &it); err != nil {
			return nil, badInput(fmt.Errorf("page %s line %d: %w", loc, i+1, err))
		}
		items = append(items, it)
	}
	return items, nil
}

// AnswerKey names the answer to one question about one document version
// with one model, option set and prompt templates: a batch finds an earlier
// answer under s3://<bucket>/answers/<key>/result.json. opts must have its
// defaults applied and the resolved model set.
func AnswerKey(document, etag, question string, opts api.ModelOptions, templates memagent.Templates) string {
	b, _ := json.Marshal(struct {
		D, E, Q string
		O       api.ModelOptions
		U, F    string
	}{document, etag, question, opts, templates.Update, templates.Final})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:16])
}

// SampleAnswerKey is AnswerKey of one of a batch's samples of an item: the
// first sample (0) has the item's AnswerKey, so a batch of one sample finds
// the answers of any earlier batch, and each later sample has a key of its
// own, so that no sample is taken for another.
func SampleAnswerKey(document, etag, question string, opts api.ModelOptions, templates memagent.Templates, sample int) string {
	if sample == 0 {
		return AnswerKey(document, etag, question, opts, templates)
	}
	b, _ := json.Marshal(struct {
		K string
		S int
	}{AnswerKey(document, etag, question, opts, templates), sample})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:16])
}

// answers reports whether a cached result is an answer to the item: the
// same document, question, model and options it was cached under (the key
// names them, but anything written under answers/ is checked before it is
// reused).
func answers(res api.DocumentQAResult, it report.ManifestItem, opts api.ModelOptions) bool {
	if res.Document != it.Document && res.Source != it.Document {
		return false
	}
	got, _ := json.Marshal(res.Options)
	want, _ := json.Marshal(opts)
	return res.Question == it.Question && res.Model == opts.Model && string(got) == string(want)
}

// docState is what a HEAD says about one document.
type docState struct {
	// denied is why the worker may not read the document (then no HEAD).
	denied  error
	etag    string
	size    int64
	missing bool
	err     error
}

// poolCapacity is the model pool's capacity when the model reports one.
func (a *Activities) poolCapacity() int {
	if c, ok := a.Model.(interface{ Capacity() int }); ok {
		return max(c.Capacity(), 0)
	}
	return 0
}

// ResolveBatchPage settles what it can of one page at once: items whose
// answer is already in the bucket (same document version, question, model,
// options and templates) are reused, with their scores computed against
// this item's gold answers; items whose document does not exist fail with
// memagent.DocumentNotFound. Their outcomes go to one part; the other items
// are returned, each with the output prefix its DocumentQA run writes to.
// With samples > 1 each item is that many units, each settled or returned
// on its own (SampleAnswerKey).
func (a *Activities) ResolveBatchPage(ctx context.Context, in ResolvePageInput) (*ResolvePageOutput, error) {
	if in.Samples < 0 || in.Samples > api.MaxSamples {
		return nil, badInput(fmt.Errorf("samples (%d) must be within [1, %d]", in.Samples, api.MaxSamples))
	}
	if err := a.allowOutput(ctx, "work_prefix", in.WorkPrefix); err != nil {
		return nil, err
	}
	items, err := a.readPage(ctx, in.WorkPrefix, in.Page)
	if err != nil {
		return nil, err
	}
	opts := in.Options.WithDefaults()
	opts.Model = a.modelName(in.Options)

	// One HEAD per distinct document, then one GET per item's answer key,
	// each at most resolveParallel at once.
	docs := make(map[string]*docState)
	var uris []string
	for _, it := range items {
		if docs[it.Document] == nil {
			// A document this worker may not read is never looked at:
			// not even a HEAD, whose answer (it exists, its size) would
			// tell the caller something.
			docs[it.Document] = &docState{denied: a.allowRead("document", it.Document)}
			uris = append(uris, it.Document)
		}
	}
	parallel(ctx, len(uris), func(i int) {
		st := docs[uris[i]]
		if st.denied != nil {
			return
		}
		loc, err := s3store.ParseURI(uris[i])
		if err != nil {
			st.missing = true
			return
		}
		info, err := a.Store.Head(ctx, loc)
		switch {
		case errors.Is(err, s3store.ErrNotFound):
			st.missing = true
		case err != nil:
			st.err = err
		default:
			st.etag, st.size = info.ETag, info.Size
		}
	})
	for _, u := range uris {
		if err := docs[u].err; err != nil {
			return nil, fmt.Errorf("check document %s: %w", u, err)
		}
	}
	samples := max(in.Samples, 1)
	// Unit u is sample u%samples of item u/samples.
	units := len(items) * samples
	keys := make([]string, units)
	cached := make([]*api.DocumentQAResult, units)
	errs := make([]error, units)
	parallel(ctx, units, func(u int) {
		it := items[u/samples]
		st := docs[it.Document]
		if st.missing || st.denied != nil {
			return
		}
		keys[u] = SampleAnswerKey(it.Document, st.etag, it.Question, opts, a.Templates, u%samples)
		data, err := a.Store.ReadAll(ctx, s3store.Location{Bucket: a.Bucket, Key: "answers/" + keys[u] + "/result.json"})
		switch {
		case errors.Is(err, s3store.ErrNotFound):
		case err != nil:
			errs[u] = err
		default:
			var res api.DocumentQAResult
			if json.Unmarshal(data, &res) == nil && res.ResultURI != "" && answers(res, it, opts) {
				cached[u] = &res
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("look up earlier answers: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	out := &ResolvePageOutput{}
	var settled bytes.Buffer
	enc := json.NewEncoder(&settled)
	for u := range units {
		it, sample := items[u/samples], u%samples
		r := api.BatchItemResult{Seq: it.Seq, Sample: sample, ID: it.ID, Document: it.Document, Question: it.Question,
			GoldAnswers: it.Answers, Labels: it.Labels}
		switch {
		case docs[it.Document].denied != nil:
			var appErr *temporal.ApplicationError
			errors.As(docs[it.Document].denied, &appErr)
			r.Status = api.ItemFailed
			r.ErrorType = appErr.Type()
			r.Error = appErr.Message()
			out.Failed++
		case docs[it.Document].missing:
			r.Status = api.ItemFailed
			r.ErrorType = api.ErrDocumentNotFound
			r.Error = fmt.Sprintf("%s does not exist: check the URI and that the worker's credentials can read it", it.Document)
			out.Failed++
		case cached[u] != nil:
			c := cached[u]
			r.Status = api.ItemReused
			r.Answer, r.AnswerFound = c.Answer, c.AnswerFound
			if len(it.Answers) > 0 {
				s := memagent.Score(c.Answer, it.Answers)
				r.Scores = &s
			}
			r.Chunks, r.Tokens, r.WorkflowID, r.ResultURI = c.Chunks, c.Tokens, c.WorkflowID, c.ResultURI
			r.AnswerPages = c.AnswerPages
			out.Reused++
		default:
			out.Run = append(out.Run, BatchRunItem{
				Seq: it.Seq, Sample: sample, ID: it.ID, Document: it.Document, Question: it.Question,
				GoldAnswers: it.Answers, Labels: it.Labels,
				OutputPrefix: a.answersPrefix() + keys[u] + "/",
				FairnessKey:  it.FairnessKey, DocumentBytes: docs[it.Document].size,
			})
			if b, err := json.Marshal(out.Run[len(out.Run)-1]); err == nil {
				out.Run[len(out.Run)-1].Bytes = len(b)
			}
			continue
		}
		if err := enc.Encode(r); err != nil {
			return nil, fmt.Errorf("encode outcome of item %d: %w", it.Seq, err)
		}
	}
	// Longest first: a long document started last would run alone at the
	// end while the pool idles.
	slices.SortStableFunc(out.Run, func(x, y BatchRunItem) int { return cmp.Compare(y.DocumentBytes, x.DocumentBytes) })
	if settled.Len() > 0 {
		out.Part = in.WorkPrefix + fmt.Sprintf("parts/page-%06d.jsonl", in.Page)
		loc, err := s3store.ParseURI(out.Part)
		if err != nil {
			return nil, badInput(err)
		}
		if err := a.Store.Put(ctx, loc, settled.Bytes(), "application/x-ndjson"); err != nil {
			return nil, fmt.Errorf("write outcomes of page %d: %w", in.Page, err)
		}
	}
	a.logger().InfoContext(ctx, "batch page resolved", "page", in.Page, "items", len(items),
		"run", len(out.Run), "reused", out.Reused, "failed", out.Failed)
	return out, nil
}

// parallel calls f(0..n-1) with at most resolveParallel calls at once.
func parallel(ctx context.Context, n int, f func(i int)) {
	sem := make(chan struct{}, resolveParallel)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			f(i)
			if activity.IsActivity(ctx) {
				activity.RecordHeartbeat(ctx)
			}
		}()
	}
	wg.Wait()
}

// WriteBatchResults writes outcomes as one part of JSON Lines. A retry
// overwrites the same part.
func (a *Activities) WriteBatchResults(ctx context.Context, in WriteResultsInput) error {
	loc, err := s3store.ParseURI(in.URI)
	if err != nil {
		return badInput(err)
	}
	if err := a.allowOutput(ctx, "uri", in.URI); err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range in.Results {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("encode outcome of item %d: %w", r.Seq, err)
		}
	}
	if err := a.Store.Put(ctx, loc, buf.Bytes(), "application/x-ndjson"); err != nil {
		return fmt.Errorf("write outcomes: %w", err)
	}
	return nil
}

// readParts streams every part and calls f with each outcome, in part
// order.
func (a *Activities) readParts(ctx context.Context, parts []string, f func(r api.BatchItemResult, line []byte) error) error {
	for _, p := range parts {
		loc, err := s3store.ParseURI(p)
		if err != nil {
			return badInput(err)
		}
		body, err := a.Store.Open(ctx, loc, "")
		if err != nil {
			if errors.Is(err, s3store.ErrNotFound) {
				return temporal.NewNonRetryableApplicationError(fmt.Sprintf("outcome part %s does not exist", p), ErrBatchIncomplete, err)
			}
			return fmt.Errorf("read part %s: %w", p, err)
		}
		br := bufio.NewReaderSize(body, 64<<10)
		for n := 1; ; n++ {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				var r api.BatchItemResult
				if jerr := json.Unmarshal(line, &r); jerr != nil {
					body.Close()
					return badInput(fmt.Errorf("part %s line %d: %w", p, n, jerr))
				}
				if ferr := f(r, bytes.TrimSpace(line)); ferr != nil {
					body.Close()
					return ferr
				}
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				body.Close()
				return fmt.Errorf("read part %s: %w", p, err)
			}
		}
		body.Close()
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx)
		}
	}
	return nil
}

// progressReader heartbeats, with the activity's resume point, while a
// long manifest streams through, and remembers a read error so it is not
// mistaken for bad input.
type progressReader struct {
	ctx     context.Context
	r       io.Reader
	every   time.Duration
	last    time.Time
	details func() any
	err     error
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if err != nil && err != io.EOF {
		p.err = err
	}
	if now := time.Now(); now.Sub(p.last) >= p.every && activity.IsActivity(p.ctx) {
		p.last = now
		activity.RecordHeartbeat(p.ctx, p.details())
	}
	return n, err
}

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

// maxLabelValues bounds the values of one label that get their own
// aggregate; a label with more (an id, a raw token count) is left out of
// BatchReport.ByLabel and named in LabelsOmitted.
const maxLabelValues = 100

// maxHTMLItems bounds the item rows of the HTML page; the CSV has them all.
const maxHTMLItems = 1000

// aggregator accumulates a ScoreAggregate.
type aggregator struct {
	agg                 api.ScoreAggregate
	em, sub, f1, recall float64
	tokens              float64
	tokensItems         int
}

func (g *aggregator) add(r api.BatchItemResult) {
	a := &g.agg
	a.Items++
	switch r.Status {
	case api.ItemAnswered:
		a.Answered++
	case api.ItemReused:
		a.Reused++
	default:
		a.Failed++
	}
	a.Usage = a.Usage.Add(r.Usage)
	if r.Tokens > 0 {
		g.tokens += float64(r.Tokens)
		g.tokensItems++
	}
	if r.Status != api.ItemFailed && r.Scores != nil && len(r.GoldAnswers) > 0 {
		a.Scored++
		if r.Scores.ExactMatch {
			g.em++
		}
		if r.Scores.SubstringMatch {
			g.sub++
		}
		g.f1 += r.Scores.F1
		g.recall += r.Scores.Recall
	}
}

func (g *aggregator) result() api.ScoreAggregate {
	a := g.agg
	if a.Scored > 0 {
		n := float64(a.Scored)
		a.ExactMatch, a.SubstringMatch, a.F1, a.Recall = g.em/n, g.sub/n, g.f1/n, g.recall/n
	}
	if g.tokensItems > 0 {
		a.MeanTokens = g.tokens / float64(g.tokensItems)
	}
	return a
}

// groupAcc accumulates one item's samples (GroupResult).
type groupAcc struct {
	res         api.GroupResult
	em, sub, f1 float64
	bestSet     bool
}

func (g *groupAcc) add(r api.BatchItemResult) {
	g.res.Samples++
	g.res.Usage = g.res.Usage.Add(r.Usage)
	switch r.Status {
	case api.ItemAnswered:
		g.res.Answered++
	case api.ItemReused:
		g.res.Reused++
	default:
		g.res.Failed++
	}
	if r.Status == api.ItemFailed || r.Scores == nil || len(r.GoldAnswers) == 0 {
		return
	}
	g.res.Scored++
	em, sub := b2f(r.Scores.ExactMatch), b2f(r.Scores.SubstringMatch)
	g.em, g.sub, g.f1 = g.em+em, g.sub+sub, g.f1+r.Scores.F1
	g.res.BestExactMatch = max(g.res.BestExactMatch, em)
	g.res.BestSubstringMatch = max(g.res.BestSubstringMatch, sub)
	g.res.BestF1 = max(g.res.BestF1, r.Scores.F1)
}

func (g *groupAcc) result() api.GroupResult {
	r := g.res
	if r.Scored > 0 {
		n := float64(r.Scored)
		r.MeanExactMatch, r.MeanSubstringMatch, r.MeanF1 = g.em/n, g.sub/n, g.f1/n
	}
	return r
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// groupAggregator accumulates a GroupAggregate over the items' groups.
type groupAggregator struct {
	samples int
	agg     api.GroupAggregate
}

func (a *groupAggregator) add(g *groupAcc) {
	a.agg.Items++
	r := g.result()
	if r.Scored == 0 {
		return
	}
	a.agg.Scored++
	a.agg.MeanExactMatch += r.MeanExactMatch
	a.agg.BestExactMatch += r.BestExactMatch
	a.agg.MeanSubstringMatch += r.MeanSubstringMatch
	a.agg.BestSubstringMatch += r.BestSubstringMatch
	a.agg.MeanF1 += r.MeanF1
	a.agg.BestF1 += r.BestF1
}

func (a *groupAggregator) result() api.GroupAggregate {
	g := a.agg
	g.Samples = a.samples
	if g.Scored > 0 {
		n := float64(g.Scored)
		g.MeanExactMatch, g.BestExactMatch = g.MeanExactMatch/n, g.BestExactMatch/n
		g.MeanSubstringMatch, g.BestSubstringMatch = g.MeanSubstringMatch/n, g.BestSubstringMatch/n
		g.MeanF1, g.BestF1 = g.MeanF1/n, g.BestF1/n
	}
	return g
}

func finishLabels(by map[string]map[string]*aggregator) map[string]map[string]api.ScoreAggregate {
	out := make(map[string]map[string]api.ScoreAggregate, len(by))
	for k, vals := range by {
		out[k] = make(map[string]api.ScoreAggregate, len(vals))
		for v, g := range vals {
			out[k][v] = g.result()
		}
	}
	return out
}

// itemSpan locates one outcome's line in the report's spool file.
type itemSpan struct {
	off int64
	n   int32
}

// WriteBatchReport reads the outcome parts (streaming, through a spool file
// on local disk, so that outcomes are not held in memory: what is held is
// 16 bytes an outcome, at most MaxBatchUnits of them), puts the items
// in manifest order and writes, under the report prefix: report.json
// (BatchReport: the overall aggregate and one per value of every label),
// results.jsonl and results.csv (one item a line), chart.svg (score against
// document length) and report.html (a page with all of it).
func (a *Activities) WriteBatchReport(ctx context.Context, in ReportInput) (*api.BatchReport, error) {
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
	if _, err := s3store.ParseURI(prefix + ReportJSONName); err != nil {
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
	prefix, err := a.ownReportPrefix(ctx, prefix, in.RunID)
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
		ResultsURI: prefix + ReportResultsName, CSVURI: prefix + ReportCSVName,
		SVGURI: prefix + ReportSVGName, HTMLURI: prefix + ReportHTMLName, ReportURI: prefix + ReportJSONName,
	}
	rep.Options.Model = in.Model
	if samples > 1 {
		rep.Samples, rep.GroupsURI = samples, prefix+ReportGroupsName
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
			if len(labelValues[k]) > maxLabelValues {
				omitted[k] = true
				delete(labelValues, k)
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	labelKeys := sortedKeys(labelValues)
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
		"error_type", "error", "workflow_id", "result_uri", "answer_pages"}
	if samples > 1 {
		header = slices.Insert(header, 1, "sample")
	}
	for _, k := range labelKeys {
		header = append(header, "label:"+k)
	}
	if err := cw.Write(header); err != nil {
		return nil, err
	}
	var all aggregator
	groups := groupAggregator{samples: samples}
	var groupLines bytes.Buffer
	groupEnc := json.NewEncoder(&groupLines)
	var group *groupAcc
	by := make(map[string]map[string]*aggregator)
	var points []report.BatchChartPoint
	var failures, rows [][]string
	failedTotal := 0
	if err := eachSpooled(ctx, spool, spans, func(r api.BatchItemResult, line []byte) error {
		all.add(r)
		if samples > 1 {
			if group != nil && group.res.Seq != r.Seq {
				groups.add(group)
				if err := groupEnc.Encode(group.result()); err != nil {
					return err
				}
				group = nil
			}
			if group == nil {
				group = &groupAcc{res: api.GroupResult{Seq: r.Seq, ID: r.ID}}
			}
			group.add(r)
		}
		for _, k := range labelKeys {
			v, ok := r.Labels[k]
			if !ok {
				continue
			}
			if by[k] == nil {
				by[k] = make(map[string]*aggregator)
			}
			if by[k][v] == nil {
				by[k][v] = &aggregator{}
			}
			by[k][v].add(r)
		}
		rw.Write(line)
		rw.WriteByte('\n')
		row := csvRow(r)
		if samples > 1 {
			row = slices.Insert(row, 1, strconv.Itoa(r.Sample))
		}
		for _, k := range labelKeys {
			row = append(row, report.CSVText(r.Labels[k]))
		}
		if err := cw.Write(row); err != nil {
			return err
		}
		if r.Status != api.ItemFailed && r.Scores != nil && len(r.GoldAnswers) > 0 {
			points = append(points, report.BatchChartPoint{Tokens: r.Tokens, F1: r.Scores.F1, Substring: r.Scores.SubstringMatch, Recall: r.Scores.Recall})
		}
		if r.Status == api.ItemFailed {
			failedTotal++
			if len(failures) < maxHTMLItems {
				failures = append(failures, []string{strconv.Itoa(r.Seq), r.ID, r.Document, r.ErrorType, r.Error})
			}
		}
		if len(rows) < maxHTMLItems {
			row := htmlItemRow(r)
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
		groups.add(group)
		if err := groupEnc.Encode(group.result()); err != nil {
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
	rep.Overall = all.result()
	if samples > 1 {
		g := groups.result()
		rep.Groups = &g
	}
	if len(by) > 0 {
		rep.ByLabel = finishLabels(by)
	}

	chart := report.BatchChart(fmt.Sprintf("%s: score against document length", in.Name), points)
	var page bytes.Buffer
	if err := report.WriteBatchHTML(&page, batchPage(rep, labelKeys, chart, failures, failedTotal, rows)); err != nil {
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
		groupFiles = append(groupFiles, reportFile{ReportGroupsName, "application/x-ndjson", nil, groupLines.Bytes()})
	}
	for _, f := range append(groupFiles, []reportFile{
		{ReportResultsName, "application/x-ndjson", results, nil},
		{ReportCSVName, "text/csv; charset=utf-8", csvFile, nil},
		{ReportSVGName, "image/svg+xml", nil, []byte(chart)},
		{ReportHTMLName, "text/html; charset=utf-8", nil, page.Bytes()},
		// report.json last: its presence means the report is complete.
		{ReportJSONName, "application/json", nil, repJSON},
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

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// sortedValues orders label values numerically when they all are numbers
// (context lengths), else as text.
func sortedValues(m map[string]api.ScoreAggregate) []string {
	vals := sortedKeys(m)
	nums := make(map[string]float64, len(vals))
	for _, v := range vals {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return vals
		}
		nums[v] = f
	}
	sort.SliceStable(vals, func(i, j int) bool { return nums[vals[i]] < nums[vals[j]] })
	return vals
}

func csvRow(r api.BatchItemResult) []string {
	var em, sub, f1, recall string
	if r.Scores != nil {
		em, sub, f1 = strconv.FormatBool(r.Scores.ExactMatch), strconv.FormatBool(r.Scores.SubstringMatch), strconv.FormatFloat(r.Scores.F1, 'f', 4, 64)
		recall = strconv.FormatFloat(r.Scores.Recall, 'f', 4, 64)
	}
	return []string{
		strconv.Itoa(r.Seq), report.CSVText(r.ID), r.Status, report.CSVText(r.Document),
		report.CSVText(r.Question), report.CSVText(strings.Join(r.GoldAnswers, " | ")),
		report.CSVText(r.Answer), strconv.FormatBool(r.AnswerFound), em, sub, f1, recall,
		strconv.Itoa(r.Chunks), strconv.FormatInt(r.Tokens, 10), strconv.Itoa(r.Usage.Calls),
		strconv.FormatInt(r.Usage.PromptTokens, 10), strconv.FormatInt(r.Usage.CompletionTokens, 10),
		report.CSVText(r.ErrorType), report.CSVText(r.Error), report.CSVText(r.WorkflowID), report.CSVText(r.ResultURI),
		report.CSVText(r.AnswerPages),
	}
}

func htmlItemRow(r api.BatchItemResult) []string {
	f1, sub, recall := "", "", ""
	if r.Scores != nil {
		f1 = strconv.FormatFloat(r.Scores.F1, 'f', 2, 64)
		sub = strconv.FormatBool(r.Scores.SubstringMatch)
		recall = strconv.FormatFloat(r.Scores.Recall, 'f', 2, 64)
	}
	answer := r.Answer
	if r.Status == api.ItemFailed {
		answer = r.ErrorType + ": " + r.Error
	}
	return []string{strconv.Itoa(r.Seq), r.ID, r.Status, clipText(r.Question, 200), clipText(answer, 200),
		clipText(strings.Join(r.GoldAnswers, " | "), 120), sub, f1, recall, strconv.FormatInt(r.Tokens, 10)}
}

func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func aggregateRow(name string, g api.ScoreAggregate) []string {
	return []string{name, strconv.Itoa(g.Items), strconv.Itoa(g.Answered), strconv.Itoa(g.Reused),
		strconv.Itoa(g.Failed), strconv.Itoa(g.Scored), fmt.Sprintf("%.3f", g.ExactMatch),
		fmt.Sprintf("%.3f", g.SubstringMatch), fmt.Sprintf("%.3f", g.F1), fmt.Sprintf("%.3f", g.Recall), fmt.Sprintf("%.0f", g.MeanTokens),
		strconv.Itoa(g.Usage.Calls)}
}

var aggregateHeader = []string{"", "items", "answered", "reused", "failed", "scored", "exact match",
	"substring match", "F1", "recall", "mean tokens", "model calls"}
var aggregateNumeric = []bool{false, true, true, true, true, true, true, true, true, true, true, true}

// batchPage lays out the report's HTML page.
func batchPage(rep *api.BatchReport, labelKeys []string, chart string, failures [][]string, failedTotal int, rows [][]string) report.BatchPage {
	p := report.BatchPage{
		Title: "Batch " + rep.Name,
		Facts: [][2]string{
			{"Batch", rep.Name}, {"Workflow", rep.WorkflowID}, {"Manifest", rep.Manifest},
			{"Model", rep.Model},
			{"Options", fmt.Sprintf("chunk %d tokens, memory %d, answer %d, temperature %g, top_p %g, tokenizer %s",
				rep.Options.ChunkTokens, rep.Options.MemoryMaxTokens, rep.Options.AnswerMaxTokens,
				*rep.Options.Temperature, *rep.Options.TopP, rep.Options.Tokenizer)},
			{"Started", rep.StartedAt.UTC().Format(time.RFC3339)}, {"Finished", rep.FinishedAt.UTC().Format(time.RFC3339)},
		},
		Links: []report.BatchLink{{Name: ReportJSONName, Href: ReportJSONName}, {Name: ReportResultsName, Href: ReportResultsName},
			{Name: ReportCSVName, Href: ReportCSVName}, {Name: ReportSVGName, Href: ReportSVGName}},
		Chart: chart,
	}
	p.Tables = append(p.Tables, report.BatchTable{
		Title: "Overall", Header: aggregateHeader, Numeric: aggregateNumeric,
		Note: "Scores are means over the items with gold answers that were answered or reused; exact and substring match are after normalisation (lowercase, no punctuation or articles), F1 over tokens, each the best over the gold answers (any one is right); recall is the fraction of the gold answers found in the answer (all are expected, as in RULER's multi-value tasks).",
		Rows: [][]string{aggregateRow("all", rep.Overall)},
	})
	if g := rep.Groups; g != nil {
		p.Links = append(p.Links, report.BatchLink{Name: ReportGroupsName, Href: ReportGroupsName})
		p.Tables = append(p.Tables, report.BatchTable{
			Title:   fmt.Sprintf("Groups (%d samples per item)", g.Samples),
			Header:  []string{"items", "scored", "mean exact", "best exact", "mean substring", "best substring", "mean F1", "best F1"},
			Numeric: []bool{true, true, true, true, true, true, true, true},
			Note:    "Each item's samples are a group: its mean and best score over the scored samples, averaged over the items with at least one. The tables above count every sample; groups.jsonl has each item's line.",
			Rows: [][]string{{strconv.Itoa(g.Items), strconv.Itoa(g.Scored),
				fmt.Sprintf("%.3f", g.MeanExactMatch), fmt.Sprintf("%.3f", g.BestExactMatch),
				fmt.Sprintf("%.3f", g.MeanSubstringMatch), fmt.Sprintf("%.3f", g.BestSubstringMatch),
				fmt.Sprintf("%.3f", g.MeanF1), fmt.Sprintf("%.3f", g.BestF1)}},
		})
	}
	for _, k := range labelKeys {
		t := report.BatchTable{Title: "By " + k, Header: append([]string{k}, aggregateHeader[1:]...), Numeric: aggregateNumeric}
		for _, v := range sortedValues(rep.ByLabel[k]) {
			t.Rows = append(t.Rows, aggregateRow(v, rep.ByLabel[k][v]))
		}
		p.Tables = append(p.Tables, t)
	}
	if len(rep.LabelsOmitted) > 0 {
		p.Facts = append(p.Facts, [2]string{"Labels not broken down", strings.Join(rep.LabelsOmitted, ", ") +
			fmt.Sprintf(" (more than %d values each)", maxLabelValues)})
	}
	if failedTotal > 0 {
		t := report.BatchTable{Title: fmt.Sprintf("Failed items (%d)", failedTotal),
			Header: []string{"seq", "id", "document", "error type", "error"}, Numeric: []bool{true}, Rows: failures}
		if failedTotal > len(failures) {
			t.Note = fmt.Sprintf("The first %d; results.csv has them all.", len(failures))
		}
		p.Tables = append(p.Tables, t)
	}
	t := report.BatchTable{Title: "Items", Header: []string{"seq", "id", "status", "question", "answer (or error)", "gold answers", "substring match", "F1", "recall", "tokens"},
		Numeric: []bool{true, false, false, false, false, false, false, true, true, true}, Rows: rows}
	if rep.Overall.Items > len(rows) {
		t.Note = fmt.Sprintf("The first %d of %d; results.csv has them all.", len(rows), rep.Overall.Items)
	}
	p.Tables = append(p.Tables, t)
	return p
}

// ownReportPrefix returns where a run's report goes: prefix, unless a
// complete report of another run is there (a reset, or a re-run of the same
// workflow id), which is kept: then prefix + runs/<runID>/.
func (a *Activities) ownReportPrefix(ctx context.Context, prefix, runID string) (string, error) {
	if runID == "" {
		return prefix, nil
	}
	loc, _ := s3store.ParseURI(prefix + ReportJSONName)
	other, err := a.heldByOtherRun(ctx, loc, runID)
	if err != nil || !other {
		return prefix, err
	}
	return prefix + "runs/" + runID + "/", nil
}
