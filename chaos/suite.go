package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/devenv"
	"github.com/memagent/memagent/internal/dev/embedstack"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/pluginkit"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/tokenizer"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
	"github.com/memagent/memagent/workflows"
)

// The chaos suite's separate processes are this binary re-executed (or, in
// the tests, the test binary) with chaosRoleEnv set: a "worker" that can be
// SIGKILLed and restarted, and a "stack" (Temporal server and S3 on a
// DataDir and fixed ports) that can be SIGKILLed and restarted on the same
// files and ports.
const (
	chaosRoleEnv    = "MEMAGENT_CHAOS_ROLE"
	chaosDataDirEnv = "MEMAGENT_CHAOS_DATA_DIR"
	chaosPortsEnv   = "MEMAGENT_CHAOS_PORTS" // "<temporal base port>,<s3 port>"
	chaosRoleWorker = "worker"
	chaosRoleStack  = "stack"
	// chaosReady is the line a stack process prints once it serves.
	chaosReady = "chaos-stack-ready"
)

// The chaos document's planted fact.
const (
	chaosQuestion = "What is the vault combination?"
	chaosAnswer   = "4417-ORCHID"
)

// chaosOptions configures runChaosSuite.
type chaosOptions struct {
	Chunks      int     // chunks in the document
	ChunkTokens int     // tokens per chunk
	Kills       int     // SIGKILLs of the worker in the kill scenario
	Restarts    int     // SIGKILLs and restarts of the stack in the restart scenario
	FaultRate   float64 // share of model calls failing, over every transient kind
	S3FaultRate float64 // share of S3 requests answered 503 SlowDown or 500 InternalError
	Seed        uint64
	// SimLatency is every simulated model call's service time.
	SimLatency time.Duration
	// ModelTimeout bounds one model request, so that slow faults time out.
	ModelTimeout time.Duration
	// Downtime is how long the stack stays down in the restart scenario.
	Downtime time.Duration
	// S3Hang is how long S3 stops answering (holding every request) in
	// the S3-hang scenario; longer than the heartbeat timeout (2 s).
	S3Hang time.Duration
	// ScenarioTimeout bounds each scenario.
	ScenarioTimeout time.Duration
	// Exe and Args start a child process; chaosRoleEnv says which.
	Exe  string
	Args []string
	// Starter is the starter binary the ask scenario runs `starter ask`
	// with, as a user would.
	Starter string
	// Progress receives one line per step.
	Progress io.Writer
}

// chaosRow is one scenario's outcome.
type chaosRow struct {
	Scenario     string
	Chunks       int // over every item of a batch
	Answers      int // final answers the run asks for: 1, or a batch's items
	AnswerEqual  bool
	MemoryEqual  bool
	ModelCalls   int // completions the simulator answered
	Repeats      int // memory-update calls beyond one per chunk
	UsageCalls   int // the result's usage.calls
	Repeated     int // the result's usage.repeated_calls
	ModelFaults  int
	S3Faults     int
	Retries      int // activity attempts beyond the first, from the histories
	TaskFailures int // WorkflowTaskFailed events in the histories
	Wall         time.Duration
	Disturbances int // kills or restarts
	Err          error
	answer       string
	memory       string
}

// chaosCheck returns what the rows show went wrong: a scenario that did not
// complete, an answer or memory unlike the clean run's, or more repeated
// model calls in the kill scenario than kills.
func chaosCheck(rows []chaosRow, o chaosOptions) error {
	var errs []error
	for _, r := range rows {
		switch {
		case r.Err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", r.Scenario, r.Err))
		case !r.AnswerEqual || !r.MemoryEqual:
			errs = append(errs, fmt.Errorf("%s: answer %q (memory equal: %v), unlike the clean run", r.Scenario, r.answer, r.MemoryEqual))
		case killsWorker(r.Scenario) && r.Repeats > o.Kills:
			errs = append(errs, fmt.Errorf("%s: %d repeated model calls after %d kills, want at most one per kill", r.Scenario, r.Repeats, o.Kills))
		case r.Scenario == "fresh namespace" && r.TaskFailures > 0:
			errs = append(errs, fmt.Errorf("%s: %d failed workflow tasks, want none", r.Scenario, r.TaskFailures))
		case r.Scenario == "s3 hung" && r.ModelCalls != r.Chunks+1:
			errs = append(errs, fmt.Errorf("%s: the model served %d calls for %d chunks and the answer, want exactly %d", r.Scenario, r.ModelCalls, r.Chunks, r.Chunks+1))
		case r.UsageCalls > r.ModelCalls:
			errs = append(errs, fmt.Errorf("%s: usage.calls %d, more than the %d calls the model served: a call was counted twice", r.Scenario, r.UsageCalls, r.ModelCalls))
		case r.Scenario == "batch, clean" && r.Repeats > 0:
			errs = append(errs, fmt.Errorf("%s: %d model calls repeated, want none", r.Scenario, r.Repeats))
		case !killsWorker(r.Scenario) && r.UsageCalls != r.ModelCalls:
			// A worker killed between the model's answer and its first
			// heartbeat loses the call it paid for: only there may usage
			// fall short of what the model served.
			errs = append(errs, fmt.Errorf("%s: usage.calls %d, the model served %d", r.Scenario, r.UsageCalls, r.ModelCalls))
		}
	}
	return errors.Join(errs...)
}

// killsWorker says whether the scenario SIGKILLs the worker, which may
// repeat the model call in flight and lose its usage.
func killsWorker(scenario string) bool {
	return strings.HasSuffix(scenario, "sigkill worker")
}

func chaosNotes(o chaosOptions) string {
	return fmt.Sprintf(`Every scenario but the batch ones runs a fresh DocumentQA workflow over the same %d-chunk document (%d tokens a chunk,
the planted fact in the middle), on an embedded Temporal server and S3 server that keep their state in
files (SQLite, S3 objects) in a temporary data dir, with the worker in a separate process and the
inference simulator (%v a call) standing in for the model. The workflow input sets
heartbeat_timeout_seconds 2 and chunks_per_run 50 (so runs continue-as-new along the way); the
worker's model timeout is %v.

- **clean**: the reference answer and final memory.
- **sigkill worker**: the worker process is SIGKILLed %d times at random points (a random delay after
  evenly spread chunks) and restarted each time. *repeats* are memory-update calls the simulator
  answered beyond one per chunk: at most one per kill (the call in flight when the worker died).
- **sigkill server**: the process holding the Temporal server and S3 is SIGKILLed mid-run (%d times),
  left down for %v and restarted on the same data dir and ports; the worker process keeps running
  and reconnects by itself.
- **faults**: %g%% of model calls fail (429 and 503 with Retry-After 1s, 500, slow past the timeout,
  malformed JSON) and a reverse proxy in front of S3 answers %g%% of the worker's S3 requests with
  503 SlowDown or 500 InternalError.
- **s3 hung**: a third of the way in, a proxy in front of S3 stops answering (it holds every request)
  for %v, longer than the heartbeat timeout, then answers again. The activities keep heartbeating
  through it and their S3 operations time out; a retry reuses the completion it kept, so the model
  serves exactly one call per chunk plus the answer.
- **ask, server down**: the question is asked by a "starter ask --json" process, as a user would; the
  process holding the Temporal server and S3 is SIGKILLed mid-run, left down for %v and restarted.
  ask must wait through it and exit 0 with the run's answer.
- **fresh namespace**: a namespace is registered without memagent's search attributes (no
  "starter setup"), a plain client starts the run there before any worker polls, then a worker starts
  on that namespace. The worker registers the attributes at start (the embedded server allows it; a
  cluster that does not makes the worker exit at once naming "starter setup"), and the run completes.
- **batch, clean**: a BatchQA of %d items (the document above, then short ones of 5 chunks and more,
  each item with its own question) with items_per_run 1: it continues as new after every item and
  carries the long document's child across every boundary. The reference for the two below.
- **batch, sigkill worker**: the same batch (its documents under keys of its own, so that no answer
  is reused from the clean batch); the worker process is SIGKILLed %d times at continue-as-new
  boundaries, alternately while a run waits to carry its children over and as the next run begins,
  and restarted each time.
- **batch, sigkill server**: the same; the stack process is SIGKILLed at a boundary (%d times), left
  down for %v and restarted.

A batch row passes only if every item is answered once: the result counts every item answered and
none failed or reused, the batch took a run per item, results.jsonl has exactly one line per item,
every item's answer and final memory equal the clean batch's, and the model answered every item's
question; *repeats* there are calls the model answered twice (same question, memory and chunk).

*model calls* are completions the simulator answered (a call whose client went away first is not);
*calls per chunk* is model calls over chunks + answers (1, or a batch's items); *usage.calls* is what the result
reports, and must equal *model calls* except where a worker was SIGKILLed between the model's answer
and its first heartbeat; *retries seen* are activity attempts beyond the first, summed from the
histories of every run of the workflow; *failed workflow tasks* are WorkflowTaskFailed events in them.
`, o.Chunks, o.ChunkTokens, o.SimLatency, o.ModelTimeout, o.Kills, o.Restarts, o.Downtime, o.FaultRate*100, o.S3FaultRate*100, o.S3Hang, o.Downtime,
		chaosBatchItems(o), o.Kills, o.Restarts, o.Downtime)
}

func chaosTable(rows []chaosRow) string {
	var b strings.Builder
	b.WriteString("| scenario | chunks | answer equals clean | memory equals clean | model calls | calls per chunk | usage.calls (repeated) | repeats | faults injected (model/S3) | retries seen | failed workflow tasks | wall time |\n")
	b.WriteString("|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	yes := func(v bool) string {
		if v {
			return "yes"
		}
		return "**no**"
	}
	for _, r := range rows {
		name := r.Scenario
		switch r.Scenario {
		case "sigkill worker":
			name = fmt.Sprintf("sigkill worker ×%d", r.Disturbances)
		case "sigkill server":
			name = fmt.Sprintf("sigkill server ×%d", r.Disturbances)
		case "batch, sigkill worker":
			name = fmt.Sprintf("batch, sigkill worker ×%d at boundaries", r.Disturbances)
		case "batch, sigkill server":
			name = fmt.Sprintf("batch, sigkill server ×%d at a boundary", r.Disturbances)
		}
		if r.Err != nil {
			fmt.Fprintf(&b, "| %s | %d | failed: %s | | %d | | | | %d/%d | %d | %d | %s |\n", name, r.Chunks, strings.ReplaceAll(r.Err.Error(), "|", "/"), r.ModelCalls, r.ModelFaults, r.S3Faults, r.Retries, r.TaskFailures, r.Wall.Round(time.Second))
			continue
		}
		perChunk := float64(r.ModelCalls) / float64(max(r.Chunks+max(r.Answers, 1), 1))
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %d | %.3f | %d (%d) | %d | %d/%d | %d | %d | %s |\n", name, r.Chunks, yes(r.AnswerEqual), yes(r.MemoryEqual),
			r.ModelCalls, perChunk, r.UsageCalls, r.Repeated, r.Repeats, r.ModelFaults, r.S3Faults, r.Retries, r.TaskFailures, r.Wall.Round(100*time.Millisecond))
	}
	return b.String()
}

// runChaosSuite runs the scenarios one after another on one stack and
// returns a row for each scenario it got to.
func runChaosSuite(ctx context.Context, o chaosOptions) ([]chaosRow, error) {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	step := func(format string, a ...any) {
		fmt.Fprintf(o.Progress, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
	}
	dir, err := os.MkdirTemp("", "memagent-chaos-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	h := &chaosHarness{o: o, dataDir: filepath.Join(dir, "data"), rng: rand.New(rand.NewPCG(o.Seed, 7))}
	defer h.closeAll()
	if h.temporalPort, h.s3Port, err = chaosPorts(); err != nil {
		return nil, err
	}
	step("starting the stack process (Temporal + S3, data in %s)", h.dataDir)
	if err := h.startStack(ctx); err != nil {
		return nil, err
	}
	if err := h.connect(ctx); err != nil {
		return nil, err
	}
	defer h.temporal.Close()
	tok, err := tokenizer.New(tokenizer.Qwen)
	if err != nil {
		return nil, err
	}
	doc, chunks, err := chaosDocument(tok, o.Chunks, o.ChunkTokens)
	if err != nil {
		return nil, err
	}
	loc := s3store.Location{Bucket: h.cfg.Bucket, Key: "chaos/doc.txt"}
	if err := h.store.Put(ctx, loc, []byte(doc), "text/plain"); err != nil {
		return nil, fmt.Errorf("upload the document: %w", err)
	}
	h.in = api.DocumentQAInput{
		Document: loc.String(), Question: chaosQuestion,
		Options:                 api.ModelOptions{ChunkTokens: o.ChunkTokens},
		HeartbeatTimeoutSeconds: 2,
		ChunksPerRun:            50,
		// Every scenario reads the whole document under its faults: none
		// starts from the memory checkpoints an earlier scenario left.
		Reuse: api.ReuseNone,
	}
	h.chunks = chunks
	step("document: %d chunks of %d tokens", chunks, o.ChunkTokens)
	if err := h.prepareBatch(tok, doc, chunks); err != nil {
		return nil, err
	}
	step("batch: %d items (%d chunks in all), one a run", h.batch.items, h.batch.chunks)

	var rows []chaosRow
	scenarios := []struct {
		name string
		run  func(context.Context, *chaosScenario) error
	}{
		{"clean", nil},
		{"sigkill worker", h.killWorker},
		{"sigkill server", h.restartStack},
		{"faults", nil},
		{"s3 hung", h.hangS3},
		{"ask, server down", h.restartStack},
		{"fresh namespace", nil},
		{"batch, clean", nil},
		{"batch, sigkill worker", h.killWorkerAtBoundaries},
		{"batch, sigkill server", h.restartStackAtBoundaries},
	}
	var clean, cleanBatch chaosRow
	for i, sc := range scenarios {
		step("scenario %s", sc.name)
		s := &chaosScenario{name: sc.name, id: fmt.Sprintf("chaos-%d-%s", i, strings.NewReplacer(",", "", " ", "-").Replace(sc.name)), simOpts: simulator.Options{Tokenizer: tok, Latency: o.SimLatency, RetryAfter: time.Second}}
		if sc.name == "faults" {
			s.simOpts.FaultRate, s.simOpts.Faults.Seed = o.FaultRate, o.Seed
			s.s3FaultRate = o.S3FaultRate
		}
		if sc.name == "s3 hung" {
			s.s3Hang = &s3HangProxy{}
		}
		s.ask = sc.name == "ask, server down"
		if sc.name == "fresh namespace" {
			s.namespace = s.id
		}
		s.batch = strings.HasPrefix(sc.name, "batch")
		sctx, cancel := context.WithTimeout(ctx, o.ScenarioTimeout)
		row := h.run(sctx, s, sc.run)
		cancel()
		switch sc.name {
		case "clean":
			clean = row
			if row.Err == nil && (row.answer != chaosAnswer || row.Chunks != chunks) {
				row.Err = fmt.Errorf("clean run answered %q over %d chunks, want %q over %d", row.answer, row.Chunks, chaosAnswer, chunks)
			}
		case "batch, clean":
			cleanBatch = row
			want := summarizeAnswers(slices.Repeat([]string{chaosAnswer}, h.batch.items))
			if row.Err == nil && (row.answer != want || row.Chunks != h.batch.chunks) {
				row.Err = fmt.Errorf("clean batch answered %s over %d chunks, want %s over %d", row.answer, row.Chunks, want, h.batch.chunks)
			}
		}
		ref := clean
		if s.batch {
			ref = cleanBatch
		}
		row.AnswerEqual, row.MemoryEqual = row.answer == ref.answer, row.memory == ref.memory
		step("  %s: answer %q, %d chunks, %d model calls, %d repeats, %d/%d faults, %d retries, %s (error: %v)",
			sc.name, row.answer, row.Chunks, row.ModelCalls, row.Repeats, row.ModelFaults, row.S3Faults, row.Retries, row.Wall.Round(100*time.Millisecond), row.Err)
		rows = append(rows, row)
		if (sc.name == "clean" || sc.name == "batch, clean") && row.Err != nil {
			return rows, fmt.Errorf("%s run: %w", sc.name, row.Err)
		}
		if ctx.Err() != nil {
			return rows, ctx.Err()
		}
	}
	return rows, nil
}

// chaosHarness holds what the scenarios share: the stack process, a client
// and the document.
type chaosHarness struct {
	o            chaosOptions
	dataDir      string
	temporalPort int
	s3Port       int
	rng          *rand.Rand

	stack    *chaosProc
	cfg      config.Config
	temporal client.Client
	store    *s3store.Store
	in       api.DocumentQAInput
	chunks   int
	batch    *chaosBatch

	mu    sync.Mutex
	procs []*chaosProc
}

// chaosScenario is one scenario's setup and its running worker.
type chaosScenario struct {
	name        string
	id          string // workflow id and task queue
	simOpts     simulator.Options
	s3FaultRate float64
	s3Hang      *s3HangProxy
	// ask runs the scenario's question through a `starter ask` process,
	// whose workflow id wf is found by its batch label, instead of
	// starting the workflow directly.
	ask bool
	// namespace, when set, is a namespace the scenario registers without
	// memagent's search attributes; the run is started there by a plain
	// client before any worker polls, then the worker starts on it.
	namespace string
	// batch runs the batch scenarios' BatchQA instead of the DocumentQA.
	batch     bool
	sim       *simulator.Server
	wf        string
	env       map[string]string
	worker    *chaosProc
	disturbed int
}

// chaosProc is a child process with its output kept for error messages.
type chaosProc struct {
	cmd  *exec.Cmd
	out  *tailBuffer
	done chan struct{}
}

// kill SIGKILLs the process and waits for it.
func (p *chaosProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

func (h *chaosHarness) start(role string, env map[string]string) (*chaosProc, io.Reader, error) {
	env = maps.Clone(env)
	if env == nil {
		env = map[string]string{}
	}
	env[chaosRoleEnv] = role
	return h.startCommand(role, h.o.Exe, h.o.Args, env)
}

// startCommand starts exe with args and env added to this process's,
// keeping its stderr's tail for error messages; name says what it is.
func (h *chaosHarness) startCommand(name, exe string, args []string, env map[string]string) (*chaosProc, io.Reader, error) {
	cmd := exec.Command(exe, args...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p := &chaosProc{cmd: cmd, out: &tailBuffer{max: 16 << 10}, done: make(chan struct{})}
	cmd.Stderr = p.out
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s process: %w", name, err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	h.mu.Lock()
	h.procs = append(h.procs, p)
	h.mu.Unlock()
	return p, stdout, nil
}

// closeAll kills every child still running.
func (h *chaosHarness) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.procs {
		p.kill()
	}
}

// startStack starts the stack process on the harness's data dir and ports
// and waits until it serves.
func (h *chaosHarness) startStack(ctx context.Context) error {
	p, stdout, err := h.start(chaosRoleStack, map[string]string{
		chaosDataDirEnv: h.dataDir,
		chaosPortsEnv:   fmt.Sprintf("%d,%d", h.temporalPort, h.s3Port),
	})
	if err != nil {
		return err
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == chaosReady {
				close(ready)
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case <-ready:
		h.stack = p
		return nil
	case <-p.done:
		return fmt.Errorf("stack process exited before it served:\n%s", p.out)
	case <-time.After(2 * time.Minute):
		p.kill()
		return fmt.Errorf("stack process not ready within 2 minutes:\n%s", p.out)
	case <-ctx.Done():
		p.kill()
		return ctx.Err()
	}
}

// connect makes the starter's own client and store, straight to the stack.
func (h *chaosHarness) connect(ctx context.Context) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	cfg.TemporalAddress = net.JoinHostPort(embedstack.DefaultHost, strconv.Itoa(h.temporalPort))
	cfg.TemporalNamespace = embedstack.DefaultNamespace
	cfg.S3Endpoint = "http://" + net.JoinHostPort(embedstack.DefaultHost, strconv.Itoa(h.s3Port))
	cfg.S3Region, cfg.S3AccessKeyID, cfg.S3SecretAccessKey = embedstack.DevRegion, embedstack.DevAccessKey, embedstack.DevSecretKey
	cfg.S3VirtualHostStyle = false
	cfg.Bucket = embedstack.DefaultBucket
	h.cfg = cfg
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if h.store, err = pluginkit.NewStore(ctx, cfg.Options); err != nil {
		return err
	}
	h.temporal, err = workerapp.Dial(ctx, cfg, logger)
	return err
}

// startWorker starts a worker process for the scenario.
func (h *chaosHarness) startWorker(s *chaosScenario) error {
	p, stdout, err := h.start(chaosRoleWorker, s.env)
	if err != nil {
		return err
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	s.worker = p
	return nil
}

// run runs one scenario: a simulator (and S3 proxy) of its own, a worker
// process on its own task queue, the workflow, and disturb while it runs.
func (h *chaosHarness) run(ctx context.Context, s *chaosScenario, disturb func(context.Context, *chaosScenario) error) (row chaosRow) {
	row = chaosRow{Scenario: s.name}
	began := time.Now()
	defer func() { row.Wall = time.Since(began) }()
	c, namespace := h.temporal, h.cfg.TemporalNamespace
	if s.namespace != "" {
		var err error
		if c, err = h.freshNamespace(ctx, s.namespace); err != nil {
			row.Err = err
			return row
		}
		defer c.Close()
		namespace = s.namespace
	}
	sim := simulator.New(s.simOpts)
	s.sim = sim
	simURL, stopSim, err := chaosServe(sim)
	if err != nil {
		row.Err = err
		return row
	}
	defer stopSim()
	s3URL := string(h.cfg.S3Endpoint)
	if s.s3Hang != nil {
		target, _ := url.Parse(string(h.cfg.S3Endpoint))
		s.s3Hang.next = httputil.NewSingleHostReverseProxy(target)
		var stopProxy func()
		if s3URL, stopProxy, err = chaosServe(s.s3Hang); err != nil {
			row.Err = err
			return row
		}
		defer stopProxy()
	}
	var proxy *s3FaultProxy
	if s.s3FaultRate > 0 {
		target, _ := url.Parse(string(h.cfg.S3Endpoint))
		proxy = &s3FaultProxy{next: httputil.NewSingleHostReverseProxy(target), rate: s.s3FaultRate, rng: rand.New(rand.NewPCG(h.o.Seed, 11))}
		var stopProxy func()
		if s3URL, stopProxy, err = chaosServe(proxy); err != nil {
			row.Err = err
			return row
		}
		defer stopProxy()
	}
	s.env = map[string]string{
		"TEMPORAL_ADDRESS": h.cfg.TemporalAddress, "TEMPORAL_NAMESPACE": namespace,
		"AWS_ENDPOINT_URL_S3": s3URL, "AWS_ACCESS_KEY_ID": h.cfg.S3AccessKeyID,
		"AWS_SECRET_ACCESS_KEY": h.cfg.S3SecretAccessKey, "AWS_REGION": h.cfg.S3Region,
		"MEMAGENT_BUCKET": h.cfg.Bucket, "OPENAI_BASE_URL": simURL + "/v1", "OPENAI_API_KEY": "", "MEMAGENT_MODEL": "",
		"MEMAGENT_TASK_QUEUE": s.id, "MEMAGENT_MODEL_TIMEOUT": h.o.ModelTimeout.String(), "MEMAGENT_LOG_LEVEL": "error",
	}
	if s.namespace != "" {
		// Another service starts the run before any worker is up.
		if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: s.id, TaskQueue: s.id}, api.DocumentQAName, h.in); err != nil {
			row.Err = fmt.Errorf("start workflow: %w", err)
			return row
		}
	}
	if err := h.startWorker(s); err != nil {
		row.Err = err
		return row
	}
	defer func() { s.worker.kill() }()
	defer func() {
		// Numbers are gathered whatever happened.
		row.Disturbances = s.disturbed
		st := sim.Stats()
		for _, n := range st.Faults {
			row.ModelFaults += n
		}
		if proxy != nil {
			row.S3Faults = int(proxy.injected.Load())
		}
		calls := sim.Calls()
		row.ModelCalls = len(calls)
		ids := []string{s.workflowID()}
		if s.batch {
			row.Repeats = repeatedCalls(calls)
			for seq := range h.batch.items {
				ids = append(ids, workflows.SampleWorkflowID(s.id, seq, 0))
			}
		} else {
			updates := 0
			for _, c := range calls {
				if c.Kind == simulator.KindUpdate {
					updates++
				}
			}
			row.Repeats = updates - h.chunks
		}
		hctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, id := range ids {
			n, f, err := chaosRetries(hctx, c, id)
			if err != nil {
				if row.Err == nil {
					row.Err = err
				}
				break
			}
			row.Retries, row.TaskFailures = row.Retries+n, row.TaskFailures+f
		}
		if row.Err != nil {
			row.Err = fmt.Errorf("%w\nworker process output (tail):\n%s\nstack process output (tail):\n%s", row.Err, s.worker.out, h.stack.out)
		}
	}()

	if s.batch {
		h.runBatch(ctx, s, c, disturb, &row)
		return row
	}
	if s.ask {
		res, err := h.askThrough(ctx, s, disturb)
		if err != nil {
			row.Err = err
			return row
		}
		row.Chunks, row.answer, row.memory = res.Chunks, res.Answer, res.FinalMemory
		row.UsageCalls, row.Repeated = res.Usage.Calls, res.Usage.RepeatedCalls
		return row
	}
	if s.namespace == "" {
		if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: s.id, TaskQueue: s.id}, api.DocumentQAName, h.in); err != nil {
			row.Err = fmt.Errorf("start workflow: %w", err)
			return row
		}
	}
	// Wait for the result as `ask` does, from the start: through the
	// disturbances, the server's outages included.
	type outcome struct {
		res api.DocumentQAResult
		err error
	}
	awaited := make(chan outcome, 1)
	go func() {
		var res api.DocumentQAResult
		err := chaosAwait(ctx, c, s.id, h.o.Progress, &res)
		awaited <- outcome{res, err}
	}()
	if disturb != nil {
		if err := disturb(ctx, s); err != nil {
			row.Err = err
			return row
		}
	}
	out := <-awaited
	res, err := out.res, out.err
	if err != nil {
		row.Err = err
		return row
	}
	row.Chunks, row.answer, row.memory = res.Chunks, res.Answer, res.FinalMemory
	row.UsageCalls, row.Repeated = res.Usage.Calls, res.Usage.RepeatedCalls
	return row
}

// freshNamespace registers namespace as a plain administrator would,
// checks that it lacks memagent's search attributes, and returns a client
// on it sharing the harness's connection.
func (h *chaosHarness) freshNamespace(ctx context.Context, namespace string) (client.Client, error) {
	ws := h.temporal.WorkflowService()
	if _, err := ws.RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: namespace, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour)}); err != nil {
		return nil, fmt.Errorf("register namespace %s: %w", namespace, err)
	}
	for {
		resp, err := h.temporal.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
		if err == nil {
			if _, has := resp.GetCustomAttributes()[api.AttrStatus]; has {
				return nil, fmt.Errorf("namespace %s already has %s", namespace, api.AttrStatus)
			}
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("namespace %s: %w (last error: %v)", namespace, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return client.NewClientFromExisting(h.temporal, client.Options{Namespace: namespace})
}

// hangS3 stops S3 from answering a third of the way in, for S3Hang, then
// lets it answer again.
func (h *chaosHarness) hangS3(ctx context.Context, s *chaosScenario) error {
	if err := chaosWaitChunks(ctx, h.temporal, s.id, h.chunks/3); err != nil {
		return err
	}
	s.s3Hang.hold()
	s.disturbed++
	fmt.Fprintf(h.o.Progress, "%s    S3 stops answering for %v\n", time.Now().Format("15:04:05"), h.o.S3Hang)
	select {
	case <-ctx.Done():
	case <-time.After(h.o.S3Hang):
	}
	s.s3Hang.release()
	return nil
}

// s3HangProxy forwards S3 requests, or, while held, holds them unanswered
// (as a hung server or a black-holed network does) until released or the
// client gives up.
type s3HangProxy struct {
	next http.Handler

	mu   sync.Mutex
	gate chan struct{} // closed when not held
	held atomic.Int64
}

func (p *s3HangProxy) hold() {
	p.mu.Lock()
	p.gate = make(chan struct{})
	p.mu.Unlock()
}

func (p *s3HangProxy) release() {
	p.mu.Lock()
	if p.gate != nil {
		close(p.gate)
		p.gate = nil
	}
	p.mu.Unlock()
}

func (p *s3HangProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	gate := p.gate
	p.mu.Unlock()
	if gate != nil {
		p.held.Add(1)
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	p.next.ServeHTTP(w, r)
}

// killWorker SIGKILLs the worker process Kills times, each at a random
// moment after evenly spread chunks, and starts a new one each time.
func (h *chaosHarness) killWorker(ctx context.Context, s *chaosScenario) error {
	for k := range h.o.Kills {
		target := (k+1)*h.chunks/(h.o.Kills+1) + h.rng.IntN(3) - 1
		if err := chaosWaitChunks(ctx, h.temporal, s.id, target); err != nil {
			return fmt.Errorf("kill %d: %w", k+1, err)
		}
		time.Sleep(time.Duration(h.rng.Int64N(int64(h.o.SimLatency) * 2)))
		s.worker.kill()
		s.disturbed++
		fmt.Fprintf(h.o.Progress, "%s    SIGKILL worker after chunk %d\n", time.Now().Format("15:04:05"), target)
		if err := h.startWorker(s); err != nil {
			return err
		}
	}
	return nil
}

// restartStack SIGKILLs the stack process Restarts times mid-run and
// restarts it on the same data dir and ports; the worker process keeps
// running throughout.
func (h *chaosHarness) restartStack(ctx context.Context, s *chaosScenario) error {
	for r := range h.o.Restarts {
		target := (r + 1) * h.chunks / (h.o.Restarts + 1)
		if err := chaosWaitChunks(ctx, h.temporal, s.workflowID(), target); err != nil {
			return fmt.Errorf("restart %d: %w", r+1, err)
		}
		began := time.Now()
		if err := h.bounceStack(ctx, r); err != nil {
			return err
		}
		s.disturbed++
		fmt.Fprintf(h.o.Progress, "%s    SIGKILL stack after chunk %d, down %s, back in %s\n", time.Now().Format("15:04:05"), target, h.o.Downtime, time.Since(began).Round(100*time.Millisecond))
	}
	return nil
}

// bounceStack SIGKILLs the stack process, checks that Temporal no longer
// answers, leaves it down for Downtime and starts it again on the same data
// dir and ports; r numbers the restart in errors.
func (h *chaosHarness) bounceStack(ctx context.Context, r int) error {
	h.stack.kill()
	if conn, err := net.DialTimeout("tcp", h.cfg.TemporalAddress, time.Second); err == nil {
		_ = conn.Close()
		return fmt.Errorf("restart %d: the Temporal server still answers at %s after its process was killed", r+1, h.cfg.TemporalAddress)
	}
	time.Sleep(h.o.Downtime)
	if err := h.startStack(ctx); err != nil {
		return fmt.Errorf("restart %d: %w", r+1, err)
	}
	return nil
}

// chaosWaitChunks waits until the run has read at least target chunks (or is
// past reading), asking the progress query.
func chaosWaitChunks(ctx context.Context, c client.Client, id string, target int) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var last api.Progress
	for {
		var p api.Progress
		if chaosProgress(ctx, c, id, &p) == nil {
			last = p
		}
		if last.ChunksDone >= target || last.Stage == api.StageAnswering || last.Stage == api.StageDone {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("run %s not at chunk %d in time (at %d)", id, target, last.ChunksDone)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// chaosProgress asks run id's progress query (a DocumentQA's or a
// BatchQA's) into out.
func chaosProgress(ctx context.Context, c client.Client, id string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := c.QueryWorkflow(ctx, id, "", api.ProgressQuery)
	if err != nil {
		return err
	}
	return v.Get(out)
}

// chaosAwait waits for the run's result (into out) through the server's
// outages: anything but the run's own end (a result, or its failure,
// cancellation, termination or timeout) is an outage, said once and tried
// again until the run ends or ctx does.
func chaosAwait(ctx context.Context, c client.Client, id string, say io.Writer, out any) error {
	said := false
	for {
		err := c.GetWorkflow(ctx, id, "").Get(ctx, out)
		var (
			we  *temporal.WorkflowExecutionError
			nf  *serviceerror.NotFound
			app *temporal.ApplicationError
		)
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil || errors.As(err, &we) || errors.As(err, &nf) || errors.As(err, &app):
			return fmt.Errorf("run %s: %w", id, err)
		}
		if !said && say != nil {
			fmt.Fprintf(say, "chaos: Temporal is unreachable (%v); waiting for run %s\n", err, id)
			said = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("run %s: %w", id, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// chaosRetries sums the activity attempts beyond the first over every run
// of the workflow, walking the continue-as-new chain back from the latest.
func chaosRetries(ctx context.Context, c client.Client, id string) (retries, taskFailures int, err error) {
	n := 0
	runID := ""
	for {
		it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		prev := ""
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return n, taskFailures, fmt.Errorf("history of %s: %w", id, err)
			}
			if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
				prev = a.GetContinuedExecutionRunId()
			}
			if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && a.GetAttempt() > 1 {
				n += int(a.GetAttempt() - 1)
			}
			if ev.GetWorkflowTaskFailedEventAttributes() != nil {
				taskFailures++
			}
		}
		if prev == "" {
			return n, taskFailures, nil
		}
		runID = prev
	}
}

// chaosDocument is numbered filler (so that every chunk differs) with the
// planted fact in the middle, cut into about chunks chunks.
func chaosDocument(tok memagent.Tokenizer, chunks, chunkTokens int) (string, int, error) {
	gen := func(notes int) string {
		var b strings.Builder
		for i := range notes {
			if i == notes/2 {
				b.WriteString("The vault combination is " + chaosAnswer + ". ")
			}
			fmt.Fprintf(&b, "Note %d is about river boats and harvest weather. ", i)
		}
		return b.String()
	}
	perNote := float64(tok.Count(gen(100))) / 100
	notes := int(float64(chunks*chunkTokens) / perNote)
	var doc string
	got := 0
	for range 8 {
		doc = gen(notes)
		idx, err := memagent.PlanChunks(strings.NewReader(doc), tok, chunkTokens)
		if err != nil {
			return "", 0, err
		}
		if got = len(idx.Chunks); got == chunks {
			break
		}
		// Aim at the middle of the last chunk.
		notes = int(float64(notes) * (float64(chunks) - 0.5) / float64(got))
	}
	return doc, got, nil
}

// chaosPorts picks a Temporal base port whose derived ports (+1, +2, +6,
// +10) are free, and a free S3 port: fixed ports, so that a restarted stack
// is found where the old one was.
func chaosPorts() (temporalPort, s3Port int, err error) {
	free := func(port int) bool {
		l, err := net.Listen("tcp", net.JoinHostPort(embedstack.DefaultHost, strconv.Itoa(port)))
		if err != nil {
			return false
		}
		_ = l.Close()
		return true
	}
	for range 100 {
		// Below Linux's ephemeral range, so that no outgoing connection
		// takes a port while the stack is down.
		base := 20000 + rand.IntN(12000)
		if free(base) && free(base+1) && free(base+2) && free(base+6) && free(base+10) {
			l, err := net.Listen("tcp", net.JoinHostPort(embedstack.DefaultHost, "0"))
			if err != nil {
				return 0, 0, err
			}
			s3Port = l.Addr().(*net.TCPAddr).Port
			_ = l.Close()
			if s3Port < base || s3Port > base+10 {
				return base, s3Port, nil
			}
		}
	}
	return 0, 0, errors.New("no free ports for the chaos stack")
}

// chaosServe serves h on a free loopback port.
func chaosServe(h http.Handler) (string, func(), error) {
	l, err := net.Listen("tcp", net.JoinHostPort(embedstack.DefaultHost, "0"))
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String(), func() { _ = srv.Close() }, nil
}

// s3FaultProxy forwards S3 requests, answering a share of them with the
// errors S3 sends when it is overloaded or failing.
type s3FaultProxy struct {
	next     http.Handler
	rate     float64
	injected atomic.Int64

	mu  sync.Mutex
	rng *rand.Rand
}

func (p *s3FaultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	hit := p.rng.Float64() < p.rate
	p.mu.Unlock()
	if !hit {
		p.next.ServeHTTP(w, r)
		return
	}
	n := p.injected.Add(1)
	_, _ = io.Copy(io.Discard, r.Body)
	status, code, msg := http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate."
	if n%2 == 0 {
		status, code, msg = http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again."
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>%s</Code><Message>%s</Message><Resource>%s</Resource><RequestId>chaos-%d</RequestId></Error>`, code, msg, r.URL.Path, n)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// runChaosRole is a chaos child process: a worker or a stack. It exits when
// its parent does.
func runChaosRole(ctx context.Context, role string, stdout, stderr io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	parent := os.Getppid()
	go func() {
		for ctx.Err() == nil {
			if os.Getppid() != parent {
				cancel()
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
	}()
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	cfg.Normalize()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	switch role {
	case chaosRoleStack:
		var tp, sp int
		if _, err := fmt.Sscanf(os.Getenv(chaosPortsEnv), "%d,%d", &tp, &sp); err != nil {
			return fmt.Errorf("%s: %w", chaosPortsEnv, err)
		}
		d, err := devenv.Start(ctx, devenv.Options{
			DataDir: os.Getenv(chaosDataDirEnv), TemporalPort: tp, S3Port: sp, DisableUI: true, Logger: logger,
		})
		if err != nil {
			return err
		}
		defer d.Close()
		fmt.Fprintln(stdout, chaosReady)
		<-ctx.Done()
		return nil
	case chaosRoleWorker:
		if err := cfg.Validate(); err != nil {
			return err
		}
		run, err := workerapp.Start(ctx, cfg, workerapp.Options{Logger: logger})
		if err != nil {
			return err
		}
		defer run.Stop()
		<-ctx.Done()
		return nil
	}
	return fmt.Errorf("unknown %s %q", chaosRoleEnv, role)
}

// workflowID is the id of the scenario's workflow: its own, or the one
// `starter ask` derived.
func (s *chaosScenario) workflowID() string {
	if s.wf != "" {
		return s.wf
	}
	return s.id
}

// askThrough asks the scenario's question with a `starter ask` process,
// finds the run it started, disturbs it, and checks that ask exits 0 with
// the answer. It returns the run's full result.
func (h *chaosHarness) askThrough(ctx context.Context, s *chaosScenario, disturb func(context.Context, *chaosScenario) error) (api.DocumentQAResult, error) {
	var res api.DocumentQAResult
	args := []string{"ask", "--doc", h.in.Document, "--question", h.in.Question,
		"--chunk-tokens", strconv.Itoa(h.o.ChunkTokens), "--batch", s.id, "--fresh", "--reuse", "none", "--json"}
	env := map[string]string{"MEMAGENT_LOG_LEVEL": "error"}
	for k, v := range s.env {
		if _, set := env[k]; !set {
			env[k] = v
		}
	}
	p, stdout, err := h.startCommand("starter ask", h.o.Starter, args, env)
	if err != nil {
		return res, err
	}
	defer p.kill()
	var printed bytes.Buffer
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(&printed, stdout); close(copied) }()
	if s.wf, err = h.findByBatch(ctx, s.id); err != nil {
		return res, fmt.Errorf("the run ask started: %w\nask process output (tail):\n%s", err, p.out)
	}
	if disturb != nil {
		if err := disturb(ctx, s); err != nil {
			return res, err
		}
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return res, fmt.Errorf("ask did not exit in time\nask process output (tail):\n%s", p.out)
	}
	<-copied
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		return res, fmt.Errorf("ask exited %d\nask process output (tail):\n%s", code, p.out)
	}
	var said struct {
		Answer string `json:"answer"`
	}
	if err := json.Unmarshal(printed.Bytes(), &said); err != nil {
		return res, fmt.Errorf("ask printed %q: %w", printed.String(), err)
	}
	if err := h.temporal.GetWorkflow(ctx, s.wf, "").Get(ctx, &res); err != nil {
		return res, fmt.Errorf("result of %s: %w", s.wf, err)
	}
	if said.Answer != res.Answer {
		return res, fmt.Errorf("ask printed answer %q, the run answered %q", said.Answer, res.Answer)
	}
	fmt.Fprintf(h.o.Progress, "%s    ask exited 0 with %q\n", time.Now().Format("15:04:05"), said.Answer)
	return res, nil
}

// findByBatch waits for the run labelled batch (MemagentBatch) to appear
// and returns its workflow id.
func (h *chaosHarness) findByBatch(ctx context.Context, batch string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		resp, err := h.temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("%s = %q", api.AttrBatch, batch), PageSize: 1})
		if err == nil && len(resp.GetExecutions()) > 0 {
			return resp.GetExecutions()[0].GetExecution().GetWorkflowId(), nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("no run labelled %s (last error: %v)", batch, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
