package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

// assembleCorpus has the documents of a corpus converted and written as
// one stream (AssembleCorpus), and points prep at it.
func assembleCorpus(ctx workflow.Context, hb time.Duration, prio temporal.Priority, documents []string, opts api.ModelOptions, prep *actwire.PrepareInput) error {
	// Every document is converted first, each within the converter's own
	// time limit; conversions done are kept for a retry.
	actx := workflow.WithActivityOptions(ctx, activityOptions(convertTimeout, hb, prio, fmt.Sprintf("assemble %d documents", len(documents))))
	var out actwire.ConvertOutput
	if err := actwire.AssembleCorpus.Execute(actx, actwire.CorpusInput{
		Documents: documents, InvalidUTF8: opts.InvalidUTF8, OCR: opts.OCR, OCRLanguages: opts.OCRLanguages,
	}).Get(ctx, &out); err != nil {
		return stageError("assemble corpus", err)
	}
	prep.Document, prep.Converted = out.Document, &out
	return nil
}
