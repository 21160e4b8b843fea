package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/simulator"
	"github.com/memagent/memagent/internal/workerapp"
	"github.com/memagent/memagent/workflows"
)

// overheadResult compares one document answered by a plain loop and by the
// durable workflow, against the same simulator with the same chunking.
type overheadResult struct {
	Latency        time.Duration
	Chunks         int
	Plain, Durable time.Duration
}

func (r overheadResult) ratio() float64 { return r.Durable.Seconds() / r.Plain.Seconds() }
func (r overheadResult) overheadPerChunkMS() float64 {
	return float64((r.Durable - r.Plain).Microseconds()) / 1000 / float64(r.Chunks+1)
}

// runOverhead measures both paths at one simulated latency.
func runOverhead(ctx context.Context, env *benchEnv, doc string, chunkTokens int, latency time.Duration) (overheadResult, error) {
	res := overheadResult{Latency: latency}
	sim := simulator.New(simulator.Options{Tokenizer: env.tok, Latency: latency})
	srv := httptest.NewServer(sim)
	defer srv.Close()
	cfg := env.cfg
	cfg.ModelBaseURL = srv.URL + "/v1"
	cfg.TaskQueue = fmt.Sprintf("bench-overhead-%d", latency.Milliseconds())

	// (a) The plain loop: plan, then one call per chunk and the final call.
	model, err := workerapp.NewModelPool(cfg, env.logger)
	if err != nil {
		return res, err
	}
	templates := memagent.DefaultTemplates()
	opts := activities.ModelOptions{ChunkTokens: chunkTokens}.WithDefaults()
	question := benchQuestion
	start := time.Now()
	idx, err := memagent.PlanChunks(strings.NewReader(doc), env.tok, chunkTokens)
	if err != nil {
		return res, err
	}
	memory := memagent.InitialMemory
	for _, c := range idx.Chunks {
		comp, err := model.Complete(ctx, inference.Request{Model: simulator.DefaultModel, Prompt: templates.RenderUpdate(question, memory, doc[c.Start:c.End]),
			MaxTokens: opts.MemoryMaxTokens, Temperature: *opts.Temperature, TopP: *opts.TopP})
		if err != nil {
			return res, err
		}
		memory = comp.Text
	}
	final, err := model.Complete(ctx, inference.Request{Model: simulator.DefaultModel, Prompt: templates.RenderFinal(question, memory),
		MaxTokens: opts.AnswerMaxTokens, Temperature: *opts.Temperature, TopP: *opts.TopP})
	if err != nil {
		return res, err
	}
	res.Plain = time.Since(start)
	res.Chunks = len(idx.Chunks)
	plainAnswer := memagent.ExtractAnswer(final.Text).Text

	// (b) The durable workflow on the embedded stack, same simulator.
	stop, err := env.startWorker(ctx, cfg)
	if err != nil {
		return res, err
	}
	defer stop()
	loc := s3store.Location{Bucket: cfg.Bucket, Key: fmt.Sprintf("bench/overhead-%d.txt", latency.Milliseconds())}
	if err := env.store.Put(ctx, loc, []byte(doc), "text/plain"); err != nil {
		return res, err
	}
	// A short run first warms the worker's connections and caches, so both
	// paths are timed warm.
	warm := s3store.Location{Bucket: cfg.Bucket, Key: "bench/overhead-warmup.txt"}
	if err := env.store.Put(ctx, warm, []byte(doc[:min(len(doc), 20_000)]), "text/plain"); err != nil {
		return res, err
	}
	if run, err := env.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: cfg.TaskQueue}, workflows.DocumentQAName,
		workflows.DocumentQAInput{Document: warm.String(), Question: question, Options: activities.ModelOptions{ChunkTokens: chunkTokens}}); err != nil {
		return res, err
	} else if err := run.Get(ctx, nil); err != nil {
		return res, err
	}
	start = time.Now()
	run, err := env.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: cfg.TaskQueue}, workflows.DocumentQAName,
		workflows.DocumentQAInput{Document: loc.String(), Question: question, Options: activities.ModelOptions{ChunkTokens: chunkTokens}})
	if err != nil {
		return res, err
	}
	var out workflows.DocumentQAResult
	if err := run.Get(ctx, &out); err != nil {
		return res, err
	}
	res.Durable = time.Since(start)
	if out.Answer != plainAnswer || out.Chunks != res.Chunks {
		return res, fmt.Errorf("durable run answered %q over %d chunks, the plain loop %q over %d", out.Answer, out.Chunks, plainAnswer, res.Chunks)
	}
	return res, nil
}
