package cli

import (
	"encoding/json"
	"fmt"
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

// TestEstimateKnowsReuse: under --reuse auto, estimate finds the memory
// checkpoints an earlier reading of a folder left, as the run does, and
// predicts within one call what the run then makes, after a document is
// appended and after one is edited; it prints the fresh figure beside it,
// and names the corpus it priced.
func TestEstimateKnowsReuse(t *testing.T) {
	stack(t)
	startWorker(t)
	dir := t.TempDir()
	for i := range 5 {
		writeFile(t, dir, fmt.Sprintf("doc-%d.txt", i+1), fillerText(uint64(40+i), 10))
	}
	question := "Who mended the baskets by the harbor?"
	ask := func() api.DocumentQAResult {
		t.Helper()
		out, stderr, err := runCLI(t, "ask", "--doc", dir, "--question", question, "--chunk-tokens", "1000", "--json")
		if err != nil {
			t.Fatalf("ask: %v\n%s", err, stderr)
		}
		var res api.DocumentQAResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	estimate := func() api.Estimate {
		t.Helper()
		out, stderr, err := runCLI(t, "estimate", "--doc", dir, "--question", question, "--chunk-tokens", "1000", "--json")
		if err != nil {
			t.Fatalf("estimate: %v\n%s", err, stderr)
		}
		var est api.Estimate
		if err := json.Unmarshal([]byte(out), &est); err != nil {
			t.Fatal(err)
		}
		return est
	}
	ask() // the first reading leaves its checkpoints
	check := func(name string) {
		t.Helper()
		est := estimate()
		res := ask()
		t.Logf("%s: estimate %d calls expected (%d reused), %d fresh; the run made %d calls (%d chunks reused of %d)",
			name, est.CallsExpected, est.ChunksReused, est.Calls, res.Usage.Calls, res.ChunksReused, res.Chunks)
		if d := est.CallsExpected - int64(res.Usage.Calls); d < -1 || d > 1 || res.ChunksReused == 0 {
			t.Errorf("%s: estimate expects %d calls, the run made %d (%d chunks reused): want within one, and some reuse",
				name, est.CallsExpected, res.Usage.Calls, res.ChunksReused)
		}
		if est.Calls != int64(res.Chunks+1) || est.Reuse != api.ReuseAuto || est.ChunksReused != int64(est.Chunks)-(est.CallsExpected-1) {
			t.Errorf("%s: estimate %+v, want chunks + 1 fresh calls beside the expected ones", name, est)
		}
	}
	writeFile(t, dir, "doc-6.txt", fillerText(99, 3))
	check("appended")
	writeFile(t, dir, "doc-3.txt", append(fillerText(42, 10)[:2000], fillerText(77, 4)...))
	check("edited")

	// Asked again: everything reused, one call; the text names the corpus.
	text, _, err := runCLI(t, "estimate", "--doc", dir, "--question", question, "--chunk-tokens", "1000")
	if err != nil || !strings.Contains(text, "Corpus:      6 documents") || !strings.Contains(text, "Calls:       1, starting from the memory checkpoints") ||
		strings.Contains(text, "Document:    \n") {
		t.Errorf("estimate of a folder read before: %v\n%s", err, text)
	}
	if none := func() api.Estimate {
		out, _, err := runCLI(t, "estimate", "--doc", dir, "--question", question, "--chunk-tokens", "1000", "--reuse", "none", "--json")
		if err != nil {
			t.Fatal(err)
		}
		var est api.Estimate
		_ = json.Unmarshal([]byte(out), &est)
		return est
	}(); none.ChunksReused != 0 || none.CallsExpected != none.Calls || none.Reuse != api.ReuseNone {
		t.Errorf("--reuse none: %+v, want the fresh figures", none)
	}
}
