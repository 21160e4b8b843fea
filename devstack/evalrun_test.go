package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/evalgen"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/tokenizer"
)

func TestFormatLength(t *testing.T) {
	for in, want := range map[string]string{
		"2048":    "2K",
		"8192":    "8K",
		"7168":    "7K",
		"917504":  "896K",
		"1048576": "1M",
		"1835008": "1.75M",
		"3670016": "3.5M",
		"5000":    "5000",
		"512":     "512",
		"long":    "long",
		"2.5":     "2.5",
	} {
		if got := formatLength(in); got != want {
			t.Errorf("formatLength(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCompareLengths(t *testing.T) {
	got := []string{"16384", "long", "8192", "131072", "1048576", "4096", "abc"}
	slices.SortFunc(got, compareLengths)
	want := []string{"4096", "8192", "16384", "131072", "1048576", "abc", "long"}
	if !slices.Equal(got, want) {
		t.Errorf("sorted = %q, want %q", got, want)
	}
}

// evalItem is a batch item with labels and scores, as results.jsonl holds it.
// Its recall is 1 when it is a substring match, else 0, as with one gold
// answer the prediction contains.
func evalItem(task, length string, exact, substring bool, f1 float64) api.BatchItemResult {
	return evalItemRecall(task, length, exact, substring, f1, b2f(substring))
}

func evalItemRecall(task, length string, exact, substring bool, f1, recall float64) api.BatchItemResult {
	return api.BatchItemResult{
		Status: api.ItemAnswered,
		Labels: map[string]string{"task": task, "length": length},
		Scores: &api.Scores{ExactMatch: exact, SubstringMatch: substring, F1: f1, Recall: recall},
	}
}

// evalFixture is a report of two tasks at two lengths, and its items: a
// failed item at 16K is in no mean.
func evalFixture() (*api.BatchReport, []api.BatchItemResult) {
	items := []api.BatchItemResult{
		evalItem("niah", "8192", true, true, 1),
		evalItem("niah", "8192", false, true, 0.5),
		evalItem("niah", "16384", false, false, 0),
		evalItem("niah", "16384", true, true, 1),
		evalItem("hqa", "8192", false, true, 0.4),
		evalItem("hqa", "8192", false, false, 0),
		evalItem("hqa", "16384", false, false, 0.2),
		{Status: api.ItemFailed, Labels: map[string]string{"task": "hqa", "length": "16384"}},
	}
	agg := func(n, scored, failed int, em, sm, f1 float64) api.ScoreAggregate {
		return api.ScoreAggregate{Items: n, Answered: n - failed, Failed: failed, Scored: scored, ExactMatch: em, SubstringMatch: sm, F1: f1, Recall: sm}
	}
	rep := &api.BatchReport{
		Name:    "eval-tiny",
		Overall: agg(8, 7, 1, 2.0/7, 4.0/7, 3.1/7),
		ByLabel: map[string]map[string]api.ScoreAggregate{
			"length": {"8192": agg(4, 4, 0, 0.25, 0.75, 1.9/4), "16384": agg(4, 3, 1, 1.0/3, 1.0/3, 1.2/3)},
			"task":   {"niah": agg(4, 4, 0, 0.5, 0.75, 2.5/4), "hqa": agg(4, 3, 1, 0, 1.0/3, 0.6/3)},
		},
	}
	return rep, items
}

func TestEvalTableFromItems(t *testing.T) {
	rep, items := evalFixture()
	var b bytes.Buffer
	if err := renderEvalTable(&b, buildEvalTable(rep, items, metricSubstring)); err != nil {
		t.Fatal(err)
	}
	want := `substring match (accuracy, the MemAgent paper's metric), % of scored items
task     8K   16K  overall
hqa    50.0   0.0     33.3
niah  100.0  50.0     75.0
all    75.0  33.3     57.1
1 of 8 items failed and are in no mean; see the report
`
	if got := b.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

func TestEvalTableMetrics(t *testing.T) {
	rep, items := evalFixture()
	for _, tc := range []struct {
		metric  string
		title   string
		overall float64
	}{
		{metricExact, "exact match", 2.0 / 7},
		{metricSubstring, "substring match", 4.0 / 7},
		{metricF1, "token F1", 3.1 / 7},
		{metricRecall, "recall", 4.0 / 7},
	} {
		t.Run(tc.metric, func(t *testing.T) {
			for _, source := range []struct {
				name  string
				items []api.BatchItemResult
			}{{"items", items}, {"report", nil}} {
				tab := buildEvalTable(rep, source.items, tc.metric)
				if !strings.HasPrefix(tab.Title, tc.title+" ") && !strings.HasPrefix(tab.Title, tc.title+",") {
					t.Errorf("%s: title %q does not name %s", source.name, tab.Title, tc.title)
				}
				all := tab.Rows[len(tab.Rows)-1]
				if all.Task != "all" || all.Overall.N != 7 || !near(all.Overall.Mean, tc.overall) {
					t.Errorf("%s: last row %+v, want all with mean %.3f over 7", source.name, all, tc.overall)
				}
				for _, r := range tab.Rows {
					if r.Metric != tc.metric {
						t.Errorf("%s: row %s has metric %q, want %q", source.name, r.Task, r.Metric, tc.metric)
					}
				}
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// rulerFixture is a report of a RULER task whose gold answers are all
// expected (niah_multivalue: four values each) and one whose gold answers
// are aliases (hqa), at two lengths, and its items; a failed hqa item at
// 16K is in no mean. Every multi-value answer but one holds some value, so
// substring match would call them right.
func rulerFixture() (*api.BatchReport, []api.BatchItemResult) {
	items := []api.BatchItemResult{
		evalItemRecall(evalgen.TaskNIAHMultiValue, "8192", false, true, 0.3, 0.25),
		evalItemRecall(evalgen.TaskNIAHMultiValue, "8192", false, true, 0.9, 1),
		evalItemRecall(evalgen.TaskNIAHMultiValue, "16384", false, false, 0, 0),
		evalItemRecall(evalgen.TaskNIAHMultiValue, "16384", false, true, 0.6, 0.75),
		evalItem(evalgen.TaskHQA, "8192", true, true, 1),
		evalItem(evalgen.TaskHQA, "8192", false, false, 0),
		evalItem(evalgen.TaskHQA, "16384", false, true, 0.5),
		{Status: api.ItemFailed, Labels: map[string]string{"task": evalgen.TaskHQA, "length": "16384"}},
	}
	agg := func(n, scored, failed int, sm, recall float64) api.ScoreAggregate {
		return api.ScoreAggregate{Items: n, Answered: n - failed, Failed: failed, Scored: scored, SubstringMatch: sm, Recall: recall}
	}
	rep := &api.BatchReport{
		Name:    "eval-ruler",
		Overall: agg(8, 7, 1, 5.0/7, 4.0/7),
		ByLabel: map[string]map[string]api.ScoreAggregate{
			"length": {"8192": agg(4, 4, 0, 0.75, 2.25/4), "16384": agg(4, 3, 1, 2.0/3, 1.75/3)},
			"task": {
				evalgen.TaskNIAHMultiValue: agg(4, 4, 0, 0.75, 0.5),
				evalgen.TaskHQA:            agg(4, 3, 1, 2.0/3, 2.0/3),
			},
		},
	}
	return rep, items
}

// Under --metric auto the multi-value task is scored by recall and hqa by
// substring match; "all" mixes them item by item, and the table says which
// row uses which.
func TestEvalTableAuto(t *testing.T) {
	rep, items := rulerFixture()
	tab := buildEvalTable(rep, items, metricAuto)
	var b bytes.Buffer
	if err := renderEvalTable(&b, tab); err != nil {
		t.Fatal(err)
	}
	// niah_multivalue: 8K (0.25+1)/2, 16K (0+0.75)/2, overall 2/4.
	// all at 8K: (0.25+1+1+0)/4; at 16K: (0+0.75+1)/3; overall (2+2)/7.
	want := `score by task, % of scored items: recall where a task's gold answers are all expected (as RULER scores them), substring match otherwise (the MemAgent paper's accuracy)
task             metric       8K    16K  overall
hqa              substring  50.0  100.0     66.7
niah_multivalue  recall     62.5   37.5     50.0
all              mixed      56.2   58.3     57.1
mixed: each item under its task's metric
recall: mean share of each item's gold answers found in its answer (all are expected)
substring: share of items whose answer contains a gold answer, or the reverse (any one is right)
1 of 8 items failed and are in no mean; see the report
`
	if got := b.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
	for i, m := range []string{metricSubstring, metricRecall, metricMixed} {
		if tab.Rows[i].Metric != m {
			t.Errorf("row %s: metric %q, want %q", tab.Rows[i].Task, tab.Rows[i].Metric, m)
		}
	}

	// --metric substring calls 3 of 4 multi-value answers right.
	sub := buildEvalTable(rep, items, metricSubstring)
	if r := sub.Rows[1]; r.Task != evalgen.TaskNIAHMultiValue || r.Metric != metricSubstring || !near(r.Overall.Mean, 0.75) {
		t.Errorf("substring row %+v, want niah_multivalue at 0.75", r)
	}
}

// Without the per-item results an auto table with both kinds of task has
// each task's overall score and, for "all", only the overall: the
// aggregates by length mix the two metrics.
func TestEvalTableAutoFromReportOnly(t *testing.T) {
	rep, _ := rulerFixture()
	tab := buildEvalTable(rep, nil, metricAuto)
	var b bytes.Buffer
	if err := renderEvalTable(&b, tab); err != nil {
		t.Fatal(err)
	}
	want := `score by task, % of scored items: recall where a task's gold answers are all expected (as RULER scores them), substring match otherwise (the MemAgent paper's accuracy)
task             metric     8K  16K  overall
hqa              substring   -    -     66.7
niah_multivalue  recall      -    -     50.0
all              mixed       -    -     57.1
mixed: each item under its task's metric
recall: mean share of each item's gold answers found in its answer (all are expected)
substring: share of items whose answer contains a gold answer, or the reverse (any one is right)
1 of 8 items failed and are in no mean; see the report
`
	if got := b.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

// When every task is of one kind, "all" uses that kind's metric, from the
// items or from the report's aggregates alike.
func TestEvalTableAutoOneKind(t *testing.T) {
	items := []api.BatchItemResult{
		evalItemRecall(evalgen.TaskVT, "8192", false, true, 0.5, 0.5),
		evalItemRecall(evalgen.TaskFWE, "8192", false, true, 0.4, 1.0/3),
		evalItemRecall(evalgen.TaskNIAHMultiQuery, "8192", false, false, 0, 0),
	}
	rep := &api.BatchReport{
		Overall: api.ScoreAggregate{Items: 3, Scored: 3, SubstringMatch: 2.0 / 3, Recall: (0.5 + 1.0/3) / 3},
		ByLabel: map[string]map[string]api.ScoreAggregate{
			"length": {"8192": {Items: 3, Scored: 3, SubstringMatch: 2.0 / 3, Recall: (0.5 + 1.0/3) / 3}},
			"task": {
				evalgen.TaskVT:             {Items: 1, Scored: 1, SubstringMatch: 1, Recall: 0.5},
				evalgen.TaskFWE:            {Items: 1, Scored: 1, SubstringMatch: 1, Recall: 1.0 / 3},
				evalgen.TaskNIAHMultiQuery: {Items: 1, Scored: 1},
			},
		},
	}
	for _, source := range []struct {
		name  string
		items []api.BatchItemResult
	}{{"items", items}, {"report", nil}} {
		tab := buildEvalTable(rep, source.items, metricAuto)
		all := tab.Rows[len(tab.Rows)-1]
		if all.Task != "all" || all.Metric != metricRecall || !near(all.Overall.Mean, (0.5+1.0/3)/3) || all.Cells[0].N != 3 {
			t.Errorf("%s: all row %+v, want recall %.4f over 3 items", source.name, all, (0.5+1.0/3)/3)
		}
		for _, r := range tab.Rows {
			if r.Metric != metricRecall {
				t.Errorf("%s: row %s has metric %q, want recall", source.name, r.Task, r.Metric)
			}
		}
	}
	// Items without a task label are not RULER's multi-answer tasks.
	it := evalItemRecall("", "8192", false, true, 0.5, 0.5)
	delete(it.Labels, "task")
	if r := buildEvalTable(&api.BatchReport{}, []api.BatchItemResult{it}, metricAuto).Rows; len(r) != 1 || r[0].Metric != metricSubstring || r[0].Overall.Mean != 1 {
		t.Errorf("rows without a task = %+v, want one substring row at 1", r)
	}
}

// Without the per-item results, the table comes from the report's
// aggregates: the "all" row by length, and each task's overall score.
func TestEvalTableFromReportOnly(t *testing.T) {
	rep, _ := evalFixture()
	var b bytes.Buffer
	if err := renderEvalTable(&b, buildEvalTable(rep, nil, metricSubstring)); err != nil {
		t.Fatal(err)
	}
	want := `substring match (accuracy, the MemAgent paper's metric), % of scored items
task    8K   16K  overall
hqa      -     -     33.3
niah     -     -     75.0
all   75.0  33.3     57.1
1 of 8 items failed and are in no mean; see the report
`
	if got := b.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

// A set without task labels has one row, "all"; lengths sort numerically
// whatever order they come in.
func TestEvalTableOneTask(t *testing.T) {
	var items []api.BatchItemResult
	for _, l := range []string{"4096", "2048", "1048576", "2048"} {
		it := evalItem("", l, false, true, 1)
		delete(it.Labels, "task")
		items = append(items, it)
	}
	tab := buildEvalTable(&api.BatchReport{}, items, metricSubstring)
	if !slices.Equal(tab.Columns, []string{"2K", "4K", "1M"}) {
		t.Errorf("columns = %q, want [2K 4K 1M]", tab.Columns)
	}
	if len(tab.Rows) != 1 || tab.Rows[0].Task != "all" || tab.Rows[0].Cells[0].N != 2 || tab.Rows[0].Overall.N != 4 {
		t.Errorf("rows = %+v, want one row \"all\" with 2 items at 2K and 4 overall", tab.Rows)
	}
}

func TestParseBatchItems(t *testing.T) {
	_, items := evalFixture()
	var b bytes.Buffer
	for _, it := range items {
		line, _ := json.Marshal(it)
		b.Write(line)
		b.WriteString("\n\n")
	}
	got, err := parseBatchItems(b.Bytes())
	if err != nil || len(got) != len(items) || got[3].Labels["length"] != "16384" || !got[3].Scores.ExactMatch {
		t.Errorf("parseBatchItems = %d items, %v", len(got), err)
	}
	if _, err := parseBatchItems([]byte("{\"seq\":0}\nnot json\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad line: err = %v, want one naming line 2", err)
	}
}

func TestCheckEvalSetFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, content, err string
	}{
		{"ok.json", `[{"_id":"a","context":"text","input":"q?","answers":["x"],"length":2048}]`, ""},
		{"lines.jsonl", "{\"context\":\"t\"}\n{\"context\":\"u\"}\n", "not MemAgent's JSON format"},
		{"empty.json", " \n", "is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkEvalSetFile(write(tc.name, tc.content))
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("err = %v, want nil", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("err = %v, want one containing %q", err, tc.err)
			}
		})
	}
	if err := checkEvalSetFile(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing file passed")
	}
	if err := checkEvalSetFile(dir); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("a directory: err = %v", err)
	}
}

func TestEvalRunChecksInputFirst(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", "127.0.0.1:1") // nothing listens here
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"eval", "run"}, "--set"},
		{[]string{"eval", "run", "--set", "x.json", "--metric", "bleu"}, "--metric"},
		{[]string{"eval", "run", "--set", "x.json", "--metric", "mixed"}, "use auto, substring, exact, f1 or recall"},
		{[]string{"eval", "run", "--set", "x.json", "--concurrency", "-2"}, "--concurrency"},
		{[]string{"eval", "run", "--set", "x.json", "--reuse", "always"}, "--reuse"},
		{[]string{"eval", "run", "--set", filepath.Join(t.TempDir(), "missing.json")}, "evaluation set"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, _, err := runCLI(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("run(%q) = %v, want an error containing %q", tc.args, err, tc.err)
			}
		})
	}
}

// TestEvalRunEndToEnd generates a tiny set (niah_single and
// niah_multivalue, 2K and 4K tokens, one sample each) and runs it through
// BatchQA on the embedded stack: the table has a column per length, a row
// per task under its metric (recall for the multi-value task, whose items'
// recall the worker computed), and every item scored. A second run of the
// same set reads every item again (an evaluation reuses nothing unless
// told) and prints the table as text; a third with --reuse auto reuses
// every answer.
func TestEvalRunEndToEnd(t *testing.T) {
	stack(t)
	startWorker(t)
	tok, err := tokenizer.New(tokenizer.Qwen)
	if err != nil {
		t.Fatal(err)
	}
	g, err := evalgen.New(evalgen.Config{Tasks: []string{evalgen.TaskNIAHSingle, evalgen.TaskNIAHMultiValue}, Lengths: []int{2048, 4096}, Samples: 1, Seed: 5, Tokenizer: tok})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tiny.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Write(context.Background(), f, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	out, stderr, err := runCLI(t, "eval", "run", "--set", path, "--chunk-tokens", "1024", "--concurrency", "4", "--json")
	if err != nil {
		t.Fatalf("eval run: %v\n%s", err, stderr)
	}
	var res struct {
		Table  evalTable          `json:"table"`
		Result *api.BatchQAResult `json:"result"`
		Report evalReportURIs     `json:"report"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("eval run --json printed %q: %v", out, err)
	}
	tab := res.Table
	if !slices.Equal(tab.Columns, []string{"2K", "4K"}) || len(tab.Rows) != 3 || tab.Metric != metricAuto {
		t.Fatalf("table metric %q, columns %q, rows %+v; want auto, 2K, 4K and three rows", tab.Metric, tab.Columns, tab.Rows)
	}
	for i, want := range []struct{ task, metric string }{
		{evalgen.TaskNIAHMultiValue, metricRecall}, {evalgen.TaskNIAHSingle, metricSubstring}, {"all", metricMixed},
	} {
		if r := tab.Rows[i]; r.Task != want.task || r.Metric != want.metric {
			t.Errorf("row %d is %s under %q, want %s under %q", i, r.Task, r.Metric, want.task, want.metric)
		}
	}
	if r := tab.Rows[2]; r.Cells[0].N != 2 || r.Cells[1].N != 2 || r.Overall.N != 4 || tab.Failed != 0 {
		t.Errorf("row %+v, %d failed; want 2 scored items per length and none failed", r, tab.Failed)
	}
	if res.Result == nil || res.Result.Items != 4 || res.Result.Name != "eval-tiny" {
		t.Errorf("result = %+v, want 4 items of batch eval-tiny", res.Result)
	}
	_, store := testStore(t)
	for _, uri := range []string{res.Report.Report, res.Report.Results, res.Report.HTML} {
		loc, err := s3store.ParseURI(uri)
		if err != nil {
			t.Fatalf("report URI %q: %v", uri, err)
		}
		if _, err := store.Head(context.Background(), loc); err != nil {
			t.Errorf("%s: %v", uri, err)
		}
	}
	// The worker scored each item's recall against all its gold answers,
	// and the multi-value row is their mean.
	items, err := readBatchItems(context.Background(), store, res.Report.Results)
	if err != nil {
		t.Fatal(err)
	}
	var recall sum
	for _, it := range items {
		if it.Scores == nil {
			t.Fatalf("item %s has no scores", it.ID)
		}
		if want := memagent.Score(it.Answer, it.GoldAnswers).Recall; !near(it.Scores.Recall, want) {
			t.Errorf("item %s: recall %v, want %v", it.ID, it.Scores.Recall, want)
		}
		if it.Labels["task"] == evalgen.TaskNIAHMultiValue {
			if len(it.GoldAnswers) < 2 {
				t.Errorf("item %s has gold answers %q, want several", it.ID, it.GoldAnswers)
			}
			recall.add(it.Scores.Recall)
		}
	}
	if got := tab.Rows[0].Overall; got.N != 2 || !near(got.Mean, recall.cell().Mean) {
		t.Errorf("multi-value row overall %+v, want the items' mean recall %v over 2", got, recall.cell().Mean)
	}

	out, stderr, err = runCLI(t, "eval", "run", "--set", path, "--chunk-tokens", "1024", "--name", "eval-tiny-again")
	if err != nil {
		t.Fatalf("second eval run: %v\n%s", err, stderr)
	}
	for _, want := range []string{"score by task", "task", "metric", "2K", "4K", "overall", evalgen.TaskNIAHSingle, "recall: ", "Report:   s3://",
		"eval-tiny-again: 4 items, 4 answered, 0 reused, 0 failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("eval run printed no %q:\n%s", want, out)
		}
	}
	out, stderr, err = runCLI(t, "eval", "run", "--set", path, "--chunk-tokens", "1024", "--name", "eval-tiny-reused", "--reuse", "auto", "--json")
	if err != nil {
		t.Fatalf("eval run --reuse auto: %v\n%s", err, stderr)
	}
	res.Result = nil
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("eval run --json printed %q: %v", out, err)
	}
	if r := res.Result; r == nil || r.Skipped != 4 || r.Succeeded != 0 {
		t.Errorf("eval run --reuse auto = %+v, want all 4 answers reused", r)
	}
}
