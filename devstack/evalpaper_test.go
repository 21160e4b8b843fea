package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
)

func TestEvalScore(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		// The prediction normalises to "", which Python's `in` finds in
		// any gold.
		{[]string{"--protocol", "paper", "--pred", "The", "--gold", "Greenwich Village, New York City"}, `{"em":0,"sub_em":1,"f1":0,"f1_rounded":0}`},
		// JSON carries F1 unrounded; f1_rounded is the scripts' two decimals.
		{[]string{"--protocol", "paper", "--pred", "It is the Eiffel Tower.", "--gold", "Eiffel Tower"}, `{"em":0,"sub_em":1,"f1":0.6666666666666666,"f1_rounded":0.67}`},
		{[]string{"--protocol", "paper", "--output", "json", "--pred", "w x y z", "--gold", "w x y z q r s t u v"}, `{"em":0,"sub_em":1,"f1":0.5714285714285715,"f1_rounded":0.57}`},
		{[]string{"--protocol", "paper", "--output", "text", "--pred", "w x y z", "--gold", "w x y z q r s t u v"}, "em 0\nsub_em 1\nf1 0.57"},
		// Only the first gold counts under the paper's protocol ...
		{[]string{"--protocol", "paper", "--pred", "Athens", "--gold", "Paris", "--gold", "Athens"}, `{"em":0,"sub_em":0,"f1":0,"f1_rounded":0}`},
		{[]string{"--protocol", "paper", "--pred", "", "--gold", "Athens"}, `{"em":0,"sub_em":0,"f1":0,"f1_rounded":0}`},
		// ... and every gold under the default one, where "" matches nothing.
		{[]string{"--pred", "Athens", "--gold", "Paris", "--gold", "Athens"}, `{"exact_match":true,"substring_match":true,"f1":1,"best_gold":"Athens","recall":0.5}`},
		{[]string{"--protocol", "default", "--pred", "The", "--gold", "Greenwich Village"}, `{"exact_match":false,"substring_match":false,"f1":0,"best_gold":"Greenwich Village","recall":0}`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, stderr, err := runCLI(t, append([]string{"eval", "score"}, tc.args...)...)
			if err != nil {
				t.Fatalf("eval score: %v\n%s", err, stderr)
			}
			if strings.TrimSpace(out) != tc.want {
				t.Errorf("eval score printed %s, want %s", out, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--gold", "x"}, "--pred"},
		{[]string{"--pred", "x"}, "--gold"},
		{[]string{"--protocol", "squad", "--pred", "x", "--gold", "x"}, "--protocol"},
		{[]string{"--pred", "x", "--gold", "x", "extra"}, "unexpected argument"},
	} {
		if _, _, err := runCLI(t, append([]string{"eval", "score"}, tc.args...)...); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("eval score %q: %v, want an error containing %q", tc.args, err, tc.err)
		}
	}
}

func TestEvalRunPaperChecksFlags(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", "127.0.0.1:1") // nothing listens here
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"eval", "run", "--set", "x.json", "--protocol", "squad"}, "use default or paper"},
		{[]string{"eval", "run", "--set", "x.json", "--protocol", "paper", "--metric", "f1"}, "--metric is for the default protocol"},
	} {
		if _, _, err := runCLI(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("run(%q) = %v, want an error containing %q", tc.args, err, tc.err)
		}
	}
}

func paperItem(length, answer string, golds ...string) api.BatchItemResult {
	return api.BatchItemResult{Status: api.ItemAnswered, Answer: answer, GoldAnswers: golds,
		Labels: map[string]string{"task": "hqa", "length": length}}
}

// The paper's table scores each item against its first gold only, with
// the paper's lengths as columns whether measured or not, the published
// cells the project's sources give, and the sample count per length.
func TestPaperTable(t *testing.T) {
	items := []api.BatchItemResult{
		paperItem("7168", "Greenwich Village", "Greenwich Village, New York City"), // sub_em 1, f1 0.57
		paperItem("7168", "Paris", "London", "Paris"),                              // first gold only: 0
		paperItem("7168", "The", "Athens"),                                         // normalises to "": sub_em 1
		paperItem("229376", "yes", "yes"),
		paperItem("229376", "", "no"), // no answer extracted: 0
		paperItem("5000", "x", "x"),   // a length the paper does not have
		{Status: api.ItemFailed, Labels: map[string]string{"task": "hqa", "length": "7168"}},
		{Status: api.ItemAnswered, Answer: "a", Labels: map[string]string{"task": "hqa", "length": "7168"}},
	}
	tab := buildPaperTable(items)
	wantCols := []string{"5000", "7K", "14K", "28K", "56K", "112K", "224K", "448K", "896K", "1.75M", "3.5M"}
	if !slices.Equal(tab.Columns, wantCols) {
		t.Fatalf("columns %q, want %q", tab.Columns, wantCols)
	}
	if tab.Lengths[1] != "7168" || tab.Lengths[2] != "" {
		t.Errorf("lengths %q: want the measured label under 7K and none under 14K", tab.Lengths)
	}
	if tab.Failed != 1 || tab.Unscored != 1 || tab.Items != 8 || len(tab.Measured) != 1 || tab.Measured[0].Task != "hqa" {
		t.Fatalf("table %+v", tab)
	}
	cells := tab.Measured[0].Cells
	if c := cells[1]; c.N != 3 || !near(c.SubEM, 200.0/3) || !near(c.EM, 0) || !near(c.F1, 100*(0.57+0+0)/3) {
		t.Errorf("7K cell %+v, want 3 samples, sub_em 66.7, em 0, f1 19.0", c)
	}
	if c := cells[6]; c.N != 2 || !near(c.SubEM, 50) || !near(c.EM, 50) {
		t.Errorf("224K cell %+v, want 2 samples, sub_em 50, em 50", c)
	}
	if c := cells[2]; c.N != 0 {
		t.Errorf("14K cell %+v, want no samples", c)
	}
	if o := tab.Measured[0].Overall; o.N != 6 {
		t.Errorf("overall %+v, want 6 scored", o)
	}
	if len(tab.Published) != 8 {
		t.Fatalf("%d published rows, want the paper's 8", len(tab.Published))
	}
	p14 := tab.Published[0]
	if p14.Model != "RL-MemAgent-14B" || p14.SubEM[6] == nil || *p14.SubEM[6] != 81.25 || p14.SubEM[1] == nil || *p14.SubEM[1] != 83.59 ||
		p14.SubEM[10] == nil || *p14.SubEM[10] != 78.12 || p14.SubEM[0] != nil || !strings.Contains(p14.Source, "arXiv 2507.02259") {
		t.Errorf("published 14B row %+v", p14)
	}
	for i, v := range tab.Published[1].SubEM {
		if paper := slices.Contains(paperLengths, tab.Columns[i]); paper == (v == nil) {
			t.Errorf("published 7B cell %s: %v; want a number at the paper's lengths (all of them), none elsewhere", tab.Columns[i], v)
		}
	}
	if q := tab.Published[2]; q.Model != "QwenLong-L1-32B" || q.SubEM[9] != nil || q.SubEM[10] != nil || q.SubEM[8] == nil || *q.SubEM[8] != 11.72 {
		t.Errorf("published QwenLong row %+v: want 896K 11.72 and no 1.75M or 3.5M (not run)", q)
	}

	var out bytes.Buffer
	renderPaperTable(&out, tab, "RL-MemoryAgent-14B")
	text := out.String()
	for _, want := range []string{"protocol: paper", "RL-MemAgent-14B (paper, sub_em)", "81.25", "78.12", "measured hqa (RL-MemoryAgent-14B), sub_em",
		"  samples", "66.67", "?: no published number", "Published rows: Yu et al.", "1 of 8 items failed", "1 items have no gold answer"} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	t.Logf("\n%s", text)
}

// TestEvalRunPaperEndToEnd generates RULER-HQA at two short lengths from the
// tiny HotpotQA fixture, runs it on the embedded stack under the paper's
// protocol, and checks the JSON table: the measured hqa row with its
// sample counts, each item scored as memagent.ScorePaper scores it, and
// the published rows beside it.
func TestEvalRunPaperEndToEnd(t *testing.T) {
	stack(t)
	startWorker(t)
	set := filepath.Join(t.TempDir(), "hqa.json")
	if _, stderr, err := runCLI(t, "eval", "gen", "--task", "hqa", "--hotpotqa", "../internal/dev/evalgen/testdata/hotpot_tiny.json",
		"--lengths", "512,1K", "--samples", "2", "--out", set); err != nil {
		t.Fatalf("eval gen: %v\n%s", err, stderr)
	}
	out, stderr, err := runCLI(t, "eval", "run", "--set", set, "--protocol", "paper", "--chunk-tokens", "1024", "--json")
	if err != nil {
		t.Fatalf("eval run --protocol paper: %v\n%s", err, stderr)
	}
	var res struct {
		Protocol string             `json:"protocol"`
		Table    paperTable         `json:"table"`
		Result   *api.BatchQAResult `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("eval run printed %q: %v", out, err)
	}
	tab := res.Table
	if res.Protocol != "paper" || tab.Metric != "sub_em" || len(tab.Measured) != 1 || tab.Measured[0].Task != "hqa" || tab.Failed != 0 {
		t.Fatalf("protocol %q, table %+v", res.Protocol, tab)
	}
	if !slices.Equal(tab.Columns[:3], []string{"512", "1K", "7K"}) || len(tab.Columns) != 12 {
		t.Fatalf("columns %q, want 512 and 1K, then the paper's ten", tab.Columns)
	}
	row := tab.Measured[0]
	if row.Cells[0].N != 2 || row.Cells[1].N != 2 || row.Cells[2].N != 0 || row.Overall.N != 4 {
		t.Errorf("samples per length %d, %d, %d (overall %d), want 2, 2, 0 (4)", row.Cells[0].N, row.Cells[1].N, row.Cells[2].N, row.Overall.N)
	}
	if len(tab.Published) != 8 || *tab.Published[0].SubEM[slices.Index(tab.Columns, "896K")] != 77.34 {
		t.Errorf("published rows %+v", tab.Published)
	}

	text, stderr, err := runCLI(t, "eval", "run", "--set", set, "--protocol", "paper", "--chunk-tokens", "1024", "--name", "paper-again")
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, stderr)
	}
	for _, want := range []string{"the inference simulator", "templates: the worker's", "RL-MemAgent-7B (paper, sub_em)", "measured hqa", "samples", "Report:   s3://"} {
		if !strings.Contains(text, want) {
			t.Errorf("eval run --protocol paper printed no %q:\n%s", want, text)
		}
	}
}
