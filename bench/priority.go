package main

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"slices"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/simulator"
)

// --- Priority in the model server ------------------------------------------

// The section measures what the model server's own queue costs a question
// behind a saturating batch, with the server scheduling first come, first
// served and by priority (MEMAGENT_MODEL_PRIORITY=vllm against a simulator
// with --scheduling-policy priority), on the simulator's batch model.
//
// The worker keeps srvInFlight calls at the server, three times what its
// batch runs (srvSeqs): as several workers sharing one server do, or one
// whose MEMAGENT_MAX_IN_FLIGHT is above the server's --max-num-seqs. The
// rest wait in the server's queue, where only the server can order them.
const (
	srvAsks      = 8
	srvAskTokens = 20_000 // 4 chunks of 5,000 and an answer: 5 calls
	srvLoadDocs  = 8
	srvLoadQs    = 60 // 480 items of 5 calls
	srvSeqs      = 16
	srvInFlight  = 48
	// srvSpeed scales the batch model's default GPU (a 7B model on one
	// L40S-class GPU) up, so that a question takes seconds, not minutes,
	// on this machine: every step lasts 1/srvSpeed of its default and
	// prefill is srvSpeed times faster; ratios are unchanged.
	srvSpeed = 2
)

var srvBatch = simulator.BatchOptions{
	MaxNumSeqs:          srvSeqs,
	StepBase:            simulator.DefaultStepBase / srvSpeed,
	StepPerSeq:          simulator.DefaultStepPerSeq / srvSpeed,
	PrefillTokensPerSec: simulator.DefaultBatchPrefillTokensPerSec * srvSpeed,
}

type serverPrioRow struct {
	Variant     string
	Form        string // MEMAGENT_MODEL_PRIORITY
	Policy      string // the simulator's --scheduling-policy
	Hold        string // MEMAGENT_MODEL_PRIORITY_HOLD
	Reserve     string // MEMAGENT_MODEL_PRIORITY_RESERVE
	Evict       string // MEMAGENT_MODEL_PRIORITY_EVICT; "" is off
	Load        bool
	InFlight    int // the worker's calls at the server at most
	Times       []time.Duration
	Preemptions int
	MaxQueued   int
	// Stopped counts the batch's calls the worker stopped for the
	// questions' (Evict), as the server counted them: canceled requests.
	Stopped int
	// Thrown is the tokens the server had prefilled or decoded for the
	// stopped calls: GPU work done for no answer.
	Thrown int
	// MeanStep is the replica's mean step while the questions ran, and
	// PrefillShare the share of its steps' time spent prefilling: a
	// question decodes one token a step, so its calls slow down with the
	// steps the batch's prompts lengthen.
	MeanStep     time.Duration
	PrefillShare float64
}

func (r serverPrioRow) median() time.Duration {
	return interactiveRow{Times: r.Times}.median()
}

// newServerPrioPool starts a simulator of one replica on the batch model
// under policy and a worker that keeps up to inFlight calls at it, telling
// it their priority in form.
func newServerPrioPool(ctx context.Context, env *benchEnv, name string, row serverPrioRow) (*sharePool, error) {
	policy, form, inFlight := row.Policy, row.Form, row.InFlight
	sim := simulator.New(simulator.Options{Tokenizer: env.tok, Capacity: simulator.CapacityBatch, Batch: srvBatch, SchedulingPolicy: policy})
	srv := httptest.NewServer(sim)
	cfg := env.cfg
	cfg.ModelURLs = []string{srv.URL + "/v1"}
	cfg.ModelMaxInFlight = inFlight
	cfg.ModelPriority = []string{form}
	cfg.ModelPriorityHold = row.Hold
	cfg.ModelPriorityReserve = row.Reserve
	cfg.ModelPriorityEvict = row.Evict
	cfg.TaskQueue = "bench-" + name
	stop, err := env.startWorker(ctx, cfg)
	if err != nil {
		srv.Close()
		return nil, err
	}
	return &sharePool{sim: sim, srv: srv, tq: cfg.TaskQueue, stop: stop}, nil
}

// runServerPriority times srvAsks questions at priority 2 on an idle
// server, then behind a saturating batch with the server's queue first
// come, first served, then with it by priority, with and without the
// pool's hold and reserve. only names the rows to run by index (the idle
// row, 0, always runs: the others are its multiples); nil runs all.
func runServerPriority(ctx context.Context, env *benchEnv, only map[int]bool) ([]serverPrioRow, error) {
	askTokens := slices.Repeat([]int{srvAskTokens}, srvAsks)
	askDocs, err := shareDocs(ctx, env, "srvprio-ask", askTokens)
	if err != nil {
		return nil, err
	}
	loadDocs, err := shareDocs(ctx, env, "srvprio-load", slices.Repeat([]int{20_000}, srvLoadDocs))
	if err != nil {
		return nil, err
	}
	var rows []serverPrioRow
	for vi, v := range serverPrioVariants {
		if vi > 0 && only != nil && !only[vi] {
			continue
		}
		row, err := runServerPrioVariant(ctx, env, vi, v, askDocs, loadDocs)
		if err != nil {
			return rows, fmt.Errorf("%s: %w", v.Variant, err)
		}
		benchf("priority: %s: median %s, %d preemptions", v.Variant, row.median().Round(100*time.Millisecond), row.Preemptions)
		rows = append(rows, row)
	}
	return rows, nil
}

// serverPrioVariants are the section's rows. The rows measured before the
// reserve existed keep it off, as they ran.
var serverPrioVariants = []serverPrioRow{
	{Variant: "idle server", Form: "off", Policy: simulator.SchedulingFCFS, Hold: "off", Reserve: "off", InFlight: srvInFlight},
	{Variant: "saturating batch, server first come, first served", Form: "off", Policy: simulator.SchedulingFCFS, Hold: "off", Reserve: "off", Load: true, InFlight: srvInFlight},
	{Variant: "saturating batch, server by priority", Form: "vllm", Policy: simulator.SchedulingPriority, Hold: "off", Reserve: "off", Load: true, InFlight: srvInFlight},
	// MEMAGENT_MODEL_PRIORITY_HOLD=on: no new batch call starts while a
	// question's call runs at the server (or ended under a second ago);
	// those already there run on.
	{Variant: "saturating batch, server by priority, pool holds back batch calls", Form: "vllm", Policy: simulator.SchedulingPriority, Hold: "on", Reserve: "off", Load: true, InFlight: srvInFlight},
	{Variant: "saturating batch, server by priority, pool holds back batch calls, worker's calls capped at the server's batch", Form: "vllm", Policy: simulator.SchedulingPriority, Hold: "on", Reserve: "off", Load: true, InFlight: srvSeqs},
	// The setup of "Questions under load": no queue in the server, the
	// worker's own queue orders the calls by priority.
	{Variant: "saturating batch, server first come, first served, worker's calls capped at the server's batch", Form: "off", Policy: simulator.SchedulingFCFS, Hold: "off", Reserve: "off", Load: true, InFlight: srvSeqs},
	// Server-side priority alone at the cap of the server's batch: the
	// baseline of the reserve's row without the hold.
	{Variant: "saturating batch, server by priority, worker's calls capped at the server's batch", Form: "vllm", Policy: simulator.SchedulingPriority, Hold: "off", Reserve: "off", Load: true, InFlight: srvSeqs},
	// MEMAGENT_MODEL_PRIORITY_RESERVE: a question's call goes to the
	// server beyond the cap while batch calls run there, and the server
	// preempts one for it; auto is a quarter of the cap (4 of 16).
	{Variant: "saturating batch, server by priority, worker's calls capped at the server's batch, questions' calls on a reserve of 4 (auto)", Form: "vllm", Policy: simulator.SchedulingPriority, Hold: "off", Reserve: "auto", Load: true, InFlight: srvSeqs},
	{Variant: "saturating batch, server by priority, pool holds back batch calls, worker's calls capped at the server's batch, questions' calls on a reserve of 4 (auto)", Form: "vllm", Policy: simulator.SchedulingPriority, Hold: "on", Reserve: "auto", Load: true, InFlight: srvSeqs},
	{Variant: "saturating batch, server by priority, pool holds back batch calls, worker's calls capped at the server's batch, questions' calls on a reserve of 8", Form: "vllm", Policy: simulator.SchedulingPriority, Hold: "on", Reserve: "8", Load: true, InFlight: srvSeqs},
	// MEMAGENT_MODEL_PRIORITY_EVICT=on: a question's call stops the
	// batch's calls that started at the server in the last 10 s; they are
	// sent again once the questions are done (the hold).
	{Variant: "saturating batch, server by priority, pool holds back batch calls, worker's calls capped at the server's batch, batch calls of the last 10 s stopped for a question's", Form: "vllm", Policy: simulator.SchedulingPriority, Hold: "on", Reserve: "off", Evict: "on", Load: true, InFlight: srvSeqs},
	{Variant: "saturating batch, server by priority, pool holds back batch calls, batch calls of the last 10 s stopped for a question's", Form: "vllm", Policy: simulator.SchedulingPriority, Hold: "on", Reserve: "off", Evict: "on", Load: true, InFlight: srvInFlight},
}

func runServerPrioVariant(ctx context.Context, env *benchEnv, vi int, row serverPrioRow, askDocs, loadDocs []string) (serverPrioRow, error) {
	p, err := newServerPrioPool(ctx, env, fmt.Sprintf("srvprio-%d", vi), row)
	if err != nil {
		return row, err
	}
	defer p.close()
	var batch client.WorkflowRun
	if row.Load {
		var items []shareItem
		for d, u := range loadDocs {
			for q := range srvLoadQs {
				items = append(items, shareItem{ID: fmt.Sprintf("%d-%d", d, q), Document: u, Question: question(fmt.Sprintf("srvload%d", vi), q)})
			}
		}
		id := fmt.Sprintf("bench-srvprio-load-%d-%d", vi, time.Now().Unix())
		if batch, err = startShareBatch(ctx, env, p, id, items, api.BatchQAInput{}); err != nil {
			return row, err
		}
		if err := waitSaturated(ctx, p, 5*time.Second); err != nil {
			return row, err
		}
		benchf("priority: %s: server saturated", row.Variant)
	}
	before := p.sim.Stats()
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, srvAsks)
	for i, u := range askDocs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := api.DocumentQAInput{Document: u, Question: question(fmt.Sprintf("srvask%d", vi), i), Priority: api.PriorityQuestion,
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
	st := p.sim.Stats()
	row.Preemptions, row.MaxQueued = st.Preemptions, st.MaxQueued
	row.Stopped = st.Requests[simulator.OutcomeCanceled] - before.Requests[simulator.OutcomeCanceled]
	row.Thrown = st.ThrownTokens - before.ThrownTokens
	if steps := st.Steps - before.Steps; steps > 0 {
		busy := st.ReplicaBusy[0] - before.ReplicaBusy[0]
		row.MeanStep = busy / time.Duration(steps)
		row.PrefillShare = (st.ReplicaPrefill[0] - before.ReplicaPrefill[0]).Seconds() / busy.Seconds()
	}
	if batch != nil {
		_ = env.temporal.TerminateWorkflow(ctx, batch.GetID(), "", "bench: the questions are answered")
	}
	if err := <-errs; err != nil {
		return row, err
	}
	return row, p.drain(ctx)
}

func writeServerPriority(w io.Writer, rows []serverPrioRow) {
	fmt.Fprintf(w, "## Questions under load, priority in the server\n\n%d `DocumentQA` questions at priority 2 over documents of %dK tokens (5 calls each), started at once against one replica of the simulator's batch model (`--capacity batch --max-num-seqs %d`, steps of %s + %s a sequence, prefill at %d tokens/s: the default GPU made %d× faster), with the worker keeping up to %d calls at it (`MEMAGENT_MAX_IN_FLIGHT=%d`), so that up to %d wait in the server's own queue (the rows that cap them: %d, none). First on an idle server, then while a `BatchQA` of %d items (%d documents of 20K tokens, at its default priority 4) has kept the batch at least 90%% full for 5 s: with `MEMAGENT_MODEL_PRIORITY_HOLD=off` unless said: once with the server first come, first served (`MEMAGENT_MODEL_PRIORITY=off`, simulator `--scheduling-policy fcfs`), once by priority (`MEMAGENT_MODEL_PRIORITY=vllm`, simulator `--scheduling-policy priority`: waiting calls by priority, the least urgent running call preempted for a more urgent one), by priority with the worker's pool holding back the batch's new calls while a question's call runs at the server (`MEMAGENT_MODEL_PRIORITY_HOLD=on`; the batch's calls already there run on), the same with the worker's calls capped at the server's batch, and once more first come, first served with the worker keeping no more calls at the server than its batch runs, the setup of the section Questions under load, where the worker's own queue orders the calls; last, with the worker's calls capped at the server's batch, by priority with the questions' calls on the pool's reserve (`MEMAGENT_MODEL_PRIORITY_RESERVE`, `off` in the rows that do not name it): a question's call goes to the server beyond the cap, by at most the reserve, while batch calls run there, and the server preempts one for it; and with the hold, the batch's calls that started at the server in the last 10 s stopped for a question's (`MEMAGENT_MODEL_PRIORITY_EVICT=on`, `off` in the rows that do not say it): the server drops their sequences, and they are sent again once the questions are done. Each variant has a simulator and a worker of its own; the batch is terminated once the questions are answered.\n\n",
		srvAsks, srvAskTokens/1000, srvSeqs, srvBatch.StepBase, srvBatch.StepPerSeq, int(srvBatch.PrefillTokensPerSec), srvSpeed, srvInFlight, srvInFlight, srvInFlight-srvSeqs, srvSeqs, srvLoadDocs*srvLoadQs, srvLoadDocs)
	fmt.Fprintln(w, "| server | questions answered | median time to answer | slowest | median ÷ idle | preemptions | most calls waiting in the server | batch calls stopped (their tokens done) | mean step | of it prefill |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	var idle time.Duration
	for i, r := range rows {
		if i == 0 {
			idle = r.median()
		}
		fmt.Fprintf(w, "| %s | %d | %.1f s | %.1f s | %.2f× | %d | %d | %d (%d) | %.1f ms | %.0f%% |\n", r.Variant, len(r.Times), r.median().Seconds(), slices.Max(r.Times).Seconds(), r.median().Seconds()/idle.Seconds(),
			r.Preemptions, r.MaxQueued, r.Stopped, r.Thrown, float64(r.MeanStep.Microseconds())/1000, 100*r.PrefillShare)
	}
	fmt.Fprintln(w)
}
