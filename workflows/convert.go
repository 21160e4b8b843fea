package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/report"
)

// ConvertDocumentChange gates ConvertDocument before PrepareDocument
// (gate: see VERSIONS.md, convert-document).
const ConvertDocumentChange = "convert-document"

// convertTimeout bounds a conversion activity (ConvertDocument,
// AssembleCorpus) attempt: long enough for the OCR of a scan of
// thousands of pages on one worker.
const convertTimeout = 12 * time.Hour

// convertFirst converts the document of prep (at version 1 of
// ConvertDocumentChange) and points prep at the text to index. A text
// document is left as it is.
func convertFirst(ctx workflow.Context, hb time.Duration, prio temporal.Priority, prep *actwire.PrepareInput) error {
	return convertDocument(ctx, hb, prio, prep, false)
}

// convertDocument is convertFirst; with survey (an estimate's), the
// scanned pages of a PDF not converted yet are counted, not read
// (actwire.ConvertInput.Survey).
func convertDocument(ctx workflow.Context, hb time.Duration, prio temporal.Priority, prep *actwire.PrepareInput, survey bool) error {
	if workflow.GetVersion(ctx, ConvertDocumentChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	// A scan of thousands of pages takes hours of OCR; the converter
	// bounds its own time (a share for each OCR page), the heartbeat a
	// dead worker's, and a retry reuses the pages already read.
	actx := workflow.WithActivityOptions(ctx, activityOptions(convertTimeout, hb, prio, "convert document"))
	var out actwire.ConvertOutput
	if err := workflow.ExecuteActivity(actx, activities.ConvertDocumentName, actwire.ConvertInput{
		Document: prep.Document, OCR: prep.Options.OCR, OCRLanguages: prep.Options.OCRLanguages, Survey: survey,
	}).Get(ctx, &out); err != nil {
		return stageError("convert document", err)
	}
	if out.Source != "" {
		prep.Document, prep.Converted = out.Document, &out
	}
	return nil
}

// noteEvidence keeps a chunk's evidence entry, if it has one, pruned to
// MaxReviewEvidence as a review's are.
func (st *qaState) noteEvidence(out actwire.UpdateOutput) {
	if out.Evidence == nil {
		return
	}
	st.Evidence = append(st.Evidence, *out.Evidence)
	var dropped int
	st.Evidence, dropped = report.ReviewPruneEvidence(st.Evidence, out.Memory, api.MaxReviewEvidence)
	st.EvidenceDropped += dropped
}

// assembleCorpus has the documents of a corpus converted and written as
// one stream (AssembleCorpus), and points prep at it.
func assembleCorpus(ctx workflow.Context, hb time.Duration, prio temporal.Priority, documents []string, opts api.ModelOptions, prep *actwire.PrepareInput) error {
	// Every document is converted first, each within the converter's own
	// time limit; conversions done are kept for a retry.
	actx := workflow.WithActivityOptions(ctx, activityOptions(convertTimeout, hb, prio, fmt.Sprintf("assemble %d documents", len(documents))))
	var out actwire.ConvertOutput
	if err := workflow.ExecuteActivity(actx, activities.AssembleCorpusName, actwire.CorpusInput{
		Documents: documents, InvalidUTF8: opts.InvalidUTF8, OCR: opts.OCR, OCRLanguages: opts.OCRLanguages,
	}).Get(ctx, &out); err != nil {
		return stageError("assemble corpus", err)
	}
	prep.Document, prep.Converted = out.Document, &out
	return nil
}

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
func findCheckpointAsync(ctx workflow.Context, hb time.Duration, prio temporal.Priority, prepared actwire.PrepareOutput, question string, opts api.ModelOptions, sample int, chain string) workflow.Future {
	actx := workflow.WithActivityOptions(ctx, activityOptions(10*time.Minute, hb, prio, "find checkpoint"))
	if opts.Model == "" {
		opts.Model = prepared.Model
	}
	return workflow.ExecuteActivity(actx, activities.FindCheckpointName, actwire.FindCheckpointInput{
		Document: prepared.Document, ETag: prepared.ETag, IndexURI: prepared.IndexURI,
		Question: question, Options: opts, Sample: sample, FirstRunID: chain,
	})
}

// evidenceChunks are the chunks of a run's evidence entries, which its
// checkpoints keep (nil without checkpoints).
func evidenceChunks(checkpoints bool, ev []api.ReviewEvidence) []int {
	if !checkpoints || len(ev) == 0 {
		return nil
	}
	chunks := make([]int, len(ev))
	for i, e := range ev {
		chunks[i] = e.Chunk
	}
	return chunks
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
