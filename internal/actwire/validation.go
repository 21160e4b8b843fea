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
}
