package workflows

import (
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// Estimate is the memagent.Estimate workflow: it converts and indexes the
// document as a run would (ConvertDocument, PrepareDocument: the index is
// the one a later run with the same options reuses, and a prompt that
// cannot fit the model fails here as memagent.PromptTooLong), then counts
// what the questions would cost (EstimateCost): read afresh, and, under
// reuse auto, from the memory checkpoints their runs would find. It never
// calls the model.
// Its one argument is an api.EstimateInput as JSON, decoded strictly; it
// returns an api.Estimate.
func Estimate(ctx workflow.Context, input converter.RawValue) (*api.Estimate, error) {
	edge := newBoundary(ctx)
	var in api.EstimateInput
	if err := edge.decode(input, &in); err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, badInput(err)
	}
	prio := taskPriority(ctx, api.Scheduling{}, api.PriorityQuestion)
	longest := in.Questions[0]
	for _, q := range in.Questions {
		if len(q) > len(longest) {
			longest = q
		}
	}
	prep := actwire.PrepareInput{Document: in.Document, Question: longest, Options: in.Options}
	if len(in.Documents) > 0 {
		// A corpus is priced as the stream a run reads.
		if err := assembleCorpus(ctx, DefaultHeartbeatTimeout, prio, in.Documents, in.Options, &prep); err != nil {
			return nil, err
		}
	} else if err := convertDocument(ctx, gates{}, DefaultHeartbeatTimeout, prio, &prep, true); err != nil {
		return nil, err
	}
	actx := workflow.WithActivityOptions(ctx, activityOptions(30*time.Minute, DefaultHeartbeatTimeout, prio, "prepare document"))
	var prepared actwire.PrepareOutput
	if err := actwire.PrepareDocument.Execute(actx, prep).Get(ctx, &prepared); err != nil {
		return nil, stageError("prepare document", err)
	}
	var est api.Estimate
	cost := activityOptions(10*time.Minute, 0, prio, "count the cost")
	// Unlike the other activities, EstimateCost keeps eager execution at
	// batch priority.
	cost.DisableEagerExecution = false
	if err := actwire.EstimateCost.Execute(workflow.WithActivityOptions(ctx, cost), actwire.EstimateCostInput{
		Questions: in.Questions, Options: in.Options, Samples: in.Samples, Chunks: prepared.Chunks, Tokens: prepared.Tokens,
		PriceIn: in.PriceInPerMillion, PriceOut: in.PriceOutPerMillion,
		Reuse: in.Reuse, Document: prepared.Document, ETag: prepared.ETag, IndexURI: prepared.IndexURI, Model: prepared.Model,
		OCRPending: ocrPending(prep.Converted),
	}).Get(ctx, &est); err != nil {
		return nil, stageError("count the cost", err)
	}
	est.Document, est.Source, est.Model, est.IndexURI = in.Document, prepared.Source, prepared.Model, prepared.IndexURI
	est.Documents = in.Documents
	if c := prep.Converted; c != nil {
		est.OCRPages, est.OCRPagesPending, est.OCRSecondsExpected = c.OCRPages, c.OCRPending-c.OCRCached, c.OCRSecondsExpected
	}
	if est.Document == "" {
		// A corpus: the stream its runs read, as a DocumentQA result names it.
		est.Document = prepared.Document
	}
	if est.Reuse == "" {
		// A worker from before reuse was estimated: the fresh figures.
		est.Reuse, est.CallsExpected = api.ReuseNone, est.Calls
		est.PromptTokensExpected, est.CompletionTokensExpected = est.PromptTokensTypical, est.CompletionTokensTypical
		est.PriceExpected = est.PriceTypical
	}
	return &est, nil
}

// ocrPending is the scanned pages a survey left unread.
func ocrPending(c *actwire.ConvertOutput) int {
	if c == nil {
		return 0
	}
	return c.OCRPending
}
