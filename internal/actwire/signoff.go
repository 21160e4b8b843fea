package actwire

import "github.com/memagent/memagent/api"

// LoadSignOffInput asks LoadSignOff to read the review or batch a sign-off
// signs off.
type LoadSignOffInput struct {
	// WorkflowID is the review's or batch's workflow id, Kind
	// api.SubjectReview or api.SubjectBatch.
	WorkflowID string `json:"workflow_id"`
	Kind       string `json:"kind"`
	// RunID, when set, is the run the sign-off covers
	// (api.SignOffInput.SubjectRunID): another latest run is refused.
	RunID string `json:"run_id,omitempty"`
}

// LoadSignOffOutput is the subject and its cells' ids, in grid order.
type LoadSignOffOutput struct {
	Subject api.SignOffSubject `json:"subject"`
	Cells   []string           `json:"cells"`
}

// AppendAuditInput has AppendAudit append entries to the audit log: the
// lines From+1 … From+len(Entries). A log that already holds them is left
// as it is, so a retried append writes nothing twice.
type AppendAuditInput struct {
	AuditURI string             `json:"audit_uri"`
	From     int                `json:"from"`
	Entries  []api.SignOffEntry `json:"entries"`
}

// WriteSignOffInput has WriteSignOff write the decided grid (JSON, CSV,
// XLSX) beside the audit log.
type WriteSignOffInput struct {
	Grid api.SignOffGrid `json:"grid"`
}

// WriteSignOffOutput are the files written.
type WriteSignOffOutput struct {
	JSONURI string `json:"json_uri"`
	CSVURI  string `json:"csv_uri"`
	XLSXURI string `json:"xlsx_uri"`
}
