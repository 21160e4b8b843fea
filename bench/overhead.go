package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http/httptest"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/pluginkit"
	"github.com/memagent/memagent/internal/s3store"
)

// overheadRepeats is how many times each path is timed at 0 ms; the
// tables give the medians. One run of each on this 2-core machine varies by
// a fifth from one to the next.
const overheadRepeats = 3

// writeOverhead runs the overhead section at 0 and 50 ms of simulated
// latency and writes its tables.
func writeOverhead(ctx context.Context, env *benchEnv, w io.Writer, tokens int) error {
	docs := [2]string{docgen.Needle(env.tok, tokens, 0.62, 3), docgen.Needle(env.tok, tokens/2, 0.62, 3)}
	var rs []overheadResult
	for _, lat := range []time.Duration{0, 50 * time.Millisecond} {
		r, err := runOverhead(ctx, env, docs, 5000, lat)
		if err != nil {
			return fmt.Errorf("overhead at %s: %w", lat, err)
		}
		rs = append(rs, r)
	}
	fmt.Fprintf(w, "## %s\n\nThe same %d-token document (chunks of 5,000 tokens) answered by (a) a plain sequential loop calling the simulator over HTTP and (b) the durable DocumentQA workflow on %s, same simulator, same chunking. At 0 ms each is timed %d times, one after the other, and the tables give the medians; at 50 ms once.\n\n",
		env.server.heading("Orchestration overhead"), tokens, env.server.Stack, overheadRepeats)
	fmt.Fprintln(w, "| simulated latency | chunks | plain loop (a) | durable (b) | b/a | overhead per model call |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, r := range rs {
		fmt.Fprintf(w, "| %d ms | %d | %.2f s | %.2f s | %.3f× | %.1f ms |\n", r.Latency.Milliseconds(), r.Chunks, r.Plain.Seconds(), r.Durable.Seconds(), r.ratio(), r.overheadPerChunkMS())
	}
	r := rs[0]
	fmt.Fprintf(w, "\nThe floor under it: (c) a bare Temporal workflow that runs %d trivial activities one after another (one per model call of (b); each returns at once), on the same %s and the same worker as (b) (one worker with memagent's settings, both workflows registered), timed between (b)'s runs at 0 ms. (b)'s overhead per model call counts what a run pays once (indexing the document into S3, grounding the answer against it, starting and ending the workflow) as well as what it pays per chunk; the overhead per further call is what each call beyond those costs: the difference between (b) − (a) on the whole document and on its first half (%d-token document, %d chunks, timed as often), over the difference in calls. Worker CPU is the user and system CPU of (b)'s worker run again in a process of its own (/proc/PID/stat, 10 ms resolution), over the whole run (indexing the document, every chunk, the answer), divided by the chunks: what one GPU's stream of chunks costs a worker.\n\n", r.FloorActivities, env.server.Server, tokens/2, r.HalfChunks)
	fmt.Fprintln(w, "| bare loop (c) | per bare activity | DocumentQA (b) per model call | (b) overhead per model call | (b) overhead ÷ bare activity | (b) overhead per further model call | that ÷ bare activity | worker CPU per chunk |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	fmt.Fprintf(w, "| %.2f s | %.1f ms | %.1f ms | %.1f ms | %.2f | %.1f ms | %.2f | %.1f ms (%.2f s CPU over %d chunks in %.2f s) |\n\n",
		r.Floor.Seconds(), r.floorPerActivityMS(), r.durablePerCallMS(), r.overheadPerChunkMS(), r.overheadPerChunkMS()/r.floorPerActivityMS(),
		r.marginalPerCallMS(), r.marginalPerCallMS()/r.floorPerActivityMS(),
		r.cpuPerChunkMS(), r.WorkerCPU.Seconds(), r.CPUChunks, r.CPUWall.Seconds())
	fmt.Fprintf(w, "overhead: %.2f× a bare activity per further model call, %.2f× all in (medians of %d; %.1f and %.1f ms against %.1f ms).\n\n",
		r.marginalPerCallMS()/r.floorPerActivityMS(), r.overheadPerChunkMS()/r.floorPerActivityMS(), overheadRepeats, r.marginalPerCallMS(), r.overheadPerChunkMS(), r.floorPerActivityMS())
	return nil
}

// overheadResult compares one document answered by a plain loop and by the
// durable workflow, against the same simulator with the same chunking (the
// medians of the runs). At 0 ms it also holds the same for the document's
// first half, the floor workflow's time and the worker CPU of a DocumentQA
// run in a worker process of its own.
type overheadResult struct {
	Latency        time.Duration
	Chunks         int
	Plain, Durable time.Duration

	HalfChunks             int
	HalfPlain, HalfDurable time.Duration

	FloorActivities int
	Floor           time.Duration
	WorkerCPU       time.Duration
	CPUChunks       int
	CPUWall         time.Duration
}

func (r overheadResult) floorPerActivityMS() float64 {
	return float64(r.Floor.Microseconds()) / 1000 / float64(r.FloorActivities)
}

func (r overheadResult) durablePerCallMS() float64 {
	return float64(r.Durable.Microseconds()) / 1000 / float64(r.Chunks+1)
}

func (r overheadResult) cpuPerChunkMS() float64 {
	return float64(r.WorkerCPU.Microseconds()) / 1000 / float64(r.CPUChunks)
}

func (r overheadResult) ratio() float64 { return r.Durable.Seconds() / r.Plain.Seconds() }
func (r overheadResult) overheadPerChunkMS() float64 {
	return float64((r.Durable - r.Plain).Microseconds()) / 1000 / float64(r.Chunks+1)
}

// marginalPerCallMS is the overhead of each call past the first half's:
// what the whole document's overhead adds to the half's, per added call.
func (r overheadResult) marginalPerCallMS() float64 {
	extra := (r.Durable - r.Plain) - (r.HalfDurable - r.HalfPlain)
	return float64(extra.Microseconds()) / 1000 / float64(r.Chunks-r.HalfChunks)
}

// runOverhead measures both paths at one simulated latency: at 0 ms each
// overheadRepeats times over both documents (the whole and its first half)
// with the floor between them, at any other latency once over the whole.
func runOverhead(ctx context.Context, env *benchEnv, docs [2]string, chunkTokens int, latency time.Duration) (overheadResult, error) {
	res := overheadResult{Latency: latency}
	sim := simulator.New(simulator.Options{Tokenizer: env.tok, Latency: latency})
	srv := httptest.NewServer(sim)
	defer srv.Close()
	cfg := env.cfg
	cfg.ModelURLs = []string{srv.URL + "/v1"}
	cfg.TaskQueue = fmt.Sprintf("bench-overhead-%d", latency.Milliseconds())
	model, err := pluginkit.NewModelPool(cfg.Options, env.logger)
	if err != nil {
		return res, err
	}
	templates := memagent.DefaultTemplates()
	opts := api.ModelOptions{ChunkTokens: chunkTokens}.WithDefaults()
	question := benchQuestion

	// (a) The plain loop: plan, then one call per chunk and the final call.
	plain := func(doc string) (time.Duration, int, string, error) {
		start := time.Now()
		idx, err := memagent.PlanChunks(strings.NewReader(doc), env.tok, chunkTokens)
		if err != nil {
			return 0, 0, "", err
		}
		memory := memagent.InitialMemory
		for _, c := range idx.Chunks {
			comp, err := model.Complete(ctx, inference.Request{Model: simulator.DefaultModel, Prompt: templates.RenderUpdate(question, memory, doc[c.Start:c.End]),
				MaxTokens: opts.MemoryMaxTokens, Temperature: *opts.Temperature, TopP: *opts.TopP})
			if err != nil {
				return 0, 0, "", err
			}
			memory = comp.Text
		}
		final, err := model.Complete(ctx, inference.Request{Model: simulator.DefaultModel, Prompt: templates.RenderFinal(question, memory),
			MaxTokens: opts.AnswerMaxTokens, Temperature: *opts.Temperature, TopP: *opts.TopP})
		if err != nil {
			return 0, 0, "", err
		}
		return time.Since(start), len(idx.Chunks), memagent.ExtractAnswer(final.Text).Text, nil
	}

	// (b) The durable workflow on the stack's Temporal, same simulator, on
	// a worker that can run (c) too.
	stop, err := startFloorWorker(ctx, env, cfg)
	if err != nil {
		return res, err
	}
	defer stop()
	// At 0 ms both documents, at any other latency the whole one only.
	n, used := overheadRepeats, docs[:]
	if latency != 0 {
		n, used = 1, docs[:1]
	}
	var locs [2]s3store.Location
	for i, doc := range used {
		locs[i] = s3store.Location{Bucket: cfg.Bucket, Key: fmt.Sprintf("bench/overhead-%d-%d.txt", latency.Milliseconds(), i)}
		if err := env.store.Put(ctx, locs[i], []byte(doc), "text/plain"); err != nil {
			return res, err
		}
	}
	durable := func(loc s3store.Location) (time.Duration, api.DocumentQAResult, error) {
		var out api.DocumentQAResult
		start := time.Now()
		run, err := env.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: cfg.TaskQueue}, api.DocumentQAName,
			api.DocumentQAInput{Reuse: api.ReuseNone, Document: loc.String(), Question: question, Options: api.ModelOptions{ChunkTokens: chunkTokens}})
		if err != nil {
			return 0, out, err
		}
		err = run.Get(ctx, &out)
		took := time.Since(start)
		if err == nil && loc == locs[0] {
			runPhases(ctx, env, run.GetID(), run.GetRunID())
		}
		return took, out, err
	}
	// A short run first warms the worker's connections and caches, so both
	// paths are timed warm.
	warm := s3store.Location{Bucket: cfg.Bucket, Key: "bench/overhead-warmup.txt"}
	if err := env.store.Put(ctx, warm, []byte(docs[0][:min(len(docs[0]), 20_000)]), "text/plain"); err != nil {
		return res, err
	}
	if _, _, err := durable(warm); err != nil {
		return res, err
	}
	if latency == 0 {
		if _, err := runFloor(ctx, env, cfg.TaskQueue, 5); err != nil {
			return res, fmt.Errorf("floor warm-up: %w", err)
		}
	}

	var times [2][2][]time.Duration // [doc][plain, durable]
	var floors []time.Duration
	var chunks [2]int
	for range n {
		for i, doc := range used {
			p, c, answer, err := plain(doc)
			if err != nil {
				return res, err
			}
			d, out, err := durable(locs[i])
			if err != nil {
				return res, err
			}
			if out.Answer != answer || out.Chunks != c {
				return res, fmt.Errorf("durable run answered %q over %d chunks, the plain loop %q over %d", out.Answer, out.Chunks, answer, c)
			}
			chunks[i] = c
			times[i][0], times[i][1] = append(times[i][0], p), append(times[i][1], d)
		}
		if latency == 0 {
			// (c) The floor: as many trivial activities as (b) made model
			// calls over the whole document, on the same worker.
			res.FloorActivities = chunks[0] + 1
			f, err := runFloor(ctx, env, cfg.TaskQueue, res.FloorActivities)
			if err != nil {
				return res, fmt.Errorf("floor: %w", err)
			}
			floors = append(floors, f)
		}
	}
	res.Chunks, res.Plain, res.Durable = chunks[0], quantile(times[0][0], 0.5), quantile(times[0][1], 0.5)
	if latency != 0 {
		return res, nil
	}
	res.HalfChunks, res.HalfPlain, res.HalfDurable = chunks[1], quantile(times[1][0], 0.5), quantile(times[1][1], 0.5)
	res.Floor = quantile(floors, 0.5)

	// Worker CPU: (b) again, warm, with the worker in a process of its own.
	res.CPUChunks, res.CPUWall, res.WorkerCPU, err = workerCPU(ctx, env, srv.URL+"/v1", locs[0], warm, question, chunkTokens)
	return res, err
}

// workerCPU answers doc with a worker process of its own, after a warm-up
// run of warm, and returns the chunks, the wall time and the worker's CPU
// time of the measured run.
func workerCPU(ctx context.Context, env *benchEnv, modelURL string, doc, warm s3store.Location, question string, chunkTokens int) (int, time.Duration, time.Duration, error) {
	const queue = "bench-overhead-cpu"
	p, err := startWorkerProcess(ctx, env, queue, modelURL)
	if err != nil {
		return 0, 0, 0, err
	}
	defer p.stop()
	ask := func(loc s3store.Location) (api.DocumentQAResult, error) {
		var out api.DocumentQAResult
		run, err := env.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: queue}, api.DocumentQAName,
			api.DocumentQAInput{Reuse: api.ReuseNone, Document: loc.String(), Question: question, Options: api.ModelOptions{ChunkTokens: chunkTokens}})
		if err != nil {
			return out, err
		}
		return out, run.Get(ctx, &out)
	}
	if _, err := ask(warm); err != nil {
		return 0, 0, 0, err
	}
	before, err := p.cpuTime()
	if err != nil {
		return 0, 0, 0, err
	}
	start := time.Now()
	out, err := ask(doc)
	if err != nil {
		return 0, 0, 0, err
	}
	wall := time.Since(start)
	after, err := p.cpuTime()
	if err != nil {
		return 0, 0, 0, err
	}
	return out.Chunks, wall, after - before, nil
}

// runPhases prints on stderr where one DocumentQA run's time went, from its
// history: from its start to its first chunk's update, the updates, and
// from the last update to its end, with the time each other activity took
// from scheduled to closed: what a run pays once, apart from what it pays
// per chunk.
func runPhases(ctx context.Context, env *benchEnv, id, runID string) {
	var began, firstUpdate, lastUpdate, ended time.Time
	scheduled := map[int64]string{}
	at := map[int64]time.Time{}
	once := map[string]time.Duration{}
	updates := 0
	it := env.temporal.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return
		}
		t := ev.GetEventTime().AsTime()
		switch {
		case ev.GetWorkflowExecutionStartedEventAttributes() != nil:
			began = t
		case ev.GetActivityTaskScheduledEventAttributes() != nil:
			name := ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
			scheduled[ev.GetEventId()], at[ev.GetEventId()] = name, t
			if name == activities.UpdateMemoryName && firstUpdate.IsZero() {
				firstUpdate = t
			}
		case ev.GetActivityTaskCompletedEventAttributes() != nil:
			sid := ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()
			if scheduled[sid] == activities.UpdateMemoryName {
				lastUpdate, updates = t, updates+1
			} else {
				once[scheduled[sid]] += t.Sub(at[sid])
			}
		case ev.GetWorkflowExecutionCompletedEventAttributes() != nil || ev.GetWorkflowExecutionContinuedAsNewEventAttributes() != nil:
			ended = t
		}
	}
	if began.IsZero() || firstUpdate.IsZero() || ended.IsZero() {
		return
	}
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(once)) {
		fmt.Fprintf(&b, ", %s %.1f ms", strings.TrimPrefix(name, "memagent."), float64(once[name].Microseconds())/1000)
	}
	benchf("overhead: run %s: start to first update %.1f ms, %d updates %.1f ms (%.1f ms each), last update to end %.1f ms; other activities, scheduled to closed%s",
		runID, float64(firstUpdate.Sub(began).Microseconds())/1000, updates, float64(lastUpdate.Sub(firstUpdate).Microseconds())/1000,
		float64(lastUpdate.Sub(firstUpdate).Microseconds())/1000/float64(max(updates, 1)), float64(ended.Sub(lastUpdate).Microseconds())/1000, b.String())
}
