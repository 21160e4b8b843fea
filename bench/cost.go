package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/dev/embedstack"
	"github.com/memagent/memagent/internal/dev/procstat"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/memagent"
)

// The cost section: what orchestration costs per chunk, from each
// process's own accounting. Every party runs in a process of its own: the
// worker (the bench binary as a worker), the Temporal server (the embedded
// one in a bench process of its own, or temporal-server), PostgreSQL (the
// postmaster and its backends) and the bench itself, which serves S3 and
// the simulator and starts the runs. A phase's figures are the differences
// of readings taken before and after it.

// temporalProcessEnv makes the bench binary run the embedded Temporal
// server alone (with its S3, unused), so that its CPU is a process's own.
const temporalProcessEnv = "MEMAGENT_BENCH_TEMPORAL"

// floorProcessEnv makes a worker process register the floor workflow and
// activity beside memagent's.
const floorProcessEnv = "MEMAGENT_BENCH_FLOOR"

// costBareMaxPerLoop bounds the bare phase (64 loops of at most 24
// activities of a mean call, about 100 s): its cost per activity does not
// change with more.
const costBareMaxPerLoop = 24

// costIdle is how long the idle reading of each process lasts.
const costIdle = 10 * time.Second

// costProcs names the processes whose CPU the section reads, beside the
// worker it starts itself.
type costProcs struct {
	TemporalPID int
	PostgresPID int    // 0: no PostgreSQL (the embedded server)
	PostgresURL string // for psql: pg_stat_statements and pg_stat_database
}

// runTemporalProcess serves the embedded Temporal server (and its S3) on
// free ports until SIGTERM, after printing "temporal HOST:PORT".
func runTemporalProcess() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	st, err := embedstack.Start(ctx, embedstack.Options{TemporalPort: embedstack.FreePort, S3Port: embedstack.FreePort, DisableUI: true,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		return err
	}
	fmt.Println("temporal", st.TemporalAddress)
	<-ctx.Done()
	return st.Close()
}

// temporalProcess is the embedded server in a process of its own.
type temporalProcess struct {
	cmd     *exec.Cmd
	Address string
}

func startTemporalProcess(ctx context.Context) (*temporalProcess, error) {
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), temporalProcessEnv+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "temporal ")
	if err != nil || !ok {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		return nil, fmt.Errorf("temporal process did not start: %q %v", line, err)
	}
	return &temporalProcess{cmd: cmd, Address: addr}, nil
}

func (p *temporalProcess) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.cmd.Wait()
}

// costReading is one reading of every party's counters.
type costReading struct {
	At                          time.Time
	Worker, Temporal, Postgres  time.Duration // CPU of each process tree
	Bench                       time.Duration // this process: S3, the simulator, the client
	Machine                     procstat.MachineCPU
	Load                        float64
	Statements, Transactions    int64
	RowsWritten                 int64
	S3Requests                  int64
	PostgresStatementsAvailable bool
	WorkerPeakRSS               int64 // bytes, the worker's VmHWM
}

// costFigures are one phase's differences.
type costFigures struct {
	Wall                                              time.Duration
	Worker, Temporal, Postgres, Bench, MachineBusy    time.Duration
	MachineIdle                                       time.Duration
	LoadBefore, LoadAfter                             float64
	Statements, Transactions, RowsWritten, S3Requests int64
	Events, Executions                                int64
	Units                                             int // model calls, or bare activities
	ChunkUpdates                                      int // model calls less the answers; bare: activities
	Items                                             int
	WorkerPeakRSS                                     int64 // bytes, the worker's VmHWM at the phase's end
}

func diff(a, b costReading) costFigures {
	return costFigures{Wall: b.At.Sub(a.At), Worker: b.Worker - a.Worker, Temporal: b.Temporal - a.Temporal, Postgres: b.Postgres - a.Postgres,
		Bench: b.Bench - a.Bench, MachineBusy: b.Machine.Busy - a.Machine.Busy, MachineIdle: b.Machine.Idle - a.Machine.Idle,
		LoadBefore: a.Load, LoadAfter: b.Load, Statements: b.Statements - a.Statements, Transactions: b.Transactions - a.Transactions,
		RowsWritten: b.RowsWritten - a.RowsWritten, S3Requests: b.S3Requests - a.S3Requests, WorkerPeakRSS: b.WorkerPeakRSS}
}

// per is x per chunk update (per activity for the bare phase), in ms for
// durations.
func (f costFigures) perMS(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000 / float64(max(f.ChunkUpdates, 1))
}
func (f costFigures) per(n int64) float64 { return float64(n) / float64(max(f.ChunkUpdates, 1)) }

// cores is how many cores a party used on average over the phase.
func (f costFigures) cores(d time.Duration) float64 { return d.Seconds() / f.Wall.Seconds() }

// machineBusy is the share of the machine's CPU time that was busy, all
// processes of everyone included.
func (f costFigures) machineBusy() float64 {
	return f.MachineBusy.Seconds() / max((f.MachineBusy+f.MachineIdle).Seconds(), 1e-9)
}

// projection is what a rate of chunk updates a second needs of each party
// at per-chunk figures measured: cost × rate, nothing else.
type projection struct {
	Rate                                   float64
	WorkerCores, TemporalCores, PGCores    float64
	StatementsPerSec, EventsPerSec, S3PerS float64
}

func project(f costFigures, rate float64) projection {
	return projection{Rate: rate,
		WorkerCores: rate * f.perMS(f.Worker) / 1000, TemporalCores: rate * f.perMS(f.Temporal) / 1000, PGCores: rate * f.perMS(f.Postgres) / 1000,
		StatementsPerSec: rate * f.per(f.Statements), EventsPerSec: rate * f.per(f.Events), S3PerS: rate * f.per(f.S3Requests)}
}

// costEnv holds what a phase reads.
type costEnv struct {
	env    *benchEnv
	procs  costProcs
	worker *workerProcess
}

func (c *costEnv) read(ctx context.Context) (costReading, error) {
	r := costReading{At: time.Now(), Bench: procstat.CPUTime(false), S3Requests: c.env.dev.Stack.S3Requests()}
	var err error
	if r.Worker, err = procstat.System.TreeCPU(c.worker.cmd.Process.Pid); err != nil {
		return r, err
	}
	r.WorkerPeakRSS = procstat.PeakRSSOf(c.worker.cmd.Process.Pid)
	if r.Temporal, err = procstat.System.TreeCPU(c.procs.TemporalPID); err != nil {
		return r, err
	}
	if c.procs.PostgresPID != 0 {
		if r.Postgres, err = procstat.System.TreeCPU(c.procs.PostgresPID); err != nil {
			return r, err
		}
	}
	if r.Machine, err = procstat.System.MachineCPU(); err != nil {
		return r, err
	}
	if r.Load, err = procstat.System.LoadAvg(); err != nil {
		return r, err
	}
	if c.procs.PostgresURL != "" {
		out, err := psql(ctx, c.procs.PostgresURL, "select (select coalesce(sum(calls),0) from pg_stat_statements), sum(xact_commit+xact_rollback), sum(tup_inserted+tup_updated+tup_deleted) from pg_stat_database")
		if err != nil {
			return r, err
		}
		f := strings.Split(out, "|")
		if len(f) != 3 {
			return r, fmt.Errorf("postgres statistics: %q", out)
		}
		for i, p := range []*int64{&r.Statements, &r.Transactions, &r.RowsWritten} {
			if *p, err = strconv.ParseInt(strings.TrimSpace(f[i]), 10, 64); err != nil {
				return r, fmt.Errorf("postgres statistics %q: %w", out, err)
			}
		}
		r.PostgresStatementsAvailable = true
	}
	return r, nil
}

// psql runs one query and returns its unaligned, tuples-only output.
func psql(ctx context.Context, url, query string) (string, error) {
	out, err := exec.CommandContext(ctx, "psql", "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", query).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("psql %q: %w: %s", query, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// topStatements prints the statements PostgreSQL ran most often since the
// last reset, with their calls per chunk update.
func topStatements(ctx context.Context, url, phase string, units int) {
	out, err := psql(ctx, url, "select calls, round(total_exec_time::numeric,0), left(regexp_replace(query, '\\s+', ' ', 'g'), 110) from pg_stat_statements order by calls desc limit 14")
	if err != nil {
		benchf("cost: %s: top statements: %v", phase, err)
		return
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.SplitN(line, "|", 3)
		if len(f) != 3 {
			continue
		}
		n, _ := strconv.ParseFloat(f[0], 64)
		benchf("cost: %s: %6.2f a chunk, %s ms in all: %s", phase, n/float64(max(units, 1)), f[1], f[2])
	}
}

// costOptions are the section's settings.
type costOptions struct {
	// Items is how many questions the batch asks.
	Items int
	// DocTokens, when positive, gives the batch costLongDocs documents of
	// this many tokens each instead of the pool section's mixed lengths,
	// so that an item's own steps are spread over many chunks.
	DocTokens int
	// ModelCall adds the second baseline: a bare model call (see
	// bareModelCall) in place of the bare activity's wait.
	ModelCall bool
	// Profile has each phase's worker write a CPU profile, which the
	// section attributes to memagent's work and orchestration
	// (costprofile.go).
	Profile bool
	// Compression, when set, is every worker's
	// MEMAGENT_TEMPORAL_COMPRESSION (gzip or none).
	Compression string
	// WorkerEnv are more NAME=VALUE settings of every worker (GOGC=200,
	// say), and of no other process.
	WorkerEnv []string
}

// costLongDocs is how many documents the long-document mode generates.
const costLongDocs = 8

// costResult is the section's phases.
type costResult struct {
	Idle        costFigures
	Batch, Bare costFigures
	// Model is the bare model call's phase (zero without
	// costOptions.ModelCall), ModelPromptTokens its prompt's length and
	// ModelSectionTokens the section's within it.
	Model                                 costFigures
	ModelPromptTokens, ModelSectionTokens int
	DocTokens                             int
	Items                                 int
	Calls                                 int
	MeanCall                              time.Duration
	Postgres                              bool
	// Util is the batch's utilisation as the pool section measures it:
	// the ideal makespan over the measured one.
	Util utilisationRow
	// Reads are PostgreSQL's reads of history during the batch, and
	// Tasks the batch's workflow tasks as its histories record them.
	Reads int64
	Tasks taskCounts
	// VisibilityRows and VisibilityTasks are PostgreSQL's writes of
	// visibility records and tasks during the batch.
	VisibilityRows, VisibilityTasks int64
	// BatchProfile, BareProfile and ModelProfile attribute each phase's
	// worker CPU profile (zero without costOptions.Profile).
	BatchProfile, BareProfile, ModelProfile costAttribution
	// Compression is the workers' MEMAGENT_TEMPORAL_COMPRESSION, "" for
	// the default (gzip), and WorkerEnv their other settings.
	Compression string
	WorkerEnv   []string
}

// runCost runs the section: an idle reading, the batch (items questions
// over the pool section's documents of mixed lengths, on its simulated
// pool), then bare activities at the same count, concurrency and duration.
func runCost(ctx context.Context, env *benchEnv, procs costProcs, opts costOptions) (costResult, error) {
	items := opts.Items
	res := costResult{Items: items, Postgres: procs.PostgresPID != 0, DocTokens: opts.DocTokens, Compression: opts.Compression, WorkerEnv: opts.WorkerEnv}
	if procs.PostgresURL != "" {
		if _, err := psql(ctx, procs.PostgresURL, "create extension if not exists pg_stat_statements"); err != nil {
			return res, fmt.Errorf("pg_stat_statements (PostgreSQL needs shared_preload_libraries=pg_stat_statements; bench/postgres.sh sets it): %w", err)
		}
	}
	mixed := make([]int, mixedDocs)
	for i := range mixed {
		mixed[i] = mixedMin + (i*7919)%(mixedSpan+1)
	}
	prefix := "cost"
	if opts.DocTokens > 0 {
		mixed = make([]int, costLongDocs)
		for i := range mixed {
			mixed[i] = opts.DocTokens
		}
		prefix = fmt.Sprintf("cost-long-%d", opts.DocTokens)
	}
	uris, err := shareDocs(ctx, env, prefix, mixed)
	if err != nil {
		return res, err
	}
	sim := simulator.New(simulator.Options{Tokenizer: env.tok, Latency: utilBase, Replicas: utilReplicas, Slots: utilSlots,
		PrefillTokensPerSec: sharePrefillTPS, DecodeTokensPerSec: shareDecodeTPS})
	srv := httptest.NewServer(sim)
	defer srv.Close()
	slots := utilReplicas * utilSlots
	stamp := time.Now().Unix()
	workerEnv := []string{fmt.Sprintf("MEMAGENT_MAX_IN_FLIGHT=%d", slots), "MEMAGENT_MODEL_PRIORITY_HOLD=off"}
	if opts.Compression != "" {
		workerEnv = append(workerEnv, "MEMAGENT_TEMPORAL_COMPRESSION="+opts.Compression)
	}
	workerEnv = append(workerEnv, opts.WorkerEnv...)
	profileOf := func(string) (costAttribution, error) { return costAttribution{}, nil }
	if opts.Profile {
		// Kept for `go tool pprof`, beside the bench binary that ran.
		dir, err := os.MkdirTemp("", "memagent-bench-cost-profile-")
		if err != nil {
			return res, err
		}
		benchf("cost: worker CPU profiles in %s (go tool pprof %s %s/worker.QUEUE.prof)", dir, os.Args[0], dir)
		prefix := dir + "/worker"
		workerEnv = append(workerEnv, workerProfileEnv+"="+prefix, workerProfileAtSignalEnv+"=1")
		profileOf = func(queue string) (costAttribution, error) { return attributeFile(prefix + "." + queue + ".prof") }
	}

	// The batch, on a worker process of its own.
	queue := fmt.Sprintf("bench-cost-batch-%d", stamp)
	w, err := startWorkerProcess(ctx, env, queue, srv.URL+"/v1", workerEnv...)
	if err != nil {
		return res, err
	}
	c := &costEnv{env: env, procs: procs, worker: w}
	a, err := c.read(ctx)
	if err != nil {
		w.stop()
		return res, err
	}
	benchf("cost: idle reading, %s", costIdle)
	select {
	case <-ctx.Done():
		w.stop()
		return res, ctx.Err()
	case <-time.After(costIdle):
	}
	b, err := c.read(ctx)
	if err != nil {
		w.stop()
		return res, err
	}
	res.Idle = diff(a, b)
	if procs.PostgresURL != "" {
		_, _ = psql(ctx, procs.PostgresURL, "select pg_stat_statements_reset()")
	}
	list := make([]shareItem, items)
	for i := range list {
		list[i] = shareItem{ID: fmt.Sprint(i), Document: uris[i%len(uris)], Question: question(fmt.Sprintf("cost %d item", stamp), i)}
	}
	id := fmt.Sprintf("bench-cost-%d", stamp)
	benchf("cost: batch of %d items on %s", items, queue)
	w.startProfile()
	if a, err = c.read(ctx); err != nil {
		w.stop()
		return res, err
	}
	run, err := startShareBatch(ctx, env, &sharePool{tq: queue}, id, list, api.BatchQAInput{})
	if err != nil {
		w.stop()
		return res, err
	}
	var out api.BatchQAResult
	if err := run.Get(ctx, &out); err != nil {
		w.stop()
		return res, err
	}
	b, err = c.read(ctx)
	w.stop()
	if err != nil {
		return res, err
	}
	if out.Succeeded != items {
		return res, fmt.Errorf("cost batch: %d of %d items answered", out.Succeeded, items)
	}
	res.Batch = diff(a, b)
	if res.BatchProfile, err = profileOf(queue); err != nil {
		return res, err
	}
	st := sim.Stats()
	res.Calls = st.Latency.Count
	res.Batch.Units, res.Batch.Items, res.Batch.ChunkUpdates = res.Calls, items, res.Calls-items
	modelSec := float64(st.Latency.Count)*utilBase.Seconds() + float64(st.PromptTokens)/sharePrefillTPS + float64(st.CompletionTokens)/shareDecodeTPS
	res.Util = utilisationRow{Calls: res.Calls, Wall: res.Batch.Wall, ModelSeconds: modelSec, Slots: slots, Runs: out.Runs}
	chains := map[string]float64{}
	for _, c := range sim.Calls() {
		chains[c.Question] += c.Service.Seconds()
	}
	for _, sec := range chains {
		res.Util.LongestChain = max(res.Util.LongestChain, sec)
	}
	res.MeanCall = time.Duration(modelSec / float64(max(res.Calls, 1)) * float64(time.Second))
	if procs.PostgresURL != "" {
		topStatements(ctx, procs.PostgresURL, "batch", res.Batch.ChunkUpdates)
		if res.Reads, err = historyReads(ctx, procs.PostgresURL); err != nil {
			return res, err
		}
		if res.VisibilityRows, res.VisibilityTasks, err = visibilityWrites(ctx, procs.PostgresURL); err != nil {
			return res, err
		}
	}
	if res.Batch.Events, res.Batch.Executions, err = queueEvents(ctx, env.temporal, queue, int64(items+1)); err != nil {
		return res, err
	}
	if res.Tasks, err = queueTasks(ctx, env.temporal, queue); err != nil {
		return res, err
	}
	if !res.Postgres {
		res.Reads = -1
	}
	benchf("cost: batch: %s", readsNote(res.Reads, res.Tasks, items))
	if res.Postgres {
		benchf("cost: batch: visibility writes %.2f an item, visibility tasks %.2f an item", float64(res.VisibilityRows)/float64(items), float64(res.VisibilityTasks)/float64(items))
	}
	benchf("cost: batch: %d calls, %d executions, %d events, %.1f s", res.Calls, res.Batch.Executions, res.Batch.Events, res.Batch.Wall.Seconds())

	// The bare activities: as many loops as the pool's slots, each running
	// activities that wait the batch's mean call, one after another, as
	// many in all as the batch made calls.
	bareQueue := fmt.Sprintf("bench-cost-bare-%d", stamp)
	per := min((res.Calls+slots-1)/slots, costBareMaxPerLoop)
	benchf("cost: bare: %d loops of %d activities of %s on %s", slots, per, res.MeanCall.Round(time.Millisecond), bareQueue)
	if res.Bare, err = c.baseline(ctx, srv.URL+"/v1", bareQueue, slots, floorInput{Activities: per, SleepMS: int(res.MeanCall.Milliseconds())},
		append(workerEnv, floorProcessEnv+"=1")...); err != nil {
		return res, err
	}
	if res.BareProfile, err = profileOf(bareQueue); err != nil {
		return res, err
	}
	if procs.PostgresURL != "" {
		topStatements(ctx, procs.PostgresURL, "bare", res.Bare.Units)
	}
	benchf("cost: bare: %d activities, %d events, %.1f s", res.Bare.Units, res.Bare.Events, res.Bare.Wall.Seconds())
	if !opts.ModelCall {
		return res, nil
	}

	// The bare model calls: as the bare activities, each making the model
	// call a chunk update makes (a prompt of its size, rendered here with
	// the default template from the batch's question, its median memory
	// and a section of its mean chunk length) with a plain client.
	docTokens := 0
	for i := range items {
		docTokens += mixed[i%len(mixed)]
	}
	res.ModelSectionTokens = min(docTokens/max(res.Batch.ChunkUpdates, 1), api.DefaultChunkTokens)
	prompt := memagent.DefaultTemplates().RenderUpdate(list[0].Question, medianMemory(sim.Calls()),
		docgen.Needle(env.tok, res.ModelSectionTokens, 0.5, 4242))
	res.ModelPromptTokens = env.tok.Count(prompt)
	pf, err := os.CreateTemp("", "memagent-bench-prompt-*.txt")
	if err != nil {
		return res, err
	}
	defer os.Remove(pf.Name())
	if _, err := pf.WriteString(prompt); err != nil {
		pf.Close()
		return res, err
	}
	if err := pf.Close(); err != nil {
		return res, err
	}
	modelQueue := fmt.Sprintf("bench-cost-model-%d", stamp)
	benchf("cost: bare model call: %d loops of %d calls of %d prompt tokens on %s", slots, per, res.ModelPromptTokens, modelQueue)
	if res.Model, err = c.baseline(ctx, srv.URL+"/v1", modelQueue, slots, floorInput{Activities: per, ModelCall: true},
		append(workerEnv, floorProcessEnv+"=1", floorModelPromptEnv+"="+pf.Name())...); err != nil {
		return res, err
	}
	benchf("cost: bare model call: %d calls, %d events, %.1f s", res.Model.Units, res.Model.Events, res.Model.Wall.Seconds())
	if res.ModelProfile, err = profileOf(modelQueue); err != nil {
		return res, err
	}
	return res, nil
}

// baseline runs a baseline phase: a worker of its own on queue (the bare
// workflow and activity registered, with extraEnv), loops workflows at
// once each running in's activities one after another, and the figures
// of the phase, per activity.
func (c *costEnv) baseline(ctx context.Context, modelURL, queue string, loops int, in floorInput, extraEnv ...string) (costFigures, error) {
	w, err := startWorkerProcess(ctx, c.env, queue, modelURL, extraEnv...)
	if err != nil {
		return costFigures{}, err
	}
	defer w.stop()
	c.worker = w
	if c.procs.PostgresURL != "" {
		_, _ = psql(ctx, c.procs.PostgresURL, "select pg_stat_statements_reset()")
	}
	w.startProfile()
	a, err := c.read(ctx)
	if err != nil {
		return costFigures{}, err
	}
	runs := make([]client.WorkflowRun, loops)
	for i := range runs {
		if runs[i], err = c.env.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: queue}, floorWorkflowName, in); err != nil {
			return costFigures{}, err
		}
	}
	for _, r := range runs {
		if err := r.Get(ctx, nil); err != nil {
			return costFigures{}, err
		}
	}
	b, err := c.read(ctx)
	if err != nil {
		return costFigures{}, err
	}
	f := diff(a, b)
	f.Units, f.ChunkUpdates = loops*in.Activities, loops*in.Activities
	if f.Events, f.Executions, err = queueEvents(ctx, c.env.temporal, queue, int64(loops)); err != nil {
		return costFigures{}, err
	}
	return f, nil
}

// medianMemory is the memory of the median chunk update by length, what
// the bare model call's prompt carries in place of a run's memory.
func medianMemory(calls []simulator.Call) string {
	var mem []string
	for _, c := range calls {
		if c.Kind == simulator.KindUpdate {
			mem = append(mem, c.MemoryIn)
		}
	}
	if len(mem) == 0 {
		return ""
	}
	slices.SortFunc(mem, func(a, b string) int { return len(a) - len(b) })
	return mem[len(mem)/2]
}

// queueEvents sums the history events of every closed execution on queue
// (each run of a chain counts), from visibility, waiting until it lists at
// least want of them.
func queueEvents(ctx context.Context, c client.Client, queue string, want int64) (events, executions int64, err error) {
	deadline := time.Now().Add(time.Minute)
	for {
		events, executions = 0, 0
		var token []byte
		for {
			resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
				Query: fmt.Sprintf("TaskQueue = '%s' AND ExecutionStatus != 'Running'", queue), NextPageToken: token, PageSize: 1000})
			if err != nil {
				return 0, 0, fmt.Errorf("list workflows on %s: %w", queue, err)
			}
			for _, e := range resp.GetExecutions() {
				executions++
				events += e.GetHistoryLength()
			}
			if token = resp.GetNextPageToken(); len(token) == 0 {
				break
			}
		}
		if executions >= want || time.Now().After(deadline) {
			if executions < want {
				return events, executions, fmt.Errorf("visibility lists %d closed executions on %s, want at least %d", executions, queue, want)
			}
			return events, executions, nil
		}
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (f costFigures) worker() time.Duration   { return f.Worker }
func (f costFigures) temporal() time.Duration { return f.Temporal }
func (f costFigures) postgres() time.Duration { return f.Postgres }

// costRatio is a's figure per chunk update over base's per unit, "—" when
// base's is zero.
func costRatio(a, base costFigures, pick func(costFigures) time.Duration) string {
	if pick(base) <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", a.perMS(pick(a))/base.perMS(pick(base)))
}

// writeCost writes the section.
func writeCost(w io.Writer, env *benchEnv, r costResult) {
	pg := func(s string) string {
		if !r.Postgres {
			return "—"
		}
		return s
	}
	heading, docs := "Cost per chunk", fmt.Sprintf("the pool section's %d documents of %dK–%dK tokens", mixedDocs, mixedMin/1000, (mixedMin+mixedSpan)/1000)
	if r.DocTokens > 0 {
		heading = fmt.Sprintf("Cost per chunk, documents of %s tokens", thousands(r.DocTokens))
		docs = fmt.Sprintf("%d generated documents of %s tokens each (the long-document mode, `-cost-doc-tokens %d`)", costLongDocs, thousands(r.DocTokens), r.DocTokens)
	}
	fmt.Fprintf(w, "## %s\n\n", env.server.heading(heading))
	fmt.Fprintf(w, "What orchestration costs per chunk update, from each process's own accounting, on %s. The batch: %d questions over %s (chunks of 5,000), one `BatchQA` at its default window, on the pool section's simulated pool (%d replicas × %d slots, each call %.1f s + prompt at %d tokens/s + completion at %d tokens/s; mean call %.2f s), the worker's in-flight cap %d. The bare activity: %d workflows at once, each running trivial activities one after another that wait the batch's mean call and return, as many in all as the batch made model calls (at most %d), on the same server in the same run. "+
		"Each party is a process of its own: the worker (memagent's worker, or for the bare activity the same worker with the bare workflow and activity registered), the Temporal server, PostgreSQL (the postmaster and every backend: `/proc/PID/stat` user+system time of the process, its live descendants and the children it has waited for), and the bench (S3 and the simulator). "+
		"A chunk update's figures are the batch's whole cost (its items' starts, indexing reads, answers, results and the batch workflow itself included) over its %d chunk updates (%d model calls less %d answers): %.2f chunk updates an item. Statements are PostgreSQL's `pg_stat_statements` calls (BEGIN and COMMIT included); history events are the `HistoryLength` of every closed execution on the run's task queue; S3 requests are counted at the S3 server. The machine's busy share is of all its cores (`/proc/stat`), everyone's processes included; the load average is the 1-minute one before and after.\n\n",
		env.server.Stack, r.Items, docs, utilReplicas, utilSlots, utilBase.Seconds(), sharePrefillTPS, shareDecodeTPS,
		r.MeanCall.Seconds(), utilReplicas*utilSlots, utilReplicas*utilSlots, utilReplicas*utilSlots*costBareMaxPerLoop, r.Batch.ChunkUpdates, r.Calls, r.Items, float64(r.Batch.ChunkUpdates)/float64(max(r.Items, 1)))
	if r.Compression != "" {
		fmt.Fprintf(w, "Every worker here ran with `MEMAGENT_TEMPORAL_COMPRESSION=%s` (`-cost-temporal-compression %s`): the compression of its gRPC requests to Temporal, and so of the frontend's replies.\n\n", r.Compression, r.Compression)
	}
	if len(r.WorkerEnv) > 0 {
		fmt.Fprintf(w, "Every worker here ran with `%s` (`-cost-worker-env`), no other process.\n\n", strings.Join(r.WorkerEnv, " "))
	}
	fmt.Fprintln(w, "| phase | chunk updates (activities) | wall | worker CPU | Temporal CPU | PostgreSQL CPU | bench (S3, simulator) CPU | statements | transactions | rows written | history events | S3 requests | worker, Temporal, PostgreSQL cores | machine busy | load before → after |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	row := func(name string, f costFigures) {
		fmt.Fprintf(w, "| %s | %d | %.1f s | %.2f ms | %.2f ms | %s | %.2f ms | %s | %s | %s | %.1f | %.2f | %.2f, %.2f, %s | %.0f%% | %.2f → %.2f |\n",
			name, f.ChunkUpdates, f.Wall.Seconds(), f.perMS(f.Worker), f.perMS(f.Temporal), pg(fmt.Sprintf("%.2f ms", f.perMS(f.Postgres))), f.perMS(f.Bench),
			pg(fmt.Sprintf("%.1f", f.per(f.Statements))), pg(fmt.Sprintf("%.1f", f.per(f.Transactions))), pg(fmt.Sprintf("%.1f", f.per(f.RowsWritten))),
			f.per(f.Events), f.per(f.S3Requests), f.cores(f.Worker), f.cores(f.Temporal), pg(fmt.Sprintf("%.2f", f.cores(f.Postgres))), 100*f.machineBusy(), f.LoadBefore, f.LoadAfter)
	}
	row("memagent batch, per chunk update", r.Batch)
	row("bare activity, per activity", r.Bare)
	if r.Model.ChunkUpdates > 0 {
		row("bare model call, per call", r.Model)
	}
	if u := r.Util; u.Wall > 0 {
		fmt.Fprintf(w, "\nThe batch kept the pool %.1f%% busy as the pool section measures it (%s; makespan %.1f s against an ideal of %.1f s, the model time over the slots or the longest item's chain).\n", 100*u.ideal()/u.Wall.Seconds(), plural(u.Runs, "run"), u.Wall.Seconds(), u.ideal())
	}
	if r.Tasks.Executions > 0 {
		fmt.Fprintf(w, "\n%s", readsNote(r.Reads, r.Tasks, r.Items))
		if r.Postgres {
			fmt.Fprintf(w, " Visibility: %.2f writes of a run's visibility row (`executions_visibility`) and %.2f visibility tasks an item.",
				float64(r.VisibilityRows)/float64(max(r.Items, 1)), float64(r.VisibilityTasks)/float64(max(r.Items, 1)))
		}
		fmt.Fprintln(w)
	}
	i := r.Idle
	fmt.Fprintf(w, "\nIdle, before the batch (%.0f s, the batch's worker polling): worker %.3f cores, Temporal %.3f, PostgreSQL %s, machine %.0f%% busy, load %.2f → %.2f.\n\n",
		i.Wall.Seconds(), i.cores(i.Worker), i.cores(i.Temporal), pg(fmt.Sprintf("%.3f", i.cores(i.Postgres))), 100*i.machineBusy(), i.LoadBefore, i.LoadAfter)
	ratio := func(a, b time.Duration) string {
		if b <= 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f×", a.Seconds()/b.Seconds()*float64(r.Bare.ChunkUpdates)/float64(max(r.Batch.ChunkUpdates, 1)))
	}
	fmt.Fprintf(w, "memagent ÷ bare, per chunk update against per activity: worker CPU %s, Temporal CPU %s, PostgreSQL CPU %s; per model call (answers counted as calls): worker %.2f ms, Temporal %.2f ms, PostgreSQL %s.\n\n",
		ratio(r.Batch.Worker, r.Bare.Worker), ratio(r.Batch.Temporal, r.Bare.Temporal), pg(ratio(r.Batch.Postgres, r.Bare.Postgres)),
		float64(r.Batch.Worker.Microseconds())/1000/float64(max(r.Calls, 1)), float64(r.Batch.Temporal.Microseconds())/1000/float64(max(r.Calls, 1)),
		pg(fmt.Sprintf("%.2f ms", float64(r.Batch.Postgres.Microseconds())/1000/float64(max(r.Calls, 1)))))
	if m := r.Model; m.ChunkUpdates > 0 {
		fmt.Fprintf(w, "The bare model call: the same %d workflows of activities one after another, each activity one chat call to the same simulator with a plain go-openai client (no template, tokenizer, S3, heartbeat or trace), as many as the bare activities; its prompt is a chunk update's size, %d tokens (the default update template rendered once, in the bench, with the batch's question, the median memory the batch's updates sent and a section of %d tokens, the batch's mean chunk), memagent's sampling options, and the worker reads it from a file once. "+
			"Against it, what a chunk update costs beyond its model call: worker CPU %s, Temporal CPU %s, PostgreSQL CPU %s (memagent per chunk update ÷ bare model call per call); worker CPU %.2f ms a chunk update beyond the call's own %.2f ms.\n\n",
			utilReplicas*utilSlots, r.ModelPromptTokens, r.ModelSectionTokens, costRatio(r.Batch, m, costFigures.worker), costRatio(r.Batch, m, costFigures.temporal), pg(costRatio(r.Batch, m, costFigures.postgres)),
			r.Batch.perMS(r.Batch.Worker)-m.perMS(m.Worker), m.perMS(m.Worker))
	}
	writeCostAttribution(w, r)
	fmt.Fprintf(w, "A projection, not a measurement: what a rate of chunk updates needs at the per-chunk costs above (this batch's mix of %.2f chunk updates an item; longer documents spread an item's own costs over more chunks), CPU time × rate with no allowance for idle cost, contention or headroom, and assuming each party scales out (more workers, history and frontend hosts, a database that keeps up):\n\n",
		float64(r.Batch.ChunkUpdates)/float64(max(r.Items, 1)))
	fmt.Fprintln(w, "| chunk updates a second | worker cores | Temporal cores | PostgreSQL cores | statements a second | history events a second | S3 requests a second |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, rate := range []float64{100, 1000} {
		p := project(r.Batch, rate)
		fmt.Fprintf(w, "| %.0f | %.1f | %.1f | %s | %s | %.0f | %.0f |\n", p.Rate, p.WorkerCores, p.TemporalCores, pg(fmt.Sprintf("%.1f", p.PGCores)),
			pg(fmt.Sprintf("%.0f", p.StatementsPerSec)), p.EventsPerSec, p.S3PerS)
	}
	fmt.Fprintln(w)
}
