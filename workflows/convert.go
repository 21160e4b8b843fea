package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/memagent/memagent/internal/actwire"
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
	return convertDocument(ctx, gates{}, hb, prio, prep, false)
}

// convertFirstAt is convertFirst with the run's gates.
func convertFirstAt(ctx workflow.Context, g gates, hb time.Duration, prio temporal.Priority, prep *actwire.PrepareInput) error {
	return convertDocument(ctx, g, hb, prio, prep, false)
}

// convertDocument is convertFirst; with survey (an estimate's), the
// scanned pages of a PDF not converted yet are counted, not read
// (actwire.ConvertInput.Survey).
func convertDocument(ctx workflow.Context, g gates, hb time.Duration, prio temporal.Priority, prep *actwire.PrepareInput, survey bool) error {
	if !g.at(ctx, ConvertDocumentChange) {
		return nil
	}
	// A scan of thousands of pages takes hours of OCR; the converter
	// bounds its own time (a share for each OCR page), the heartbeat a
	// dead worker's, and a retry reuses the pages already read.
	actx := workflow.WithActivityOptions(ctx, activityOptions(convertTimeout, hb, prio, "convert document"))
	var out actwire.ConvertOutput
	if err := actwire.ConvertDocument.Execute(actx, actwire.ConvertInput{
		Document: prep.Document, OCR: prep.Options.OCR, OCRLanguages: prep.Options.OCRLanguages, Survey: survey,
	}).Get(ctx, &out); err != nil {
		return stageError("convert document", err)
	}
	if out.Source != "" {
		prep.Document, prep.Converted = out.Document, &out
	}
	return nil
}
