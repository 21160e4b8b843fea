package report

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/memagent/memagent/api"
)

// MaxBatchLabelValues bounds the values of one label that get their own
// aggregate; a label with more (an id, a raw token count) is left out of
// BatchReport.ByLabel and named in LabelsOmitted.
const MaxBatchLabelValues = 100

var aggregateHeader = []string{"", "items", "answered", "reused", "failed", "scored", "exact match",
	"substring match", "F1", "recall", "mean tokens", "model calls", "not found"}

var aggregateNumeric = []bool{false, true, true, true, true, true, true, true, true, true, true, true, true}

// BatchAggregator accumulates a ScoreAggregate.
type BatchAggregator struct {
	agg                 api.ScoreAggregate
	em, sub, f1, recall float64
	tokens              float64
	tokensItems         int
}

// Add counts one outcome.
func (g *BatchAggregator) Add(r api.BatchItemResult) {
	a := &g.agg
	a.Items++
	switch r.Status {
	case api.ItemAnswered:
		a.Answered++
	case api.ItemReused:
		a.Reused++
	default:
		a.Failed++
	}
	a.Usage = a.Usage.Add(r.Usage)
	if r.Status != api.ItemFailed && r.Grounding != nil && r.Grounding.Status == api.GroundingNotFound {
		a.NotFound++
	}
	if r.Tokens > 0 {
		g.tokens += float64(r.Tokens)
		g.tokensItems++
	}
	if r.Status != api.ItemFailed && r.Scores != nil && len(r.GoldAnswers) > 0 {
		a.Scored++
		if r.Scores.ExactMatch {
			g.em++
		}
		if r.Scores.SubstringMatch {
			g.sub++
		}
		g.f1 += r.Scores.F1
		g.recall += r.Scores.Recall
	}
}

// Result is the aggregate of the outcomes added: counts and means.
func (g *BatchAggregator) Result() api.ScoreAggregate {
	a := g.agg
	if a.Scored > 0 {
		n := float64(a.Scored)
		a.ExactMatch, a.SubstringMatch, a.F1, a.Recall = g.em/n, g.sub/n, g.f1/n, g.recall/n
	}
	if g.tokensItems > 0 {
		a.MeanTokens = g.tokens / float64(g.tokensItems)
	}
	return a
}

// BatchGroup accumulates one item's samples (GroupResult).
type BatchGroup struct {
	res         api.GroupResult
	em, sub, f1 float64
	bestSet     bool
}

// Add counts one of the item's samples.
func (g *BatchGroup) Add(r api.BatchItemResult) {
	g.res.Samples++
	g.res.Usage = g.res.Usage.Add(r.Usage)
	switch r.Status {
	case api.ItemAnswered:
		g.res.Answered++
	case api.ItemReused:
		g.res.Reused++
	default:
		g.res.Failed++
	}
	if r.Status == api.ItemFailed || r.Scores == nil || len(r.GoldAnswers) == 0 {
		return
	}
	g.res.Scored++
	em, sub := b2f(r.Scores.ExactMatch), b2f(r.Scores.SubstringMatch)
	g.em, g.sub, g.f1 = g.em+em, g.sub+sub, g.f1+r.Scores.F1
	g.res.BestExactMatch = max(g.res.BestExactMatch, em)
	g.res.BestSubstringMatch = max(g.res.BestSubstringMatch, sub)
	g.res.BestF1 = max(g.res.BestF1, r.Scores.F1)
}

// Result is the group's line of groups.jsonl.
func (g *BatchGroup) Result() api.GroupResult {
	r := g.res
	if r.Scored > 0 {
		n := float64(r.Scored)
		r.MeanExactMatch, r.MeanSubstringMatch, r.MeanF1 = g.em/n, g.sub/n, g.f1/n
	}
	return r
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// BatchGroupAggregator accumulates a GroupAggregate over the items' groups.
type BatchGroupAggregator struct {
	samples int
	agg     api.GroupAggregate
}

// NewBatchGroupAggregator sums up the groups of a batch answered samples
// times per item.
func NewBatchGroupAggregator(samples int) BatchGroupAggregator {
	return BatchGroupAggregator{samples: samples}
}

// NewBatchGroup starts the group of item seq (id) of a batch with samples.
func NewBatchGroup(seq int, id string) *BatchGroup {
	return &BatchGroup{res: api.GroupResult{Seq: seq, ID: id}}
}

// Seq is the manifest position of the group's item.
func (g *BatchGroup) Seq() int { return g.res.Seq }

// Add adds one group's outcome.
func (a *BatchGroupAggregator) Add(g *BatchGroup) {
	a.agg.Items++
	r := g.Result()
	if r.Scored == 0 {
		return
	}
	a.agg.Scored++
	a.agg.MeanExactMatch += r.MeanExactMatch
	a.agg.BestExactMatch += r.BestExactMatch
	a.agg.MeanSubstringMatch += r.MeanSubstringMatch
	a.agg.BestSubstringMatch += r.BestSubstringMatch
	a.agg.MeanF1 += r.MeanF1
	a.agg.BestF1 += r.BestF1
}

// Result is the means over the groups added.
func (a *BatchGroupAggregator) Result() api.GroupAggregate {
	g := a.agg
	g.Samples = a.samples
	if g.Scored > 0 {
		n := float64(g.Scored)
		g.MeanExactMatch, g.BestExactMatch = g.MeanExactMatch/n, g.BestExactMatch/n
		g.MeanSubstringMatch, g.BestSubstringMatch = g.MeanSubstringMatch/n, g.BestSubstringMatch/n
		g.MeanF1, g.BestF1 = g.MeanF1/n, g.BestF1/n
	}
	return g
}

// FinishBatchLabels is BatchReport.ByLabel from one aggregator per label value.
func FinishBatchLabels(by map[string]map[string]*BatchAggregator) map[string]map[string]api.ScoreAggregate {
	out := make(map[string]map[string]api.ScoreAggregate, len(by))
	for k, vals := range by {
		out[k] = make(map[string]api.ScoreAggregate, len(vals))
		for v, g := range vals {
			out[k][v] = g.Result()
		}
	}
	return out
}

// SortedKeys are m's keys in order.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// sortedValues orders label values numerically when they all are numbers
// (context lengths), else as text.
func sortedValues(m map[string]api.ScoreAggregate) []string {
	vals := SortedKeys(m)
	nums := make(map[string]float64, len(vals))
	for _, v := range vals {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return vals
		}
		nums[v] = f
	}
	sort.SliceStable(vals, func(i, j int) bool { return nums[vals[i]] < nums[vals[j]] })
	return vals
}

// BatchCSVRow is an outcome's row of results.csv.
func BatchCSVRow(r api.BatchItemResult) []string {
	var em, sub, f1, recall string
	if r.Scores != nil {
		em, sub, f1 = strconv.FormatBool(r.Scores.ExactMatch), strconv.FormatBool(r.Scores.SubstringMatch), strconv.FormatFloat(r.Scores.F1, 'f', 4, 64)
		recall = strconv.FormatFloat(r.Scores.Recall, 'f', 4, 64)
	}
	return []string{
		strconv.Itoa(r.Seq), CSVText(r.ID), r.Status, CSVText(r.Document),
		CSVText(r.Question), CSVText(strings.Join(r.GoldAnswers, " | ")),
		CSVText(r.Answer), strconv.FormatBool(r.AnswerFound), em, sub, f1, recall,
		strconv.Itoa(r.Chunks), strconv.FormatInt(r.Tokens, 10), strconv.Itoa(r.Usage.Calls),
		strconv.FormatInt(r.Usage.PromptTokens, 10), strconv.FormatInt(r.Usage.CompletionTokens, 10),
		CSVText(r.ErrorType), CSVText(r.Error), CSVText(r.WorkflowID), CSVText(r.ResultURI),
		CSVText(r.AnswerPages), groundingStatus(r.Grounding), groundingPages(r.Grounding), CSVText(groundingQuote(r.Grounding)),
	}
}

// BatchCSVExtraHeader names the columns of results.csv that come after the
// label columns, so that every earlier column keeps its place: the item's
// corpus (empty for one document) and where its answer was found
// (BatchCitation), and whether that is a scanned page (BatchScanMark).
var BatchCSVExtraHeader = []string{"documents", "found_on", "scan"}

// BatchCSVExtra is an outcome's cells of BatchCSVExtraHeader.
func BatchCSVExtra(r api.BatchItemResult) []string {
	return []string{CSVText(strings.Join(r.Documents, " | ")), CSVText(BatchCitation(r)), BatchScanMark(r)}
}

// BatchScanMark says whether an outcome's answer was found on a scanned
// page (ScanMark of its grounding and answer sources).
func BatchScanMark(r api.BatchItemResult) string {
	refs := make([]*api.PageRef, 0, len(r.AnswerSources)+1)
	if r.Grounding != nil {
		refs = append(refs, r.Grounding.Pages)
	}
	for _, s := range r.AnswerSources {
		refs = append(refs, s.Pages)
	}
	return ScanMark(refs...)
}

// BatchCitation is where an outcome's answer was found, as a reader cites
// it (FoundOn).
func BatchCitation(r api.BatchItemResult) string {
	return FoundOn(r.AnswerPages, r.AnswerSources)
}

// FoundOn is where an answer was found as text, CSV and HTML print it
// ("Found on"): its answer_sources, which name the document
// ("deposition-12.pdf p. 4; exhibit-3.docx § 2"), else its answer_pages.
// ContextOn prints context_pages and context_sources alike.
func FoundOn(pages string, sources []api.SourceRef) string {
	if len(sources) > 0 {
		return api.CiteSources(sources)
	}
	return pages
}

// BatchDocument is what an outcome asked about as a table shows it: its
// document, or its corpus's first document and how many follow.
func BatchDocument(r api.BatchItemResult) string {
	return api.DocumentSubject(r.Document, r.Documents)
}

func groundingStatus(g *api.Grounding) string {
	if g == nil {
		return ""
	}
	return g.Status
}

func groundingPages(g *api.Grounding) string {
	if g == nil {
		return ""
	}
	return g.Pages.String()
}

// groundingQuote is the quote of a grounding's CSV column: a part a
// line, each with its page, when it crosses pages.
func groundingQuote(g *api.Grounding) string {
	return g.QuoteByPage()
}

// GroundingCell is how a page shows an answer's grounding: its status,
// with the document (in a corpus) and page (or section) it was found on.
func GroundingCell(g *api.Grounding) string {
	if g == nil {
		return ""
	}
	if g.Document != "" {
		return g.Status + ", " + api.SourceRef{Document: g.Document, Name: path.Base(g.Document), Pages: g.Pages}.String()
	}
	if p := g.Pages.String(); p != "" {
		return g.Status + ", " + p
	}
	return g.Status
}

// BatchHTMLItemRow is an outcome's row of report.html's item table, its long texts clipped.
func BatchHTMLItemRow(r api.BatchItemResult) []string {
	f1, sub, recall := "", "", ""
	if r.Scores != nil {
		f1 = strconv.FormatFloat(r.Scores.F1, 'f', 2, 64)
		sub = strconv.FormatBool(r.Scores.SubstringMatch)
		recall = strconv.FormatFloat(r.Scores.Recall, 'f', 2, 64)
	}
	answer := r.Answer
	if r.Status == api.ItemFailed {
		answer = r.ErrorType + ": " + r.Error
	}
	return []string{strconv.Itoa(r.Seq), r.ID, r.Status, clipText(r.Question, 200), clipText(answer, 200),
		clipText(strings.Join(r.GoldAnswers, " | "), 120), sub, f1, recall, strconv.FormatInt(r.Tokens, 10),
		BatchCitation(r), GroundingCell(r.Grounding)}
}

func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// BatchAggregateRow is an aggregate's row of report.html's tables.
func BatchAggregateRow(name string, g api.ScoreAggregate) []string {
	return []string{name, strconv.Itoa(g.Items), strconv.Itoa(g.Answered), strconv.Itoa(g.Reused),
		strconv.Itoa(g.Failed), strconv.Itoa(g.Scored), fmt.Sprintf("%.3f", g.ExactMatch),
		fmt.Sprintf("%.3f", g.SubstringMatch), fmt.Sprintf("%.3f", g.F1), fmt.Sprintf("%.3f", g.Recall), fmt.Sprintf("%.0f", g.MeanTokens),
		strconv.Itoa(g.Usage.Calls), strconv.Itoa(g.NotFound)}
}

// NewBatchPage lays out the report's HTML page.
func NewBatchPage(rep *api.BatchReport, labelKeys []string, chart string, failures [][]string, failedTotal int, rows [][]string) BatchPage {
	p := BatchPage{
		Title: "Batch " + rep.Name,
		Facts: [][2]string{
			{"Batch", rep.Name}, {"Workflow", rep.WorkflowID}, {"Manifest", rep.Manifest},
			{"Model", rep.Model},
			{"Options", fmt.Sprintf("chunk %d tokens, memory %d, answer %d, temperature %g, top_p %g, tokenizer %s",
				rep.Options.ChunkTokens, rep.Options.MemoryMaxTokens, rep.Options.AnswerMaxTokens,
				*rep.Options.Temperature, *rep.Options.TopP, rep.Options.Tokenizer)},
			{"Started", rep.StartedAt.UTC().Format(time.RFC3339)}, {"Finished", rep.FinishedAt.UTC().Format(time.RFC3339)},
		},
		Links: []BatchLink{{Name: api.ReportJSONName, Href: api.ReportJSONName}, {Name: api.ReportResultsName, Href: api.ReportResultsName},
			{Name: api.ReportCSVName, Href: api.ReportCSVName}, {Name: api.ReportSVGName, Href: api.ReportSVGName}},
		Chart: chart,
	}
	if v := rep.Validation; v != nil {
		p.State = v.Text()
	}
	p.Tables = append(p.Tables, BatchTable{
		Title: "Overall", Header: aggregateHeader, Numeric: aggregateNumeric,
		Note: "Scores are means over the items with gold answers that were answered or reused; exact and substring match are after normalisation (lowercase, no punctuation or articles), F1 over tokens, each the best over the gold answers (any one is right); recall is the fraction of the gold answers found in the answer (all are expected, as in RULER's multi-value tasks). An answer that says it cannot answer (unknown, not mentioned) is scored as empty. Not found counts the answers whose text is nowhere in their document, even normalised.",
		Rows: [][]string{BatchAggregateRow("all", rep.Overall)},
	})
	if g := rep.Groups; g != nil {
		p.Links = append(p.Links, BatchLink{Name: api.ReportGroupsName, Href: api.ReportGroupsName})
		p.Tables = append(p.Tables, BatchTable{
			Title:   fmt.Sprintf("Groups (%d samples per item)", g.Samples),
			Header:  []string{"items", "scored", "mean exact", "best exact", "mean substring", "best substring", "mean F1", "best F1"},
			Numeric: []bool{true, true, true, true, true, true, true, true},
			Note:    "Each item's samples are a group: its mean and best score over the scored samples, averaged over the items with at least one. The tables above count every sample; groups.jsonl has each item's line.",
			Rows: [][]string{{strconv.Itoa(g.Items), strconv.Itoa(g.Scored),
				fmt.Sprintf("%.3f", g.MeanExactMatch), fmt.Sprintf("%.3f", g.BestExactMatch),
				fmt.Sprintf("%.3f", g.MeanSubstringMatch), fmt.Sprintf("%.3f", g.BestSubstringMatch),
				fmt.Sprintf("%.3f", g.MeanF1), fmt.Sprintf("%.3f", g.BestF1)}},
		})
	}
	for _, k := range labelKeys {
		t := BatchTable{Title: "By " + k, Header: append([]string{k}, aggregateHeader[1:]...), Numeric: aggregateNumeric}
		for _, v := range sortedValues(rep.ByLabel[k]) {
			t.Rows = append(t.Rows, BatchAggregateRow(v, rep.ByLabel[k][v]))
		}
		p.Tables = append(p.Tables, t)
	}
	if len(rep.LabelsOmitted) > 0 {
		p.Facts = append(p.Facts, [2]string{"Labels not broken down", strings.Join(rep.LabelsOmitted, ", ") +
			fmt.Sprintf(" (more than %d values each)", MaxBatchLabelValues)})
	}
	if failedTotal > 0 {
		t := BatchTable{Title: fmt.Sprintf("Failed items (%d)", failedTotal),
			Header: []string{"seq", "id", "document", "error type", "error"}, Numeric: []bool{true}, Rows: failures}
		if failedTotal > len(failures) {
			t.Note = fmt.Sprintf("The first %d; results.csv has them all.", len(failures))
		}
		p.Tables = append(p.Tables, t)
	}
	t := BatchTable{Title: "Items", Header: []string{"seq", "id", "status", "question", "answer (or error)", "gold answers", "substring match", "F1", "recall", "tokens", "found on", "grounding"},
		Numeric: []bool{true, false, false, false, false, false, false, true, true, true, false, false}, Rows: rows,
		Note: "pages: where the answer's evidence is (a converted document's pages or sections); grounding: whether the answer's text is in the document (verbatim, normalized: after the scoring normalisation, not_found: nowhere, no_answer: none given), and the page it is on. A page read by OCR from a scan says so, with its confidence (\"p. 12 (scan, confidence 0.91)\"), and \"check the page\" under the confidence a human should check."}
	if rep.Overall.Items > len(rows) {
		t.Note += fmt.Sprintf(" The first %d of %d; results.csv has them all.", len(rows), rep.Overall.Items)
	}
	p.Tables = append(p.Tables, t)
	return p
}
