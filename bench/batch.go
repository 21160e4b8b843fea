package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/dev/procstat"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/pluginkit"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/memclient"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
	"github.com/memagent/memagent/workflows"
)

// The batch: 25 small documents (2 or 3 chunks of 600 tokens) × 20
// questions, 16 children at a time, against a simulator that answers at
// once, so the wall time is the system's own.
const (
	batchDocs        = 25
	batchQuestions   = 20
	batchConcurrency = 16
	batchChunkTokens = 600
	batchSlots       = 32
)

// batchVariant is one worker configuration under test.
type batchVariant struct {
	Name string
	// WorkflowPollers is worker.Options.MaxConcurrentWorkflowTaskPollers
	// (the SDK's default is 2).
	WorkflowPollers int
}

// batchRun is one timed batch.
type batchRun struct {
	Variant int
	Order   int
	Items   int
	Wall    time.Duration
	CPU     time.Duration // of the whole process: Temporal, S3, simulator, worker
	Calls   int
	// ChildWait and BatchWait are the median workflow task wait (from
	// scheduled to picked up by a poller) of a sample of the children and
	// of the batch's own workflow; P90 the 90th percentile of the children.
	ChildWait, ChildWaitP90, BatchWait time.Duration
}

func (r batchRun) itemsPerSec() float64 { return float64(r.Items) / r.Wall.Seconds() }

type batchResult struct {
	Variants []batchVariant
	Runs     []batchRun // in the order they ran
}

// variantRuns returns the runs of variant v.
func (r batchResult) variantRuns(v int) []batchRun {
	var out []batchRun
	for _, run := range r.Runs {
		if run.Variant == v {
			out = append(out, run)
		}
	}
	return out
}

// mean is the variant's mean wall time and CPU time.
func (r batchResult) mean(v int) (wall, cpu time.Duration) {
	runs := r.variantRuns(v)
	for _, run := range runs {
		wall += run.Wall
		cpu += run.CPU
	}
	return wall / time.Duration(len(runs)), cpu / time.Duration(len(runs))
}

// startPollerWorker runs an in-process worker like workerapp.Start, with
// the same options as workerapp.NewWorker except the number of workflow
// task pollers, so that only that differs between variants.
func startPollerWorker(ctx context.Context, env *benchEnv, cfg config.Config, pollers int) (stop func(), err error) {
	acts, pool, err := pluginkit.NewActivities[*activities.Activities](ctx, workerapp.PluginOptions(cfg, workerapp.Options{Logger: env.logger}))
	if err != nil {
		return nil, err
	}
	pool.Start(ctx)
	c, err := workerapp.Dial(ctx, cfg, env.logger)
	if err != nil {
		pool.Close()
		return nil, err
	}
	w := worker.New(c, cfg.TaskQueue, worker.Options{
		MaxConcurrentActivityExecutionSize: 2 * pool.Capacity(),
		TaskQueueActivitiesPerSecond:       cfg.RateLimit,
		WorkerStopTimeout:                  cfg.WorkerStopTimeout(),
		MaxConcurrentWorkflowTaskPollers:   pollers,
	})
	workflows.Register(w)
	acts.Register(w)
	if err := w.Start(); err != nil {
		c.Close()
		pool.Close()
		return nil, err
	}
	return func() { w.Stop(); c.Close(); pool.Close() }, nil
}

// runBatch times a 500-item batch once per entry of order (an index into
// variants), each with a fresh worker of that variant. Every run asks its
// own questions, so no answer is reused from an earlier run.
func runBatch(ctx context.Context, env *benchEnv, variants []batchVariant, order []int) (batchResult, error) {
	res := batchResult{Variants: variants}
	sim := simulator.New(simulator.Options{Tokenizer: env.tok, Slots: batchSlots})
	srv := httptest.NewServer(sim)
	defer srv.Close()
	cfg := env.cfg
	cfg.ModelURLs = []string{srv.URL + "/v1"}
	cfg.TaskQueue = "bench-batch"
	mc := memclient.New(env.temporal, memclient.Options{TaskQueue: cfg.TaskQueue})

	uris := make([]string, batchDocs)
	for i := range batchDocs {
		tokens := 1200 + 600*(i%2)
		loc := s3store.Location{Bucket: cfg.Bucket, Key: fmt.Sprintf("bench/batch-doc-%02d.txt", i)}
		if err := env.store.Put(ctx, loc, []byte(docgen.Needle(env.tok, tokens, float64(i%5)/5, uint64(100+i))), "text/plain"); err != nil {
			return res, err
		}
		uris[i] = loc.String()
	}
	batch := func(tag string, questions int) (*api.BatchQAResult, error) {
		var manifest bytes.Buffer
		for i := range batchDocs * questions {
			doc, q := i%batchDocs, i/batchDocs
			line, err := json.Marshal(map[string]any{
				"id": fmt.Sprintf("d%02d-q%02d", doc, q), "document": uris[doc],
				"question": fmt.Sprintf("%s (%s, variant %d)", docgen.Question, tag, q),
				"answers":  []string{docgen.Answer},
			})
			if err != nil {
				return nil, err
			}
			manifest.Write(append(line, '\n'))
		}
		loc := s3store.Location{Bucket: cfg.Bucket, Key: "bench/batch-" + tag + ".jsonl"}
		if err := env.store.Put(ctx, loc, manifest.Bytes(), "application/jsonl"); err != nil {
			return nil, err
		}
		run, err := mc.StartBatch(ctx, api.BatchQAInput{Manifest: loc.String(), Name: "bench-" + tag, Concurrency: batchConcurrency,
			Options: api.ModelOptions{ChunkTokens: batchChunkTokens}}, memclient.StartOptions{ID: "bench-batch-" + tag})
		if err != nil {
			return nil, err
		}
		out, err := run.Get(ctx)
		if err != nil {
			return nil, err
		}
		if want := batchDocs * questions; out.Succeeded != want || out.Skipped != 0 {
			return nil, fmt.Errorf("batch %s: %d answered, %d reused, %d failed; want %d answered", tag, out.Succeeded, out.Skipped, out.Failed, want)
		}
		return out, nil
	}

	// One item per document first: the chunk indexes are then in S3 for
	// every run, and the server has seen the task queue.
	stop, err := startPollerWorker(ctx, env, cfg, variants[0].WorkflowPollers)
	if err != nil {
		return res, err
	}
	_, err = batch("warmup", 1)
	stop()
	if err != nil {
		return res, fmt.Errorf("warm-up batch: %w", err)
	}

	for n, v := range order {
		stop, err := startPollerWorker(ctx, env, cfg, variants[v].WorkflowPollers)
		if err != nil {
			return res, err
		}
		sim.Reset()
		cpu := procstat.CPUTime(false)
		began := time.Now()
		out, err := batch(fmt.Sprintf("run%d", n+1), batchQuestions)
		wall := time.Since(began)
		cpu = procstat.CPUTime(false) - cpu
		stop()
		if err != nil {
			return res, err
		}
		r := batchRun{Variant: v, Order: n + 1, Items: out.Items, Wall: wall, CPU: cpu, Calls: len(sim.Calls())}
		if r.ChildWait, r.ChildWaitP90, r.BatchWait, err = batchTaskWaits(ctx, env.temporal, out.WorkflowID, out.Items); err != nil {
			return res, err
		}
		res.Runs = append(res.Runs, r)
		fmt.Fprintf(os.Stderr, "batch run %d (%s): %d items in %s, %.1f items/s\n", r.Order, variants[v].Name, r.Items, wall.Round(time.Millisecond), r.itemsPerSec())
	}
	return res, nil
}

// batchWaitSample is how many children of a batch have their workflow
// task waits read.
const batchWaitSample = 25

// batchTaskWaits reads how long workflow tasks waited for a poller: over
// an evenly spread sample of the batch's children (whose ids are
// <batch id>/<seq>) and over the batch's own workflow.
func batchTaskWaits(ctx context.Context, c client.Client, batchID string, items int) (childMedian, childP90, batchMedian time.Duration, err error) {
	var child []time.Duration
	for i := range batchWaitSample {
		waits, err := taskWaits(ctx, c, fmt.Sprintf("%s/%d", batchID, i*items/batchWaitSample))
		if err != nil {
			return 0, 0, 0, err
		}
		child = append(child, waits...)
	}
	own, err := taskWaits(ctx, c, batchID)
	if err != nil {
		return 0, 0, 0, err
	}
	return quantile(child, 0.5), quantile(child, 0.9), quantile(own, 0.5), nil
}

// taskWaits returns, for each workflow task of the workflow's latest run,
// the time from its scheduling to its start (a poller taking it).
func taskWaits(ctx context.Context, c client.Client, workflowID string) ([]time.Duration, error) {
	it := c.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var waits []time.Duration
	var scheduled time.Time
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", workflowID, err)
		}
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
			scheduled = ev.GetEventTime().AsTime()
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			if !scheduled.IsZero() {
				waits = append(waits, ev.GetEventTime().AsTime().Sub(scheduled))
			}
			scheduled = time.Time{}
		}
	}
	return waits, nil
}

// quantile is the q-quantile (nearest rank) of ds, 0 when empty.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// writeBatch writes the batch section.
func writeBatch(w io.Writer, r batchResult) {
	items := batchDocs * batchQuestions
	fmt.Fprintf(w, "## Batch throughput and workflow task pollers\n\n"+
		"A %d-item `BatchQA` (%d generated documents of 1.2K or 1.8K tokens in chunks of %d, %d questions each) at concurrency %d on the embedded stack; "+
		"the simulator answers at once (%d slots), so the wall time is the system's own cost. "+
		"Each run has a fresh in-process worker that differs only in `MaxConcurrentWorkflowTaskPollers`, asks questions of its own (no answer is reused), "+
		"and the variants alternate to spread drift over both. CPU is that of the whole process (Temporal server, S3, simulator, worker) on this %d-core machine. "+
		"A workflow task's wait is from its scheduling to a poller taking it, read from the histories of %d children spread over the batch and of the batch itself.\n\n",
		items, batchDocs, batchChunkTokens, batchQuestions, batchConcurrency, batchSlots, runtime.NumCPU(), batchWaitSample)
	fmt.Fprintln(w, "| run | workflow task pollers | items | wall | items/s | CPU | model calls | workflow task wait, children (median / p90) | workflow task wait, batch (median) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, run := range r.Runs {
		fmt.Fprintf(w, "| %d | %s | %d | %.1f s | %.1f | %.1f s | %d | %.0f / %.0f ms | %.0f ms |\n", run.Order, r.Variants[run.Variant].Name, run.Items,
			run.Wall.Seconds(), run.itemsPerSec(), run.CPU.Seconds(), run.Calls, ms(run.ChildWait), ms(run.ChildWaitP90), ms(run.BatchWait))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| workflow task pollers | runs | mean wall | mean items/s | mean CPU | wall ÷ first variant's |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	base, _ := r.mean(0)
	for v, variant := range r.Variants {
		wall, cpu := r.mean(v)
		fmt.Fprintf(w, "| %s | %d | %.1f s | %.1f | %.1f s | %.3f× |\n", variant.Name, len(r.variantRuns(v)), wall.Seconds(),
			float64(items)/wall.Seconds(), cpu.Seconds(), wall.Seconds()/base.Seconds())
	}
	fmt.Fprintln(w)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// parseBatchVariants reads -batch-pollers: a comma-separated list of
// workflow task poller counts.
func parseBatchVariants(list string) ([]batchVariant, error) {
	var out []batchVariant
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 {
			return nil, fmt.Errorf("-batch-pollers: %q is not a poller count of at least 2 (the SDK refuses 1)", f)
		}
		name := strconv.Itoa(n)
		if n == 2 {
			name += " (SDK default)"
		}
		out = append(out, batchVariant{Name: name, WorkflowPollers: n})
	}
	return out, nil
}

// alternate is the order of rounds runs of each of n variants, every other
// round reversed (A B B A A B ...), so that drift over the run weighs on
// every variant alike.
func alternate(n, rounds int) []int {
	var order []int
	for r := range rounds {
		for i := range n {
			if r%2 == 1 {
				order = append(order, n-1-i)
			} else {
				order = append(order, i)
			}
		}
	}
	return order
}
