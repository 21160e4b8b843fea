package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/internal/config"
	"github.com/memagent/memagent/internal/evalgen"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/simulator"
	"github.com/memagent/memagent/workflows"
)

// Labels of MemAgent's evaluation format that the score table reads.
const (
	evalLabelLength = "length"
	evalLabelTask   = "task"
)

// Metrics the score table can show.
const (
	metricExact     = "exact"
	metricSubstring = "substring"
	metricF1        = "f1"
)

// metricTitle is how a metric is named in the table's header.
var metricTitle = map[string]string{
	metricExact:     "exact match",
	metricSubstring: "substring match",
	metricF1:        "token F1",
}

func runEvalRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("eval run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterFlags(fs)
	set := fs.String("set", "", "the evaluation set in MemAgent's JSON format: a local file (uploaded once) or s3://bucket/key (required)")
	concurrency := fs.Int("concurrency", 0, "DocumentQA runs at once (0 = the workflow's default, 16)")
	name := fs.String("name", "", "the batch's name in reports and in `starter runs --batch` (default eval-<set name>)")
	metric := fs.String("metric", metricSubstring, "the score in the table: substring (as the MemAgent paper's accuracy), exact or f1")
	chunkTokens := fs.Int("chunk-tokens", 0, "tokens per chunk (0 = the default, 5000)")
	asJSON := fs.Bool("json", false, "print one JSON object (table, result and report URIs) instead of text")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: eval run takes only flags", fs.Args())
	}
	if _, ok := metricTitle[*metric]; !ok {
		return fmt.Errorf("--metric %q: use %s, %s or %s", *metric, metricSubstring, metricExact, metricF1)
	}
	if *concurrency < 0 || *concurrency > workflows.MaxBatchConcurrency {
		return fmt.Errorf("--concurrency (%d) must be within [1, %d] (0 = the default, %d)", *concurrency, workflows.MaxBatchConcurrency, workflows.DefaultBatchConcurrency)
	}
	if *chunkTokens < 0 {
		return fmt.Errorf("--chunk-tokens (%d) must be positive (0 = the default)", *chunkTokens)
	}
	if *set == "" {
		return errors.New("no evaluation set: pass --set FILE.json (write one with `starter eval gen`) or --set s3://bucket/key")
	}
	if !strings.HasPrefix(*set, "s3://") {
		if err := checkEvalSetFile(*set); err != nil {
			return err
		}
	}
	if *name == "" {
		*name = "eval-" + evalSetName(*set)
	}
	in := workflows.BatchQAInput{
		Format:      workflows.ManifestMemAgent,
		Name:        *name,
		Options:     activities.ModelOptions{Model: cfg.Model, ChunkTokens: *chunkTokens},
		Concurrency: *concurrency,
	}
	// Everything but the set is checked before anything connects.
	in.Manifest = "s3://check/set.json"
	if err := in.Validate(); err != nil {
		return err
	}
	cfg.Normalize()
	if err := cfg.Validate(); err != nil {
		return err
	}
	s := &session{cfg: cfg, logger: cliLogger(stderr)}
	if tty := isTerminal(stderr); tty || !*asJSON {
		s.progress, s.progressTTY = stderr, tty
	}
	if err := s.connect(ctx); err != nil {
		return err
	}
	defer s.close()
	if in.Manifest, err = uploadManifest(ctx, s.store, cfg.Bucket, *set); err != nil {
		return err
	}
	res, rep, err := runBatchAndReport(ctx, s, in)
	if err != nil {
		return err
	}
	items, err := readBatchItems(ctx, s.store, rep.ResultsURI)
	if err != nil {
		return err
	}
	table := buildEvalTable(rep, items, *metric)
	if *asJSON {
		out := struct {
			Table  evalTable                `json:"table"`
			Result *workflows.BatchQAResult `json:"result"`
			Report evalReportURIs           `json:"report"`
		}{table, res, reportURIs(rep, res)}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	served := orDash(rep.Model)
	if rep.Model == simulator.DefaultModel {
		served += " (the inference simulator: these scores say nothing about any model)"
	}
	fmt.Fprintf(stdout, "%s: %d items, %d answered, %d reused, %d failed; served by %s\n\n",
		rep.Name, rep.Overall.Items, rep.Overall.Answered, rep.Overall.Reused, rep.Overall.Failed, served)
	if err := renderEvalTable(stdout, table); err != nil {
		return err
	}
	u := reportURIs(rep, res)
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "Report:   %s\n", u.Report)
	fmt.Fprintf(stdout, "Page:     %s\n", orDash(u.HTML))
	fmt.Fprintf(stdout, "Results:  %s\n", orDash(u.Results))
	fmt.Fprintf(stdout, "CSV:      %s\n", orDash(u.CSV))
	fmt.Fprintf(stdout, "Chart:    %s\n", orDash(u.SVG))
	return nil
}

// evalReportURIs are where a batch's report and its parts are.
type evalReportURIs struct {
	Report  string `json:"report"`
	HTML    string `json:"html,omitempty"`
	Results string `json:"results,omitempty"`
	CSV     string `json:"csv,omitempty"`
	SVG     string `json:"svg,omitempty"`
}

func reportURIs(rep *activities.BatchReport, res *workflows.BatchQAResult) evalReportURIs {
	u := evalReportURIs{Report: res.ReportURI, HTML: rep.HTMLURI, Results: rep.ResultsURI, CSV: rep.CSVURI, SVG: rep.SVGURI}
	if u.HTML == "" {
		u.HTML = res.HTMLURI
	}
	return u
}

// checkEvalSetFile says, before anything connects, whether a local set
// can be MemAgent's format: a file whose JSON is an array. Its items are
// checked, streaming, as it is uploaded.
func checkEvalSetFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("evaluation set: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return fmt.Errorf("evaluation set: %w", err)
	} else if st.IsDir() {
		return fmt.Errorf("evaluation set %s is a directory: pass a .json file (write one with `starter eval gen`)", path)
	}
	r := bufio.NewReader(f)
	for {
		c, err := r.ReadByte()
		if err == io.EOF {
			return fmt.Errorf("evaluation set %s is empty", path)
		}
		if err != nil {
			return fmt.Errorf("read evaluation set %s: %w", path, err)
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '[':
			return nil
		}
		return fmt.Errorf("evaluation set %s is not MemAgent's JSON format (an array of objects with \"context\", \"input\", \"answers\"); a JSON Lines manifest runs with `starter batch`", path)
	}
}

// evalSetName is a set's file name without directory or extension, fit
// for a batch name.
func evalSetName(set string) string {
	base := set[strings.LastIndex(set, "/")+1:]
	if i := strings.LastIndex(base, "."); i > 0 {
		base = base[:i]
	}
	return sanitizeName(base)
}

// readBatchItems reads a report's per-item JSON Lines.
func readBatchItems(ctx context.Context, store *s3store.Store, uri string) ([]activities.BatchItemResult, error) {
	if uri == "" {
		return nil, nil
	}
	loc, err := s3store.ParseURI(uri)
	if err != nil {
		return nil, fmt.Errorf("results %s: %w", uri, err)
	}
	data, err := store.ReadAll(ctx, loc)
	if err != nil {
		return nil, fmt.Errorf("read results %s: %w", uri, err)
	}
	return parseBatchItems(data)
}

func parseBatchItems(data []byte) ([]activities.BatchItemResult, error) {
	var items []activities.BatchItemResult
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var it activities.BatchItemResult
		if err := json.Unmarshal(line, &it); err != nil {
			return nil, fmt.Errorf("results line %d: %w", n, err)
		}
		items = append(items, it)
	}
	return items, sc.Err()
}

// evalTable is the score of a batch by task (rows) and document length
// (columns), the shape of the MemAgent paper's tables.
type evalTable struct {
	Metric string `json:"metric"`
	// Title names the metric and what the cells are.
	Title string `json:"title"`
	// Lengths are the "length" label's values, in numeric order; Columns
	// the same rendered as 8K, 1M, 3.5M.
	Lengths []string  `json:"lengths"`
	Columns []string  `json:"columns"`
	Rows    []evalRow `json:"rows"`
	Failed  int       `json:"failed"`
	Items   int       `json:"items"`
}

// noTask is the row of items without a "task" label.
const noTask = "(no task)"

// evalRow is one task, or "all".
type evalRow struct {
	Task string `json:"task"`
	// Cells are per length, in the order of evalTable.Lengths.
	Cells   []evalCell `json:"cells"`
	Overall evalCell   `json:"overall"`
}

// evalCell is a mean score over N scored items; with N = 0 there is none.
type evalCell struct {
	Mean float64 `json:"mean"`
	N    int     `json:"n"`
}

// itemScore is an item's score under metric, and whether it has one.
// Like the report's means, only answered or reused items with gold answers
// are scored.
func itemScore(it activities.BatchItemResult, metric string) (float64, bool) {
	if it.Scores == nil || it.Status == activities.ItemFailed {
		return 0, false
	}
	switch metric {
	case metricExact:
		return b2f(it.Scores.ExactMatch), true
	case metricF1:
		return it.Scores.F1, true
	default:
		return b2f(it.Scores.SubstringMatch), true
	}
}

func aggregateScore(a activities.ScoreAggregate, metric string) evalCell {
	c := evalCell{N: a.Scored}
	switch metric {
	case metricExact:
		c.Mean = a.ExactMatch
	case metricF1:
		c.Mean = a.F1
	default:
		c.Mean = a.SubstringMatch
	}
	return c
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// buildEvalTable computes the table. With the per-item results it has a
// row per task (and an "all" row when there are several); without them it
// falls back to the report's aggregates, which give the "all" row by length
// and each task's overall score.
func buildEvalTable(rep *activities.BatchReport, items []activities.BatchItemResult, metric string) evalTable {
	t := evalTable{Metric: metric, Failed: rep.Overall.Failed, Items: rep.Overall.Items}
	switch metric {
	case metricSubstring:
		t.Title = "substring match (accuracy, the MemAgent paper's metric), % of scored items"
	case metricF1:
		t.Title = "token F1, mean % over scored items (the MemAgent paper reports accuracy: --metric substring)"
	default:
		t.Title = metricTitle[metric] + ", % of scored items (the MemAgent paper reports accuracy: --metric substring)"
	}
	lengthSet := map[string]bool{}
	for v := range rep.ByLabel[evalLabelLength] {
		lengthSet[v] = true
	}
	for _, it := range items {
		if v, ok := it.Labels[evalLabelLength]; ok {
			lengthSet[v] = true
		}
	}
	for v := range lengthSet {
		t.Lengths = append(t.Lengths, v)
	}
	slices.SortFunc(t.Lengths, compareLengths)
	for _, v := range t.Lengths {
		t.Columns = append(t.Columns, formatLength(v))
	}
	col := make(map[string]int, len(t.Lengths))
	for i, v := range t.Lengths {
		col[v] = i
	}

	if len(items) > 0 {
		t.Failed, t.Items = 0, len(items)
		type acc struct {
			cells   []sum
			overall sum
		}
		rows := map[string]*acc{}
		get := func(task string) *acc {
			a, ok := rows[task]
			if !ok {
				a = &acc{cells: make([]sum, len(t.Lengths))}
				rows[task] = a
			}
			return a
		}
		var tasks []string
		for _, it := range items {
			if it.Status == activities.ItemFailed {
				t.Failed++
			}
			task := it.Labels[evalLabelTask]
			if task == "" {
				task = noTask
			}
			if _, ok := rows[task]; !ok {
				tasks = append(tasks, task)
			}
			a := get(task)
			score, ok := itemScore(it, metric)
			if !ok {
				continue
			}
			a.overall.add(score)
			if v, ok := it.Labels[evalLabelLength]; ok {
				a.cells[col[v]].add(score)
			}
		}
		slices.Sort(tasks)
		if len(tasks) > 1 {
			all := &acc{cells: make([]sum, len(t.Lengths))}
			for _, a := range rows {
				all.overall.merge(a.overall)
				for i := range a.cells {
					all.cells[i].merge(a.cells[i])
				}
			}
			rows["all"] = all
			tasks = append(tasks, "all")
		}
		for _, task := range tasks {
			a := rows[task]
			r := evalRow{Task: task, Overall: a.overall.cell()}
			if len(tasks) == 1 && task == noTask {
				r.Task = "all"
			}
			for _, s := range a.cells {
				r.Cells = append(r.Cells, s.cell())
			}
			t.Rows = append(t.Rows, r)
		}
		return t
	}

	byTask := rep.ByLabel[evalLabelTask]
	taskNames := make([]string, 0, len(byTask))
	for k := range byTask {
		taskNames = append(taskNames, k)
	}
	slices.Sort(taskNames)
	if len(taskNames) > 1 {
		for _, k := range taskNames {
			// Per-length cells of a task need the per-item results.
			t.Rows = append(t.Rows, evalRow{Task: k, Cells: make([]evalCell, len(t.Lengths)), Overall: aggregateScore(byTask[k], metric)})
		}
	}
	all := evalRow{Task: "all", Overall: aggregateScore(rep.Overall, metric)}
	if len(taskNames) == 1 {
		all.Task = taskNames[0]
	}
	for _, v := range t.Lengths {
		all.Cells = append(all.Cells, aggregateScore(rep.ByLabel[evalLabelLength][v], metric))
	}
	t.Rows = append(t.Rows, all)
	return t
}

type sum struct {
	total float64
	n     int
}

func (s *sum) add(v float64) { s.total += v; s.n++ }
func (s *sum) merge(o sum)   { s.total += o.total; s.n += o.n }
func (s sum) cell() evalCell {
	if s.n == 0 {
		return evalCell{}
	}
	return evalCell{Mean: s.total / float64(s.n), N: s.n}
}

// renderEvalTable prints the table: a header naming the metric, a row per
// task, a column per length and an overall column; cells in percent with
// one decimal, "-" where no item was scored.
func renderEvalTable(w io.Writer, t evalTable) error {
	fmt.Fprintln(w, t.Title)
	grid := [][]string{append(append([]string{"task"}, t.Columns...), "overall")}
	for _, r := range t.Rows {
		row := []string{r.Task}
		for _, c := range r.Cells {
			row = append(row, formatCell(c))
		}
		grid = append(grid, append(row, formatCell(r.Overall)))
	}
	writeGrid(w, grid)
	if t.Failed > 0 {
		fmt.Fprintf(w, "%d of %d items failed and are in no mean; see the report\n", t.Failed, t.Items)
	}
	return nil
}

// writeGrid prints rows of cells in columns two spaces apart: the first
// column (names) aligned left, the others (numbers) right.
func writeGrid(w io.Writer, grid [][]string) {
	var widths []int
	for _, row := range grid {
		for i, c := range row {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, row := range grid {
		var b strings.Builder
		for i, c := range row {
			gap := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i == 0 {
				b.WriteString(c)
				if len(row) > 1 {
					b.WriteString(gap)
				}
				continue
			}
			b.WriteString("  " + gap + c)
		}
		fmt.Fprintln(w, b.String())
	}
}

func formatCell(c evalCell) string {
	if c.N == 0 {
		return "-"
	}
	return strconv.FormatFloat(100*c.Mean, 'f', 1, 64)
}

// compareLengths orders length labels numerically, with values that are
// not numbers after the numbers, by text.
func compareLengths(a, b string) int {
	x, errA := strconv.ParseFloat(a, 64)
	y, errB := strconv.ParseFloat(b, 64)
	switch {
	case errA == nil && errB == nil:
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	case errA == nil:
		return -1
	case errB == nil:
		return 1
	}
	return strings.Compare(a, b)
}

// formatLength renders a length label the way `starter eval gen` reads
// lengths and the MemAgent paper's tables show them: 8192 as 8K, 3670016
// as 3.5M. A label that is not a whole number is shown as it is.
func formatLength(v string) string {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return v
	}
	return evalgen.FormatLength(n)
}
