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

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/signoff"
)

// Names of the SignOff workflow's activities.
const (
	LoadSignOffName  = actwire.LoadSignOffName
	AppendAuditName  = actwire.AppendAuditName
	WriteSignOffName = actwire.WriteSignOffName
)

// Names of the objects a sign-off writes under its prefix (the review's or
// the batch report's prefix, then signoff/).
const (
	SignOffFolder     = "signoff/"
	SignOffAudit      = "audit.jsonl"
	SignOffDecidedCSV = "decided.csv"
	SignOffDecidedXLS = "decided.xlsx"
	SignOffDecidedJSN = "decided.json"
)

func (a *Activities) registerSignOff(r Registry) {
	bind(r, actwire.LoadSignOff, a.loadSignOff)
	bind0(r, actwire.AppendAudit, a.appendAudit)
	bind(r, actwire.WriteSignOff, a.writeSignOff)
}

// loadSignOff reads the review or batch a sign-off signs off: its result
// as Temporal holds it (never what a caller says of it), then, for a
// batch, its report's items. The files it names must be that run's own
// outputs.
func (a *Activities) loadSignOff(ctx context.Context, in actwire.LoadSignOffInput) (*actwire.LoadSignOffOutput, error) {
	if err := a.callerIs(ctx, api.SignOffName); err != nil {
		return nil, err
	}
	return a.loadSignOffWith(ctx, activity.GetClient(ctx), activity.GetInfo(ctx).TaskQueue, in)
}

// loadSignOffWith is loadSignOff asking c, the activity's client, with
// queue memagent's task queue (the activity's).
func (a *Activities) loadSignOffWith(ctx context.Context, c client.Client, queue string, in actwire.LoadSignOffInput) (*actwire.LoadSignOffOutput, error) {
	runID, err := completedSubject(ctx, c, queue, in)
	if err != nil {
		return nil, err
	}
	out := &actwire.LoadSignOffOutput{}
	s := &out.Subject
	s.Kind, s.WorkflowID, s.RunID = in.Kind, in.WorkflowID, runID
	if in.Kind == api.SubjectReview {
		out.Cells, err = reviewSubject(ctx, c, s)
	} else {
		out.Cells, err = a.batchSubject(ctx, c, s)
	}
	if err != nil {
		return nil, err
	}
	s.AuditURI = s.Prefix + SignOffAudit
	if err := a.ownedBy(ctx, "grid", s.GridURI, in.WorkflowID); err != nil {
		return nil, err
	}
	if err := a.allowSignOffOutput(ctx, "audit log", s.AuditURI); err != nil {
		return nil, err
	}
	if err := checkSignOffCells(in, out.Cells); err != nil {
		return nil, err
	}
	return out, nil
}

// completedSubject is the run id of the workflow in names, refusing one
// that does not exist, is not of in's kind, has not completed, is not
// memagent's (on another task queue than queue, or a chain that started
// as something else: memagent.Forbidden), or, when in pins a run, whose
// latest run is another (memagent.Forbidden, naming both).
func completedSubject(ctx context.Context, c client.Client, queue string, in actwire.LoadSignOffInput) (string, error) {
	info, err := executionInfo(ctx, c, in.WorkflowID, "")
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return "", badInput(fmt.Errorf("no workflow %q: name the workflow id of a finished %s", in.WorkflowID, in.Kind))
	case err != nil:
		return "", fmt.Errorf("describe %s: %w", in.WorkflowID, err)
	}
	want := api.ReviewDocumentName
	if in.Kind == api.SubjectBatch {
		want = api.BatchQAName
	}
	if got := info.GetType().GetName(); got != want {
		return "", badInput(fmt.Errorf("workflow %s is a %s, not a %s: sign off a %s by its own id", in.WorkflowID, got, want, in.Kind))
	}
	why, err := memagentChain(ctx, c, info, want, queue)
	switch {
	case err != nil:
		return "", err
	case why != "":
		return "", forbidden("%s: it is not memagent's %s, and is not signed off; ask the operator to terminate it", why, in.Kind)
	case in.RunID != "" && info.GetExecution().GetRunId() != in.RunID:
		return "", forbidden("the sign-off covers run %s of %s %s, but its latest run is %s: the id was run again; sign the run you mean off by its run id",
			in.RunID, in.Kind, in.WorkflowID, info.GetExecution().GetRunId())
	}
	if st := info.GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		return "", badInput(fmt.Errorf("%s %s is %s: only a completed %s is signed off; start the sign-off once it completes",
			in.Kind, in.WorkflowID, strings.ToLower(strings.TrimPrefix(st.String(), "WORKFLOW_EXECUTION_STATUS_")), in.Kind))
	}
	return info.GetExecution().GetRunId(), nil
}

// reviewSubject fills s from the review's result, as Temporal holds it,
// and returns its cells: the ids of its rows.
func reviewSubject(ctx context.Context, c client.Client, s *api.SignOffSubject) ([]string, error) {
	var g api.ReviewGrid
	if err := c.GetWorkflow(ctx, s.WorkflowID, s.RunID).Get(ctx, &g); err != nil {
		return nil, fmt.Errorf("result of %s: %w", s.WorkflowID, err)
	}
	s.Document, s.Source, s.GridURI = g.Document, g.Source, g.JSONURI
	s.Prefix = g.Prefix + SignOffFolder
	var cells []string
	for _, r := range g.Rows {
		cells = append(cells, r.ID)
	}
	return cells, nil
}

// batchSubject fills s from the batch's result, as Temporal holds it, and
// its report, which must be the batch's own, and returns its cells: those
// of the report's items.
func (a *Activities) batchSubject(ctx context.Context, c client.Client, s *api.SignOffSubject) ([]string, error) {
	var res api.BatchQAResult
	if err := c.GetWorkflow(ctx, s.WorkflowID, s.RunID).Get(ctx, &res); err != nil {
		return nil, fmt.Errorf("result of %s: %w", s.WorkflowID, err)
	}
	if err := a.ownedBy(ctx, "report", res.ReportURI, s.WorkflowID); err != nil {
		return nil, err
	}
	data, err := a.readSmall(ctx, res.ReportURI)
	if err != nil {
		return nil, err
	}
	var rep api.BatchReport
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, badInput(fmt.Errorf("report %s: %w", res.ReportURI, err))
	}
	s.GridURI, s.Prefix = rep.ResultsURI, res.ReportPrefix+SignOffFolder
	rows, err := a.signOffRows(ctx, *s)
	if err != nil {
		return nil, err
	}
	var cells []string
	for _, r := range rows {
		cells = append(cells, r.Cell)
	}
	return cells, nil
}

// checkSignOffCells refuses a subject with no cells, more than one
// sign-off holds, or two of one id.
func checkSignOffCells(in actwire.LoadSignOffInput, cells []string) error {
	switch n := len(cells); {
	case n == 0:
		return badInput(fmt.Errorf("%s %s has no answers to sign off", in.Kind, in.WorkflowID))
	case n > api.MaxSignOffCells:
		return badInput(fmt.Errorf("%s %s has %d answers, over the %d one sign-off holds: split the manifest into smaller batches", in.Kind, in.WorkflowID, n, api.MaxSignOffCells))
	}
	seen := make(map[string]bool, len(cells))
	for _, id := range cells {
		if seen[id] {
			return badInput(fmt.Errorf("%s %s has two answers with id %q", in.Kind, in.WorkflowID, id))
		}
		seen[id] = true
	}
	return nil
}

// readSmall reads an object of at most signoff.MaxGridBytes.
func (a *Activities) readSmall(ctx context.Context, uri string) ([]byte, error) {
	loc, err := s3store.ParseURI(uri)
	if err != nil {
		return nil, badInput(err)
	}
	info, err := a.Store.Head(ctx, loc)
	if err != nil {
		return nil, storeError(err, uri)
	}
	if info.Size > signoff.MaxGridBytes {
		return nil, badInput(fmt.Errorf("%s is %d bytes, over the %d a sign-off reads", uri, info.Size, signoff.MaxGridBytes))
	}
	data, err := a.Store.ReadAll(ctx, loc)
	if err != nil {
		return nil, storeError(err, uri)
	}
	return data, nil
}

// signOffRows reads the rows of the review's grid or the batch's results.
func (a *Activities) signOffRows(ctx context.Context, s api.SignOffSubject) ([]signoff.Row, error) {
	if err := a.ownedBy(ctx, "grid", s.GridURI, s.WorkflowID); err != nil {
		return nil, err
	}
	data, err := a.readSmall(ctx, s.GridURI)
	if err != nil {
		return nil, err
	}
	if s.Kind == api.SubjectReview {
		g, err := signoff.DecodeReviewGrid(data)
		if err != nil {
			return nil, badInput(err)
		}
		return signoff.ReviewRows(g), nil
	}
	rows, err := signoff.BatchRows(data)
	if err != nil {
		return nil, badInput(err)
	}
	return rows, nil
}

// appendAudit appends the entries the audit log lacks. The sign-off runs
// one append at a time, in order, so the log's line count says what it
// holds: a retried append finds its lines there and writes nothing twice.
func (a *Activities) appendAudit(ctx context.Context, in actwire.AppendAuditInput) error {
	if err := a.callerIs(ctx, api.SignOffName); err != nil {
		return err
	}
	if err := a.allowSignOffOutput(ctx, "audit log", in.AuditURI); err != nil {
		return err
	}
	loc, err := s3store.ParseURI(in.AuditURI)
	if err != nil {
		return badInput(err)
	}
	old, err := a.Store.ReadAll(ctx, loc)
	if err != nil && !errors.Is(err, s3store.ErrNotFound) {
		return storeError(err, in.AuditURI)
	}
	have := bytes.Count(old, []byte("\n"))
	if have < in.From {
		return badInput(fmt.Errorf("the audit log %s holds %d lines, and the sign-off wrote %d: it was changed outside the sign-off; restore it from the workflow's history", in.AuditURI, have, in.From))
	}
	skip := have - in.From
	if skip >= len(in.Entries) {
		return nil
	}
	if activity.IsActivity(ctx) {
		info := activity.GetInfo(ctx)
		if err := checkAuditEntries(ctx, activity.GetClient(ctx), info.WorkflowExecution.ID, info.WorkflowExecution.RunID, have, in.Entries[skip:]); err != nil {
			return err
		}
	}
	var buf bytes.Buffer
	buf.Write(old)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, e := range in.Entries[skip:] {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	if err := a.Store.Put(ctx, loc, buf.Bytes(), "application/x-ndjson"); err != nil {
		return storeError(err, in.AuditURI)
	}
	return nil
}

// writeSignOff writes the decided grid beside the audit log: JSON (the
// sign-off's grid with each cell's row), CSV and XLSX.
func (a *Activities) writeSignOff(ctx context.Context, in actwire.WriteSignOffInput) (*actwire.WriteSignOffOutput, error) {
	if err := a.callerIs(ctx, api.SignOffName); err != nil {
		return nil, err
	}
	g := in.Grid
	rows, err := a.signOffRows(ctx, g.Subject)
	if err != nil {
		return nil, err
	}
	records, err := signoff.Join(g, rows)
	if err != nil {
		return nil, badInput(err)
	}
	out := &actwire.WriteSignOffOutput{
		JSONURI: g.Subject.Prefix + SignOffDecidedJSN, CSVURI: g.Subject.Prefix + SignOffDecidedCSV, XLSXURI: g.Subject.Prefix + SignOffDecidedXLS,
	}
	var csvBuf, xlsBuf bytes.Buffer
	if err := signoff.WriteCSV(&csvBuf, records); err != nil {
		return nil, err
	}
	// A validation of the same run finished by now is a sheet of the
	// workbook (signoff.ValidationSheetName).
	var val *api.ValidationReport
	if activity.IsActivity(ctx) {
		if val, err = finishedValidation(ctx, activity.GetClient(ctx), activity.GetInfo(ctx).TaskQueue, g.Subject.WorkflowID, g.Subject.RunID); err != nil {
			return nil, err
		}
	}
	if err := signoff.WriteXLSXWithValidation(&xlsBuf, g, records, val); err != nil {
		return nil, err
	}
	js, err := json.Marshal(struct {
		api.SignOffGrid
		Rows []signoff.Row `json:"rows"`
	}{g, rows})
	if err != nil {
		return nil, err
	}
	for _, f := range []struct {
		uri, ctype string
		data       []byte
	}{
		{out.JSONURI, "application/json", js},
		{out.CSVURI, "text/csv; charset=utf-8", csvBuf.Bytes()},
		{out.XLSXURI, "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", xlsBuf.Bytes()},
	} {
		if err := a.allowSignOffOutput(ctx, "decided grid", f.uri); err != nil {
			return nil, err
		}
		loc, err := s3store.ParseURI(f.uri)
		if err != nil {
			return nil, badInput(err)
		}
		if err := a.Store.Put(ctx, loc, f.data, f.ctype); err != nil {
			return nil, storeError(err, f.uri)
		}
	}
	return out, nil
}

// ownedBy fails as memagent.Forbidden unless uri is an output of workflow
// subject: in its own area (reviews/<id>/, batches/<id>/), or under a
// prefix it claimed. A sign-off reads the grid it signs off only there.
func (a *Activities) ownedBy(ctx context.Context, field, uri, subject string) error {
	if _, err := s3store.ParseURI(uri); err != nil {
		return badInput(fmt.Errorf("%s: %w", field, err))
	}
	if ar := a.areaOf(uri); ar != nil {
		if ar.PerWorkflow && strings.HasPrefix(uri, "s3://"+a.Bucket+"/"+ar.Prefix+subject+"/") {
			return nil
		}
		return forbidden("%s %s is not among the outputs of %s", field, uri, subject)
	}
	owner, _, err := a.owners.nearest(ctx, a.Store, uri)
	if err != nil {
		return fmt.Errorf("check the owner of %s: %w", uri, err)
	}
	if owner.ScheduleID != "" || owner.WorkflowID != subject {
		return forbidden("%s %s is under no prefix that %s claimed", field, uri, subject)
	}
	return nil
}

// allowSignOffOutput checks a file a sign-off writes: inside the worker's
// write prefixes, in a signoff/ folder among the outputs of the review or
// batch the sign-off's workflow id names (api.SignOffWorkflowID, or
// api.LegacySignOffWorkflowID). Outside
// an activity only the write prefixes are checked.
func (a *Activities) allowSignOffOutput(ctx context.Context, field, uri string) error {
	if err := a.allowWrite(field, uri); err != nil {
		return err
	}
	wf := workflowID(ctx)
	if wf == "" {
		return nil
	}
	// Either form (api.SignOffSubjectOf): a sign-off started before
	// api.SignOffSuffix writes on under <subject>/signoff. The id only
	// names the subject: callerIs has checked the run is memagent's
	// SignOff, and ownedBy checks the folder is among that subject's.
	subject, ok := api.SignOffSubjectOf(wf)
	if !ok {
		return forbidden("%s %s: only a sign-off (workflow id <review or batch id>%s) writes a sign-off's files", field, uri, api.SignOffSuffix)
	}
	i := strings.LastIndex(uri, "/"+SignOffFolder)
	if i < 0 || strings.Contains(uri[i+1+len(SignOffFolder):], "/") {
		return forbidden("%s %s is not in a %s folder", field, uri, SignOffFolder)
	}
	return a.ownedBy(ctx, field, uri[:i+1]+SignOffFolder, subject)
}

// CheckRead is the worker's read check of a caller's document (the read
// prefixes; never the areas where runs keep their outputs), for a program
// that reads on a caller's behalf beside the worker, configured as the
// worker is: the review desk reads the PDF it shows a page of only when
// this allows it.
func (a *Activities) CheckRead(field, uri string) error { return a.allowRead(field, uri) }

// CheckOutputOf fails as memagent.Forbidden unless uri is an output of
// workflow workflowID: in its own area of the worker's bucket, or under a
// prefix it claimed. The review desk reads a review's grid only there.
func (a *Activities) CheckOutputOf(ctx context.Context, field, uri, workflowID string) error {
	return a.ownedBy(ctx, field, uri, workflowID)
}
