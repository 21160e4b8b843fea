// Command devstack runs memagent's development environment in one process:
// the embedded dev stack (a real Temporal server with its Web UI, an
// S3-compatible server and, unless a model server is configured —
// OPENAI_BASE_URL, or Azure OpenAI with MEMAGENT_MODEL_API=azure — the
// inference simulator) and a memagent worker on it. With --no-worker it
// runs only the stack, so that workers started on their own can be killed
// and restarted against it.
//
//	go run ./devstack                  # the stack and a worker (what `worker --dev` starts)
//	go run ./devstack --no-worker      # the stack only (`worker --dev-stack`)
//	go run ./devstack demo             # the quick start: a question about a generated document, answered on the stack
//	go run ./devstack gen-doc|simulator|eval ...   the developer's tools, which the client CLI (starter) does not link
//
// It links the Temporal server; the production worker (./worker) does not,
// and hands `worker --dev` over to this command.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/memagent/memagent/internal/dev/devenv"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/secret"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
)

func main() {
	if len(os.Args) > 1 && toolNames[os.Args[1]] {
		tools()
	}
	workerapp.Main("devstack", run)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := config.Load()
	if err != nil {
		return workerapp.Usage(err)
	}
	fs := flag.NewFlagSet("devstack", flag.ContinueOnError)
	workerapp.SetUsage(fs, demoUsage)
	fs.SetOutput(stderr)
	var opts workerapp.Options
	workerapp.RegisterFlags(fs, &cfg, &opts)
	var (
		noWorker = fs.Bool("no-worker", false, "start only the dev stack (no worker); Ctrl-C stops it")
		dataDir  = fs.String("data-dir", defaultDataDir(), "where the dev stack keeps Temporal's SQLite file and S3 objects")
		inMemory = fs.Bool("in-memory", false, "keep the dev stack's state in memory only")
		free     = fs.Bool("free-ports", false, "listen on free loopback ports instead of the usual ones (7233, 8233, 9000, 8000); the banner prints them")
		// The worker's --dev and --dev-stack, which hand over to this
		// command with their arguments as they are.
		_        = fs.Bool("dev", false, "accepted for `worker --dev`; no effect")
		devStack = fs.Bool("dev-stack", false, "the same as --no-worker (for `worker --dev-stack`)")
	)
	if err := fs.Parse(args); err != nil {
		return workerapp.Usage(err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	opts.Logger = logger
	cfg.Normalize()

	dir := *dataDir
	if *inMemory {
		dir = ""
	}
	// A model server named in the environment or on the command line
	// replaces the simulator.
	modelSet := cfg.ModelConfigured
	fs.Visit(func(f *flag.Flag) { modelSet = modelSet || f.Name == "model-url" || f.Name == "model-api" })
	d, err := devenv.Start(ctx, devenv.Options{DataDir: dir, FreePorts: *free, Simulator: !modelSet, Logger: logger})
	if err != nil {
		return err
	}
	defer d.Close()
	cfg = cfg.AtDevStack(d.Addresses())
	printDevStack(stdout, d.Stack, d.SimulatorURL, describeModel(cfg), dir)
	if *noWorker || *devStack {
		fmt.Fprintln(stdout, "dev stack ready; Ctrl-C stops it")
		<-ctx.Done()
		return nil
	}
	return workerapp.Serve(ctx, cfg, opts, stdout)
}

// describeModel names the configured model server for the dev stack's
// banner, without its key.
func describeModel(cfg config.Config) string {
	urls := secret.Endpoint(strings.Join(cfg.ModelURLs, ","))
	if cfg.ModelAPI == string(inference.APIAzure) {
		return fmt.Sprintf("%s (Azure OpenAI deployment %q, api-version %s)", urls, cfg.Model,
			cmp.Or(cfg.ModelAPIVersion, inference.DefaultAzureAPIVersion))
	}
	if cfg.Model != "" {
		return fmt.Sprintf("%s (model %q)", urls, cfg.Model)
	}
	return string(urls)
}

// defaultDataDir is where the dev stack keeps its state between runs.
func defaultDataDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "memagent", "dev")
	}
	return filepath.Join(os.TempDir(), "memagent-dev")
}
