package rollout_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
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
	a := &activities.Activities{Store: store, Model: model, DefaultModel: "fake", Bucket: "memagent",
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
