package report

import (
	"bytes"
	"errors"
	"html/template"
	"io"
)

// BatchPage is what the batch report's HTML page shows. Every string is
// text: the page escapes it. Only Chart, made by BatchChart, is markup.
type BatchPage struct {
	Title string
	// Facts are name/value lines at the top (batch, manifest, model, …).
	Facts [][2]string
	// Links are the report's other files, by relative or absolute URL.
	Links  []BatchLink
	Tables []BatchTable
	// Chart is an SVG from BatchChart.
	Chart string
	// Changes is the "What changed" section (ChangesSection), nil when the
	// batch compared with no earlier report.
	Changes *BatchChanges
	// State, when set, is the report's validation state as a sentence
	// (api.ReportValidation.Text): a gated batch's report is provisional
	// until a validation marks it (MarkBatchState).
	State string
}

// BatchLink is one link of the page.
type BatchLink struct{ Name, Href string }

// BatchTable is one table of the page; Numeric marks right-aligned columns.
type BatchTable struct {
	Title   string
	Note    string
	Header  []string
	Numeric []bool
	Rows    [][]string
}

var batchPageTemplate = template.Must(template.New("batch").Funcs(template.FuncMap{
	"numeric": func(t BatchTable, i int) bool { return i < len(t.Numeric) && t.Numeric[i] },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2rem; color: #222; max-width: 80rem; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 2rem; } h3 { font-size: 1rem; }
table { border-collapse: collapse; margin: .5rem 0; font-size: .9rem; }
th, td { border: 1px solid #ccc; padding: .25rem .5rem; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
dl { display: grid; grid-template-columns: max-content auto; gap: .2rem 1rem; }
dt { font-weight: bold; } dd { margin: 0; word-break: break-all; }
p.note { color: #555; font-size: .85rem; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{if .State}}` + stateOpen + `{{.State}}` + stateClose + `
{{end}}<dl>{{range .Facts}}
<dt>{{index . 0}}</dt><dd>{{index . 1}}</dd>{{end}}
</dl>
{{if .Links}}<p>{{range $i, $l := .Links}}{{if $i}} · {{end}}<a href="{{$l.Href}}">{{$l.Name}}</a>{{end}}</p>{{end}}
{{with .Changes}}<section id="changes">
<h2>{{.Title}}</h2>
<p class="note">{{.Note}}</p>
{{range $t := .Tables}}<h3>{{$t.Title}}</h3>
{{if $t.Note}}<p class="note">{{$t.Note}}</p>{{end}}
<table>
<thead><tr>{{range $t.Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range $t.Rows}}
<tr>{{range $i, $c := .}}<td{{if numeric $t $i}} class="n"{{end}}>{{$c}}</td>{{end}}</tr>{{end}}
</tbody>
</table>
{{end}}</section>
{{end}}
{{if .Chart}}<h2>Score against document length</h2>
<figure>{{.Chart}}</figure>{{end}}
{{range $t := .Tables}}<h2>{{$t.Title}}</h2>
{{if $t.Note}}<p class="note">{{$t.Note}}</p>{{end}}
<table>
<thead><tr>{{range $t.Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range $t.Rows}}
<tr>{{range $i, $c := .}}<td{{if numeric $t $i}} class="n"{{end}}>{{$c}}</td>{{end}}</tr>{{end}}
</tbody>
</table>
{{end}}
</body>
</html>
`))

// The element of the page that holds State, found again by MarkBatchState.
const (
	stateOpen  = `<p id="memagent-report-state" class="state" style="border: 1px solid #a60; background: #fff6e5; padding: .5rem">`
	stateClose = `</p>`
)

// MarkBatchState replaces the state sentence of a page WriteBatchHTML
// wrote with state (text, escaped here). It fails on a page with none: a
// batch with no validation gate.
func MarkBatchState(page []byte, state string) ([]byte, error) {
	i := bytes.Index(page, []byte(stateOpen))
	if i < 0 {
		return nil, errors.New("the page has no validation state")
	}
	j := bytes.Index(page[i:], []byte(stateClose))
	if j < 0 {
		return nil, errors.New("the page's validation state is not closed")
	}
	var out bytes.Buffer
	out.Write(page[:i+len(stateOpen)])
	template.HTMLEscape(&out, []byte(state))
	out.Write(page[i+j:])
	return out.Bytes(), nil
}

// WriteBatchHTML writes the batch report's page: self-contained (no script,
// no external style or image), every text escaped.
func WriteBatchHTML(w io.Writer, p BatchPage) error {
	data := struct {
		BatchPage
		Chart template.HTML
	}{p, template.HTML(p.Chart)} // #nosec: BatchChart escapes every text it draws
	return batchPageTemplate.Execute(w, data)
}
