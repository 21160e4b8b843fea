package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/s3store"
)

// The shared-pool sections: how well memagent keeps a GPU pool busy with a
// mixed-length batch, how long a question waits behind a saturating batch
// with and without priority, and how two tenants share a pool.

// Every call of these sections costs the simulator a fixed 200 ms plus the
// prompt at 10,000 tokens/s and the completion at 500 tokens/s (about
// 0.9 s for a 5,000-token chunk): slow enough that the 2-core machine's
// orchestration keeps up with 64 slots.
const (
	shareBase       = 200 * time.Millisecond
	sharePrefillTPS = 10_000
	shareDecodeTPS  = 500
)

// sharePool is a simulator of replicas × slots and a worker whose in-flight
// cap is that capacity (its activity slots, and a default batch window, are
// twice that).
type sharePool struct {
	base time.Duration // fixed cost of a call
	sim  *simulator.Server
	srv  *httptest.Server
	tq   string
	stop func()
}

func newSharePool(ctx context.Context, env *benchEnv, name string, replicas, slots int, base time.Duration) (*sharePool, error) {
	sim := simulator.New(simulator.Options{Tokenizer: env.tok, Latency: base, Replicas: replicas, Slots: slots,
		PrefillTokensPerSec: sharePrefillTPS, DecodeTokensPerSec: shareDecodeTPS})
	srv := httptest.NewServer(sim)
	cfg := env.cfg
	cfg.ModelURLs = []string{srv.URL + "/v1"}
	cfg.ModelMaxInFlight = replicas * slots
	cfg.TaskQueue = "bench-" + name
	stop, err := env.startWorker(ctx, cfg)
	if err != nil {
		srv.Close()
		return nil, err
	}
	return &sharePool{base: base, sim: sim, srv: srv, tq: cfg.TaskQueue, stop: stop}, nil
}

func (p *sharePool) close() {
	p.stop()
	p.srv.Close()
}

// busy is the share of the pool's slots serving a call now.
func (p *sharePool) busy() float64 {
	st := p.sim.Stats()
	return float64(st.InFlight) / float64(max(st.Slots, 1))
}

// modelSeconds is the service time the calls answered so far needed.
func (p *sharePool) modelSeconds() float64 {
	st := p.sim.Stats()
	return float64(st.Latency.Count)*p.base.Seconds() + float64(st.PromptTokens)/sharePrefillTPS + float64(st.CompletionTokens)/shareDecodeTPS
}

// drain waits until the simulator has served everything in flight and
// nothing has come for a second (the activities of terminated runs stop at
// their next heartbeat).
func (p *sharePool) drain(ctx context.Context) error {
	quiet := 0
	for quiet < 10 {
		st := p.sim.Stats()
		if st.Open == 0 {
			quiet++
		} else {
			quiet = 0
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// shareDocs uploads generated documents of the given lengths under key
// prefix and returns their URIs.
func shareDocs(ctx context.Context, env *benchEnv, prefix string, tokens []int) ([]string, error) {
	uris := make([]string, len(tokens))
	for i, n := range tokens {
		loc := s3store.Location{Bucket: env.cfg.Bucket, Key: fmt.Sprintf("bench/%s-%03d.txt", prefix, i)}
		if err := env.store.Put(ctx, loc, []byte(docgen.Needle(env.tok, n, float64(i%10)/10, uint64(500+i))), "text/plain"); err != nil {
			return nil, err
		}
		uris[i] = loc.String()
	}
	return uris, nil
}

// shareItem is one manifest line.
type shareItem struct {
	ID          string `json:"id"`
	Document    string `json:"document"`
	Question    string `json:"question"`
	FairnessKey string `json:"fairness_key,omitempty"`
}

// startShareBatch writes items as a manifest and starts a BatchQA on the
// pool's task queue, with in's other fields, at in's start priority.
func startShareBatch(ctx context.Context, env *benchEnv, p *sharePool, id string, items []shareItem, in api.BatchQAInput) (client.WorkflowRun, error) {
	var b strings.Builder
	for _, it := range items {
		line, _ := json.Marshal(it)
		b.Write(line)
		b.WriteByte('\n')
	}
	loc := s3store.Location{Bucket: env.cfg.Bucket, Key: "bench/manifests/" + id + ".jsonl"}
	if err := env.store.Put(ctx, loc, []byte(b.String()), "application/x-ndjson"); err != nil {
		return nil, err
	}
	in.Manifest, in.Name = loc.String(), id
	return env.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: p.tq, Priority: in.StartPriority()}, api.BatchQAName, in)
}

// question makes a question unique to a run, so that no answer is reused
// from an earlier one (answers are kept by document, question and options).
func question(tag string, n int) string {
	return fmt.Sprintf("%s (%s %d)", docgen.Question, tag, n)
}

// --- Utilisation -----------------------------------------------------------

type utilisationRow struct {
	Variant      string
	Window       int
	Calls        int
	Wall         time.Duration
	ModelSeconds float64
	LongestChain float64 // seconds of model time the longest item needs, one call after another
	Slots        int
	Runs         int    // the batch's runs (continue-as-new chain)
	Line         string // what its "utilisation:" line says it is; empty: none
}

// ideal is the shortest possible makespan: the pool's slots all busy, or
// the longest document's own calls one after another, whichever is longer.
func (r utilisationRow) ideal() float64 {
	return max(r.ModelSeconds/float64(r.Slots), r.LongestChain)
}

const (
	utilReplicas = 4
	utilSlots    = 16
	utilDocs     = 64
	// utilBase is the fixed cost of a call in the utilisation section: 4 s
	// (a call then takes about 4.5 s, as a 5,000-token chunk does on a
	// GPU), so that the pool asks for about 14 calls/s, well within what
	// this machine's embedded stack orchestrates for chunks of 5,000
	// tokens. At 200 ms the pool asked for about 98 calls/s, more than the
	// two cores can orchestrate, and the figure measured the machine's
	// CPU rather than the batch's scheduling.
	utilBase = 4 * time.Second
)

// utilVariant is one batch of the utilisation section.
type utilVariant struct {
	name   string
	window int // 0: the default, sized from the pool
	// docs picks the document set: utilDocs documents of 20K–200K tokens,
	// or mixedDocs documents of 2K–60K tokens for the many-item batch.
	mixed bool
	items int // 0: one item per document
	// itemsPerRun and pageSize, when set, make the batch continue as new.
	itemsPerRun, pageSize int
	// line is what the variant's "utilisation:" line says it is; empty
	// for a comparison that prints none.
	line string
}

const (
	mixedDocs  = 40
	mixedItems = 2000
	// The many-item batch's documents: 1K–12K tokens, one to three chunks.
	mixedMin, mixedSpan = 1_000, 11_000
)

// runUtilisation runs the utilisation batches: 64 documents of 20K–200K
// tokens, one question each, with the default window sized from the pool,
// and with the default window across continue-as-new every 16 items; then
// 2,000 questions over 40 documents of 1K–12K tokens at the default window
// (four runs of the default 500 items).
// cases, when not nil, picks the batches to run by index; mixedN is the
// many-item batch's item count; carryAfter, when not 0, is every batch's
// carry_after_seconds.
func runUtilisation(ctx context.Context, env *benchEnv, cases map[int]bool, mixedN, carryAfter int) ([]utilisationRow, error) {
	tokens := make([]int, utilDocs)
	for i := range tokens {
		tokens[i] = 20_000 + (i*7919)%180_001
	}
	uris, err := shareDocs(ctx, env, "util", tokens)
	if err != nil {
		return nil, err
	}
	mixed := make([]int, mixedDocs)
	for i := range mixed {
		mixed[i] = mixedMin + (i*7919)%(mixedSpan+1)
	}
	mixedURIs, err := shareDocs(ctx, env, "mixed", mixed)
	if err != nil {
		return nil, err
	}
	var rows []utilisationRow
	for vi, v := range []utilVariant{
		{name: "window from the pool (default)", line: "the default window"},
		{name: "default window, continue-as-new every 16 items", itemsPerRun: 16, pageSize: 8, line: "default window across continue-as-new every 16 items"},
		{name: fmt.Sprintf("%s items of mixed lengths (%dK–%dK tokens), default window", thousands(mixedN), mixedMin/1000, (mixedMin+mixedSpan)/1000), mixed: true, items: mixedN, line: fmt.Sprintf("%s items of mixed lengths, default window", thousands(mixedN))},
	} {
		if cases != nil && !cases[vi] {
			continue
		}
		p, err := newSharePool(ctx, env, fmt.Sprintf("util-%d", vi), utilReplicas, utilSlots, utilBase)
		if err != nil {
			return rows, err
		}
		docs := uris
		if v.mixed {
			docs = mixedURIs
		}
		n := v.items
		if n == 0 {
			n = len(docs)
		}
		// A question of its own for each item, so that each item's chain
		// of calls can be told apart.
		items := make([]shareItem, n)
		for i := range items {
			items[i] = shareItem{ID: fmt.Sprint(i), Document: docs[i%len(docs)], Question: question(fmt.Sprintf("util %d item", vi), i)}
		}
		start := time.Now()
		id := fmt.Sprintf("bench-util-%d-%d", vi, start.Unix())
		run, err := startShareBatch(ctx, env, p, id, items,
			api.BatchQAInput{Concurrency: v.window, ItemsPerRun: v.itemsPerRun, PageSize: v.pageSize, CarryAfterSeconds: carryAfter})
		if err != nil {
			p.close()
			return rows, err
		}
		tl := watchBusy(p)
		var res api.BatchQAResult
		err = run.Get(ctx, &res)
		wall := time.Since(start)
		tl.report(ctx, env, id, start)
		if err == nil && res.Succeeded != len(items) {
			err = fmt.Errorf("%d of %d items answered", res.Succeeded, len(items))
		}
		r := utilisationRow{Variant: v.name, Window: v.window, Calls: p.sim.Stats().Latency.Count, Wall: wall,
			ModelSeconds: p.modelSeconds(), Slots: utilReplicas * utilSlots, Runs: res.Runs, Line: v.line}
		if r.Window == 0 {
			r.Window = 2 * r.Slots
		}
		// The longest chain of one item's calls (its chunks and the
		// answer), at the service times the simulator recorded.
		chains := map[string]float64{}
		for _, c := range p.sim.Calls() {
			chains[c.Question] += c.Service.Seconds()
		}
		for _, sec := range chains {
			r.LongestChain = max(r.LongestChain, sec)
		}
		p.close()
		if err != nil {
			return rows, fmt.Errorf("%s: %w", v.name, err)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func writeUtilisation(w io.Writer, rows []utilisationRow, heading string) {
	fmt.Fprintf(w, "## %s\n\n%d documents of 20K–200K tokens (chunks of 5,000), one question each, as one `BatchQA` (then the same across continue-as-new every 16 items, pages of 8, and 2,000 questions over 40 documents of %dK–%dK tokens, which continue as new every 500 items, the default) against a simulated pool of %d replicas × %d slots (each call: %.1f s + prompt at %d tokens/s + completion at %d tokens/s, about what a 5,000-token chunk takes on a GPU), the worker's in-flight cap set to the pool's %d slots. The pool then asks for about 14 calls a second, well within what this machine's embedded stack orchestrates for such chunks; at 0.2 s a call it would ask for about 98, more than two cores orchestrate, and the figure would measure the machine's CPU rather than the batch's scheduling. A document's calls run one after another (each chunk needs the memory of the one before), so no schedule can finish before the longest document's own calls have run: the ideal makespan is the longer of the model time over the slots and the longest item's chain of calls. *utilisation* is that ideal over the measured makespan; *slot utilisation* is the model time over the slot time the run held (wall × slots).\n\n",
		heading, utilDocs, mixedMin/1000, (mixedMin+mixedSpan)/1000, utilReplicas, utilSlots, utilBase.Seconds(), sharePrefillTPS, shareDecodeTPS, utilReplicas*utilSlots)
	fmt.Fprintln(w, "| batch | window | runs | model calls | model time | makespan | model time ÷ slots | longest item's chain | utilisation | slot utilisation |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %d | %d | %d | %.1f s | %.1f s | %.1f s | %.1f s | %.1f%% | %.1f%% |\n", r.Variant, r.Window, r.Runs, r.Calls, r.ModelSeconds, r.Wall.Seconds(),
			r.ModelSeconds/float64(r.Slots), r.LongestChain, 100*r.ideal()/r.Wall.Seconds(), 100*r.ModelSeconds/(r.Wall.Seconds()*float64(r.Slots)))
	}
	fmt.Fprintln(w)
	for _, r := range rows {
		if r.Line != "" {
			fmt.Fprintf(w, "utilisation: %.1f%% (%s; %s; makespan %.2f× the ideal).\n", 100*r.ideal()/r.Wall.Seconds(), r.Line, plural(r.Runs, "run"), r.Wall.Seconds()/r.ideal())
		}
	}
	fmt.Fprintln(w)
}

// --- Interactive under load ------------------------------------------------

type interactiveRow struct {
	Variant  string
	Priority int // of the questions; 0 for the idle pool
	Times    []time.Duration
}

func (r interactiveRow) median() time.Duration {
	t := slices.Clone(r.Times)
	slices.Sort(t)
	if len(t) == 0 {
		return 0
	}
	if len(t)%2 == 1 {
		return t[len(t)/2]
	}
	return (t[len(t)/2-1] + t[len(t)/2]) / 2
}

const (
	interAsks      = 10
	interAskTokens = 50_000
	interLoadDocs  = 20
	interLoadQs    = 60 // questions per load document: 1,200 items
	// interBase is the fixed cost of a call here: 1 s, so that 64 busy
	// slots need about 40 activities a second, which this machine's
	// orchestration (2 cores, stack and worker in one process) sustains.
	interBase = time.Second
)

// runInteractive times 10 questions of 50K tokens on an idle pool, then
// behind a saturating batch with the batch's own priority (4), then with
// the default priority of a question (2).
func runInteractive(ctx context.Context, env *benchEnv) ([]interactiveRow, error) {
	askTokens := make([]int, interAsks)
	for i := range askTokens {
		askTokens[i] = interAskTokens
	}
	askDocs, err := shareDocs(ctx, env, "inter-ask", askTokens)
	if err != nil {
		return nil, err
	}
	loadTokens := make([]int, interLoadDocs)
	for i := range loadTokens {
		loadTokens[i] = 20_000
	}
	loadDocs, err := shareDocs(ctx, env, "inter-load", loadTokens)
	if err != nil {
		return nil, err
	}
	p, err := newSharePool(ctx, env, "interactive", utilReplicas, utilSlots, interBase)
	if err != nil {
		return nil, err
	}
	defer p.close()
	var rows []interactiveRow
	for vi, v := range []struct {
		name     string
		load     bool
		priority int
	}{{"idle pool", false, api.PriorityQuestion}, {"saturating batch, questions at the batch's priority (4)", true, api.PriorityBatch},
		{"saturating batch, questions at their default priority (2)", true, api.PriorityQuestion}} {
		var batch client.WorkflowRun
		if v.load {
			var items []shareItem
			for d, u := range loadDocs {
				for q := range interLoadQs {
					items = append(items, shareItem{ID: fmt.Sprintf("%d-%d", d, q), Document: u, Question: question(fmt.Sprintf("load%d", vi), q)})
				}
			}
			id := fmt.Sprintf("bench-load-%d-%d", vi, time.Now().Unix())
			if batch, err = startShareBatch(ctx, env, p, id, items, api.BatchQAInput{}); err != nil {
				return rows, err
			}
			// Saturated: every slot busy and calls queued at the worker,
			// for 5 s.
			if err := waitSaturated(ctx, p, 5*time.Second); err != nil {
				return rows, fmt.Errorf("%s: %w", v.name, err)
			}
			benchf("interactive: %s: pool saturated", v.name)
		}
		row := interactiveRow{Variant: v.name, Priority: v.priority}
		var mu sync.Mutex
		var wg sync.WaitGroup
		errs := make(chan error, interAsks)
		for i, u := range askDocs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				in := api.DocumentQAInput{Document: u, Question: question(fmt.Sprintf("ask%d", vi), i), Priority: v.priority,
					Options: api.ModelOptions{ChunkTokens: 5000}}
				start := time.Now()
				run, err := env.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: p.tq, Priority: in.StartPriority()}, api.DocumentQAName, in)
				if err == nil {
					err = run.Get(ctx, nil)
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				row.Times = append(row.Times, time.Since(start))
				mu.Unlock()
			}()
		}
		wg.Wait()
		close(errs)
		if batch != nil {
			_ = env.temporal.TerminateWorkflow(ctx, batch.GetID(), "", "bench: the questions are answered")
		}
		if err := <-errs; err != nil {
			return rows, fmt.Errorf("%s: %w", v.name, err)
		}
		if err := p.drain(ctx); err != nil {
			return rows, err
		}
		benchf("interactive: %s: median %s", v.name, row.median().Round(100*time.Millisecond))
		rows = append(rows, row)
	}
	return rows, nil
}

// benchf reports a step on stderr.
func benchf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
}

// waitSaturated waits until the pool's slots have been at least 90% busy
// on average over the last hold (sampled every 50 ms).
func waitSaturated(ctx context.Context, p *sharePool, hold time.Duration) error {
	n := int(hold / (50 * time.Millisecond))
	var samples []int
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st := p.sim.Stats()
		samples = append(samples, st.InFlight)
		if len(samples) > n {
			samples = samples[1:]
		}
		if len(samples) == n {
			sum := 0
			for _, v := range samples {
				sum += v
			}
			if float64(sum)/float64(n) >= 0.9*float64(st.Slots) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the batch did not keep the pool 90%% busy within 2 minutes (in flight %d of %d)", st.InFlight, st.Slots)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func writeInteractive(w io.Writer, rows []interactiveRow) {
	fmt.Fprintf(w, "## Questions under load\n\n%d `DocumentQA` questions over documents of %dK tokens (11 calls each), started at once on a pool of %d replicas × %d slots (each call: %d ms + prompt at %d tokens/s + completion at %d tokens/s), first on an idle pool, then while a `BatchQA` of %d items (%d documents of 20K tokens, 5 calls each, at its default priority 4 and its default window of twice the pool) has kept the slots at least 90%% busy for 5 s. The batch is terminated once the questions are answered. Time to answer is from the start of each question's workflow to its result.\n\n",
		interAsks, interAskTokens/1000, utilReplicas, utilSlots, interBase.Milliseconds(), sharePrefillTPS, shareDecodeTPS, interLoadDocs*interLoadQs, interLoadDocs)
	fmt.Fprintln(w, "| pool | questions answered | median time to answer | slowest | median ÷ idle |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	var idle time.Duration
	for i, r := range rows {
		if i == 0 {
			idle = r.median()
		}
		fmt.Fprintf(w, "| %s | %d | %.1f s | %.1f s | %.2f× |\n", r.Variant, len(r.Times), r.median().Seconds(), slices.Max(r.Times).Seconds(), r.median().Seconds()/idle.Seconds())
	}
	fmt.Fprintln(w)
}

// --- Fairness ----------------------------------------------------------------

type fairnessRow struct {
	WeightA, WeightB float64
	CallsA, CallsB   int
	Window           time.Duration
	Busy             float64 // mean share of the pool's slots in use over the window
}

func (r fairnessRow) shareA() float64 { return float64(r.CallsA) / float64(max(r.CallsA+r.CallsB, 1)) }

const (
	fairReplicas = 1
	fairSlots    = 16
	fairItems    = 250 // per tenant; 4 chunks + an answer each
	fairGap      = 30 * time.Second
	fairSettle   = 10 * time.Second
	fairMeasure  = 30 * time.Second
	// fairBase is the fixed cost of a call here: 1 s, so that the pool, not
	// the machine, is what the tenants share. At 0.2 s (until 2026-11-27)
	// 16 slots asked for about 27 calls a second, what two cores
	// orchestrate at most: the slots were not always full, a call found one
	// free as soon as its run scheduled it, and the shares measured how
	// fast each tenant's runs were orchestrated rather than the queue's
	// weights.
	fairBase = time.Second
)

// runFairness starts tenant A's batch, tenant B's 30 s later (same size,
// same priority), and counts the model calls of each while both are
// backlogged: from 10 s after B's start, for 30 s. Once with equal weights,
// once with A at weight 2.
func runFairness(ctx context.Context, env *benchEnv) ([]fairnessRow, error) {
	tokens := make([]int, 10)
	for i := range tokens {
		tokens[i] = 20_000
	}
	docs, err := shareDocs(ctx, env, "fair", tokens)
	if err != nil {
		return nil, err
	}
	var rows []fairnessRow
	for vi, wa := range []float64{1, 2} {
		p, err := newSharePool(ctx, env, fmt.Sprintf("fair-%d", vi), fairReplicas, fairSlots, fairBase)
		if err != nil {
			return rows, err
		}
		items := func(tenant string) []shareItem {
			out := make([]shareItem, fairItems)
			for i := range out {
				out[i] = shareItem{ID: fmt.Sprint(i), Document: docs[i%len(docs)], Question: question(fmt.Sprintf("%s/%d", tenant, vi), i)}
			}
			return out
		}
		stamp := time.Now().Unix()
		a, err := startShareBatch(ctx, env, p, fmt.Sprintf("bench-fair-a-%d-%d", vi, stamp), items("tenant-a"),
			api.BatchQAInput{FairnessKey: "tenant-a", FairnessWeight: wa})
		if err != nil {
			p.close()
			return rows, err
		}
		time.Sleep(fairGap)
		b, err := startShareBatch(ctx, env, p, fmt.Sprintf("bench-fair-b-%d-%d", vi, stamp), items("tenant-b"),
			api.BatchQAInput{FairnessKey: "tenant-b", FairnessWeight: 1})
		if err != nil {
			p.close()
			return rows, err
		}
		time.Sleep(fairSettle)
		from := len(p.sim.Calls())
		row := fairnessRow{WeightA: wa, WeightB: 1, Window: fairMeasure}
		row.Busy = sampleBusy(p, fairMeasure)
		calls := p.sim.Calls()[from:]
		for _, c := range calls {
			switch {
			case strings.Contains(c.Question, "(tenant-a/"):
				row.CallsA++
			case strings.Contains(c.Question, "(tenant-b/"):
				row.CallsB++
			}
		}
		for _, run := range []client.WorkflowRun{a, b} {
			_ = env.temporal.TerminateWorkflow(ctx, run.GetID(), "", "bench: measured")
		}
		err = p.drain(ctx)
		p.close()
		if err != nil {
			return rows, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// sampleBusy waits d and returns the mean share of p's slots in use over
// it, sampled every 100 ms.
func sampleBusy(p *sharePool, d time.Duration) float64 {
	var sum float64
	n := 0
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(d); time.Now().Before(end); n++ {
		<-tick.C
		sum += p.busy()
	}
	return sum / float64(max(n, 1))
}

func writeFairness(w io.Writer, rows []fairnessRow) {
	fmt.Fprintf(w, "## Fairness between tenants\n\nTwo tenants' `BatchQA`s of %d items each (documents of 20K tokens: 5 calls an item), both at priority 4 with fairness keys `tenant-a` and `tenant-b`, on a pool of %d × %d slots (each call: %.1f s + prompt at %d tokens/s + completion at %d tokens/s, so that the slots, not the machine's two cores, are what the tenants compete for); B starts %s after A. Each tenant's share of the model calls is counted while both are backlogged: from %s after B's start, for %s. The batches are then terminated.\n\n",
		fairItems, fairReplicas, fairSlots, fairBase.Seconds(), sharePrefillTPS, shareDecodeTPS, fairGap, fairSettle, fairMeasure)
	fmt.Fprintln(w, "| weights A:B | calls A | calls B | A's share | A's share by weight |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %g:%g | %d | %d | %.1f%% | %.1f%% |\n", r.WeightA, r.WeightB, r.CallsA, r.CallsB, 100*r.shareA(), 100*r.WeightA/(r.WeightA+r.WeightB))
	}
	fmt.Fprintln(w)
	for _, r := range rows {
		fmt.Fprintf(w, "At %g:%g the pool's slots were %.0f%% busy over the window.\n", r.WeightA, r.WeightB, 100*r.Busy)
	}
	fmt.Fprintln(w)
}

// busyTimeline samples how busy the pool's slots are, every 250 ms, until
// report: where a batch's makespan goes, shown on stderr.
type busyTimeline struct {
	p       *sharePool
	stop    chan struct{}
	done    chan struct{}
	samples []float64
}

func watchBusy(p *sharePool) *busyTimeline {
	t := &busyTimeline{p: p, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(t.done)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-t.stop:
				return
			case <-tick.C:
				t.samples = append(t.samples, t.p.busy())
			}
		}
	}()
	return t
}

// report stops sampling and prints the slots' busyness by 10 s and when
// each run of batch id began, as seconds from start.
func (t *busyTimeline) report(ctx context.Context, env *benchEnv, id string, start time.Time) {
	close(t.stop)
	<-t.done
	var b strings.Builder
	for i := 0; i < len(t.samples); i += 40 {
		sum := 0.0
		chunk := t.samples[i:min(i+40, len(t.samples))]
		for _, v := range chunk {
			sum += v
		}
		fmt.Fprintf(&b, " %.0f", 100*sum/float64(len(chunk)))
	}
	benchf("%s: slots busy (%%) by 10 s:%s", id, b.String())
	resp, err := env.temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: fmt.Sprintf("WorkflowId = '%s'", id)})
	if err != nil {
		return
	}
	type runInfo struct {
		began  float64
		failed map[string]int // failed workflow tasks by cause
	}
	var runs []runInfo
	for _, e := range resp.GetExecutions() {
		r := runInfo{began: e.GetStartTime().AsTime().Sub(start).Seconds(), failed: map[string]int{}}
		it := env.temporal.GetWorkflowHistory(ctx, id, e.GetExecution().GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				break
			}
			if a := ev.GetWorkflowTaskFailedEventAttributes(); a != nil {
				r.failed[strings.TrimPrefix(a.GetCause().String(), "WORKFLOW_TASK_FAILED_CAUSE_")]++
			}
		}
		runs = append(runs, r)
	}
	slices.SortFunc(runs, func(a, b runInfo) int { return cmp.Compare(a.began, b.began) })
	b.Reset()
	for _, r := range runs {
		fmt.Fprintf(&b, " %.1f", r.began)
		if len(r.failed) > 0 {
			fmt.Fprintf(&b, " (failed workflow tasks: %v)", r.failed)
		}
	}
	benchf("%s: runs began at (s):%s", id, b.String())
}

// parseIndexes reads a comma-separated list of indexes; "" is nil (all).
func parseIndexes(s string) (map[int]bool, error) {
	if s == "" {
		return nil, nil
	}
	m := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		var i int
		if _, err := fmt.Sscan(strings.TrimSpace(f), &i); err != nil || i < 0 {
			return nil, fmt.Errorf("%q is not an index", f)
		}
		m[i] = true
	}
	return m, nil
}

// thousands writes n with a comma every three digits: 2,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// plural writes n and the noun, with an s unless n is 1: "1 run", "4 runs".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
