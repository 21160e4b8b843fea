package api

// Error types of the non-retryable (and a few retryable) ApplicationErrors
// the activities return. They are part of the wire format: callers match on
// them.
const (
	ErrBadInput         = "memagent.BadInput"
	ErrDocumentNotFound = "memagent.DocumentNotFound"
	ErrDocumentChanged  = "memagent.DocumentChanged"
	ErrPromptTooLong    = "memagent.PromptTooLong"
	ErrModelAuth        = "memagent.ModelAuth"
	ErrModelNotFound    = "memagent.ModelNotFound"
	ErrModelBadRequest  = "memagent.ModelBadRequest"
	// ErrForbidden is a document, manifest or output prefix outside what
	// the worker is configured to read or write, or an output prefix that
	// another workflow's outputs already occupy.
	ErrForbidden = "memagent.Forbidden"
	// ErrModelUnavailable is retryable: rate limits, 5xx, timeouts and
	// refused connections.
	ErrModelUnavailable = "memagent.ModelUnavailable"
	// ErrOverBudget is a run whose budget cannot cover even what it must
	// send (its document's tokens): raise the budget.
	ErrOverBudget = "memagent.OverBudget"
	// ErrChildReplaced is a batch item whose DocumentQA run a caller
	// outside the batch ended, or ended and replaced with a workflow of
	// its own under the same id: the item fails, and nothing of the other
	// workflow's outcome is taken.
	ErrChildReplaced = "memagent.ChildReplaced"
)
