package actwire

import "github.com/memagent/memagent/api"

// LoadValidationInput asks LoadValidation to read the batch or review a
// validation validates, size each stratum's sample and draw it.
type LoadValidationInput struct {
	WorkflowID string  `json:"workflow_id"`
	Kind       string  `json:"kind"`
	Seed       string  `json:"seed"`
	Confidence float64 `json:"confidence"`
	Margin     float64 `json:"margin,omitempty"`
	SampleSize int     `json:"sample_size,omitempty"`
}

// LoadValidationOutput is the subject, its population's hash, its strata
// with their samples, and the sampled cells (with the model's answers),
// strata in order (question, then answered before not found) and cells in
// the strata's order.
type LoadValidationOutput struct {
	Subject        api.SignOffSubject      `json:"subject"`
	PopulationHash string                  `json:"population_hash"`
	Strata         []api.ValidationStratum `json:"strata"`
	Cells          []api.ValidationCell    `json:"cells"`
}

// ExtendValidationInput asks ExtendValidation for the next cells of some
// strata's draws: the subject's run and every named stratum's population
// must be the ones the validation drew from (RunID, PopulationHash).
type ExtendValidationInput struct {
	WorkflowID string                 `json:"workflow_id"`
	Kind       string                 `json:"kind"`
	RunID      string                 `json:"run_id"`
	Seed       string                 `json:"seed"`
	Strata     []ExtendValidationPart `json:"strata"`
}

// ExtendValidationPart is one stratum to grow: its draw's cells From (the
// sample so far) to To.
type ExtendValidationPart struct {
	Question       string `json:"question"`
	Stratum        string `json:"stratum"`
	PopulationHash string `json:"population_hash"`
	From           int    `json:"from"`
	To             int    `json:"to"`
}

// ExtendValidationOutput are the new cells (with the model's answers),
// per stratum in the input's order, each stratum's in its draw's order.
type ExtendValidationOutput struct {
	Cells []api.ValidationCell `json:"cells"`
}

// WriteValidationInput has WriteValidationReport write the report (JSON
// and HTML) under Prefix.
type WriteValidationInput struct {
	Prefix string               `json:"prefix"`
	Report api.ValidationReport `json:"report"`
}

// WriteValidationOutput are the files written.
type WriteValidationOutput struct {
	JSONURI string `json:"json_uri"`
	HTMLURI string `json:"html_uri"`
	// AuditURI is the audit log (one accepted Update a line), XLSXURI
	// the workbook of the Validation sheet, beside the report.
	AuditURI string `json:"audit_uri,omitempty"`
	XLSXURI  string `json:"xlsx_uri,omitempty"`
	// Gate is the state the validation marked its batch's report with
	// (api.ReportValidation.State), when the batch has a validation gate
	// and this validation decided it.
	Gate string `json:"gate,omitempty"`
	// Notification is the batch's notification with the state Gate
	// marked, when the batch notified (its result's notify is set); the
	// validation POSTs it to its notify_url. A retry of the activity
	// after it marked the report returns the same.
	Notification *api.ChangeNotification `json:"notification,omitempty"`
}
