package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
)

// visibility keeps what operators see of a run in step with its progress:
// the current details (a markdown line the Web UI shows on the run's page)
// and the search attributes. Current details are not a command, so every
// version sets them; upserts are commands, so only runs at version 1 of
// SearchAttributesChange issue them.
type visibility struct {
	ctx     workflow.Context
	upserts bool
	// coalesce is CoalesceUpsertsChange at version 1 (coalesceChunks):
	// chunk counts are upserted at most every progressUpsertEvery, the
	// last at lastChunks.
	coalesce   bool
	lastChunks time.Time
	// every is the least time between two chunk-count upserts:
	// progressUpsertEvery, or quietProgressUpsertEvery at
	// QuietProgressChange.
	every time.Duration
}

// coalesceChunks decides, once per run where the caller has always asked
// it, whether chunk counts are coalesced (CoalesceUpsertsChange).
func (v *visibility) coalesceChunks() {
	v.coalesceChunksAt(gates{})
}

// coalesceChunksAt is coalesceChunks with the run's gates.
func (v *visibility) coalesceChunksAt(g gates) {
	v.coalesce = g.at(v.ctx, CoalesceUpsertsChange)
	v.lastChunks = workflow.Now(v.ctx)
	v.every = progressUpsertEvery
	if g.quiet {
		v.every = quietProgressUpsertEvery
	}
}

// chunksDue reports whether a chunk count may be upserted now, and if so
// counts it as upserted.
func (v *visibility) chunksDue() bool {
	now := workflow.Now(v.ctx)
	if v.coalesce && now.Sub(v.lastChunks) < v.every {
		return false
	}
	v.lastChunks = now
	return true
}

func newVisibility(ctx workflow.Context, version workflow.Version) *visibility {
	return &visibility{ctx: ctx, upserts: version >= 1}
}

// publish sets the current details from p and upserts updates. A rejected
// upsert is logged, not returned: what operators see must never fail a run.
func (v *visibility) publish(p api.Progress, updates ...temporal.SearchAttributeUpdate) {
	workflow.SetCurrentDetails(v.ctx, details(p))
	if !v.upserts || len(updates) == 0 {
		return
	}
	if err := workflow.UpsertTypedSearchAttributes(v.ctx, updates...); err != nil {
		workflow.GetLogger(v.ctx).Warn("upsert search attributes", "err", err)
	}
}

// details renders progress as one markdown line, such as
// "**reading** · chunk 17/700 · 85K/3.5M tokens", or, when chunks were
// reused from a checkpoint, "**reading** · chunk 17/700 · 85K/3.5M tokens
// (10K read, 75K reused)".
func details(p api.Progress) string {
	line := fmt.Sprintf("**%s**", p.Stage)
	if p.ChunksTotal > 0 {
		line += fmt.Sprintf(" · chunk %d/%d · %s/%s tokens", p.ChunksDone, p.ChunksTotal,
			humanTokens(p.TokensDone), humanTokens(p.TokensTotal))
		if p.ChunksReused > 0 {
			line += fmt.Sprintf(" (%s read, %s reused)", humanTokens(p.TokensDone-p.TokensReused), humanTokens(p.TokensReused))
		}
	}
	if p.Run > 1 {
		line += fmt.Sprintf(" · run %d", p.Run)
	}
	return line
}
