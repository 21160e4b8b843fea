package rollout_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/activities/activitiestest"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/rollout"
	"go.temporal.io/sdk/testsuite"
)

// answered runs the activities of one DocumentQA run against fakes, the way
// the workflow calls them (by name, in the SDK's test activity
// environment), and returns its result.
func answered(t *testing.T, a *activities.Activities, doc, question, prefix string, opts api.ModelOptions) *api.DocumentQAResult {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	a.Register(env)
	exec := func(name string, in, out any) {
		t.Helper()
		v, err := env.ExecuteActivity(name, in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := v.Get(out); err != nil {
			t.Fatal(err)
		}
	}
	var prep actwire.PrepareOutput
	exec(activities.PrepareDocumentName, actwire.PrepareInput{Document: doc, Question: question, Options: opts}, &prep)
	if prep.Chunks < 3 {
		t.Fatalf("the document has %d chunks, want at least 3", prep.Chunks)
	}
	memory := "No previous memory"
	for i := range prep.Chunks {
		var out actwire.UpdateOutput
		exec(activities.UpdateMemoryName, actwire.UpdateInput{Document: prep.Document, ETag: prep.ETag, IndexURI: prep.IndexURI,
			Chunk: i, Chunks: prep.Chunks, Question: question, Memory: memory, Options: opts, TracePrefix: prefix}, &out)
		memory = out.Memory
	}
	var res api.DocumentQAResult
	exec(activities.AnswerName, actwire.AnswerInput{Question: question, Memory: memory, GoldAnswers: []string{"Paris"}, Options: opts,
		ResultURI: prefix + "result.json", Result: api.DocumentQAResult{WorkflowID: "b/0.s1", RunID: "r1", Document: prep.Document,
			Question: question, Options: opts, Chunks: prep.Chunks, TracePrefix: prefix + "chunks/"}}, &res)
	return &res
}

func put(t *testing.T, s *activitiestest.Store, uri string, data []byte) {
	t.Helper()
	loc, err := activities.ParseURI(uri)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), loc, data, ""); err != nil {
		t.Fatal(err)
	}
}

func TestExportRebuildsThePromptsSent(t *testing.T) {
	store := activitiestest.NewStore()
	n := 0
	model := &activitiestest.Model{Respond: func(req activities.ModelRequest) (string, error) {
		if req.Kind == "final" {
			return `The capital is \boxed{Paris}.`, nil
		}
		n++
		// A memory with tag-like text, which the next prompt neutralises.
		return fmt.Sprintf("<think>scratch</think>memory %d: </memory> so far", n), nil
	}}
	a := &activities.Activities{SkipExecutionChecks: true, Store: store, Model: model, DefaultModel: "fake", Bucket: "memagent",
		Templates:  activities.DefaultTemplates(),
		Tokenizers: func(string) (activities.Tokenizer, error) { return activitiestest.WordTokenizer{}, nil }}
	doc := "s3://memagent/docs/a.txt"
	put(t, store, doc, []byte(strings.Replace(activitiestest.LineDoc(12), "line 7", "line 7 <section> x", 1)))
	temp := float32(0.9)
	opts := api.ModelOptions{ChunkTokens: 64, Temperature: &temp}
	question := "What is the capital? <problem>"
	res := answered(t, a, doc, question, "s3://memagent/answers/k1/", opts)

	lines := []api.BatchItemResult{
		{Seq: 0, Sample: 0, ID: "x", Status: api.ItemFailed, GoldAnswers: []string{"Paris"}},
		{Seq: 0, Sample: 1, ID: "x", Status: api.ItemAnswered, GoldAnswers: []string{"Lyon", "Paris"},
			Answer: res.Answer, ResultURI: res.ResultURI, Chunks: res.Chunks},
		{Seq: 1, ID: "y", Status: api.ItemAnswered, Answer: res.Answer, ResultURI: res.ResultURI, Chunks: res.Chunks},
	}
	var results bytes.Buffer
	for _, l := range lines {
		b, _ := json.Marshal(l)
		results.Write(append(b, '\n'))
	}
	put(t, store, "s3://memagent/batches/b/results.jsonl", results.Bytes())
	rep, _ := json.Marshal(api.BatchReport{ResultsURI: "s3://memagent/batches/b/results.jsonl"})
	put(t, store, "s3://memagent/batches/b/report.json", rep)

	for _, tc := range []struct {
		reward string
		want   float64
	}{{"", 1}, {rollout.RewardEM, 1}, {rollout.RewardF1, 1}} {
		var out bytes.Buffer
		st, err := rollout.Export(context.Background(), store, "s3://memagent/batches/b/report.json", rollout.Options{Reward: tc.reward}, &out)
		if err != nil {
			t.Fatal(err)
		}
		if st.Samples != 1 || st.Failed != 1 || st.Unscored != 1 || st.Groups != 1 || st.Turns != res.Chunks+1 || st.Unverified != 0 {
			t.Errorf("reward %q: stats = %+v", tc.reward, st)
		}
		calls := model.Calls()
		recs := bytes.Split(bytes.TrimSpace(out.Bytes()), []byte{'\n'})
		if len(recs) != len(calls) {
			t.Fatalf("%d records for %d model calls", len(recs), len(calls))
		}
		sum := 0.0
		for i, line := range recs {
			var rec rollout.Record
			if err := json.Unmarshal(line, &rec); err != nil {
				t.Fatal(err)
			}
			if len(rec.Messages) != 1 || rec.Messages[0].Content != calls[i].Prompt {
				t.Errorf("turn %d: the exported prompt is not the prompt the model received", i)
			}
			last := i == len(recs)-1
			wantResp, wantMask := fmt.Sprintf("<think>scratch</think>memory %d: </memory> so far", i+1), rollout.MaskUpdate
			if last {
				wantResp, wantMask = `The capital is \boxed{Paris}.`, rollout.MaskFinal
			}
			if rec.Response != wantResp || rec.LossMask != wantMask || rec.Turn != i || !rec.PromptVerified {
				t.Errorf("turn %d: response %q mask %d turn %d verified %v, want %q %d", i, rec.Response, rec.LossMask, rec.Turn, rec.PromptVerified, wantResp, wantMask)
			}
			if rec.SampleReward != tc.want || rec.Sampling.Temperature != temp || rec.Group != "x" || rec.Sample != 1 {
				t.Errorf("turn %d: sample reward %v sampling %+v group %q sample %d", i, rec.SampleReward, rec.Sampling, rec.Group, rec.Sample)
			}
			sum += rec.Reward
		}
		if math.Abs(sum-tc.want) > 1e-12 {
			t.Errorf("reward %q: turn rewards sum to %v, want %v", tc.reward, sum, tc.want)
		}
	}

	// Other templates than the worker's rebuild other prompts: refused.
	other, err := activities.ParseTemplates("Q {question} M {memory} C {chunk}", "Q {question} M {memory}")
	if err != nil {
		t.Fatal(err)
	}
	_, err = rollout.Export(context.Background(), store, "s3://memagent/batches/b/report.json", rollout.Options{Templates: other}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "templates") {
		t.Errorf("other templates: err = %v", err)
	}
	if _, err := rollout.Export(context.Background(), store, "s3://memagent/batches/b/report.json", rollout.Options{Reward: "bleu"}, &bytes.Buffer{}); err == nil {
		t.Error("reward bleu: no error")
	}
}

func TestSampleReward(t *testing.T) {
	for _, tc := range []struct {
		answer string
		golds  []string
		metric string
		want   float64
	}{
		{"Paris", []string{"paris"}, rollout.RewardSubEM, 1},
		{"the city of Paris", []string{"Paris"}, rollout.RewardSubEM, 1},
		{"the city of Paris", []string{"Paris"}, rollout.RewardEM, 0},
		{"Lyon", []string{"Paris", "Lyon"}, rollout.RewardEM, 1},
		{"", []string{"Paris"}, rollout.RewardSubEM, 0},
		{"Paris France", []string{"Paris"}, rollout.RewardF1, 0.67},
		{"Paris", nil, rollout.RewardSubEM, 0},
	} {
		t.Run(tc.metric+"/"+tc.answer, func(t *testing.T) {
			if got := rollout.SampleReward(tc.answer, tc.golds, tc.metric); got != tc.want {
				t.Errorf("SampleReward(%q, %q, %s) = %v, want %v", tc.answer, tc.golds, tc.metric, got, tc.want)
			}
		})
	}
}

// TestExportLeavesOutIncompleteSamples: samples whose turns are not all in
// their own run (a reused answer, a run started from another run's
// checkpoint, a trace gone) are left out and listed, the others exported,
// and the export does not fail. The checkpoint's sample points at traces
// that do exist (another run's, under the same prefix, as runs sharing an
// answers/ prefix leave them): they are not taken for its own.
func TestExportLeavesOutIncompleteSamples(t *testing.T) {
	store := activitiestest.NewStore()
	model := &activitiestest.Model{Respond: func(req activities.ModelRequest) (string, error) {
		if req.Kind == "final" {
			return `\boxed{Paris}`, nil
		}
		return "memory", nil
	}}
	a := &activities.Activities{SkipExecutionChecks: true, Store: store, Model: model, DefaultModel: "fake", Bucket: "memagent",
		Templates:  activities.DefaultTemplates(),
		Tokenizers: func(string) (activities.Tokenizer, error) { return activitiestest.WordTokenizer{}, nil }}
	doc := "s3://memagent/docs/a.txt"
	put(t, store, doc, []byte(activitiestest.LineDoc(12)))
	opts := api.ModelOptions{ChunkTokens: 64}
	res := answered(t, a, doc, "What is the capital?", "s3://memagent/answers/a/", opts)
	turns := res.Chunks + 1

	// copyRun writes run a's result under prefix with edit applied, and
	// its traces but those of the chunks in drop.
	copyRun := func(prefix string, edit func(*activities.StoredResult), drop ...int) string {
		loc, _ := activities.ParseURI(res.ResultURI)
		var stored activities.StoredResult
		if err := json.Unmarshal(store.Object(loc), &stored); err != nil {
			t.Fatal(err)
		}
		stored.TracePrefix = prefix + "chunks/"
		edit(&stored)
		data, _ := json.Marshal(stored)
		put(t, store, prefix+"result.json", data)
		for i := range res.Chunks {
			if !slices.Contains(drop, i) {
				from, _ := activities.ParseURI(fmt.Sprintf("%s%06d.json", res.TracePrefix, i))
				put(t, store, fmt.Sprintf("%schunks/%06d.json", prefix, i), store.Object(from))
			}
		}
		return prefix + "result.json"
	}
	fromCheckpoint := copyRun("s3://memagent/answers/b/", func(r *activities.StoredResult) {
		r.ChunksReused, r.ReusedFrom = 2, &api.ReusedFrom{WorkflowID: "memagent-qa-earlier", RunID: "r0", Chunk: 2}
	})
	traceGone := copyRun("s3://memagent/answers/c/", func(*activities.StoredResult) {}, 1)

	gold := []string{"Paris"}
	lines := []api.BatchItemResult{
		{Seq: 0, Sample: 0, ID: "x", Status: api.ItemAnswered, WorkflowID: "b/0", ResultURI: res.ResultURI, Chunks: res.Chunks},
		{Seq: 0, Sample: 1, ID: "x", Status: api.ItemAnswered, WorkflowID: "b/0.s1", ResultURI: fromCheckpoint, Chunks: res.Chunks},
		{Seq: 1, Sample: 0, ID: "y", Status: api.ItemReused, WorkflowID: "earlier/1", ResultURI: res.ResultURI, Chunks: res.Chunks},
		{Seq: 1, Sample: 1, ID: "y", Status: api.ItemAnswered, WorkflowID: "b/1.s1", ResultURI: traceGone, Chunks: res.Chunks},
		{Seq: 2, Sample: 0, Status: api.ItemAnswered, WorkflowID: "b/2", ResultURI: res.ResultURI, Chunks: res.Chunks},
	}
	var results bytes.Buffer
	for _, l := range lines {
		l.Answer, l.GoldAnswers = res.Answer, gold
		b, _ := json.Marshal(l)
		results.Write(append(b, '\n'))
	}
	put(t, store, "s3://memagent/batches/b/results.jsonl", results.Bytes())
	rep, _ := json.Marshal(api.BatchReport{ResultsURI: "s3://memagent/batches/b/results.jsonl"})
	put(t, store, "s3://memagent/batches/b/report.json", rep)

	var out bytes.Buffer
	st, err := rollout.Export(context.Background(), store, "s3://memagent/batches/b/report.json", rollout.Options{}, &out)
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	if st.Samples != 2 || st.Groups != 2 || st.Turns != 2*turns {
		t.Errorf("stats %+v, want 2 samples (items 0 and 2) of %d turns", st, turns)
	}
	want := []struct {
		seq, sample, missing int
		group, reason        string
	}{
		{0, 1, 2, "x", "checkpoint of memagent-qa-earlier after 2 of"},
		{1, 0, turns, "y", "reused from earlier/1"},
		{1, 1, 1, "y", fmt.Sprintf("1 of its %d chunk traces are not under s3://memagent/answers/c/chunks/", res.Chunks)},
	}
	if len(st.Incomplete) != len(want) {
		t.Fatalf("incomplete %+v, want %d samples", st.Incomplete, len(want))
	}
	for i, w := range want {
		got := st.Incomplete[i]
		if got.Seq != w.seq || got.Sample != w.sample || got.Group != w.group || got.Missing != w.missing || got.Turns != turns ||
			got.WorkflowID != lines[i+1].WorkflowID || !strings.Contains(got.Reason, w.reason) {
			t.Errorf("incomplete[%d] = %+v, want item %d sample %d (%s), %d of %d turns missing, a reason with %q",
				i, got, w.seq, w.sample, w.group, w.missing, turns, w.reason)
		}
	}
	groups := map[string]int{}
	for _, line := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte{'\n'}) {
		var rec rollout.Record
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatal(err)
		}
		groups[rec.Group]++
	}
	if groups["x"] != turns || groups["2"] != turns || len(groups) != 2 {
		t.Errorf("records by group %v, want %d each of x and 2", groups, turns)
	}
}
