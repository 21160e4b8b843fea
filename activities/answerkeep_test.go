package activities

import (
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/inference"
)

// TestAnswerReusesAKeptAnswer: an answer kept by one reading is taken,
// with no call and no usage, by a later one that reused every chunk and
// reached the same memory; not by one that read a chunk itself, nor for
// another memory, nor under other options, nor without ReuseAnswer.
func TestAnswerReusesAKeptAnswer(t *testing.T) {
	f := newFixture(t, nil)
	calls := 0
	f.model.Respond = func(inference.Request) (string, error) {
		calls++
		return `\boxed{Paris}`, nil
	}
	opts := api.ModelOptions{Model: "m1", AnswerMaxTokens: 64}
	answer := func(run, memory string, opts api.ModelOptions, reused int, reuse bool) api.DocumentQAResult {
		t.Helper()
		in := actwire.AnswerInput{Question: testQuestion, Memory: memory, Options: opts, ResultURI: tracePrefix + run + "/result.json",
			KeepAnswer: true, ReuseAnswer: reuse,
			Result: api.DocumentQAResult{WorkflowID: "wf-" + run, RunID: run, Chunks: 7, ChunksReused: reused}}
		var res api.DocumentQAResult
		if err := f.exec(t, AnswerName, in, &res); err != nil {
			t.Fatalf("Answer: %v", err)
		}
		return res
	}
	first := answer("r1", "the capital is Paris", opts, 0, false)
	if calls != 1 || first.AnswerReused || first.Usage.Calls != 1 {
		t.Fatalf("first answer: %d model calls, reused %v, usage %+v; want one call", calls, first.AnswerReused, first.Usage)
	}
	tests := []struct {
		name   string
		memory string
		opts   api.ModelOptions
		reused int
		reuse  bool
		want   bool
	}{
		{"every chunk reused, the same memory", "the capital is Paris", opts, 7, true, true},
		{"a chunk read", "the capital is Paris", opts, 6, true, false},
		{"another memory", "the capital is Lyon", opts, 7, true, false},
		{"another answer budget", "the capital is Paris", api.ModelOptions{Model: "m1", AnswerMaxTokens: 65}, 7, true, false},
		{"another model", "the capital is Paris", api.ModelOptions{Model: "m2", AnswerMaxTokens: 64}, 7, true, false},
		{"not asked to reuse", "the capital is Paris", opts, 7, false, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := calls
			res := answer("r"+string(rune('a'+i)), tt.memory, tt.opts, tt.reused, tt.reuse)
			made := calls - before
			if res.AnswerReused != tt.want || (made == 0) != tt.want || (res.Usage.Calls == 0) != tt.want {
				t.Errorf("answer_reused %v, %d model calls, usage %+v; want reused %v", res.AnswerReused, made, res.Usage, tt.want)
			}
			if res.Answer != "Paris" || !res.AnswerFound {
				t.Errorf("answer %q found %v, want Paris", res.Answer, res.AnswerFound)
			}
		})
	}
}
