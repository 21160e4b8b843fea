package activities

import (
	"context"
	"time"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/inference"
)

// EstimateCostName is the registered name of the EstimateCost activity.
const EstimateCostName = "memagent.EstimateCost"

// estimateCost counts the tokens the questions would send and receive over
// a document of in.Chunks chunks and in.Tokens tokens, with the worker's
// templates and the request's tokenizer. It calls no model.
func (a *Activities) estimateCost(_ context.Context, in actwire.EstimateCostInput) (*api.Estimate, error) {
	opts := in.Options.WithDefaults()
	tok, err := a.Tokenizers(opts.Tokenizer)
	if err != nil {
		return nil, badInput(err)
	}
	samples := int64(max(in.Samples, 1))
	mem, ans := int64(opts.MemoryMaxTokens), int64(opts.AnswerMaxTokens)
	chunks := int64(in.Chunks)
	out := &api.Estimate{Chunks: in.Chunks, Tokens: in.Tokens, Questions: len(in.Questions), Samples: int(samples), Tokenizer: opts.Tokenizer}
	for _, q := range in.Questions {
		update := int64(tok.Count(a.Templates.RenderUpdate(q, "", "")))
		final := int64(tok.Count(a.Templates.RenderFinal(q, "")))
		out.Calls += (chunks + 1) * samples
		out.PromptTokensMax += samples * (chunks*(update+mem) + in.Tokens + final + mem)
		out.PromptTokensTypical += samples * (chunks*(update+mem/2) + in.Tokens + final + mem/2)
		out.CompletionTokensMax += samples * (chunks*mem + ans)
		out.CompletionTokensTypical += samples * (chunks*mem/2 + ans/4)
	}
	a.estimateTime(out, chunks, samples)
	if in.PriceIn > 0 || in.PriceOut > 0 {
		out.PriceMax = (float64(out.PromptTokensMax)*in.PriceIn + float64(out.CompletionTokensMax)*in.PriceOut) / 1e6
		out.PriceTypical = (float64(out.PromptTokensTypical)*in.PriceIn + float64(out.CompletionTokensTypical)*in.PriceOut) / 1e6
	}
	return out, nil
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
