package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// CheckpointsChange gates corpora and memory checkpoints (gate: see
// VERSIONS.md, corpus-checkpoints).
const CheckpointsChange = "corpus-checkpoints"

// ProvenanceChange gates telling FindCheckpoint and the memory updates the
// run's chain, so that a checkpoint names the reading that wrote it only
// to that reading's own chain (gate: see VERSIONS.md, reader-provenance).
// The activity cites reused chunks' evidence in the reader's own document
// whatever the version.
const ProvenanceChange = "reader-provenance"

// findCheckpoint asks for the deepest memory checkpoint of an earlier
// reading of the prepared chunks with the same question and options.
func findCheckpoint(ctx workflow.Context, hb time.Duration, prio temporal.Priority, prepared actwire.PrepareOutput, question string, opts api.ModelOptions, sample int, chain string) (actwire.FindCheckpointOutput, error) {
	var out actwire.FindCheckpointOutput
	if err := findCheckpointAsync(ctx, hb, prio, prepared, question, opts, sample, chain).Get(ctx, &out); err != nil {
		return out, stageError("find checkpoint", err)
	}
	return out, nil
}

// findCheckpointAsync starts FindCheckpoint; its future's value is a
// FindCheckpointOutput.
func findCheckpointAsync(ctx workflow.Context, hb time.Duration, prio temporal.Priority, prepared actwire.PrepareOutput, question string, opts api.ModelOptions, sample int, chain string) actwire.Future[actwire.FindCheckpointOutput] {
	actx := workflow.WithActivityOptions(ctx, activityOptions(10*time.Minute, hb, prio, "find checkpoint"))
	if opts.Model == "" {
		opts.Model = prepared.Model
	}
	return actwire.FindCheckpoint.Execute(actx, actwire.FindCheckpointInput{
		Document: prepared.Document, ETag: prepared.ETag, IndexURI: prepared.IndexURI,
		Question: question, Options: opts, Sample: sample, FirstRunID: chain,
	})
}

// provenanceChain is the run's chain for FindCheckpoint and the memory
// updates (ProvenanceChange), "" before it.
func provenanceChain(provenance bool, info *workflow.Info) string {
	if !provenance {
		return ""
	}
	return chainID(info)
}

// namedReuse is the ReusedFrom a result shows: only one that names a run,
// which FindCheckpoint returns for the reader's own chain alone.
func namedReuse(from *api.ReusedFrom) *api.ReusedFrom {
	if from == nil || from.WorkflowID == "" {
		return nil
	}
	return from
}

// reusedReading says whose reading the reused chunks came from
// (ProvenanceChange): the run's own chain when FindCheckpoint named it,
// else an earlier reading of the same text; "" when nothing was reused.
func reusedReading(provenance bool, from *api.ReusedFrom) string {
	switch {
	case !provenance || from == nil || from.Chunk == 0:
		return ""
	case from.WorkflowID != "":
		return api.ReusedOwnRun
	}
	return api.ReusedEarlierReading
}

// chunksReused is how many chunks a run took from the checkpoint it
// started from (none without one).
func chunksReused(from *api.ReusedFrom) int {
	if from == nil {
		return 0
	}
	return from.Chunk
}

// tokensReused is how many tokens the chunks a checkpoint covers hold: as
// FindCheckpoint counted them, or, from a worker from before it counted,
// the document's tokens in proportion (chunks are the same size but the
// last).
func tokensReused(cp actwire.FindCheckpointOutput, chunks int, tokens int64) int64 {
	switch {
	case cp.Tokens > 0 || cp.Chunks <= 0 || chunks <= 0:
		return cp.Tokens
	case cp.Chunks >= chunks:
		return tokens
	}
	return tokens * int64(cp.Chunks) / int64(chunks)
}

// AnswerReuseChange gates answer reuse in ReviewDocument (gate: see
// VERSIONS.md, reuse-answers): every answer is kept beside the memory
// checkpoints (AnswerInput.KeepAnswer), and a question that reused every
// chunk takes the answer kept for the memory it reached, with no call
// (AnswerInput.ReuseAnswer). The activity decides whether one is kept.
const AnswerReuseChange = "reuse-answers"
