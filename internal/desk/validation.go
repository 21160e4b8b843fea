package desk

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/signoff"
)

// A validation at the desk (memagent.Validate, docs/VALIDATION.md): the
// sampled cells, each with its question and its document's pages (the
// page the model's answer cites first, page 1 for a cell where it found
// none), and a blind decision form. The model's answers come only from
// the validation's query as the signed-in reviewer sees them: in blind
// mode the workflow hides every answer that reviewer has not revealed,
// so the desk has none to leak. Decisions, reveals and the sign-off are
// the validation's Updates under the signed-in reviewer, with the same
// checks (session, CSRF token, no other reviewer's name in the body) as
// a sign-off's decisions; the workflow's validators decide what is
// refused (a revealed cell in blind mode, four eyes).

// registerValidation adds the validation's routes to mux.
func (d *Desk) registerValidation(mux *http.ServeMux) {
	mux.HandleFunc("GET /validation", d.authed(d.validationPage))
	mux.HandleFunc("GET /api/validation", d.authed(d.apiValidation))
	mux.HandleFunc("GET /validation/page.png", d.authed(d.validationPagePNG))
	mux.HandleFunc("POST /api/validation/decide", d.authed(d.changes(d.apiValidationDecide)))
	mux.HandleFunc("POST /api/validation/reveal", d.authed(d.changes(d.apiValidationReveal)))
	mux.HandleFunc("POST /api/validation/finish", d.authed(d.changes(d.apiValidationFinish)))
}

// runningValidation is one validation the index lists.
type runningValidation struct {
	ID, Subject string
	// Progress is the sampled cells decided of all ("12/40 decided"), ""
	// when the validation did not answer.
	Progress string
	Started  time.Time
}

// validationList lists the validations running, newest first, each with
// its progress (read a few at a time for at most progressTimeout).
func (d *Desk) validationList(ctx context.Context) ([]runningValidation, error) {
	resp, err := d.cfg.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query:    fmt.Sprintf("WorkflowType = %q AND TaskQueue = %q AND ExecutionStatus = 'Running'", api.ValidateName, d.cfg.TaskQueue),
		PageSize: 200,
	})
	if err != nil {
		return nil, err
	}
	var list []runningValidation
	for _, e := range resp.GetExecutions() {
		id := e.GetExecution().GetWorkflowId()
		list = append(list, runningValidation{ID: id, Subject: strings.TrimSuffix(id, api.ValidationSuffix), Started: e.GetStartTime().AsTime()})
	}
	readAhead(ctx, len(list), func(ctx context.Context, i int) {
		vw, err := d.mc.Validation(ctx, list[i].ID, "")
		if err != nil {
			return
		}
		list[i].Progress = fmt.Sprintf("%d/%d decided", len(vw.Cells)-vw.Pending, len(vw.Cells))
	})
	return list, nil
}

// validationIndex is what the index shows of the validations: the list,
// or why there is none.
func (d *Desk) validationIndex(ctx context.Context) map[string]any {
	list, err := d.validationList(ctx)
	return map[string]any{"List": list, "Error": errString(err)}
}

// validationID is the validation's workflow id from a request's id: the
// validation's own, or its batch's or review's.
func validationID(id string) string {
	if id == "" || strings.HasSuffix(id, api.ValidationSuffix) {
		return id
	}
	return api.ValidationWorkflowID(id)
}

func (d *Desk) validationPage(w http.ResponseWriter, r *http.Request, name, sid string) {
	id := validationID(r.URL.Query().Get("id"))
	if id == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	d.render(w, "validation.html", map[string]any{
		"Reviewer": name, "CSRF": d.csrf(name, sid), "ID": id, "Tokens": d.cfg.Reviewers.Tokens(),
	})
}

// validationView is /api/validation's answer: the validation as the
// signed-in reviewer sees it, and what the desk adds to each cell.
type validationView struct {
	Reviewer string             `json:"reviewer"`
	View     api.ValidationView `json:"view"`
	Cells    []validationCell   `json:"cells"`
}

// validationCell is what the desk adds to a sampled cell.
type validationCell struct {
	ID string `json:"id"`
	// DocumentName is the document's file name; PDF whether the desk
	// renders its pages; FirstPage the page it shows first.
	DocumentName string `json:"document_name"`
	PDF          bool   `json:"pdf"`
	FirstPage    int    `json:"first_page"`
	// CannotDecide says why the reviewer cannot decide the cell, "" when
	// they can (the workflow has the last word).
	CannotDecide string `json:"cannot_decide,omitempty"`
}

// cellsFor is what the desk adds to vw's cells for reviewer.
func cellsFor(vw *api.ValidationView, reviewer string) []validationCell {
	out := make([]validationCell, 0, len(vw.Cells))
	for _, c := range vw.Cells {
		v := validationCell{ID: c.ID, DocumentName: signoff.DocumentName(c.Document), PDF: isPDF(c.Document), FirstPage: max(c.Page, 1)}
		switch {
		case vw.Finished != nil:
			v.CannotDecide = fmt.Sprintf("the validation was signed off by %s: its report is final", vw.Finished.Reviewer)
		case vw.Blind && c.Revealed:
			v.CannotDecide = "you revealed the model's answer of this cell: in a blind validation another reviewer decides it"
		case c.Decision != nil && c.Decision.Reviewer == reviewer:
			v.CannotDecide = "you decided this cell: a reviewer decides a cell once (another reviewer may decide it again)"
		}
		out = append(out, v)
	}
	return out
}

func isPDF(uri string) bool { return strings.HasSuffix(strings.ToLower(uri), ".pdf") }

func (d *Desk) apiValidation(w http.ResponseWriter, r *http.Request, name, sid string) {
	vw, err := d.mc.Validation(r.Context(), validationID(r.URL.Query().Get("id")), name)
	if err != nil {
		jsonError(w, statusOf(err, http.StatusNotFound), err)
		return
	}
	writeJSON(w, validationView{Reviewer: name, View: *vw, Cells: cellsFor(vw, name)})
}

// validationPagePNG renders page (default the cell's first) of a sampled
// cell's document, read with the worker's read checks.
func (d *Desk) validationPagePNG(w http.ResponseWriter, r *http.Request, name, sid string) {
	ctx := r.Context()
	q := r.URL.Query()
	vw, err := d.mc.Validation(ctx, validationID(q.Get("id")), name)
	if err != nil {
		jsonError(w, statusOf(err, http.StatusNotFound), err)
		return
	}
	i := slices.IndexFunc(vw.Cells, func(c api.ValidationCell) bool { return c.ID == q.Get("cell") })
	if i < 0 {
		jsonError(w, http.StatusNotFound, fmt.Errorf("no cell %q in the sample of %s: reload the page", q.Get("cell"), vw.WorkflowID))
		return
	}
	c := vw.Cells[i]
	if !isPDF(c.Document) {
		jsonError(w, http.StatusNotFound, fmt.Errorf("cell %s's document is not a PDF: the desk renders the pages of PDFs only", c.ID))
		return
	}
	page := max(c.Page, 1)
	if s := q.Get("page"); s != "" {
		if page, err = strconv.Atoi(s); err != nil || page < 1 {
			jsonError(w, http.StatusBadRequest, fmt.Errorf("page %q: pages are numbered from 1", s))
			return
		}
	}
	data, key, err := d.document(ctx, c.Document)
	if err != nil {
		jsonError(w, http.StatusForbidden, err)
		return
	}
	d.writePage(w, r, key, data, page)
}

// validationDecideBody is what the page sends to decide a sampled cell;
// the reviewer comes from the request's authentication.
type validationDecideBody struct {
	Cell      string  `json:"cell"`
	Verdict   string  `json:"verdict"`
	HasAnswer bool    `json:"has_answer"`
	Answer    string  `json:"answer"`
	Page      int     `json:"page"`
	Comment   string  `json:"comment"`
	Reviewer  *string `json:"reviewer,omitempty"`
}

func (d *Desk) apiValidationDecide(w http.ResponseWriter, r *http.Request, name, sid string) {
	var b validationDecideBody
	if !readChange(w, r, name, &b) {
		return
	}
	id := validationID(r.URL.Query().Get("id"))
	vw, err := d.mc.DecideValidation(r.Context(), id, api.ValidationDecision{
		Cell: b.Cell, Verdict: b.Verdict, HasAnswer: b.HasAnswer, Answer: b.Answer, Page: b.Page, Comment: b.Comment,
		Reviewer: name, ClientIdentity: d.cfg.ClientIdentity,
	})
	if err != nil {
		jsonError(w, statusOf(err, http.StatusConflict), err)
		return
	}
	d.cfg.Logger.Info("validation decided", "reviewer", name, "validation", id, "cell", b.Cell, "verdict", b.Verdict)
	writeJSON(w, validationView{Reviewer: name, View: *vw, Cells: cellsFor(vw, name)})
}

type validationRevealBody struct {
	Cell     string  `json:"cell"`
	Reviewer *string `json:"reviewer,omitempty"`
}

func (d *Desk) apiValidationReveal(w http.ResponseWriter, r *http.Request, name, sid string) {
	var b validationRevealBody
	if !readChange(w, r, name, &b) {
		return
	}
	id := validationID(r.URL.Query().Get("id"))
	c, err := d.mc.RevealValidation(r.Context(), id, api.ValidationReveal{Cell: b.Cell, Reviewer: name, ClientIdentity: d.cfg.ClientIdentity})
	if err != nil {
		jsonError(w, statusOf(err, http.StatusConflict), err)
		return
	}
	d.cfg.Logger.Info("validation revealed", "reviewer", name, "validation", id, "cell", b.Cell)
	writeJSON(w, c)
}

type validationFinishBody struct {
	Comment  string  `json:"comment"`
	Reviewer *string `json:"reviewer,omitempty"`
}

func (d *Desk) apiValidationFinish(w http.ResponseWriter, r *http.Request, name, sid string) {
	var b validationFinishBody
	if !readChange(w, r, name, &b) {
		return
	}
	id := validationID(r.URL.Query().Get("id"))
	rep, err := d.mc.FinishValidation(r.Context(), id, api.ValidationFinish{Comment: b.Comment, Reviewer: name, ClientIdentity: d.cfg.ClientIdentity})
	if err != nil {
		jsonError(w, statusOf(err, http.StatusConflict), err)
		return
	}
	d.cfg.Logger.Info("validation signed off", "reviewer", name, "validation", id)
	writeJSON(w, validationView{Reviewer: name, View: *rep, Cells: cellsFor(rep, name)})
}
