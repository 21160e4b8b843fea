// This file prepares a document: the checks before any read, the chunk
// index made once per object version and reused, and the worker's
// indexing slots.

package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/s3store"
)

// prepareDocument streams the document once, cuts it into chunks and stores
// the chunk index in S3, or reuses the index of the same object version,
// tokenizer and chunk size.
func (a *Activities) prepareDocument(ctx context.Context, in actwire.PrepareInput) (*actwire.PrepareOutput, error) {
	// Heartbeats for the whole activity: the index write after a long
	// read must not look like a dead worker.
	ctx, hb := a.beginHeartbeat(ctx)
	defer hb.stop()
	req, err := a.checkPrepare(ctx, in)
	if err != nil {
		return nil, err
	}
	limits := a.Limits.withDefaults()
	info, err := a.headPrepared(ctx, in.Document, req.loc, limits)
	if err != nil {
		return nil, err
	}
	out := &actwire.PrepareOutput{
		Document:    in.Document,
		ETag:        info.ETag,
		Tokenizer:   req.tok.Name(),
		ChunkTokens: req.opts.ChunkTokens,
		Model:       a.modelName(req.opts),
	}
	indexLoc := s3store.Location{Bucket: a.Bucket, Key: indexKey(in.Document, info, req.tok.Name(), req.opts.ChunkTokens)}
	out.IndexURI = indexLoc.String()
	idx, err := a.indexOnce(ctx, in, req, info, indexLoc, out)
	if err != nil {
		return nil, err
	}
	if err := describePrepared(in, req.opts, limits, idx, out); err != nil {
		return nil, err
	}
	a.logger().InfoContext(ctx, "document prepared",
		"document", in.Document, "chunks", out.Chunks, "tokens", out.Tokens, "bytes", out.Bytes, "reused_index", out.Reused)
	return out, nil
}

// prepareRequest is a PrepareInput checked: its options with defaults,
// the document's location, the corpus map of a corpus, and the tokenizer.
type prepareRequest struct {
	opts   api.ModelOptions
	loc    s3store.Location
	corpus *memagent.CorpusMap
	tok    memagent.Tokenizer
}

// checkPrepare refuses, before any read of the document, bad options, a
// bad question or URI, a document (or corpus) the worker may not read, an
// output prefix it may not claim, an unknown tokenizer and a prompt over
// the model's context.
func (a *Activities) checkPrepare(ctx context.Context, in actwire.PrepareInput) (prepareRequest, error) {
	var req prepareRequest
	if err := in.Options.Validate(); err != nil {
		return req, badInput(err)
	}
	req.opts = in.Options.WithDefaults()
	if err := api.CheckQuestion(in.Question); err != nil {
		return req, badInput(err)
	}
	var err error
	if req.loc, err = s3store.ParseURI(in.Document); err != nil {
		return req, badInput(err)
	}
	if in.Converted != nil && in.Converted.Format == actwire.FormatCorpus {
		if req.corpus, err = a.allowReadCorpus(ctx, in); err != nil {
			return req, err
		}
	} else if err := a.allowReadDocument(ctx, in); err != nil {
		return req, err
	}
	if in.OutputPrefix != "" {
		if err := a.claimPrefix(ctx, "output_prefix", in.OutputPrefix, claim{WorkflowID: in.WorkflowID, FirstRunID: in.FirstRunID}); err != nil {
			return req, err
		}
	}
	if req.tok, err = a.Tokenizers(req.opts.Tokenizer); err != nil {
		return req, badInput(err)
	}
	if err := a.checkServed(ctx, req.opts.Model); err != nil {
		return req, err
	}
	if err := CheckBudget(req.tok, a.Templates, in.Question, req.opts, a.MaxModelLen); err != nil {
		return req, temporal.NewNonRetryableApplicationError(err.Error(), api.ErrPromptTooLong, nil)
	}
	return req, nil
}

// headPrepared is the document's size and version, refusing an empty
// document or one over the worker's limit.
func (a *Activities) headPrepared(ctx context.Context, uri string, loc s3store.Location, limits Limits) (s3store.ObjectInfo, error) {
	info, err := a.Store.Head(ctx, loc)
	if err != nil {
		return info, storeError(err, uri)
	}
	if info.Size == 0 {
		return info, badInput(fmt.Errorf("document %s is empty", uri))
	}
	if info.Size > limits.MaxDocumentBytes {
		return info, badInput(fmt.Errorf("document %s is %d bytes, over the worker's limit of %d: split it, or raise the limit on the worker", uri, info.Size, limits.MaxDocumentBytes))
	}
	return info, nil
}

// indexOnce reuses the index at indexLoc when it describes this version,
// tokenizer and chunk size (setting out.Reused), else plans the document
// and writes its index, with the corpus map or page map.
func (a *Activities) indexOnce(ctx context.Context, in actwire.PrepareInput, req prepareRequest, info s3store.ObjectInfo, indexLoc s3store.Location, out *actwire.PrepareOutput) (*memagent.ChunkIndex, error) {
	// Runs that ask about the same new document at the same time (the
	// questions of a batch, say) would each stream and index it: in this
	// process, the first indexes it and the others wait, then read its index.
	unlock, err := a.lockPlan(ctx, out.IndexURI)
	if err != nil {
		return nil, err
	}
	defer unlock()
	idx, err := a.readIndex(ctx, indexLoc)
	switch {
	case err == nil && idx.Version == memagent.ChunkIndexVersion && idx.Tokenizer == req.tok.Name() && idx.ChunkTokens == req.opts.ChunkTokens && (idx.Bytes == info.Size || idx.Source != ""):
		out.Reused = true
		return idx, nil
	case err == nil || errors.Is(err, s3store.ErrNotFound):
		return a.writeNewIndex(ctx, in, req, info, indexLoc)
	default:
		return nil, fmt.Errorf("read chunk index: %w", err)
	}
}

// writeNewIndex plans the document and writes its index to indexLoc.
func (a *Activities) writeNewIndex(ctx context.Context, in actwire.PrepareInput, req prepareRequest, info s3store.ObjectInfo, indexLoc s3store.Location) (*memagent.ChunkIndex, error) {
	idx, err := a.plan(ctx, in.Document, req.loc, info, req.tok, req.opts)
	if err != nil {
		return nil, err
	}
	if req.corpus != nil {
		idx.Corpus = req.corpus
	} else if idx.PageMap, err = a.pageMapOf(ctx, in); err != nil {
		return nil, err
	}
	data, err := json.Marshal(idx)
	if err != nil {
		return nil, fmt.Errorf("encode chunk index: %w", err)
	}
	if err := a.Store.Put(ctx, indexLoc, data, "application/json"); err != nil {
		return nil, fmt.Errorf("write chunk index: %w", err)
	}
	a.cacheIndex(indexLoc.String(), idx)
	return idx, nil
}

// describePrepared fills out from the index and the converted source,
// refusing a document with more chunks than the worker's limit, or one
// whose invalid bytes an earlier run replaced when this one rejects them.
func describePrepared(in actwire.PrepareInput, opts api.ModelOptions, limits Limits, idx *memagent.ChunkIndex, out *actwire.PrepareOutput) error {
	if len(idx.Chunks) > limits.MaxChunks {
		return badInput(fmt.Errorf("document %s has %d chunks, over the worker's limit of %d: raise options.chunk_tokens or split the document", in.Document, len(idx.Chunks), limits.MaxChunks))
	}
	out.SHA256, out.Bytes, out.Tokens, out.Chunks = idx.SHA256, idx.Bytes, idx.Tokens, len(idx.Chunks)
	if c := in.Converted; c != nil {
		out.Source, out.Format, out.Unit, out.Pages = c.Source, c.Format, c.Unit, c.Pages
	}
	if idx.Source != "" {
		if opts.InvalidUTF8 != api.InvalidUTF8Replace {
			// An earlier run replaced this document's invalid bytes; this
			// one asked to reject them.
			return badInput(fmt.Errorf("document %s is not UTF-8 text (%d invalid bytes); convert it to UTF-8 first, or ask with invalid_utf8 \"replace\"", in.Document, idx.Replaced))
		}
		out.Document, out.ETag, out.InvalidBytesReplaced = idx.Source, idx.SourceETag, idx.Replaced
	}
	return nil
}

// plan indexes a document in one of the worker's indexing slots, guarded
// against a document that takes its worker down (guardHeavy).
func (a *Activities) plan(ctx context.Context, uri string, loc s3store.Location, info s3store.ObjectInfo, tok memagent.Tokenizer, opts api.ModelOptions) (*memagent.ChunkIndex, error) {
	release, err := a.planSlot(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	ended, err := a.guardHeavy(ctx, "indexing", uri)
	if err != nil {
		return nil, err
	}
	idx, err := a.planDocument(ctx, loc, info, tok, opts.ChunkTokens, opts.InvalidUTF8 == api.InvalidUTF8Replace)
	ended()
	return idx, err
}

// planSlot waits for one of the worker's PlanConcurrency indexing slots,
// first come first served.
func (a *Activities) planSlot(ctx context.Context) (release func(), err error) {
	a.planOnce.Do(func() {
		n := a.PlanConcurrency
		if n <= 0 {
			n = runtime.GOMAXPROCS(0)
		}
		a.planSem = make(chan struct{}, n)
	})
	select {
	case a.planSem <- struct{}{}:
		return func() { <-a.planSem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (a *Activities) planDocument(ctx context.Context, loc s3store.Location, info s3store.ObjectInfo, tok memagent.Tokenizer, chunkTokens int, replace bool) (*memagent.ChunkIndex, error) {
	body, err := a.Store.Open(ctx, loc, info.ETag)
	if err != nil {
		return nil, storeError(err, loc.String())
	}
	defer body.Close()
	r := &heartbeatReader{ctx: ctx, r: body, every: a.heartbeatEvery(ctx)}
	idx, err := memagent.PlanChunks(r, tok, chunkTokens)
	var invalid *memagent.InvalidUTF8Error
	switch {
	case err == nil:
		return idx, nil
	case r.err != nil:
		// The read itself failed (network, object replaced): not bad input.
		return nil, storeError(r.err, loc.String())
	case errors.Is(err, memagent.ErrEmptyDocument):
		return nil, badInput(fmt.Errorf("document %s has no text (empty or only whitespace)", loc))
	case errors.As(err, &invalid) && replace:
		return a.planReplaced(ctx, loc, info, tok, chunkTokens)
	case errors.As(err, &invalid):
		return nil, badInput(fmt.Errorf("document %s is not UTF-8 text: invalid byte at offset %d; convert it to UTF-8 first, or ask with invalid_utf8 \"replace\"", loc, invalid.Offset))
	default:
		return nil, badInput(fmt.Errorf("plan chunks of %s: %w", loc, err))
	}
}

// planReplaced writes a copy of the document with its invalid UTF-8 bytes
// replaced (through a temporary file, so nothing is held in memory),
// uploads it next to the indexes and plans the copy.
func (a *Activities) planReplaced(ctx context.Context, loc s3store.Location, info s3store.ObjectInfo, tok memagent.Tokenizer, chunkTokens int) (*memagent.ChunkIndex, error) {
	body, err := a.Store.Open(ctx, loc, info.ETag)
	if err != nil {
		return nil, storeError(err, loc.String())
	}
	defer body.Close()
	f, err := os.CreateTemp("", "memagent-utf8-*")
	if err != nil {
		return nil, fmt.Errorf("replace invalid UTF-8: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	rep := memagent.NewUTF8Replacer(&heartbeatReader{ctx: ctx, r: body, every: a.heartbeatEvery(ctx)})
	size, err := io.Copy(f, rep)
	if err != nil {
		return nil, fmt.Errorf("replace invalid UTF-8 in %s: %w", loc, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	clean := s3store.Location{Bucket: a.Bucket, Key: "documents/utf8-replaced/" + versionID(loc.String(), info) + ".txt"}
	if err := a.Store.PutReader(ctx, clean, f, size, "text/plain; charset=utf-8"); err != nil {
		return nil, fmt.Errorf("upload UTF-8 copy of %s: %w", loc, err)
	}
	cleanInfo, err := a.Store.Head(ctx, clean)
	if err != nil {
		return nil, fmt.Errorf("upload UTF-8 copy of %s: %w", loc, err)
	}
	idx, err := a.planDocument(ctx, clean, cleanInfo, tok, chunkTokens, false)
	if err != nil {
		return nil, err
	}
	idx.Source, idx.SourceETag, idx.Replaced = clean.String(), cleanInfo.ETag, rep.Replaced()
	a.logger().WarnContext(ctx, "invalid UTF-8 bytes replaced", "document", loc.String(), "replaced", rep.Replaced(), "copy", clean.String())
	return idx, nil
}

// workerIndex loads a chunk index the worker made: one under indexes/ in
// its bucket, whatever else a caller names.
func (a *Activities) workerIndex(ctx context.Context, uri string) (s3store.Location, *memagent.ChunkIndex, error) {
	loc, err := s3store.ParseURI(uri)
	if err != nil {
		return loc, nil, badInput(fmt.Errorf("index uri: %w", err))
	}
	if loc.Bucket != a.Bucket || !strings.HasPrefix(loc.Key, "indexes/") {
		return loc, nil, forbidden("index %s is not one this worker made (under s3://%s/indexes/)", uri, a.Bucket)
	}
	idx, err := a.loadIndex(ctx, loc)
	if err != nil {
		return loc, nil, storeError(err, uri)
	}
	return loc, idx, nil
}

// checkServed refuses, as memagent.BadInput, a model the model servers do
// not serve now (Served), before any model call: the starter checked this
// itself once, through a model pool of its own. A list that cannot be had
// leaves the check to the first model call.
func (a *Activities) checkServed(ctx context.Context, model string) error {
	if model == "" || a.Served == nil {
		return nil
	}
	served, err := a.Served(ctx)
	if err != nil || len(served) == 0 || slices.Contains(served, model) {
		return nil
	}
	return badInput(fmt.Errorf("model %q is not served at the model URL (it serves %v): fix options.model / MEMAGENT_MODEL", model, served))
}
