// Command worker runs a memagent Temporal worker: the production worker,
// which links no Temporal server. Configuration comes from the environment
// and flags (see README's Configuration).
//
// --dev and --dev-stack are handed over, with every other argument, to the
// devstack command, which runs the embedded dev stack (and, with --dev, a
// worker on it): a memagent-devstack binary beside this one or on PATH, or,
// in a memagent checkout, `go run ./devstack`.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/memagent/memagent/internal/buildinfo"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
)

func main() { workerapp.Main("worker", run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := config.Load()
	if err != nil {
		return workerapp.Usage(err)
	}
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	workerapp.SetUsage(fs, "Usage: worker [flags]   memagent's worker (--dev: the dev stack and a worker on it)\nFlags:\n")
	var opts workerapp.Options
	workerapp.RegisterFlags(fs, &cfg, &opts)
	var (
		showVersion = fs.Bool("version", false, "print the binary's version, the build id it polls as by default, and exit")
		dev         = fs.Bool("dev", false, "run the embedded dev stack and a worker on it: hands over to the devstack command (go run ./devstack)")
		devStack    = fs.Bool("dev-stack", false, "run only the embedded dev stack: hands over to `devstack --no-worker`")
	)
	// The dev stack's own flags, accepted here so that `worker --dev
	// --data-dir D` hands them over; alone they do nothing.
	fs.String("data-dir", "", "with --dev or --dev-stack: where the dev stack keeps its state")
	fs.Bool("in-memory", false, "with --dev or --dev-stack: keep the dev stack's state in memory only")
	fs.Bool("free-ports", false, "with --dev or --dev-stack: listen on free loopback ports; the banner prints them")
	if err := fs.Parse(args); err != nil {
		return workerapp.Usage(err)
	}
	if *showVersion {
		v := buildinfo.BinaryVersion()
		if v == "" {
			v = "unknown (built without a version: set --build-id to run it as a Worker Deployment version)"
		}
		fmt.Fprintln(stdout, v)
		return nil
	}
	if *dev || *devStack {
		return execDevstack(args, stderr)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	opts.Logger = logger
	cfg.Normalize()
	return workerapp.Serve(ctx, cfg, opts, stdout)
}
