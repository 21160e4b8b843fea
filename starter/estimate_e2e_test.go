package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
)

// TestEstimateCallsNoModel: starter estimate prints chunks and calls
// (chunks + 1 per question and sample) with token bounds, the model server
// receives no completion, and the run that follows reuses the index the
// estimate built.
func TestEstimateCallsNoModel(t *testing.T) {
	d := stack(t)
	startWorker(t)
	path, _ := writeDoc(t, 12_000)
	d.Simulator.Reset()
	out, stderr, err := runCLI(t, "estimate", "--doc", path, "--question", demoQuestion, "--chunk-tokens", "1000", "-o", "json")
	if err != nil {
		t.Fatalf("estimate: %v\n%s", err, stderr)
	}
	var est api.Estimate
	if err := json.Unmarshal([]byte(out), &est); err != nil {
		t.Fatalf("estimate -o json printed %q: %v", out, err)
	}
	if est.Chunks < 10 || est.Calls != int64(est.Chunks+1) || est.Questions != 1 || est.Samples != 1 {
		t.Errorf("estimate %+v: want over 10 chunks and chunks + 1 calls", est)
	}
	if est.PromptTokensMax <= est.Tokens || est.PromptTokensTypical > est.PromptTokensMax ||
		est.CompletionTokensMax != int64(est.Chunks)*api.DefaultMemoryMaxTokens+api.DefaultAnswerMaxTokens {
		t.Errorf("estimate %+v: want prompts over the document's tokens, typical under max, completions chunks × memory + answer", est)
	}
	if n := len(d.Simulator.Calls()); n != 0 {
		t.Errorf("the estimate made %d model calls, want none", n)
	}

	// Two questions, three samples, priced.
	out, _, err = runCLI(t, "estimate", "--doc", path, "--question", demoQuestion, "--question", "Who mended the baskets?",
		"--samples", "3", "--chunk-tokens", "1000", "--price-in", "1", "--price-out", "2", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var two api.Estimate
	if err := json.Unmarshal([]byte(out), &two); err != nil {
		t.Fatal(err)
	}
	if two.Calls != 6*int64(est.Chunks+1) || two.PriceMax <= 0 || two.PriceTypical >= two.PriceMax || two.IndexURI != est.IndexURI {
		t.Errorf("two questions × 3 samples: %+v, want 6 × (chunks + 1) calls, prices, and the same index", two)
	}
	text, _, err := runCLI(t, "estimate", "--doc", path, "--question", demoQuestion, "--chunk-tokens", "1000")
	if err != nil || !strings.Contains(text, "No model was called") {
		t.Errorf("estimate as text: %v\n%s", err, text)
	}
	if n := len(d.Simulator.Calls()); n != 0 {
		t.Errorf("the estimates made %d model calls, want none", n)
	}
	if est.GPUSeconds != 0 || !strings.Contains(text, "GPU time:    unknown") {
		t.Errorf("before any call the GPU time is %.3fs, text %q; want it unknown", est.GPUSeconds, text)
	}

	// Once the worker has timed its own calls, the estimate says what the
	// calls will hold the pool and how long they take at least.
	if _, _, err := runCLI(t, "ask", "--doc", path, "--question", demoQuestion, "--chunk-tokens", "1000", "--fresh", "--reuse", "none"); err != nil {
		t.Fatal(err)
	}
	out, _, err = runCLI(t, "estimate", "--doc", path, "--question", demoQuestion, "--question", "Who mended the baskets?",
		"--chunk-tokens", "1000", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var timed api.Estimate
	if err := json.Unmarshal([]byte(out), &timed); err != nil {
		t.Fatal(err)
	}
	if timed.MeasuredCalls < int64(est.Chunks+1) || timed.PoolSlots < 1 || timed.GPUSeconds <= 0 ||
		timed.WallSeconds <= 0 || timed.WallSeconds > timed.GPUSeconds {
		t.Errorf("estimate after a run: %+v; want the calls measured, the pool's slots, GPU time and a wall time of at most the GPU time", timed)
	}
}
