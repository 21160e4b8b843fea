package activities

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/report"
	"github.com/memagent/memagent/internal/s3store"
)

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
	return sampleKey(AnswerKey(document, etag, question, opts, templates), sample)
}

// sampleKey is the key of sample of the answer whose first sample's key is
// key.
func sampleKey(key string, sample int) string {
	if sample == 0 {
		return key
	}
	b, _ := json.Marshal(struct {
		K string
		S int
	}{key, sample})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:16])
}

// DocumentVersion is one document of a corpus as a HEAD saw it.
type DocumentVersion struct {
	URI  string `json:"u"`
	ETag string `json:"e"`
	Size int64  `json:"s"`
}

// CorpusAnswerKey names the answer to one question about a corpus (a
// manifest item's documents) as AnswerKey does about one document: it
// covers every document's URI, ETag and size, in reading order, so that a
// changed, added, removed or reordered document never finds an earlier
// answer. Its hashed value has a shape of its own, so it never equals a
// single document's key.
func CorpusAnswerKey(docs []DocumentVersion, question string, opts api.ModelOptions, templates memagent.Templates) string {
	b, _ := json.Marshal(struct {
		C    []DocumentVersion
		Q    string
		O    api.ModelOptions
		U, F string
	}{docs, question, opts, templates.Update, templates.Final})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:16])
}

// answers reports whether a cached result is an answer to the item: the
// same document, question, model and options it was cached under (the key
// names them, but anything written under answers/ is checked before it is
// reused).
func answers(res api.DocumentQAResult, it report.ManifestItem, opts api.ModelOptions) bool {
	if len(it.Documents) > 0 {
		if !slices.Equal(res.Documents, it.Documents) {
			return false
		}
	} else if res.Document != it.Document && res.Source != it.Document {
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

// resolveBatchPage settles what it can of one page at once: items whose
// answer is already in the bucket (same document version, question, model,
// options and templates) are reused, with their scores computed against
// this item's gold answers; items whose document does not exist fail with
// memagent.DocumentNotFound. Their outcomes go to one part; the other items
// are returned, each with the output prefix its DocumentQA run writes to.
// With samples > 1 each item is that many units, each settled or returned
// on its own (SampleAnswerKey). A whole batch (in.Whole) reuses no earlier
// answer: every unit whose documents exist is returned to run.
//
// It runs in stages: check each distinct document once (checkDocuments),
// look up each unit's earlier answer (lookUpAnswers), settle the units
// (settleUnits: failed, reused, or to run, longest first) and write the
// settled outcomes to the page's part (writeSettled).
func (a *Activities) resolveBatchPage(ctx context.Context, in actwire.ResolvePageInput) (*actwire.ResolvePageOutput, error) {
	defer a.startHeartbeat(ctx)()
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

	// One HEAD per distinct document (of a single-document item or of a
	// corpus), then one GET per item's answer key, each at most
	// resolveParallel at once.
	docs, err := a.checkDocuments(ctx, items)
	if err != nil {
		return nil, err
	}
	p := &pageUnits{items: items, samples: max(in.Samples, 1), docs: docs}
	if err := a.lookUpAnswers(ctx, p, opts, in.Whole); err != nil {
		return nil, err
	}
	out, settled, err := a.settleUnits(p)
	if err != nil {
		return nil, err
	}
	if err := a.writeSettled(ctx, in, settled, out); err != nil {
		return nil, err
	}
	a.logger().InfoContext(ctx, "batch page resolved", "page", in.Page, "items", len(items),
		"run", len(out.Run), "reused", out.Reused, "failed", out.Failed)
	return out, nil
}

// checkDocuments HEADs each distinct document of the items once, at most
// resolveParallel at once, and returns their states by URI. A document the
// worker may not read is denied, never HEADed; one that does not exist is
// missing; any other failure to check one is the error returned.
func (a *Activities) checkDocuments(ctx context.Context, items []report.ManifestItem) (map[string]*docState, error) {
	docs := make(map[string]*docState)
	var uris []string
	for _, it := range items {
		for _, d := range itemDocuments(it) {
			if docs[d] == nil {
				// A document this worker may not read is never looked at:
				// not even a HEAD, whose answer (it exists, its size) would
				// tell the caller something.
				docs[d] = &docState{denied: a.allowRead("document", d)}
				uris = append(uris, d)
			}
		}
	}
	parallel(ctx, len(uris), func(i int) { a.headDocument(ctx, uris[i], docs[uris[i]]) })
	for _, u := range uris {
		if err := docs[u].err; err != nil {
			return nil, fmt.Errorf("check document %s: %w", u, err)
		}
	}
	return docs, nil
}

// headDocument fills in st, the state of the document at uri, unless it
// is denied already.
func (a *Activities) headDocument(ctx context.Context, uri string, st *docState) {
	if st.denied != nil {
		return
	}
	// Nor one under another workflow's claimed prefix (its outputs).
	if err := a.allowInput(ctx, "document", uri, reader{}); err != nil {
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) {
			st.denied = err
		} else {
			st.err = err
		}
		return
	}
	loc, err := s3store.ParseURI(uri)
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
}

// pageUnits are a page's units: unit u is sample u%samples of item
// u/samples. lookUpAnswers fills in each unit's answer key (empty for a
// unit whose documents cannot be read) and the earlier answer it reuses.
type pageUnits struct {
	items   []report.ManifestItem
	samples int
	docs    map[string]*docState
	keys    []string
	cached  []*api.DocumentQAResult
}

// lookUpAnswers computes each readable unit's answer key and, unless the
// batch is whole, reads the answer kept under it, at most resolveParallel
// at once: an answer is reused only if it answers the unit's item (see
// answers).
func (a *Activities) lookUpAnswers(ctx context.Context, p *pageUnits, opts api.ModelOptions, whole bool) error {
	units := len(p.items) * p.samples
	p.keys = make([]string, units)
	p.cached = make([]*api.DocumentQAResult, units)
	errs := make([]error, units)
	parallel(ctx, units, func(u int) {
		it := p.items[u/p.samples]
		if _, bad := itemDocState(it, p.docs); bad != nil {
			return
		}
		p.keys[u] = sampleKey(itemAnswerKey(it, p.docs, opts, a.Templates), u%p.samples)
		if whole {
			return
		}
		data, err := a.Store.ReadAll(ctx, s3store.Location{Bucket: a.Bucket, Key: "answers/" + p.keys[u] + "/result.json"})
		switch {
		case errors.Is(err, s3store.ErrNotFound):
		case err != nil:
			errs[u] = err
		default:
			var res api.DocumentQAResult
			if json.Unmarshal(data, &res) == nil && res.ResultURI != "" && answers(res, it, opts) {
				p.cached[u] = &res
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("look up earlier answers: %w", err)
	}
	return ctx.Err()
}

// settleUnits settles each unit in order: failed (a document denied or
// missing) or reused, their outcomes encoded as JSON Lines in settled; or
// returned to run in out.Run, longest documents first.
func (a *Activities) settleUnits(p *pageUnits) (out *actwire.ResolvePageOutput, settled *bytes.Buffer, err error) {
	out, settled = &actwire.ResolvePageOutput{}, &bytes.Buffer{}
	enc := json.NewEncoder(settled)
	for u := range len(p.items) * p.samples {
		it, sample := p.items[u/p.samples], u%p.samples
		r := api.BatchItemResult{Seq: it.Seq, Sample: sample, ID: it.ID, Document: it.Document, Documents: it.Documents,
			Question: it.Question, GoldAnswers: it.Answers, Labels: it.Labels}
		badURI, bad := itemDocState(it, p.docs)
		switch {
		case bad != nil:
			failedUnit(&r, badURI, bad)
			out.Failed++
		case p.cached[u] != nil:
			a.reusedUnit(&r, it, p.cached[u], p.keys[u])
			out.Reused++
		default:
			out.Run = append(out.Run, a.runUnit(it, sample, p.keys[u], p.docs))
			continue
		}
		if err := enc.Encode(r); err != nil {
			return nil, nil, fmt.Errorf("encode outcome of item %d: %w", it.Seq, err)
		}
	}
	// Longest first: a long document started last would run alone at the
	// end while the pool idles.
	slices.SortStableFunc(out.Run, func(x, y actwire.BatchRunItem) int { return cmp.Compare(y.DocumentBytes, x.DocumentBytes) })
	return out, settled, nil
}

// failedUnit makes r the outcome of a unit whose document badURI, in state
// bad, the worker may not read (the refusal's type and message) or does
// not exist (memagent.DocumentNotFound).
func failedUnit(r *api.BatchItemResult, badURI string, bad *docState) {
	r.Status = api.ItemFailed
	if bad.denied != nil {
		var appErr *temporal.ApplicationError
		errors.As(bad.denied, &appErr)
		r.ErrorType = appErr.Type()
		r.Error = appErr.Message()
		return
	}
	r.ErrorType = api.ErrDocumentNotFound
	r.Error = fmt.Sprintf("%s does not exist: check the URI and that the worker's credentials can read it", badURI)
}

// reusedUnit makes r the outcome of a unit answered by c, kept under key,
// scored against the item's own gold answers.
func (a *Activities) reusedUnit(r *api.BatchItemResult, it report.ManifestItem, c *api.DocumentQAResult, key string) {
	r.Status = api.ItemReused
	r.Answer, r.AnswerFound = c.Answer, c.AnswerFound
	if r.AnswerFound && memagent.IsNoAnswer(r.Answer) {
		// An answer kept from before the no-answer rule.
		r.AnswerFound, c.AnswerPages, c.Grounding = false, "", &api.Grounding{Status: api.GroundingNoAnswer}
	}
	if len(it.Answers) > 0 {
		s := memagent.Score(scoredAnswer(c.Answer, c.AnswerFound), it.Answers)
		r.Scores = &s
	}
	// The reader's names, not the writer's: no run of this batch
	// answered it, and the cache entry is where the answer is.
	r.Chunks, r.Tokens, r.ResultURI = c.Chunks, c.Tokens, "s3://"+a.Bucket+"/answers/"+key+"/result.json"
	r.AnswerPages, r.Grounding, r.AnswerSources = c.AnswerPages, c.Grounding, c.AnswerSources
}

// runUnit is a unit to run, writing under its answer key, with its size in
// JSON (Bytes) for the workflow to bound what it carries.
func (a *Activities) runUnit(it report.ManifestItem, sample int, key string, docs map[string]*docState) actwire.BatchRunItem {
	run := actwire.BatchRunItem{
		Seq: it.Seq, Sample: sample, ID: it.ID, Document: it.Document, Documents: it.Documents,
		Question: it.Question, GoldAnswers: it.Answers, Labels: it.Labels,
		OutputPrefix: a.answersPrefix() + key + "/",
		FairnessKey:  it.FairnessKey, DocumentBytes: itemBytes(it, docs),
	}
	if b, err := json.Marshal(run); err == nil {
		run.Bytes = len(b)
	}
	return run
}

// writeSettled writes the settled outcomes, if any, to the page's part and
// names it in out.
func (a *Activities) writeSettled(ctx context.Context, in actwire.ResolvePageInput, settled *bytes.Buffer, out *actwire.ResolvePageOutput) error {
	if settled.Len() == 0 {
		return nil
	}
	out.Part = in.WorkPrefix + fmt.Sprintf("parts/page-%06d.jsonl", in.Page)
	loc, err := s3store.ParseURI(out.Part)
	if err != nil {
		return badInput(err)
	}
	if err := a.Store.Put(ctx, loc, settled.Bytes(), "application/x-ndjson"); err != nil {
		return fmt.Errorf("write outcomes of page %d: %w", in.Page, err)
	}
	return nil
}

// itemDocuments are the documents an item reads: its corpus, or its one
// document.
func itemDocuments(it report.ManifestItem) []string {
	if len(it.Documents) > 0 {
		return it.Documents
	}
	return []string{it.Document}
}

// itemDocState is the first document of an item that the worker may not
// read or that does not exist, with its state; nil when all are readable.
// A denied document is reported before a missing one, so that an item's
// outcome never depends on the existence of a document it may not read.
func itemDocState(it report.ManifestItem, docs map[string]*docState) (string, *docState) {
	ds := itemDocuments(it)
	for _, d := range ds {
		if docs[d].denied != nil {
			return d, docs[d]
		}
	}
	for _, d := range ds {
		if docs[d].missing {
			return d, docs[d]
		}
	}
	return "", nil
}

// itemAnswerKey is the answer key of an item's first sample: AnswerKey of
// its document, or CorpusAnswerKey of its documents' versions.
func itemAnswerKey(it report.ManifestItem, docs map[string]*docState, opts api.ModelOptions, templates memagent.Templates) string {
	if len(it.Documents) == 0 {
		return AnswerKey(it.Document, docs[it.Document].etag, it.Question, opts, templates)
	}
	vs := make([]DocumentVersion, len(it.Documents))
	for i, d := range it.Documents {
		vs[i] = DocumentVersion{URI: d, ETag: docs[d].etag, Size: docs[d].size}
	}
	return CorpusAnswerKey(vs, it.Question, opts, templates)
}

// itemBytes is the size of what an item reads: its document's, or the sum
// of its documents'.
func itemBytes(it report.ManifestItem, docs map[string]*docState) int64 {
	var n int64
	for _, d := range itemDocuments(it) {
		n += docs[d].size
	}
	return n
}

// parallel calls f(0..n-1) with at most resolveParallel calls at once,
// starting no more once ctx is done.
func parallel(ctx context.Context, n int, f func(i int)) {
	var g errgroup.Group
	g.SetLimit(resolveParallel)
	for i := 0; i < n; i++ {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			f(i)
			if activity.IsActivity(ctx) {
				activity.RecordHeartbeat(ctx)
			}
			return nil
		})
	}
	_ = g.Wait() // f reports its own errors
}
