package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/report"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/signoff"
	"github.com/memagent/memagent/internal/validation"
)

// Names of the files a finished validation writes beside its report, so
// that anyone can recompute every figure from the files alone.
const (
	// ValidationAudit is the audit log: one JSON object a line for each
	// accepted Update (decide, reveal, finish), as the sign-off's
	// audit.jsonl.
	ValidationAudit = "audit.jsonl"
	// ValidationReportXLSX is a workbook of the Validation sheet alone.
	ValidationReportXLSX = "report.xlsx"
)

// validationFile is one object a validation writes.
type validationFile struct {
	uri, ctype string
	data       []byte
}

// validationFiles are the audit log and the workbook of rep, under
// prefix (the validation/ folder).
func validationFiles(prefix string, rep api.ValidationReport) ([]validationFile, error) {
	var audit, xlsx bytes.Buffer
	if err := signoff.WriteValidationAudit(&audit, rep.Entries); err != nil {
		return nil, err
	}
	if err := signoff.WriteValidationXLSX(&xlsx, rep); err != nil {
		return nil, err
	}
	return []validationFile{
		{prefix + ValidationAudit, "application/x-ndjson", audit.Bytes()},
		{prefix + ValidationReportXLSX, "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", xlsx.Bytes()},
	}, nil
}

// finishedValidation is the report of the finished validation of run
// runID of subject (a batch or review), as Temporal holds its result; nil
// when there is none: no validation, one still open, one of another run
// of the subject, or an execution under its id that is not memagent's
// (never believed).
func finishedValidation(ctx context.Context, c client.Client, queue, subject, runID string) (*api.ValidationReport, error) {
	id := api.ValidationWorkflowID(subject)
	info, err := executionInfo(ctx, c, id, "")
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("describe %s: %w", id, err)
	}
	if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		return nil, nil
	}
	why, err := memagentChain(ctx, c, info, api.ValidateName, queue)
	if err != nil {
		return nil, err
	}
	if why != "" {
		activity.GetLogger(ctx).Warn("a validation's id holds an execution that is not memagent's: not exported", "workflow_id", id, "why", why)
		return nil, nil
	}
	var rep api.ValidationReport
	if err := c.GetWorkflow(ctx, id, info.GetExecution().GetRunId()).Get(ctx, &rep); err != nil {
		return nil, fmt.Errorf("result of %s: %w", id, err)
	}
	if rep.Finished == nil || rep.Subject != subject || rep.SubjectRun != runID {
		return nil, nil
	}
	return &rep, nil
}

// markGatedReport marks the report of rep's batch, when the batch has a
// validation gate and its report is still provisional: final when the
// gate passes (evaluateGate), validation_failed otherwise, in report.json
// and report.html. The batch's result, as Temporal holds it for the run
// the validation validated, says whether it is gated and where its report
// is; a report already marked is left as it is (the first validation to
// finish decides, gateMark). It returns the state it marked, "" when it
// marked nothing, and, when the batch notified its notify_url (its
// result's notify set), the batch's notification with the marked state,
// for the validation to POST again.
func (a *Activities) markGatedReport(ctx context.Context, rep api.ValidationReport) (string, *api.ChangeNotification, error) {
	if rep.Kind != api.SubjectBatch || rep.Finished == nil || !activity.IsActivity(ctx) {
		return "", nil, nil
	}
	var res api.BatchQAResult
	if err := activity.GetClient(ctx).GetWorkflow(ctx, rep.Subject, rep.SubjectRun).Get(ctx, &res); err != nil {
		return "", nil, fmt.Errorf("result of %s: %w", rep.Subject, err)
	}
	if res.Validation == nil {
		return "", nil, nil
	}
	jsonURI := res.ReportURI
	htmlURI := strings.TrimSuffix(jsonURI, api.ReportJSONName) + api.ReportHTMLName
	for _, uri := range []string{jsonURI, htmlURI} {
		if err := a.allowWrite("batch report", uri); err != nil {
			return "", nil, err
		}
		if err := a.ownedBy(ctx, "batch report", uri, rep.Subject); err != nil {
			return "", nil, err
		}
	}
	data, err := a.readSmall(ctx, jsonURI)
	if err != nil {
		return "", nil, err
	}
	var br api.BatchReport
	if err := json.Unmarshal(data, &br); err != nil {
		return "", nil, badInput(fmt.Errorf("report %s: %w", jsonURI, err))
	}
	if br.Validation == nil || br.RunID != "" && br.RunID != rep.SubjectRun {
		return "", nil, badInput(fmt.Errorf("report %s is not the gated report of run %s of %s", jsonURI, rep.SubjectRun, rep.Subject))
	}
	v, write := gateMark(*br.Validation, activity.GetInfo(ctx).WorkflowExecution.RunID, func() api.ReportValidation {
		return evaluateGate(res.Validation.Gate, rep)
	})
	if v == nil {
		return "", nil, nil
	}
	if write {
		br.Validation = v
		page, err := a.readSmall(ctx, htmlURI)
		if err != nil {
			return "", nil, err
		}
		if page, err = report.MarkBatchState(page, v.Text()); err != nil {
			return "", nil, badInput(fmt.Errorf("report page %s: %w", htmlURI, err))
		}
		js, err := json.MarshalIndent(br, "", "  ")
		if err != nil {
			return "", nil, err
		}
		// The page first: report.json, written last, says the report is
		// marked, so a retry after a failure between the two writes both.
		for _, f := range []validationFile{{htmlURI, "text/html; charset=utf-8", page}, {jsonURI, "application/json", js}} {
			loc, err := s3store.ParseURI(f.uri)
			if err != nil {
				return "", nil, badInput(err)
			}
			if err := a.Store.Put(ctx, loc, f.data, f.ctype); err != nil {
				return "", nil, storeError(err, f.uri)
			}
		}
	}
	if res.Notify == "" {
		return v.State, nil, nil
	}
	n := actwire.BatchNotification(res, rep.SubjectRun)
	n.Validation = v
	return v.State, &n, nil
}

// gateMark decides what a validation run (run id self) does with a gated
// report whose state is cur: a provisional report is marked as judge
// says, by self (write); a report self marked already (an attempt whose
// completion was lost, retried) is its marking again, not written again;
// a report another validation marked is left to it (nil).
func gateMark(cur api.ReportValidation, self string, judge func() api.ReportValidation) (v *api.ReportValidation, write bool) {
	switch {
	case cur.State == api.ReportProvisional:
		m := judge()
		m.ValidationRunID = self
		return &m, true
	case self != "" && cur.ValidationRunID == self:
		return &cur, false
	}
	return nil, false
}

// evaluateGate decides a gated report's state from a finished
// validation: final when the validation passed its own thresholds, its
// confidence is at least the gate's, and every threshold of the gate
// passes on its figures (">=" on the lower bound, "<=" on the upper, as
// the validation compares its own); validation_failed otherwise, saying
// why.
func evaluateGate(g api.ValidationGate, rep api.ValidationReport) api.ReportValidation {
	g = g.WithDefaults()
	v := api.ReportValidation{State: api.ReportFinal, Gate: g, Validation: rep.WorkflowID, ValidationReport: rep.ReportURI}
	if e := rep.Finished; e != nil {
		at := e.At.UTC()
		v.SignedOffBy, v.DecidedAt = e.Reviewer, &at
	}
	var why []string
	if rep.Confidence+1e-9 < g.Confidence {
		why = append(why, fmt.Sprintf("validated at %g%% confidence, the gate asks %g%%", 100*rep.Confidence, 100*g.Confidence))
	}
	said := map[string]bool{}
	for _, o := range rep.Thresholds {
		if !o.Passed {
			said[o.Threshold.String()] = true
			why = append(why, "the threshold "+o.Threshold.String()+" failed")
		}
	}
	for _, t := range g.Thresholds {
		o := validation.Judge(t, rep.Overall, rep.Questions)
		v.Thresholds = append(v.Thresholds, o)
		if !o.Passed && !said[t.String()] {
			s := "the threshold " + t.String() + " failed"
			if o.Why != "" {
				s += " (" + o.Why + ")"
			}
			why = append(why, s)
		}
	}
	if len(why) > 0 {
		v.State, v.Why = api.ReportValidationFailed, strings.Join(why, "; ")
	}
	return v
}

// ErrSubjectCompleting is the type of LoadValidation's retryable error
// while the batch that started the validation (a gated batch,
// api.ValidationGate) has not completed yet: Temporal retries the draw
// until it has.
const ErrSubjectCompleting = "memagent.SubjectCompleting"

// awaitStartingBatch fails with a retryable ErrSubjectCompleting while
// the validation's parent is the run of the batch it validates and that
// run is still open: a gated batch starts its validation as its last
// command and completes right after. Anyone else's validation of a batch
// that has not completed is refused as before (completedSubject).
func awaitStartingBatch(ctx context.Context, c client.Client, kind, subject string) error {
	if kind != api.SubjectBatch || !activity.IsActivity(ctx) {
		return nil
	}
	self := activity.GetInfo(ctx).WorkflowExecution
	d, err := c.DescribeWorkflowExecution(ctx, self.ID, self.RunID)
	if err != nil {
		return fmt.Errorf("describe %s: %w", self.ID, err)
	}
	p := d.GetWorkflowExecutionInfo().GetParentExecution()
	if p.GetWorkflowId() != subject {
		return nil
	}
	info, err := executionInfo(ctx, c, subject, "")
	if err != nil {
		return nil // completedSubject says what is wrong
	}
	if info.GetExecution().GetRunId() == p.GetRunId() && info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return temporal.NewApplicationError(fmt.Sprintf("batch %s started this validation and is completing: the sample is drawn once it has", subject), ErrSubjectCompleting)
	}
	return nil
}
