package main

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/s3store"
)

// The heartbeat section counts the RPCs a worker sends to Temporal per
// chunk, heartbeats apart, with the default heartbeat timeout (15 s) and
// the former one (60 s), at model latencies from none to a call longer than
// the SDK's heartbeat throttle (0.8 × the timeout).

// heartbeatCase is one latency of the heartbeat section.
type heartbeatCase struct {
	Latency time.Duration
	Tokens  int // document length; chunks of 5,000 tokens
}

var heartbeatCases = []heartbeatCase{
	{0, 500_000},
	{400 * time.Millisecond, 100_000},
	{13 * time.Second, 10_000},
}

var heartbeatTimeouts = []int{15, 60}

// heartbeatResult is one run of the section.
type heartbeatResult struct {
	Latency          time.Duration
	TimeoutSeconds   int
	Chunks           int
	Activities       int // activity tasks in the run's history
	Heartbeats       int // RecordActivityTaskHeartbeat RPCs
	OtherRPCs        int // every other RPC the worker's client sent
	Wall             time.Duration
	HeartbeatsPerMin float64 // heartbeats per minute of activity time
	ActivitySeconds  float64
}

// rpcCounter reads the Temporal SDK's temporal_request counter, by
// operation, from a meter provider installed as the global one.
type rpcCounter struct{ reader *sdkmetric.ManualReader }

var (
	rpcCounterOnce sync.Once
	rpcCounterInst *rpcCounter
)

// newRPCCounter installs (once) a meter provider with a manual reader as
// the global provider; workers dialled afterwards report to it.
func newRPCCounter() *rpcCounter {
	rpcCounterOnce.Do(func() {
		r := sdkmetric.NewManualReader()
		otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(r)))
		rpcCounterInst = &rpcCounter{reader: r}
	})
	return rpcCounterInst
}

// counts returns temporal_request so far, summed by operation.
func (c *rpcCounter) counts(ctx context.Context) (map[string]int, error) {
	var rm metricdata.ResourceMetrics
	if err := c.reader.Collect(ctx, &rm); err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "temporal_request" {
				continue
			}
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				continue
			}
			for _, dp := range sum.DataPoints {
				op, _ := dp.Attributes.Value("operation")
				out[op.AsString()] += int(dp.Value)
			}
		}
	}
	return out, nil
}

// runHeartbeat runs every case with every timeout, each on a fresh worker.
func runHeartbeat(ctx context.Context, env *benchEnv) ([]heartbeatResult, error) {
	counter := newRPCCounter()
	var out []heartbeatResult
	for _, hc := range heartbeatCases {
		doc := docgen.Needle(env.tok, hc.Tokens, 0.5, 5)
		for _, timeout := range heartbeatTimeouts {
			r, err := heartbeatRun(ctx, env, counter, doc, hc.Latency, timeout)
			if err != nil {
				return out, fmt.Errorf("latency %s, timeout %d s: %w", hc.Latency, timeout, err)
			}
			out = append(out, r)
		}
	}
	return out, nil
}

func heartbeatRun(ctx context.Context, env *benchEnv, counter *rpcCounter, doc string, latency time.Duration, timeout int) (heartbeatResult, error) {
	res := heartbeatResult{Latency: latency, TimeoutSeconds: timeout}
	srv := httptest.NewServer(simulator.New(simulator.Options{Tokenizer: env.tok, Latency: latency}))
	defer srv.Close()
	cfg := env.cfg
	cfg.ModelURLs = []string{srv.URL + "/v1"}
	cfg.TaskQueue = fmt.Sprintf("bench-heartbeat-%d-%d", latency.Milliseconds(), timeout)
	stop, err := env.startWorker(ctx, cfg)
	if err != nil {
		return res, err
	}
	defer stop()
	loc := s3store.Location{Bucket: cfg.Bucket, Key: fmt.Sprintf("bench/heartbeat-%d.txt", len(doc))}
	if err := env.store.Put(ctx, loc, []byte(doc), "text/plain"); err != nil {
		return res, err
	}
	before, err := counter.counts(ctx)
	if err != nil {
		return res, err
	}
	start := time.Now()
	run, err := env.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: cfg.TaskQueue}, api.DocumentQAName,
		api.DocumentQAInput{Reuse: api.ReuseNone, Document: loc.String(), Question: benchQuestion, Options: api.ModelOptions{ChunkTokens: 5000},
			HeartbeatTimeoutSeconds: timeout})
	if err != nil {
		return res, err
	}
	var qa api.DocumentQAResult
	if err := run.Get(ctx, &qa); err != nil {
		return res, err
	}
	res.Wall = time.Since(start)
	after, err := counter.counts(ctx)
	if err != nil {
		return res, err
	}
	for op, n := range after {
		d := n - before[op]
		if op == "RecordActivityTaskHeartbeat" {
			res.Heartbeats += d
		} else {
			res.OtherRPCs += d
		}
	}
	res.Chunks = qa.Chunks
	if res.Activities, res.ActivitySeconds, err = activityTime(ctx, env.temporal, run.GetID()); err != nil {
		return res, err
	}
	if res.ActivitySeconds > 0 {
		res.HeartbeatsPerMin = float64(res.Heartbeats) / (res.ActivitySeconds / 60)
	}
	return res, nil
}

// writeHeartbeat writes the section's table.
func writeHeartbeat(w io.Writer, rows []heartbeatResult) {
	fmt.Fprintln(w, "## Heartbeat load")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "RPCs a worker sends to Temporal for one DocumentQA run, counted by the Temporal SDK's own `temporal_request` metric (by operation) in the bench process, with the default heartbeat timeout (15 s, so a dead worker's activity is retried about 15 s after its last heartbeat) next to the former 60 s. memagent's activities record a heartbeat every third of the timeout for their whole life (model call and S3 included) and one at once when they keep a model's completion; the SDK sends the first at once and then at most one per 0.8 × the timeout. The 13 s latency is a model call longer than the 12 s throttle of a 15 s timeout.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| simulated latency | heartbeat timeout | chunks | activities | heartbeat RPCs | heartbeats per activity | heartbeats per minute of activity | other RPCs per activity | wall |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		per := func(n int) float64 { return float64(n) / float64(max(r.Activities, 1)) }
		fmt.Fprintf(w, "| %s | %d s | %d | %d | %d | %.2f | %.1f | %.2f | %.1f s |\n", r.Latency, r.TimeoutSeconds, r.Chunks, r.Activities, r.Heartbeats,
			per(r.Heartbeats), r.HeartbeatsPerMin, per(r.OtherRPCs), r.Wall.Seconds())
	}
	fmt.Fprintln(w)
}

// activityTime counts the activity tasks of a workflow's runs and sums
// their time from start to completion, from the histories.
func activityTime(ctx context.Context, c client.Client, id string) (int, float64, error) {
	n, total := 0, 0.0
	runID := ""
	for {
		it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		started := map[int64]time.Time{}
		prev := ""
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return n, total, err
			}
			if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
				prev = a.GetContinuedExecutionRunId()
			}
			if ev.GetActivityTaskStartedEventAttributes() != nil {
				started[ev.GetEventId()] = ev.GetEventTime().AsTime()
			}
			if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil {
				n++
				if t, ok := started[a.GetStartedEventId()]; ok {
					total += ev.GetEventTime().AsTime().Sub(t).Seconds()
				}
			}
		}
		if prev == "" {
			return n, total, nil
		}
		runID = prev
	}
}
