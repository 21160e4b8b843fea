package report

import (
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memagent/memagent/api"
)

// WriteReviewHTML writes g as one self-contained HTML page (report.html):
// a summary, the grid of questions, answers, scores, evidence and tokens,
// and, per question, each evidence passage with the words it brought into
// the memory marked. Every string from the grid is escaped by html/template
// in its context, and the page's Content-Security-Policy allows no script,
// no fetch and no external resource, so an answer or passage crafted as
// markup stays text. The page needs nothing but a browser.
func WriteReviewHTML(w io.Writer, g api.ReviewGrid) error {
	page := reviewPage{Grid: g}
	for i, r := range g.Rows {
		pr := reviewPageRow{ReviewRow: r, Anchor: fmt.Sprintf("q%d", i+1)}
		for k, e := range r.Evidence {
			pe := reviewPageEvidence{Evidence: e, Anchor: fmt.Sprintf("q%d-e%d", i+1, k+1), Where: EvidenceCite(e)}
			if e.Passage != nil {
				pe.Segments = reviewHighlight(e.Passage.Text, e.Added)
			}
			pr.Evidence = append(pr.Evidence, pe)
		}
		if r.Status == api.ReviewStatusFailed {
			page.Failed++
		}
		if r.AnswerReused {
			page.AnswersReused++
		}
		if r.Grounding != nil && r.Grounding.Status == api.GroundingNotFound {
			page.NotFound++
		}
		if r.AnswerFound {
			pr.FoundOn, pr.Context = ReviewCitation(r)
		}
		refs := []*api.PageRef{}
		if r.Grounding != nil {
			refs = append(refs, r.Grounding.Pages)
		}
		for _, e := range r.Evidence {
			refs = append(refs, evidencePages(e))
		}
		pr.Scan = ScanMark(refs...)
		page.Rows = append(page.Rows, pr)
	}
	return reviewTemplate.Execute(w, page)
}

// ReviewCitation is where a row's answer was found and its context, as
// the report prints them (FoundOn): its citation (api.Citation), or, for a
// grid from before citations, the pages of the evidence that supports the
// answer.
func ReviewCitation(r api.ReviewRow) (foundOn, context string) {
	if r.AnswerPages != "" || r.ContextPages != "" || len(r.AnswerSources) > 0 || len(r.ContextSources) > 0 ||
		(r.Grounding != nil && r.Grounding.FoundIn != "") {
		return FoundOn(r.AnswerPages, r.AnswerSources), FoundOn(r.ContextPages, r.ContextSources)
	}
	var cites []string
	for _, e := range r.Evidence {
		if c := e.Cite(); e.SupportsAnswer && c != "" && !slices.Contains(cites, c) {
			cites = append(cites, c)
		}
	}
	return strings.Join(cites, "; "), ""
}

type reviewPage struct {
	Grid   api.ReviewGrid
	Rows   []reviewPageRow
	Failed int
	// NotFound counts the answers whose text is nowhere in the document.
	NotFound int
	// AnswersReused counts the rows whose answer was reused (no call).
	AnswersReused int
}

type reviewPageRow struct {
	api.ReviewRow
	Anchor   string
	Evidence []reviewPageEvidence
	// FoundOn cites the pages (or sections) that hold the answer, and
	// Context those of the evidence that supports it without its words
	// (ReviewCitation).
	FoundOn, Context string
	// Scan is ScanMark of the answer's grounding and evidence: the row
	// cites a scanned page, or one a human should check.
	Scan string
}

type reviewPageEvidence struct {
	api.Evidence
	Anchor string
	// Where cites the entry: its document's name, for a corpus, and its
	// pages or section (EvidenceCite).
	Where    string
	Segments []reviewSegment
}

// reviewSegment is a piece of passage text, marked when it is one of the
// words the chunk brought into the memory.
type reviewSegment struct {
	Text string
	Mark bool
}

// reviewHighlight cuts text into segments, marking the words in words.
func reviewHighlight(text string, words []string) []reviewSegment {
	want := make(map[string]bool, len(words))
	for _, w := range words {
		want[w] = true
	}
	var out []reviewSegment
	at := 0
	for _, w := range reviewWords(text) {
		if !want[w.text] {
			continue
		}
		if w.start > at {
			out = append(out, reviewSegment{Text: text[at:w.start]})
		}
		out = append(out, reviewSegment{Text: text[w.start:w.end], Mark: true})
		at = w.end
	}
	if at < len(text) {
		out = append(out, reviewSegment{Text: text[at:]})
	}
	return out
}

// reviewThousands renders 1234567 as "1,234,567".
func reviewThousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

var reviewTemplate = template.Must(template.New("review").Funcs(template.FuncMap{
	"groundingCell": GroundingCell,
	"num": func(v any) string {
		switch n := v.(type) {
		case int:
			return reviewThousands(int64(n))
		case int64:
			return reviewThousands(n)
		}
		return fmt.Sprint(v)
	},
	"join": strings.Join,
	"pct":  func(f float64) string { return strconv.FormatFloat(100*f, 'f', 0, 64) + "%" },
	"time": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
}).Parse(reviewHTML))

const reviewHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Review of {{.Grid.Document}}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;max-width:84em;padding:0 1em;color:#1d1d1f}
h1{font-size:1.5em;margin:0 0 .2em}h2{font-size:1.2em;margin-top:2em}h3{font-size:1.05em;margin:1.5em 0 .4em}
.sub{color:#555;margin:0 0 1em}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:.15em 1em;margin:0 0 1.5em}
dl.meta dt{color:#555}dl.meta dd{margin:0;overflow-wrap:anywhere}
code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%}
th,td{border:1px solid #d0d0d7;padding:.35em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f6;position:sticky;top:0}
td{white-space:pre-wrap;overflow-wrap:anywhere}
td.n{text-align:right;white-space:nowrap}
tr.failed td{background:#fff4f4}
.err{color:#a00;font-weight:600}
.ok{color:#070}.no{color:#a00}
ul.ev{margin:0;padding-left:1.1em;white-space:normal}
.support{color:#070;font-weight:600}
.reused{display:inline-block;font-size:.8em;color:#345;background:#e6eef7;border-radius:3px;padding:0 .3em}
.faint{color:#777}
div.ev{border-left:3px solid #c9c9d6;margin:.6em 0;padding:.2em .8em}
div.ev.kept{border-left-color:#2a8a2a}
td.id,.range{white-space:nowrap}
div.where{color:#555;font-size:.92em}
div.scan{color:#8a5a00;font-size:.92em}div.scan.check{color:#b00020;font-weight:bold}
blockquote{margin:.3em 0;white-space:pre-wrap;overflow-wrap:anywhere;font-family:Georgia,serif}
mark{background:#ffe98a}
</style>
</head>
<body>
<h1>Document review</h1>
<p class="sub">{{len .Rows}} question(s) over one document, each answered from its own MemAgent memory{{if .Failed}}; <span class="err">{{.Failed}} failed</span>{{end}}{{if .NotFound}}; <span class="no">{{.NotFound}} answer(s) not found in the document</span>{{end}}.
Evidence lists the chunks at which a question's memory changed materially (rule <code>{{.Grid.EvidenceRule}}</code>);
<span class="support">✓</span> marks those whose words are still in the memory the answer came from.
Grounding says whether the answer's text is in the document, read from its bytes: verbatim, normalized (after the scoring normalisation), not_found, or no_answer.</p>
<dl class="meta">
{{- if .Grid.Source}}
<dt>Source</dt><dd><code>{{.Grid.Source}}</code> ({{.Grid.Format}}), converted to text; byte ranges below are of that text, pages and sections of the source</dd>
{{- end}}
<dt>Document</dt><dd><code>{{.Grid.Document}}</code></dd>
<dt>SHA-256</dt><dd><code>{{.Grid.DocumentSHA256}}</code></dd>
<dt>Size</dt><dd>{{num .Grid.Bytes}} bytes · {{num .Grid.Tokens}} tokens · {{.Grid.Chunks}} chunks of up to {{num .Grid.ChunkTokens}} {{.Grid.Tokenizer}} tokens{{if .Grid.InvalidBytesReplaced}} · {{.Grid.InvalidBytesReplaced}} invalid bytes replaced{{end}}</dd>
<dt>Model</dt><dd><code>{{.Grid.Model}}</code>, memory of up to {{num .Grid.MemoryMaxTokens}} tokens</dd>
<dt>Model usage</dt><dd>{{num .Grid.Usage.Calls}} calls · {{num .Grid.Usage.PromptTokens}} prompt + {{num .Grid.Usage.CompletionTokens}} completion tokens{{if .AnswersReused}} · {{.AnswersReused}} answer(s) reused with their whole reading, no call{{end}}</dd>
<dt>Workflow</dt><dd><code>{{.Grid.WorkflowID}}</code> (first run <code>{{.Grid.RunID}}</code>, {{.Grid.Runs}} run(s))</dd>
<dt>Time</dt><dd>{{time .Grid.StartedAt}} – {{time .Grid.FinishedAt}}</dd>
<dt>Files</dt><dd><a href="grid.json">grid.json</a> · <a href="grid.csv">grid.csv</a> · <code>{{.Grid.Prefix}}</code></dd>
</dl>
<table>
<thead><tr><th>ID</th><th>Question</th><th>Answer</th><th>Gold · score</th><th>Evidence (chunk · bytes)</th><th>Calls</th><th>Prompt tokens</th><th>Completion tokens</th></tr></thead>
<tbody>
{{- range .Rows}}
<tr id="{{.Anchor}}" class="{{.Status}}">
<td class="id"><a href="#{{.Anchor}}-detail">{{.ID}}</a></td>
<td>{{.Question}}</td>
<td>{{if eq .Status "failed"}}<span class="err">failed{{if .ErrorType}} ({{.ErrorType}}){{end}}</span>
{{.Error}}{{else if .AnswerFound}}{{.Answer}}{{else}}<span class="faint">no answer:</span> {{.Answer}}{{end}}
{{- with .FoundOn}}<div class="where">Found on: <strong class="page">{{.}}</strong></div>{{end}}
{{- if eq .Scan "check"}}<div class="scan check">Read by OCR from a scanned page of low confidence: check the page before relying on it.</div>{{else if eq .Scan "scan"}}<div class="scan">Read by OCR from a scanned page.</div>{{end}}
{{- with .Context}}<div class="where context">Context (evidence without the answer's words): <span class="page">{{.}}</span></div>{{end}}
{{- with .Grounding}}<div class="where grounding {{.Status}}">Grounding: <strong>{{groundingCell .}}</strong>{{with .QuoteByPage}}<blockquote>{{.}}</blockquote>{{end}}</div>{{end}}</td>
<td>{{if .GoldAnswers}}{{join .GoldAnswers " | "}}{{if .Scores}}
{{if .Scores.ExactMatch}}<span class="ok">exact</span>{{else if .Scores.SubstringMatch}}<span class="ok">substring</span>{{else}}<span class="no">no match</span>{{end}} · F1 {{pct .Scores.F1}}{{end}}{{else}}<span class="faint">–</span>{{end}}</td>
<td>{{if .Evidence}}<ul class="ev">{{range .Evidence}}<li><a href="#{{.Anchor}}">{{with .Where}}{{.}} · {{end}}chunk {{.Chunk}}</a> · <span class="range">{{num .Start}}–{{num .End}}</span>{{if .SupportsAnswer}} <span class="support" title="still in the final memory">✓</span>{{end}}</li>{{end}}</ul>{{else}}<span class="faint">none</span>{{end}}{{if .EvidenceDropped}}<span class="faint">+{{.EvidenceDropped}} dropped</span>{{end}}</td>
<td class="n">{{num .Usage.Calls}}{{if .AnswerReused}} <span class="reused" title="answer and every chunk reused from an earlier reading: no call">reused</span>{{end}}</td>
<td class="n">{{num .Usage.PromptTokens}}</td>
<td class="n">{{num .Usage.CompletionTokens}}</td>
</tr>
{{- end}}
</tbody>
</table>
<h2>Evidence passages</h2>
{{- range .Rows}}
<section id="{{.Anchor}}-detail">
<h3>{{.ID}} · {{.Question}}</h3>
<p>{{if eq .Status "failed"}}<span class="err">failed</span>{{else}}Answer: <strong>{{.Answer}}</strong>{{end}} · {{.ChunksRead}} chunks read{{if .AnswerReused}} · <span class="reused">reused</span>: the answer and all {{.ChunksReused}} chunks from an earlier reading, no call{{else if .ChunksReused}} · {{.ChunksReused}} of them reused from an earlier reading{{end}} · traces <code>{{.TracePrefix}}</code>{{if .ResultURI}} · result <code>{{.ResultURI}}</code>{{end}}</p>
{{- range .Evidence}}
<div class="ev{{if .SupportsAnswer}} kept{{end}}" id="{{.Anchor}}">
<div class="where">{{with .Where}}<strong class="page">{{.}}</strong> · {{end}}chunk {{.Chunk}} · bytes {{num .Start}}–{{num .End}}{{with .Passage}} · passage {{num .Start}}–{{num .End}}{{end}} · {{if .SupportsAnswer}}<span class="support">✓ still in the final memory</span>{{else}}no longer in the final memory{{end}}{{if .Added}} · new words: {{join .Added ", "}}{{end}}</div>
{{- if .Segments}}
<blockquote>{{range .Segments}}{{if .Mark}}<mark>{{.Text}}</mark>{{else}}{{.Text}}{{end}}{{end}}</blockquote>
{{- else if .Passage}}
<p class="faint">The passage's text could not be read for this page; it is bytes {{num .Passage.Start}}–{{num .Passage.End}} of the document.</p>
{{- else}}
<p class="faint">No sentence of this chunk holds the new words (the model reworded them); read bytes {{num .Start}}–{{num .End}} of the document.</p>
{{- end}}
</div>
{{- else}}
<p class="faint">The memory never changed materially: no evidence.</p>
{{- end}}
</section>
{{- end}}
</body>
</html>
`
