package activities

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/signoff"
	"github.com/memagent/memagent/internal/validation"
)

// validationRows are a batch of two questions over 60 documents: the
// first answered in 40 of them, the second in 10; one item of each failed.
func validationRows() []signoff.Row {
	var rows []signoff.Row
	for i := range 60 {
		for q, answered := range []int{40, 10} {
			r := signoff.Row{Cell: fmt.Sprint(2*i + q + 1), Question: fmt.Sprintf("question %d?", q+1), AnswerFound: i < answered, ModelAnswer: "a"}
			if i == 59 {
				r.Error, r.AnswerFound = "model server unreachable", false
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// TestDrawValidation: strata per question (answered, not found; a failed
// item in none), each sampled with validation.Draw under the seed (anyone
// can redraw it), sized by SampleSize for the margin; another seed draws
// another sample; a sample larger than its stratum is refused.
func TestDrawValidation(t *testing.T) {
	rows := validationRows()
	in := actwire.LoadValidationInput{WorkflowID: "b", Kind: api.SubjectBatch, Seed: "b.validate", Confidence: 0.95, Margin: 0.1}
	hash, strata, cells, err := drawValidation(rows, in)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		question, stratum string
		population        int
	}{{"question 1?", api.StratumAnswered, 40}, {"question 1?", api.StratumNotFound, 19}, {"question 2?", api.StratumAnswered, 10}, {"question 2?", api.StratumNotFound, 49}}
	if len(strata) != len(want) {
		t.Fatalf("%d strata, want %d", len(strata), len(want))
	}
	total := 0
	var all []string
	for _, r := range rows {
		if r.Error == "" {
			all = append(all, r.Cell)
		}
	}
	if h, _ := validation.PopulationHash(all); h != hash {
		t.Errorf("population hash %s, want %s (the cells without an error)", hash, h)
	}
	for i, w := range want {
		st := strata[i]
		if st.Question != w.question || st.Stratum != w.stratum || st.Population != w.population {
			t.Errorf("stratum %d: %s %s of %d, want %s %s of %d", i, st.Question, st.Stratum, st.Population, w.question, w.stratum, w.population)
		}
		var ids []string
		for _, r := range rows {
			if r.Error == "" && r.Question == st.Question && r.AnswerFound == (st.Stratum == api.StratumAnswered) {
				ids = append(ids, r.Cell)
			}
		}
		n, _ := validation.SampleSize(len(ids), 0.1, 0.95)
		redrawn, h, _ := validation.Draw("b.validate", ids, n)
		if !slices.Equal(st.Sampled, redrawn) || h != st.PopulationHash {
			t.Errorf("stratum %d: sample %v (hash %s), want the redraw %v (hash %s)", i, st.Sampled, st.PopulationHash, redrawn, h)
		}
		total += len(st.Sampled)
	}
	if len(cells) != total || cells[0].ModelAnswer != "a" {
		t.Errorf("%d cells for %d sampled, first %+v", len(cells), total, cells[0])
	}
	in.Seed = "another seed"
	_, other, _, _ := drawValidation(rows, in)
	if slices.Equal(other[0].Sampled, strata[0].Sampled) {
		t.Errorf("another seed drew the same sample %v", other[0].Sampled)
	}
	in.Margin, in.SampleSize = 0, 11
	if _, _, _, err := drawValidation(rows, in); err == nil || !strings.Contains(err.Error(), `larger than the answered stratum of question "question 2?" (10 cells)`) {
		t.Errorf("sample of 11 from a stratum of 10: %v", err)
	}
	if _, _, _, err := drawValidation(nil, in); err == nil {
		t.Error("no rows: no error")
	}
}

// TestValidationHTML: the report names every figure with its interval
// and a bar, the method, the seed, the population hash and every entry,
// and escapes what reviewers typed.
func TestValidationHTML(t *testing.T) {
	rep := api.ValidationReport{
		Kind: api.SubjectBatch, Subject: "b", Seed: "b.validate", PopulationHash: "abc123", Confidence: 0.95, Margin: 0.1,
		IntervalMethod: api.MethodClopperPearson, CombinedMethod: api.MethodRecall,
		Overall: api.ValidationFigures{Precision: api.ValidationInterval{Estimate: 0.9, Lower: 0.8, Upper: 0.95}, RecallDefined: true},
		Entries: []api.ValidationEntry{{Seq: 1, Action: "decide", Cell: "7", Verdict: api.VerdictWrong, Answer: "<script>x</script>", Reviewer: "alice"},
			{Seq: 2, Action: "extend", SampleSize: 9, Grown: []api.ValidationGrowth{{Question: "Q?", Stratum: api.StratumAnswered, From: 3, To: 9}}, Reviewer: "dave"}},
		Thresholds: []api.ValidationOutcome{{Threshold: api.ValidationThreshold{Figure: "recall", Op: ">=", Value: 0.75}, Bound: 0.7}},
	}
	var b bytes.Buffer
	if err := WriteValidationHTML(&b, rep); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, s := range []string{"90.0%", "80.0% – 95.0%", "<svg", "Clopper–Pearson", "b.validate", "abc123", "recall&gt;=0.75", "fail", "&lt;script&gt;", "alice", "answered of Q?: 3 → 9"} {
		if !strings.Contains(html, s) {
			t.Errorf("the report lacks %q", s)
		}
	}
	if strings.Contains(html, "<script>") {
		t.Error("a reviewer's answer is not escaped")
	}
}

// TestDrawExtension: an extension takes the next cells of each stratum's
// draw, so the grown sample is the draw of its new size (a redraw from
// the seed gives it whole) and keeps every cell drawn before; a
// population that is not the one drawn from, or a size past the
// stratum, is refused.
func TestDrawExtension(t *testing.T) {
	rows := validationRows()
	in := actwire.LoadValidationInput{WorkflowID: "b", Kind: api.SubjectBatch, Seed: "b.validate", Confidence: 0.95, SampleSize: 5}
	_, strata, _, err := drawValidation(rows, in)
	if err != nil {
		t.Fatal(err)
	}
	ext := actwire.ExtendValidationInput{WorkflowID: "b", Kind: api.SubjectBatch, Seed: "b.validate"}
	for _, st := range strata[:2] {
		ext.Strata = append(ext.Strata, actwire.ExtendValidationPart{Question: st.Question, Stratum: st.Stratum, PopulationHash: st.PopulationHash, From: 5, To: 12})
	}
	cells, err := drawExtension(rows, ext)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 14 {
		t.Fatalf("%d new cells, want 7 in each of 2 strata", len(cells))
	}
	for i, st := range strata[:2] {
		var ids []string
		for _, r := range rows {
			if r.Error == "" && r.Question == st.Question && r.AnswerFound == (st.Stratum == api.StratumAnswered) {
				ids = append(ids, r.Cell)
			}
		}
		want, _, err := validation.Draw("b.validate", ids, 12)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		got = append(got, st.Sampled...)
		for _, c := range cells[7*i : 7*i+7] {
			if c.Question != st.Question || c.Stratum != st.Stratum {
				t.Errorf("new cell %+v is not of stratum %s %s", c, st.Question, st.Stratum)
			}
			got = append(got, c.ID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("stratum %d grown to %v, want the draw of 12: %v", i, got, want)
		}
	}
	bad := ext
	bad.Strata = []actwire.ExtendValidationPart{ext.Strata[0]}
	bad.Strata[0].PopulationHash = "0000"
	if _, err := drawExtension(rows, bad); err == nil || !strings.Contains(err.Error(), "not the population the sample was drawn from") {
		t.Errorf("another population: %v", err)
	}
	bad.Strata[0] = ext.Strata[0]
	bad.Strata[0].To = 41
	if _, err := drawExtension(rows, bad); err == nil || !strings.Contains(err.Error(), "cannot grow") {
		t.Errorf("past the stratum: %v", err)
	}
}
