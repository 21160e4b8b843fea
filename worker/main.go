// Command worker runs a memagent Temporal worker. With --dev it first starts
// the embedded dev stack (Temporal server and Web UI, an S3-compatible
// server and, unless a model server is configured — OPENAI_BASE_URL, or Azure
// OpenAI with MEMAGENT_MODEL_API=azure — the inference simulator) in the
// same process; with --dev-stack it runs only that stack, so that workers
// started on their own can be killed and restarted against it.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/memagent/memagent/internal/config"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/telemetry"
	"github.com/memagent/memagent/internal/workerapp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// The first signal starts a graceful stop; a second one ends the
		// process at once.
		<-ctx.Done()
		stop()
	}()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "worker:", err)
		}
		stop()
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterFlags(fs)
	var (
		dev      = fs.Bool("dev", false, "start the embedded dev stack in this process and work on it")
		devStack = fs.Bool("dev-stack", false, "start only the embedded dev stack (no worker); Ctrl-C stops it")
		dataDir  = fs.String("data-dir", defaultDataDir(), "where the dev stack keeps Temporal's SQLite file and S3 objects")
		inMemory = fs.Bool("in-memory", false, "keep the dev stack's state in memory only")
		free     = fs.Bool("free-ports", false, "with --dev or --dev-stack: listen on free loopback ports instead of the usual ones (7233, 8233, 9000, 8000); the banner prints them")
		opts     workerapp.Options
	)
	fs.StringVar(&opts.UpdateTemplate, "update-template", "", "file with the memory-update prompt ({question} {memory} {chunk})")
	fs.StringVar(&opts.FinalTemplate, "final-template", "", "file with the final-answer prompt ({question} {memory})")
	fs.IntVar(&opts.Concurrency, "concurrency", 0, "activities running at once in this worker; 0 = twice the model pool's capacity")
	fs.DurationVar(&cfg.StopTimeout, "stop-timeout", cfg.StopTimeout, "on SIGTERM, how long in-flight activities may run before they are cancelled and handed back to Temporal (MEMAGENT_STOP_TIMEOUT)")
	fs.StringVar(&cfg.HTTPAddr, "http-addr", cfg.HTTPAddr, `serve /metrics, /healthz, /readyz (and /codec with codec keys) on this host:port; "" turns it off (MEMAGENT_HTTP_ADDR)`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	opts.Logger = logger
	cfg.Normalize()

	if *dev || *devStack {
		dir := *dataDir
		if *inMemory {
			dir = ""
		}
		// A model server named in the environment or on the command line
		// replaces the simulator.
		modelSet := cfg.ModelConfigured
		fs.Visit(func(f *flag.Flag) { modelSet = modelSet || f.Name == "model-url" || f.Name == "model-api" })
		d, err := workerapp.StartDev(ctx, workerapp.DevOptions{DataDir: dir, FreePorts: *free, Simulator: !modelSet, Logger: logger})
		if err != nil {
			return err
		}
		defer d.Close()
		cfg = d.Configure(cfg)
		printDevStack(stdout, d.Stack, d.SimulatorURL, describeModel(cfg), dir)
		if *devStack {
			fmt.Fprintln(stdout, "dev stack ready; Ctrl-C stops it")
			<-ctx.Done()
			return nil
		}
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	tel, err := telemetry.Setup(ctx, telemetry.Options{ServiceName: "memagent-worker", Logger: logger})
	if err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tel.Shutdown(ctx); err != nil {
			logger.Warn("telemetry not flushed", "err", err)
		}
	}()
	logger.Info("telemetry", "traces", tel.Traces, "metrics", tel.Metrics)
	var probe workerapp.Probe
	codecServer, err := workerapp.CodecServer(cfg)
	if err != nil {
		return err
	}
	logger.Info("payload encryption", "codec_keys", cfg.CodecKeys, "s3_sse", cfg.S3SSE)
	if cfg.HTTPAddr != "" {
		addr, stopHTTP, err := workerapp.ServeHTTP(cfg.HTTPAddr, workerapp.Handler(tel.Prometheus, &probe, workerapp.WithCodecServer(codecServer)), logger)
		if err != nil {
			// Observability must not keep a worker from working.
			logger.Warn(`no /metrics, /healthz or /readyz: set --http-addr to a free host:port, or to "" to turn the endpoint off`, "err", err)
		} else {
			defer stopHTTP()
			fmt.Fprintf(stdout, "metrics and health on http://%s (/metrics, /healthz, /readyz)\n", addr)
			if codecServer != nil {
				fmt.Fprintf(stdout, "codec server on http://%s%s (set it as the Temporal UI's codec endpoint)\n", addr, workerapp.CodecPath)
			}
		}
	}
	run, err := workerapp.Start(ctx, cfg, opts)
	if err != nil {
		return err
	}
	defer func() {
		began := time.Now()
		run.Stop()
		logger.Info("worker stopped", "took", time.Since(began).Round(time.Millisecond))
	}()
	probe.Started(run.Client, run.Pool)
	fmt.Fprintf(stdout, "worker polling task queue %q on %s\n", cfg.TaskQueue, cfg.TemporalAddress)
	<-ctx.Done()
	probe.Stopping()
	logger.Info("stopping: no new tasks; waiting for in-flight activities", "stop_timeout", cfg.WorkerStopTimeout())
	return nil
}

// describeModel names the configured model server for the dev stack's
// banner, without its key.
func describeModel(cfg config.Config) string {
	if cfg.ModelAPI == inference.APIAzure {
		return fmt.Sprintf("%s (Azure OpenAI deployment %q, api-version %s)", cfg.ModelBaseURL, cfg.Model,
			cmp.Or(cfg.ModelAPIVersion, inference.DefaultAzureAPIVersion))
	}
	if cfg.Model != "" {
		return fmt.Sprintf("%s (model %q)", cfg.ModelBaseURL, cfg.Model)
	}
	return cfg.ModelBaseURL
}

// defaultDataDir is where --dev keeps its state between runs.
func defaultDataDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "memagent", "dev")
	}
	return filepath.Join(os.TempDir(), "memagent-dev")
}
