package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"

	"go.temporal.io/sdk/activity"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/signoff"
	"github.com/memagent/memagent/internal/validation"
)

// Names of the Validate workflow's activities.
const (
	LoadValidationName   = actwire.LoadValidationName
	ExtendValidationName = actwire.ExtendValidationName
	WriteValidationName  = actwire.WriteValidationName
)

// Names of the objects a validation writes under its prefix (the review's
// or the batch report's prefix, then validation/).
const (
	ValidationFolder     = "validation/"
	ValidationReportJSON = "report.json"
	ValidationReportHTML = "report.html"
)

func (a *Activities) registerValidation(r Registry) {
	bind(r, actwire.LoadValidation, a.loadValidation)
	bind(r, actwire.ExtendValidation, a.extendValidation)
	bind(r, actwire.WriteValidation, a.writeValidation)
}

// loadValidation reads the batch or review a validation validates (its
// result as Temporal holds it, then its own results file), forms its
// strata and draws each one's sample with the seed. Only the sample
// enters the workflow's history.
func (a *Activities) loadValidation(ctx context.Context, in actwire.LoadValidationInput) (*actwire.LoadValidationOutput, error) {
	if err := a.callerIs(ctx, api.ValidateName); err != nil {
		return nil, err
	}
	// A gated batch starts its validation as its last command: wait
	// for that batch's run to close before reading it.
	if err := awaitStartingBatch(ctx, activity.GetClient(ctx), in.Kind, in.WorkflowID); err != nil {
		return nil, err
	}
	out := &actwire.LoadValidationOutput{}
	rows, err := a.validationRows(ctx, in.WorkflowID, in.Kind, &out.Subject)
	if err != nil {
		return nil, err
	}
	out.PopulationHash, out.Strata, out.Cells, err = drawValidation(rows, in)
	if err != nil {
		return nil, badInput(fmt.Errorf("%s %s: %w", in.Kind, in.WorkflowID, err))
	}
	return out, nil
}

// validationRows reads the completed batch or review a validation
// validates into s, and its rows.
func (a *Activities) validationRows(ctx context.Context, workflowID, kind string, s *api.SignOffSubject) ([]signoff.Row, error) {
	c := activity.GetClient(ctx)
	lin := actwire.LoadSignOffInput{WorkflowID: workflowID, Kind: kind}
	runID, err := completedSubject(ctx, c, activity.GetInfo(ctx).TaskQueue, lin)
	if err != nil {
		return nil, err
	}
	s.Kind, s.WorkflowID, s.RunID = kind, workflowID, runID
	if kind == api.SubjectReview {
		_, err = reviewSubject(ctx, c, s)
	} else {
		_, err = a.batchSubject(ctx, c, s)
	}
	if err != nil {
		return nil, err
	}
	s.Prefix = strings.TrimSuffix(s.Prefix, SignOffFolder) + ValidationFolder
	return a.signOffRows(ctx, *s)
}

// extendValidation draws the next cells of the strata an extension grows
// (drawExtension), from the same run of the subject the validation drew
// its sample from.
func (a *Activities) extendValidation(ctx context.Context, in actwire.ExtendValidationInput) (*actwire.ExtendValidationOutput, error) {
	if err := a.callerIs(ctx, api.ValidateName); err != nil {
		return nil, err
	}
	var s api.SignOffSubject
	rows, err := a.validationRows(ctx, in.WorkflowID, in.Kind, &s)
	if err != nil {
		return nil, err
	}
	if s.RunID != in.RunID {
		return nil, badInput(fmt.Errorf("%s %s is run %s now, the validation drew from run %s: start a new validation of it", in.Kind, in.WorkflowID, s.RunID, in.RunID))
	}
	cells, err := drawExtension(rows, in)
	if err != nil {
		return nil, badInput(fmt.Errorf("%s %s: %w", in.Kind, in.WorkflowID, err))
	}
	return &actwire.ExtendValidationOutput{Cells: cells}, nil
}

// validationKey names a stratum: a question, and answered or not found.
type validationKey struct{ question, stratum string }

// validationStrata groups rows into their strata (per question: answered,
// not found; a row that failed with an error is in none, since it has no
// answer to validate), and lists every cell.
func validationStrata(rows []signoff.Row) (map[validationKey][]signoff.Row, []string) {
	byKey := map[validationKey][]signoff.Row{}
	var all []string
	for _, r := range rows {
		if r.Error != "" {
			continue
		}
		st := api.StratumNotFound
		if r.AnswerFound {
			st = api.StratumAnswered
		}
		k := validationKey{r.Question, st}
		byKey[k] = append(byKey[k], r)
		all = append(all, r.Cell)
	}
	return byKey, all
}

func validationCell(r signoff.Row, stratum string) api.ValidationCell {
	c := api.ValidationCell{
		ID: r.Cell, Question: r.Question, Document: r.Document, Stratum: stratum, AnswerPages: r.AnswerPages, ModelAnswer: r.ModelAnswer,
	}
	// The cited page, where it is a page of the cell's own document (a
	// corpus member's page is another file's).
	if g := r.Grounding; g.Found() && g.Pages != nil && g.Pages.Unit == api.UnitPage && r.EvidenceDocument() == r.Document {
		c.Page = g.Pages.First
	}
	return c
}

// drawExtension returns, for each stratum of in, the cells From to To of
// its draw under in.Seed: validation.Draw orders a stratum's cells by
// their keys, so the first From are the sample drawn so far, and the
// sample grown to To is the draw of To cells, a simple random sample of
// the stratum that a redraw from the seed gives whole. It refuses a
// stratum whose population is not the one drawn from (its hash). It is
// pure.
func drawExtension(rows []signoff.Row, in actwire.ExtendValidationInput) ([]api.ValidationCell, error) {
	byKey, _ := validationStrata(rows)
	var cells []api.ValidationCell
	for _, p := range in.Strata {
		members := byKey[validationKey{p.Question, p.Stratum}]
		ids := make([]string, len(members))
		byID := make(map[string]signoff.Row, len(members))
		for i, r := range members {
			ids[i], byID[r.Cell] = r.Cell, r
		}
		if p.From < 0 || p.To <= p.From || p.To > len(ids) {
			return nil, fmt.Errorf("cannot grow the %s stratum of question %q (%d cells) from %d to %d cells", p.Stratum, p.Question, len(ids), p.From, p.To)
		}
		sample, hash, err := validation.Draw(in.Seed, ids, p.To)
		if err != nil {
			return nil, err
		}
		if hash != p.PopulationHash {
			return nil, fmt.Errorf("the %s stratum of question %q is not the population the sample was drawn from (hash %s, drawn from %s): start a new validation", p.Stratum, p.Question, hash, p.PopulationHash)
		}
		for _, id := range sample[p.From:] {
			cells = append(cells, validationCell(byID[id], p.Stratum))
		}
	}
	return cells, nil
}

// drawValidation forms the strata of rows (per question: answered, not
// found; a row that failed with an error is in none, since it has no
// answer to validate), sizes each stratum's sample (in.SampleSize, or
// validation.SampleSize for in.Margin at in.Confidence) and draws it with
// validation.Draw under in.Seed. It refuses a sample larger than its
// stratum. It is pure: the same rows and input draw the same sample.
func drawValidation(rows []signoff.Row, in actwire.LoadValidationInput) (string, []api.ValidationStratum, []api.ValidationCell, error) {
	type key = validationKey
	byKey, all := validationStrata(rows)
	if len(all) == 0 {
		return "", nil, nil, fmt.Errorf("no answered or not-found cell to validate")
	}
	popHash, err := validation.PopulationHash(all)
	if err != nil {
		return "", nil, nil, err
	}
	keys := make([]key, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := strings.Compare(a.question, b.question); c != 0 {
			return c
		}
		return strings.Compare(a.stratum, b.stratum) // answered < not_found
	})
	var strata []api.ValidationStratum
	var cells []api.ValidationCell
	total := 0
	for _, k := range keys {
		members := byKey[k]
		ids := make([]string, len(members))
		byID := make(map[string]signoff.Row, len(members))
		for i, r := range members {
			ids[i], byID[r.Cell] = r.Cell, r
		}
		n := in.SampleSize
		if n == 0 {
			if n, err = validation.SampleSize(len(ids), in.Margin, in.Confidence); err != nil {
				return "", nil, nil, err
			}
		} else if n > len(ids) {
			return "", nil, nil, fmt.Errorf("a sample of %d is larger than the %s stratum of question %q (%d cells): give a smaller --sample, or --margin", n, k.stratum, k.question, len(ids))
		}
		if total += n; total > api.MaxValidationSample {
			return "", nil, nil, fmt.Errorf("the samples add up to more than %d cells: give a wider --margin or a smaller --sample", api.MaxValidationSample)
		}
		sample, hash, err := validation.Draw(in.Seed, ids, n)
		if err != nil {
			return "", nil, nil, err
		}
		strata = append(strata, api.ValidationStratum{Question: k.question, Stratum: k.stratum, Population: len(ids), PopulationHash: hash, Sampled: sample})
		for _, id := range sample {
			cells = append(cells, validationCell(byID[id], k.stratum))
		}
	}
	return popHash, strata, cells, nil
}

// writeValidation writes the validation's report, JSON and HTML, under
// its prefix.
func (a *Activities) writeValidation(ctx context.Context, in actwire.WriteValidationInput) (*actwire.WriteValidationOutput, error) {
	if err := a.callerIs(ctx, api.ValidateName); err != nil {
		return nil, err
	}
	out := &actwire.WriteValidationOutput{JSONURI: in.Prefix + ValidationReportJSON, HTMLURI: in.Prefix + ValidationReportHTML}
	rep := in.Report
	rep.ReportURI, rep.HTMLURI = out.JSONURI, out.HTMLURI
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return nil, err
	}
	var html bytes.Buffer
	if err := WriteValidationHTML(&html, rep); err != nil {
		return nil, err
	}
	files, err := validationFiles(in.Prefix, rep)
	if err != nil {
		return nil, err
	}
	out.AuditURI, out.XLSXURI = files[0].uri, files[1].uri
	// report.json last: it says the rest is there.
	for _, f := range append(files, []validationFile{
		{out.HTMLURI, "text/html; charset=utf-8", html.Bytes()},
		{out.JSONURI, "application/json", js},
	}...) {
		if err := a.allowValidationOutput(ctx, f.uri, rep.Subject); err != nil {
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
	if out.Gate, out.Notification, err = a.markGatedReport(ctx, rep); err != nil {
		return nil, err
	}
	return out, nil
}

// allowValidationOutput fails unless uri may be written by the validation
// of subject: the worker's write prefixes allow it, and it lies in a
// validation/ folder among subject's outputs.
func (a *Activities) allowValidationOutput(ctx context.Context, uri, subject string) error {
	if err := a.allowWrite("validation report", uri); err != nil {
		return err
	}
	if wf := workflowID(ctx); wf != "" && wf != api.ValidationWorkflowID(subject) {
		return forbidden("validation report %s: only the validation of %s (workflow %s) writes it", uri, subject, api.ValidationWorkflowID(subject))
	}
	i := strings.LastIndex(uri, "/"+ValidationFolder)
	if i < 0 || strings.Contains(uri[i+1+len(ValidationFolder):], "/") {
		return forbidden("validation report %s is not in a %s folder", uri, ValidationFolder)
	}
	return a.ownedBy(ctx, "validation report", uri[:i+1]+ValidationFolder, subject)
}

// WriteValidationHTML renders a validation report a person can file: the
// figures, each with a bar of its interval, the thresholds, the sample's
// recipe and every decision.
func WriteValidationHTML(w io.Writer, rep api.ValidationReport) error {
	return validationHTML.Execute(w, rep)
}

var validationHTML = template.Must(template.New("validation").Funcs(template.FuncMap{
	"pct": func(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) },
	"px":  func(x float64) string { return fmt.Sprintf("%.1f", 10+380*x) },
	"wpx": func(lo, hi float64) string { return fmt.Sprintf("%.1f", max(380*(hi-lo), 1)) },
	"figs": func(f api.ValidationFigures) []struct {
		Name string
		I    api.ValidationInterval
		Ok   bool
	} {
		type row = struct {
			Name string
			I    api.ValidationInterval
			Ok   bool
		}
		return []row{{"precision", f.Precision, true}, {"elusion", f.Elusion, true}, {"richness", f.Richness, true}, {"recall", f.Recall, f.RecallDefined}}
	},
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Validation of {{.Kind}} {{.Subject}}</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:60em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}.pass{color:#070}.fail{color:#a00}</style></head>
<body>
<h1>Validation of {{.Kind}} {{.Subject}}</h1>
<p>Run {{.SubjectRun}} · confidence {{pct .Confidence}} · {{if .SampleSize}}sample {{.SampleSize}} a stratum{{else}}margin ±{{pct .Margin}}{{end}} · {{if .Blind}}blind{{else}}not blind{{end}}{{if .FourEyes}} · four eyes{{end}}</p>
<p>Seed <code>{{.Seed}}</code> · population hash <code>{{.PopulationHash}}</code></p>
<p>Intervals: {{.IntervalMethod}} (precision, elusion); {{.CombinedMethod}} (richness, recall).{{with .OverallMethod}} Overall figures: {{.}}.{{end}}</p>
<h2>Thresholds: {{if .Passed}}<span class="pass">passed</span>{{else}}<span class="fail">failed</span>{{end}}</h2>
<ul>{{range .Thresholds}}<li class="{{if .Passed}}pass{{else}}fail{{end}}">{{.Threshold}}: bound {{printf "%.4f" .Bound}} — {{if .Passed}}pass{{else}}fail{{end}}{{with .Why}} ({{.}}){{end}}</li>{{end}}</ul>
{{define "figs"}}<table><tr><th>figure</th><th>estimate</th><th>interval</th><th></th></tr>
{{range figs .}}<tr><td>{{.Name}}</td>{{if .Ok}}<td>{{pct .I.Estimate}}</td><td>{{pct .I.Lower}} – {{pct .I.Upper}}</td>
<td><svg width="400" height="16" role="img" aria-label="{{.Name}} {{pct .I.Lower}} to {{pct .I.Upper}}"><line x1="10" y1="8" x2="390" y2="8" stroke="#ccc"/><rect x="{{px .I.Lower}}" y="3" width="{{wpx .I.Lower .I.Upper}}" height="10" fill="#79b"/><line x1="{{px .I.Estimate}}" y1="0" x2="{{px .I.Estimate}}" y2="16" stroke="#000" stroke-width="2"/></svg></td>
{{else}}<td colspan="3">undefined: the sample found no cell that holds an answer</td>{{end}}</tr>{{end}}</table>
<p>Answered {{.Answered}} (sampled {{.AnsweredSampled}}: {{.Right}} right, {{.WrongHeld}} wrong with an answer in the document) · not found {{.NotFound}} (sampled {{.NotFoundSampled}}: {{.Missed}} missed){{with .Error}} · {{.}}{{end}}</p>{{end}}
<h2>Overall</h2>
{{template "figs" .Overall}}
{{range .Questions}}<h2>Question: {{.Question}}</h2>{{template "figs" .}}{{end}}
<h2>Strata</h2>
<table><tr><th>question</th><th>stratum</th><th>population</th><th>sampled</th><th>population hash</th></tr>
{{range .Strata}}<tr><td>{{.Question}}</td><td>{{.Stratum}}</td><td>{{.Population}}</td><td>{{len .Sampled}}</td><td><code>{{.PopulationHash}}</code></td></tr>{{end}}</table>
<h2>Audit log</h2>
<table><tr><th>#</th><th>action</th><th>cell</th><th>verdict</th><th>answer</th><th>page</th><th>reviewer</th><th>at</th></tr>
{{range .Entries}}<tr><td>{{.Seq}}</td><td>{{.Action}}</td><td>{{.Cell}}</td><td>{{.Verdict}}{{if .HasAnswer}} (has answer){{end}}{{range .Grown}}{{.Stratum}} of {{.Question}}: {{.From}} → {{.To}}<br>{{end}}</td><td>{{.Answer}}</td><td>{{if .Page}}{{.Page}}{{end}}</td><td>{{.Reviewer}}</td><td>{{.At.Format "2006-01-02 15:04:05Z07:00"}}</td></tr>{{end}}</table>
</body></html>
`))
