package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/internal/docgen"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/simulator"
	"github.com/memagent/memagent/workflows"
)

// poolResult is how well a burst of documents kept a simulated pool busy.
type poolResult struct {
	Docs, Calls, Slots int
	Wall               time.Duration
	ModelSeconds       float64 // the simulated GPU time the calls needed
	MaxInFlight        int
}

// utilisation is achieved throughput over the pool's ideal: the model time
// the calls needed, over the slot time the run held the pool.
func (r poolResult) utilisation() float64 {
	return r.ModelSeconds / (r.Wall.Seconds() * float64(r.Slots))
}

// Simulated pool: 2 replicas × 4 slots, each call costing a fixed 20 ms
// plus prefill at 50,000 tokens/s and decode at 200 tokens/s.
const (
	poolReplicas   = 2
	poolSlots      = 4
	poolBaseCost   = 20 * time.Millisecond
	poolPrefillTPS = 50_000
	poolDecodeTPS  = 200
)

// runPool starts docs documents of mixed lengths at once against a pool of
// known capacity, with the worker's in-flight cap set to that capacity.
func runPool(ctx context.Context, env *benchEnv, docs int) (poolResult, error) {
	res := poolResult{Docs: docs, Slots: poolReplicas * poolSlots}
	sim := simulator.New(simulator.Options{Tokenizer: env.tok, Latency: poolBaseCost, Replicas: poolReplicas, Slots: poolSlots,
		PrefillTokensPerSec: poolPrefillTPS, DecodeTokensPerSec: poolDecodeTPS})
	srv := httptest.NewServer(sim)
	defer srv.Close()
	cfg := env.cfg
	cfg.ModelBaseURL = srv.URL + "/v1"
	cfg.ModelMaxInFlight = res.Slots
	cfg.TaskQueue = "bench-pool"
	stop, err := env.startWorker(ctx, cfg)
	if err != nil {
		return res, err
	}
	defer stop()

	uris := make([]string, docs)
	for i := range docs {
		tokens := 20_000 + (i*7919)%40_000 // 4 to 12 chunks, spread evenly
		loc := s3store.Location{Bucket: cfg.Bucket, Key: fmt.Sprintf("bench/pool-%02d.txt", i)}
		if err := env.store.Put(ctx, loc, []byte(docgen.Needle(env.tok, tokens, float64(i%10)/10, uint64(100+i))), "text/plain"); err != nil {
			return res, err
		}
		uris[i] = loc.String()
	}
	sim.Reset()
	start := time.Now()
	runs := make([]client.WorkflowRun, docs)
	for i, uri := range uris {
		if runs[i], err = env.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: cfg.TaskQueue}, workflows.DocumentQAName,
			workflows.DocumentQAInput{Document: uri, Question: docgen.Question}); err != nil {
			return res, err
		}
	}
	for i, run := range runs {
		var out workflows.DocumentQAResult
		if err := run.Get(ctx, &out); err != nil {
			return res, fmt.Errorf("document %d: %w", i, err)
		}
		if out.Answer != docgen.Answer {
			return res, fmt.Errorf("document %d answered %q, want %q", i, out.Answer, docgen.Answer)
		}
	}
	res.Wall = time.Since(start)
	st := sim.Stats()
	res.Calls = st.Latency.Count
	res.MaxInFlight = st.MaxInFlight
	res.ModelSeconds = float64(res.Calls)*poolBaseCost.Seconds() + float64(st.PromptTokens)/poolPrefillTPS + float64(st.CompletionTokens)/poolDecodeTPS
	return res, nil
}
