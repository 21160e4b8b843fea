package pool

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/tokenizer"
	"github.com/memagent/memagent/starter/cli/clitest"
)

// runQA runs DocumentQA on the test's task queue and returns its result.
func runQA(ctx context.Context, t *testing.T, c client.Client, in api.DocumentQAInput) (api.DocumentQAResult, error) {
	t.Helper()
	var res api.DocumentQAResult
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: os.Getenv("MEMAGENT_TASK_QUEUE")}, api.DocumentQAName, in)
	if err != nil {
		return res, err
	}
	return res, run.Get(ctx, &res)
}

// TestPoolWithAFailingEndpoint: three endpoints, one of which answers every
// completion with 503. Concurrent runs all complete, and no endpoint ever
// has more requests open than the per-endpoint cap.
func TestPoolWithAFailingEndpoint(t *testing.T) {
	clitest.Stack(t)
	tok, _ := tokenizer.New(tokenizer.Qwen)
	const maxInFlight = 2
	var sims []*simulator.Server
	var urls []string
	for i := range 3 {
		opts := simulator.Options{Tokenizer: tok, Latency: 5 * time.Millisecond}
		if i == 1 {
			opts.FailAll = http.StatusServiceUnavailable
		}
		sim := simulator.New(opts)
		srv := httptest.NewServer(sim)
		t.Cleanup(srv.Close)
		sims = append(sims, sim)
		urls = append(urls, srv.URL+"/v1")
	}
	t.Setenv("OPENAI_BASE_URL", strings.Join(urls, ","))
	t.Setenv("MEMAGENT_MAX_IN_FLIGHT", fmt.Sprint(maxInFlight))
	clitest.StartWorker(t)
	c := clitest.Dial(t)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const runs = 6
	var wg sync.WaitGroup
	errs := make([]error, runs)
	answers := make([]string, runs)
	for i := range runs {
		uri := clitest.PutDoc(t, fmt.Sprintf("pool/doc-%d.txt", i), 6000, uint64(i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := runQA(ctx, t, c, api.DocumentQAInput{Document: uri, Question: docgen.Question, Options: optsChunk(500), Reuse: api.ReuseNone})
			errs[i], answers[i] = err, res.Answer
		}()
	}
	wg.Wait()
	for i := range runs {
		if errs[i] != nil || answers[i] != docgen.Answer {
			t.Errorf("run %d: answer %q, error %v; want %q", i, answers[i], errs[i], docgen.Answer)
		}
	}
	for i, sim := range sims {
		st := sim.Stats()
		if st.MaxOpen > maxInFlight {
			t.Errorf("endpoint %d had %d requests open at once, over the cap of %d", i, st.MaxOpen, maxInFlight)
		}
		t.Logf("endpoint %d: %v requests by outcome, at most %d open", i, st.Requests, st.MaxOpen)
	}
	if failed, served := sims[1].Stats().Requests["fail_all"], sims[0].Stats().Requests["ok"]+sims[2].Stats().Requests["ok"]; failed*5 > served {
		t.Errorf("the failing endpoint got %d requests against %d served by the others: it should be ejected", failed, served)
	}
}

// TestFaultsOfEveryKind: with 20% of completions failing (429, 500, 503,
// slow past the deadline, malformed JSON), a 200-chunk run finishes with
// the same answer and final memory as a clean run.
func TestFaultsOfEveryKind(t *testing.T) {
	if testing.Short() {
		t.Skip("a 200-chunk run with retries")
	}
	clitest.Stack(t)
	tok, _ := tokenizer.New(tokenizer.Qwen)
	faulty := simulator.New(simulator.Options{Tokenizer: tok, FaultRate: 0.2, Faults: simulator.Faults{Seed: 42}, RetryAfter: time.Second})
	srv := httptest.NewServer(faulty)
	t.Cleanup(srv.Close)
	clean := simulator.New(simulator.Options{Tokenizer: tok})
	cleanSrv := httptest.NewServer(clean)
	t.Cleanup(cleanSrv.Close)

	uri := clitest.PutDoc(t, "faults/doc.txt", 20_000, 99)
	in := api.DocumentQAInput{Document: uri, Question: docgen.Question, Options: optsChunk(100), Reuse: api.ReuseNone}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	t.Setenv("OPENAI_BASE_URL", cleanSrv.URL+"/v1")
	t.Setenv("MEMAGENT_TASK_QUEUE", "faults-clean")
	clitest.StartWorker(t)
	c := clitest.Dial(t)
	want, err := runQA(ctx, t, c, in)
	if err != nil {
		t.Fatal(err)
	}
	if want.Chunks < 200 {
		t.Fatalf("clean run has %d chunks, want at least 200", want.Chunks)
	}

	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("MEMAGENT_TASK_QUEUE", "faults-faulty")
	t.Setenv("MEMAGENT_MODEL_TIMEOUT", "2s")
	clitest.StartWorker(t)
	start := time.Now()
	got, err := runQA(ctx, t, c, in)
	if err != nil {
		t.Fatalf("faulty run: %v", err)
	}
	if got.Answer != want.Answer || got.FinalMemory != want.FinalMemory {
		t.Errorf("faulty run answered %q (memory equal: %v), the clean run %q", got.Answer, got.FinalMemory == want.FinalMemory, want.Answer)
	}
	st := faulty.Stats()
	injected := 0
	for kind, n := range st.Faults {
		injected += n
		if n == 0 && kind != simulator.FaultContextOverflow {
			t.Errorf("no %s fault was injected", kind)
		}
	}
	t.Logf("%d chunks: %d faults injected %v, %d calls answered, %s", got.Chunks, injected, st.Faults, st.Requests["ok"], time.Since(start).Round(time.Second))
}

func optsChunk(n int) api.ModelOptions { return api.ModelOptions{ChunkTokens: n} }
