package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/cliflags"
	"github.com/memagent/memagent/internal/dev/evalgen"
	"github.com/memagent/memagent/internal/memagent"
)

// Scoring protocols of eval score and eval run.
const (
	// protocolDefault scores against every gold answer (aliases, or all
	// expected for RULER's multi-answer tasks); see memagent.Score.
	protocolDefault = "default"
	// protocolPaper scores as the MemAgent paper's evaluation scripts
	// do; see memagent.ScorePaper.
	protocolPaper = "paper"
)

// paperLengths are the columns of the paper's RULER-HQA table, as eval gen
// reads lengths (K = 1024 tokens, M = 1048576).
var paperLengths = []string{"7K", "14K", "28K", "56K", "112K", "224K", "448K", "896K", "1.75M", "3.5M"}

// publishedRow is one model's published RULER-HQA accuracy (sub_em, in
// percent) by length column. A length missing from SubEM is one the
// source has no number for: it is shown as unknown, never guessed.
type publishedRow struct {
	Model  string             `json:"model"`
	SubEM  map[string]float64 `json:"sub_em"`
	Source string             `json:"source"`
}

// paperSource is where the published rows come from (the project's copy
// with its cross-checks is ../shared/paper-results.md).
const paperSource = "Yu et al., \"MemAgent: Reshaping Long-Context LLM with Multi-Conv RL-based Memory Agent\", arXiv 2507.02259 (2025), Table 2 (RULER-HQA, sub_em over the 128 dev questions, first gold answer only), the main-results figure of the MemAgent repository's README"

// paperPublished are the published rows the table sets beside the
// measured one: the paper's Table 2, every cell. A length missing from a
// row is one the paper did not run.
var paperPublished = []publishedRow{
	{Model: "RL-MemAgent-14B", Source: paperSource, SubEM: map[string]float64{"7K": 83.59, "14K": 82.03, "28K": 84.38, "56K": 80.47, "112K": 76.56, "224K": 81.25, "448K": 75.00, "896K": 77.34, "1.75M": 76.56, "3.5M": 78.12}},
	{Model: "RL-MemAgent-7B", Source: paperSource, SubEM: map[string]float64{"7K": 82.03, "14K": 79.69, "28K": 78.91, "56K": 77.34, "112K": 79.69, "224K": 72.66, "448K": 74.22, "896K": 76.56, "1.75M": 75.78, "3.5M": 71.09}},
	{Model: "QwenLong-L1-32B", Source: paperSource, SubEM: map[string]float64{"7K": 72.66, "14K": 75.00, "28K": 72.66, "56K": 60.94, "112K": 31.25, "224K": 17.19, "448K": 13.28, "896K": 11.72}},
	{Model: "Qwen2.5-Instruct-14B-1M", Source: paperSource, SubEM: map[string]float64{"7K": 60.16, "14K": 60.94, "28K": 50.00, "56K": 57.03, "112K": 50.00, "224K": 37.50, "448K": 8.59, "896K": 0.00}},
	{Model: "Qwen2.5-Instruct-7B-1M", Source: paperSource, SubEM: map[string]float64{"7K": 61.72, "14K": 56.25, "28K": 53.91, "56K": 55.47, "112K": 51.56, "224K": 33.59, "448K": 12.50, "896K": 0.00}},
	{Model: "DS-Distill-Qwen-32B", Source: paperSource, SubEM: map[string]float64{"7K": 70.31, "14K": 66.41, "28K": 65.62, "56K": 46.88, "112K": 23.44, "224K": 13.28, "448K": 7.81, "896K": 7.03}},
	{Model: "DS-Distill-Qwen-14B", Source: paperSource, SubEM: map[string]float64{"7K": 64.06, "14K": 64.84, "28K": 57.03, "56K": 40.62, "112K": 14.84, "224K": 8.59, "448K": 3.12, "896K": 6.25}},
	{Model: "DS-Distill-Qwen-7B", Source: paperSource, SubEM: map[string]float64{"7K": 30.47, "14K": 12.50, "28K": 3.12, "56K": 0.00, "112K": 0.00, "224K": 0.78, "448K": 0.00, "896K": 0.00}},
}

// paperTable is a batch scored under the paper's protocol, by document
// length, beside the paper's published rows.
type paperTable struct {
	Protocol string `json:"protocol"`
	// Metric is the headline metric, sub_em.
	Metric string `json:"metric"`
	// Columns are the paper's lengths and the measured ones, in order of
	// length; Lengths the measured label value of each ("" for a paper
	// length the set does not have).
	Columns   []string            `json:"columns"`
	Lengths   []string            `json:"lengths"`
	Published []paperPublishedRow `json:"published"`
	Measured  []paperMeasuredRow  `json:"measured"`
	Failed    int                 `json:"failed"`
	Items     int                 `json:"items"`
	Unscored  int                 `json:"unscored"`
	Note      string              `json:"note"`
}

// paperPublishedRow is a published row aligned to the table's columns:
// nil where the number is unknown.
type paperPublishedRow struct {
	Model  string     `json:"model"`
	SubEM  []*float64 `json:"sub_em"`
	Source string     `json:"source"`
}

// paperMeasuredRow is one task's scores by length.
type paperMeasuredRow struct {
	Task    string      `json:"task"`
	Cells   []paperCell `json:"cells"`
	Overall paperCell   `json:"overall"`
}

// paperCell holds the mean scores, in percent, of N items.
type paperCell struct {
	SubEM float64 `json:"sub_em"`
	EM    float64 `json:"em"`
	F1    float64 `json:"f1"`
	N     int     `json:"n"`
}

// paperSum accumulates paperCell means.
type paperSum struct {
	s memagent.PaperScores
	n int
}

func (p *paperSum) add(s memagent.PaperScores) {
	p.s.EM += s.EM
	p.s.SubEM += s.SubEM
	p.s.F1 += s.F1
	p.n++
}

func (p paperSum) cell() paperCell {
	if p.n == 0 {
		return paperCell{}
	}
	n := float64(p.n)
	return paperCell{SubEM: 100 * p.s.SubEM / n, EM: 100 * p.s.EM / n, F1: 100 * p.s.F1 / n, N: p.n}
}

// buildPaperTable scores every answered item against its first gold answer
// (memagent.ScorePaper) and lays the means out by task and length, with
// the paper's lengths as columns whether measured or not. Failed items,
// like the scripts' items without output, are in no mean; items without a
// gold answer cannot be scored.
func buildPaperTable(items []api.BatchItemResult) paperTable {
	t := paperTable{Protocol: protocolPaper, Metric: "sub_em", Items: len(items),
		Note: `the MemAgent evaluation scripts' scoring: each answer against the first gold answer only, Python's SQuAD normalisation, sub_em the headline; an answer that normalises to "" counts as contained in its gold`}
	type column struct {
		label  string // as shown
		tokens int    // for ordering
		value  string // the measured label value, or ""
	}
	cols := map[string]*column{}
	for _, l := range paperLengths {
		n, _ := evalgen.ParseLength(l)
		cols[l] = &column{label: l, tokens: n}
	}
	for _, it := range items {
		v, ok := it.Labels[evalLabelLength]
		if !ok {
			continue
		}
		label := formatLength(v)
		c, ok := cols[label]
		if !ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				n = 1 << 62 // labels that are not numbers go last
			}
			c = &column{label: label, tokens: n}
			cols[label] = c
		}
		c.value = v
	}
	ordered := make([]*column, 0, len(cols))
	for _, c := range cols {
		ordered = append(ordered, c)
	}
	slices.SortFunc(ordered, func(a, b *column) int {
		if a.tokens != b.tokens {
			return a.tokens - b.tokens
		}
		return compareLengths(a.label, b.label)
	})
	index := map[string]int{}
	for i, c := range ordered {
		t.Columns = append(t.Columns, c.label)
		t.Lengths = append(t.Lengths, c.value)
		index[c.label] = i
	}
	for _, p := range paperPublished {
		row := paperPublishedRow{Model: p.Model, Source: p.Source, SubEM: make([]*float64, len(ordered))}
		for label, v := range p.SubEM {
			v := v
			row.SubEM[index[label]] = &v
		}
		t.Published = append(t.Published, row)
	}

	type acc struct {
		cells   []paperSum
		overall paperSum
	}
	rows := map[string]*acc{}
	var tasks []string
	for _, it := range items {
		if it.Status == api.ItemFailed {
			t.Failed++
			continue
		}
		if len(it.GoldAnswers) == 0 {
			t.Unscored++
			continue
		}
		task := it.Labels[evalLabelTask]
		if task == "" {
			task = noTask
		}
		a, ok := rows[task]
		if !ok {
			a = &acc{cells: make([]paperSum, len(ordered))}
			rows[task] = a
			tasks = append(tasks, task)
		}
		s := memagent.ScorePaper(it.Answer, it.GoldAnswers[0])
		a.overall.add(s)
		if v, ok := it.Labels[evalLabelLength]; ok {
			a.cells[index[formatLength(v)]].add(s)
		}
	}
	slices.Sort(tasks)
	for _, task := range tasks {
		a := rows[task]
		r := paperMeasuredRow{Task: task, Overall: a.overall.cell()}
		for _, s := range a.cells {
			r.Cells = append(r.Cells, s.cell())
		}
		t.Measured = append(t.Measured, r)
	}
	return t
}

// renderPaperTable prints the published rows and, per task, the measured
// sub_em with the sample count, em and f1 under it. "?" is a published
// number the project's sources do not give; "-" a length with no scored
// item.
func renderPaperTable(w io.Writer, t paperTable, model string) {
	fmt.Fprintf(w, "protocol: paper — %s\n", t.Note)
	head := append(append([]string{"RULER-HQA, %"}, t.Columns...), "overall")
	grid := [][]string{head}
	for _, p := range t.Published {
		row := []string{p.Model + " (paper, sub_em)"}
		for _, v := range p.SubEM {
			if v == nil {
				row = append(row, "?")
			} else {
				row = append(row, strconv.FormatFloat(*v, 'f', 2, 64))
			}
		}
		grid = append(grid, append(row, ""))
	}
	pct := func(c paperCell, v float64) string {
		if c.N == 0 {
			return "-"
		}
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	for _, r := range t.Measured {
		name := "measured"
		if len(t.Measured) > 1 || r.Task != noTask {
			name += " " + r.Task
		}
		if model != "" {
			name += " (" + model + ")"
		}
		lines := []struct {
			label string
			get   func(paperCell) string
		}{
			{name + ", sub_em", func(c paperCell) string { return pct(c, c.SubEM) }},
			{"  samples", func(c paperCell) string { return strconv.Itoa(c.N) }},
			{"  em", func(c paperCell) string { return pct(c, c.EM) }},
			{"  f1", func(c paperCell) string { return pct(c, c.F1) }},
		}
		for _, l := range lines {
			row := []string{l.label}
			for _, c := range r.Cells {
				row = append(row, l.get(c))
			}
			grid = append(grid, append(row, l.get(r.Overall)))
		}
	}
	writeGrid(w, grid, 1)
	fmt.Fprintln(w, `?: no published number (the paper did not run that model at that length, past its context, or has no such column); -: no scored item at that length`)
	var sources []string
	for _, p := range t.Published {
		if !slices.Contains(sources, p.Source) {
			sources = append(sources, p.Source)
			fmt.Fprintf(w, "Published rows: %s\n", p.Source)
		}
	}
	if t.Failed > 0 {
		fmt.Fprintf(w, "%d of %d items failed and are in no mean (the scripts skip items without output); see the report\n", t.Failed, t.Items)
	}
	if t.Unscored > 0 {
		fmt.Fprintf(w, "%d items have no gold answer and are not scored\n", t.Unscored)
	}
}

func bindEvalScore(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	fs := cmd.Flags()
	protocol := fs.String("protocol", protocolDefault, "scoring protocol: default or paper")
	pred := fs.String("pred", "", "the answer to score (an empty one scores 0)")
	var golds stringList
	fs.Var(&golds, "gold", "a gold answer; repeat for several (the paper protocol uses the first)")
	// JSON is the default, as it was before --output.
	asJSON := cliflags.OutputJSONFirst(cmd, "output format: json (the default; values unrounded) or text (two decimals)")
	return func(args []string) (err error) {
		if len(args) > 0 {
			return fmt.Errorf("eval score: unexpected argument %q: pass the answer with --pred and gold answers with --gold", args[0])
		}
		predSet := false
		fs.Visit(func(f *pflag.Flag) { predSet = predSet || f.Name == "pred" })
		if !predSet {
			return errors.New("eval score: --pred is required (the answer to score; --pred '' for none)")
		}
		if len(golds) == 0 {
			return errors.New("eval score: at least one --gold is required")
		}
		var out any
		var text string
		switch *protocol {
		case protocolDefault:
			s := memagent.Score(*pred, golds)
			out = s
			text = fmt.Sprintf("exact_match %t\nsubstring_match %t\nf1 %.2f\nbest_gold %s\nrecall %.2f\n", s.ExactMatch, s.SubstringMatch, s.F1, s.BestGold, s.Recall)
		case protocolPaper:
			// JSON carries the F1 as it is; the scripts round each item's
			// to two decimals before averaging, which f1_rounded is.
			s := memagent.ScorePaper(*pred, golds[0])
			out = struct {
				EM        float64 `json:"em"`
				SubEM     float64 `json:"sub_em"`
				F1        float64 `json:"f1"`
				F1Rounded float64 `json:"f1_rounded"`
			}{s.EM, s.SubEM, memagent.PaperF1(*pred, golds[0]), s.F1}
			text = fmt.Sprintf("em %g\nsub_em %g\nf1 %.2f\n", s.EM, s.SubEM, s.F1)
		default:
			return fmt.Errorf("eval score: --protocol %q: use default or paper", *protocol)
		}
		if !*asJSON {
			_, err := io.WriteString(stdout, text)
			return err
		}
		return printJSON(stdout, out)
	}
}
