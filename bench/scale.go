package main

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
)

// workerProcessEnv makes the bench binary act as a plain worker, so that a
// worker's memory is measured in a process of its own.
const workerProcessEnv = "MEMAGENT_BENCH_WORKER"

// workerProfileEnv, set to a path prefix, makes each worker process write
// a CPU profile of its whole life to PREFIX.QUEUE.prof.
const workerProfileEnv = "MEMAGENT_BENCH_WORKER_CPUPROFILE"

// workerProfileAtSignalEnv, set to 1 beside workerProfileEnv, makes the
// profile start at the worker's SIGUSR1 instead of at its start.
const workerProfileAtSignalEnv = "MEMAGENT_BENCH_WORKER_CPUPROFILE_AT_USR1"

// runWorkerProcess is the bench binary in worker mode: a worker configured
// by the environment, until SIGTERM.
func runWorkerProcess() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	if prefix := os.Getenv(workerProfileEnv); prefix != "" {
		// One profile a worker process, named by its task queue.
		f, err := os.Create(prefix + "." + os.Getenv("MEMAGENT_TASK_QUEUE") + ".prof")
		if err != nil {
			return err
		}
		defer f.Close()
		if os.Getenv(workerProfileAtSignalEnv) == "1" {
			// From SIGUSR1 on: the phase the bench measures, not the
			// worker's start.
			usr1 := make(chan os.Signal, 1)
			signal.Notify(usr1, syscall.SIGUSR1)
			started := make(chan error, 1)
			go func() {
				<-usr1
				started <- pprof.StartCPUProfile(f)
			}()
			defer func() {
				select {
				case err := <-started:
					if err == nil {
						pprof.StopCPUProfile()
					}
				default:
				}
			}()
		} else {
			if err := pprof.StartCPUProfile(f); err != nil {
				return err
			}
			defer pprof.StopCPUProfile()
		}
	}
	if os.Getenv(floorProcessEnv) == "1" {
		// The cost section's bare activity: memagent's worker with the
		// floor workflow and activity beside it.
		stop, err := startFloorWorkerWith(ctx, logger, cfg)
		if err != nil {
			return err
		}
		fmt.Println("worker ready")
		<-ctx.Done()
		stop()
		return nil
	}
	run, err := workerapp.Start(ctx, cfg, workerapp.Options{Logger: logger})
	if err != nil {
		return err
	}
	fmt.Println("worker ready")
	<-ctx.Done()
	run.Stop()
	return nil
}

// scaleResult is one document length's run.
type scaleResult struct {
	Tokens, Bytes             int64
	Chunks, Runs              int
	Wall                      time.Duration
	WorkerPeakRSS             int64 // bytes
	MaxRunEvents, MaxRunBytes int64
	S3Read                    int64
	Answer                    string
}

// runScale answers the demo question over a generated document of the
// given length with a fresh worker process.
func runScale(ctx context.Context, env *benchEnv, tokens int) (scaleResult, error) {
	res := scaleResult{}
	sim := simulator.New(simulator.Options{Tokenizer: env.tok})
	srv := httptest.NewServer(sim)
	defer srv.Close()
	doc := docgen.Needle(env.tok, tokens, 0.62, 5)
	res.Bytes = int64(len(doc))
	loc := s3store.Location{Bucket: env.cfg.Bucket, Key: fmt.Sprintf("bench/scale-%d.txt", tokens)}
	if err := env.store.Put(ctx, loc, []byte(doc), "text/plain"); err != nil {
		return res, err
	}
	doc = ""
	queue := fmt.Sprintf("bench-scale-%d", tokens)
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), workerProcessEnv+"=1",
		"TEMPORAL_ADDRESS="+env.cfg.TemporalAddress, "TEMPORAL_NAMESPACE="+env.cfg.TemporalNamespace,
		"AWS_ENDPOINT_URL_S3="+string(env.cfg.S3Endpoint), "AWS_ACCESS_KEY_ID="+env.cfg.S3AccessKeyID,
		"AWS_SECRET_ACCESS_KEY="+env.cfg.S3SecretAccessKey, "AWS_REGION="+env.cfg.S3Region,
		"MEMAGENT_BUCKET="+env.cfg.Bucket, "OPENAI_BASE_URL="+srv.URL+"/v1", "MEMAGENT_TASK_QUEUE="+queue,
		"MEMAGENT_LOG_LEVEL=error")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return res, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return res, err
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || !strings.Contains(line, "worker ready") {
		return res, fmt.Errorf("worker process did not start: %q %v", line, err)
	}

	s3Before := env.dev.Stack.S3BytesSent()
	start := time.Now()
	run, err := env.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: queue}, api.DocumentQAName,
		api.DocumentQAInput{Reuse: api.ReuseNone, Document: loc.String(), Question: docgen.Question})
	if err != nil {
		return res, err
	}
	var out api.DocumentQAResult
	if err := run.Get(ctx, &out); err != nil {
		return res, err
	}
	res.Wall = time.Since(start)
	res.S3Read = env.dev.Stack.S3BytesSent() - s3Before
	res.WorkerPeakRSS, err = peakRSS(cmd.Process.Pid)
	if err != nil {
		return res, err
	}
	res.Tokens, res.Chunks, res.Answer = out.Tokens, out.Chunks, out.Answer
	// Visibility records a run's history length when it writes the closed
	// record, a moment after the run ends: wait for every run's.
	var runs []*workflowpb.WorkflowExecutionInfo
	for deadline := time.Now().Add(30 * time.Second); ; {
		runs, err = workerapp.ListRuns(ctx, env.temporal, env.cfg.TemporalNamespace, out.WorkflowID)
		if err != nil {
			return res, err
		}
		if !slices.ContainsFunc(runs, func(r *workflowpb.WorkflowExecutionInfo) bool { return r.GetHistoryLength() == 0 }) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	res.Runs = len(runs)
	for _, r := range runs {
		res.MaxRunEvents = max(res.MaxRunEvents, r.GetHistoryLength())
		res.MaxRunBytes = max(res.MaxRunBytes, r.GetHistorySizeBytes())
	}
	return res, nil
}

// peakRSS reads a process's peak resident set size (VmHWM) in bytes.
func peakRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}
