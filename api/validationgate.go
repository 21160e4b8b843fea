package api

import (
	"fmt"
	"time"
)

// ValidationGate has a batch's report provisional until a validation of
// the batch (Validate, under ValidationWorkflowID of the batch) finishes
// and passes: BatchQAInput.Validation, set by `starter schedule create
// --require-validation` (docs/SCHEDULES.md, docs/VALIDATION.md). The gate
// is fixed before any sample is drawn: its thresholds are tested on the
// validation's figures whatever thresholds the validation was started
// with, and its other fields are the settings to start the validation
// with.
type ValidationGate struct {
	// Confidence is the least confidence level of the validation's
	// intervals the gate accepts (default 0.95).
	Confidence float64 `json:"confidence,omitempty"`
	// Margin is the margin of error each stratum's sample is sized for,
	// as in ValidateInput (default 0.1).
	Margin float64 `json:"margin,omitempty"`
	// SampleSize, when set, is the size of every stratum's sample
	// instead.
	SampleSize int `json:"sample_size,omitempty" contract:"min=0,max=1500"`
	// Thresholds must all pass on the validation's figures, as well as
	// the validation's own.
	Thresholds []ValidationThreshold `json:"thresholds,omitempty" contract:"maxitems=20"`
}

// Validate reports a gate that can never be met, as ValidateInput does.
func (g ValidationGate) Validate() error {
	if err := g.Input("batch").Validate(); err != nil {
		return fmt.Errorf("validation: %w", err)
	}
	return nil
}

// WithDefaults fills the defaults of a ValidateInput.
func (g ValidationGate) WithDefaults() ValidationGate {
	in := g.Input("batch").WithDefaults()
	g.Confidence, g.Margin = in.Confidence, in.Margin
	return g
}

// Input is the validation of batch the gate asks for.
func (g ValidationGate) Input(batch string) ValidateInput {
	return ValidateInput{Batch: batch, Confidence: g.Confidence, Margin: g.Margin, SampleSize: g.SampleSize, Thresholds: g.Thresholds}
}

// States of a gated batch's report (ReportValidation.State).
const (
	// ReportProvisional: no validation of the batch has finished yet.
	ReportProvisional = "provisional"
	// ReportFinal: a validation finished and passed.
	ReportFinal = "final"
	// ReportValidationFailed: the first validation to finish failed.
	ReportValidationFailed = "validation_failed"
)

// ReportValidation is the state of a gated batch's report, in its
// report.json (BatchReport.Validation), the batch's result and its
// notification. The batch writes it provisional; the first validation of
// the batch's run to finish marks report.json and report.html final or
// validation_failed, and no later one changes them.
type ReportValidation struct {
	// State is provisional, final or validation_failed.
	State string `json:"state" contract:"enum=provisional|final|validation_failed"`
	// Gate is the batch's gate, its defaults filled.
	Gate ValidationGate `json:"gate"`
	// Validation is the workflow id of the validation of the batch.
	Validation string `json:"validation"`
	// ValidationRunID is the run of the validation: the one the batch
	// started (in its result and notification), the one that decided (in
	// a marked report.json).
	ValidationRunID string `json:"validation_run_id,omitempty"`
	// ValidationReport is the report.json of the validation that decided.
	ValidationReport string `json:"validation_report,omitempty"`
	// SignedOffBy and DecidedAt are who signed that validation off, and
	// when.
	SignedOffBy string     `json:"signed_off_by,omitempty"`
	DecidedAt   *time.Time `json:"decided_at,omitempty"`
	// Thresholds are the gate's thresholds with the bounds they compared.
	Thresholds []ValidationOutcome `json:"thresholds,omitempty"`
	// Why says why the report is validation_failed.
	Why string `json:"why,omitempty"`
}

// Text is the state as a report's page says it.
func (v ReportValidation) Text() string {
	switch v.State {
	case ReportFinal:
		return fmt.Sprintf("Final: validation %s passed (signed off by %s).", v.Validation, v.SignedOffBy)
	case ReportValidationFailed:
		return fmt.Sprintf("Validation failed: %s (%s). The figures below stand unvalidated.", v.Validation, v.Why)
	}
	return fmt.Sprintf("Provisional: this report is final once validation %s finishes and passes (starter validate status %s).",
		v.Validation, v.Validation)
}
