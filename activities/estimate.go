package activities

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/inference"
)

// EstimateCostName is the registered name of the EstimateCost activity.
const EstimateCostName = actwire.EstimateCostName

// estimateCost counts the tokens the questions would send and receive over
// a document of in.Chunks chunks and in.Tokens tokens, with the worker's
// templates and the request's tokenizer. Under reuse auto it also finds
// each question's (and sample's) memory checkpoint as its run would
// (findCheckpoint, the same key and chain) and counts what the runs will
// then make. It calls no model.
func (a *Activities) estimateCost(ctx context.Context, in actwire.EstimateCostInput) (*api.Estimate, error) {
	opts := in.Options.WithDefaults()
	tok, err := a.Tokenizers(opts.Tokenizer)
	if err != nil {
		return nil, badInput(err)
	}
	samples := int64(max(in.Samples, 1))
	mem, ans := int64(opts.MemoryMaxTokens), int64(opts.AnswerMaxTokens)
	chunks := int64(in.Chunks)
	approx := false
	if in.OCRPending > 0 {
		// Scanned pages not read yet: a page of prose each, in chunks
		// of their own.
		extra := int64(in.OCRPending) * api.OCRTokensPerPage
		in.Tokens += extra
		chunks += (extra + int64(opts.ChunkTokens) - 1) / int64(opts.ChunkTokens)
		in.Chunks = int(chunks)
		approx = true
	}
	reuse := in.Reuse
	if reuse == "" {
		reuse = api.ReuseAuto
	}
	out := &api.Estimate{Chunks: in.Chunks, Tokens: in.Tokens, Questions: len(in.Questions), Samples: int(samples), Tokenizer: opts.Tokenizer,
		Reuse: reuse, TokensApproximate: approx}
	reused, err := a.reusedChunks(ctx, in, reuse, int(samples))
	if err != nil {
		return nil, err
	}
	for qi, q := range in.Questions {
		update := int64(tok.Count(a.Templates.RenderUpdate(q, "", "")))
		final := int64(tok.Count(a.Templates.RenderFinal(q, "")))
		out.Calls += (chunks + 1) * samples
		out.PromptTokensMax += samples * (chunks*(update+mem) + in.Tokens + final + mem)
		out.PromptTokensTypical += samples * (chunks*(update+mem/2) + in.Tokens + final + mem/2)
		out.CompletionTokensMax += samples * (chunks*mem + ans)
		out.CompletionTokensTypical += samples * (chunks*mem/2 + ans/4)
		for _, r := range reused[qi] {
			left, leftTokens := chunks-int64(r.chunks), in.Tokens-r.tokens
			out.ChunksReused += int64(r.chunks)
			out.CallsExpected += left + 1
			out.PromptTokensExpected += left*(update+mem/2) + leftTokens + final + mem/2
			out.CompletionTokensExpected += left*mem/2 + ans/4
		}
	}
	a.estimateTime(out, chunks, samples)
	if in.PriceIn > 0 || in.PriceOut > 0 {
		out.PriceMax = (float64(out.PromptTokensMax)*in.PriceIn + float64(out.CompletionTokensMax)*in.PriceOut) / 1e6
		out.PriceTypical = (float64(out.PromptTokensTypical)*in.PriceIn + float64(out.CompletionTokensTypical)*in.PriceOut) / 1e6
		out.PriceExpected = (float64(out.PromptTokensExpected)*in.PriceIn + float64(out.CompletionTokensExpected)*in.PriceOut) / 1e6
	}
	return out, nil
}

// reuseFound is what one question's sample would start past: the chunks
// of its checkpoint and their tokens.
type reuseFound struct {
	chunks int
	tokens int64
}

// reusedChunks finds, for each question and sample, the checkpoint its run
// would start from (none under reuse none, or without the prepared
// document's index), a few questions at a time.
func (a *Activities) reusedChunks(ctx context.Context, in actwire.EstimateCostInput, reuse string, samples int) ([][]reuseFound, error) {
	out := make([][]reuseFound, len(in.Questions))
	for i := range out {
		out[i] = make([]reuseFound, samples)
	}
	if reuse == api.ReuseNone || in.IndexURI == "" {
		return out, nil
	}
	_, idx, err := a.workerIndex(ctx, in.IndexURI)
	if err != nil {
		return nil, err
	}
	opts := in.Options
	if opts.Model == "" {
		opts.Model = in.Model // as the run asks: the model it resolved
	}
	// Every lookup runs, at most 8 at once; their errors are joined.
	var g errgroup.Group
	g.SetLimit(8)
	errs := make([]error, len(in.Questions)*samples)
	for qi, q := range in.Questions {
		for s := range samples {
			g.Go(func() error {
				cp, err := a.findCheckpoint(ctx, actwire.FindCheckpointInput{
					Document: in.Document, ETag: in.ETag, IndexURI: in.IndexURI, Question: q, Options: opts, Sample: s,
				})
				if err != nil {
					errs[qi*samples+s] = err
					return nil
				}
				r := reuseFound{chunks: min(cp.Chunks, len(idx.Chunks))}
				for _, c := range idx.Chunks[:r.chunks] {
					r.tokens += int64(c.Tokens)
				}
				out[qi][s] = r
				return nil
			})
		}
	}
	_ = g.Wait() // the goroutines report into errs
	return out, errors.Join(errs...)
}

// estimateTime fills the GPU and wall time from what the worker's pool has
// measured of its own calls, when it has made any.
func (a *Activities) estimateTime(out *api.Estimate, chunks, samples int64) {
	out.PoolSlots = a.poolCapacity()
	m, ok := a.Model.(interface {
		ServiceTimes() map[string]inference.ServiceTime
	})
	if !ok {
		return
	}
	times := m.ServiceTimes()
	update, final := times[callUpdate], times[callFinal]
	if update.Calls == 0 {
		return
	}
	finalMean := final.Mean()
	if final.Calls == 0 {
		finalMean = update.Mean() // no answer measured yet: take an update's time
	}
	out.MeasuredCalls = update.Calls + final.Calls
	runs := int64(out.Questions) * samples
	gpu := time.Duration(runs) * (time.Duration(chunks)*update.Mean() + finalMean)
	out.GPUSeconds = gpu.Seconds()
	chain := time.Duration(chunks)*update.Mean() + finalMean
	wall := chain
	if out.PoolSlots > 0 {
		wall = max(chain, gpu/time.Duration(out.PoolSlots))
	}
	out.WallSeconds = wall.Seconds()
}
