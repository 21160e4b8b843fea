// Command chaos runs memagent's chaos suite: it SIGKILLs worker processes
// and the Temporal server (restarting them on the same files and ports),
// injects model and S3 faults, hangs S3, runs `starter ask` through a
// server restart and a run started before its worker on a namespace
// without memagent's search attributes, kills the worker and the server at a
// batch's continue-as-new boundaries, and checks that every run ends with
// the clean run's answer and memory, each kill repeating at most one model
// call, and that no batch item is lost, answered twice or counted twice. It
// writes a markdown report (docs/CHAOS.md).
//
//	go run ./chaos --kills 10 --out docs/CHAOS.md
//
// It is a developer's tool, not part of the user CLI: it starts the
// embedded dev stack and needs a starter binary (--starter, else one built
// from ./starter in a memagent checkout).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/memagent/memagent/worker/workerapp"
)

func main() { workerapp.Main("chaos", run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if role := os.Getenv(chaosRoleEnv); role != "" {
		// A worker or stack process of the suite.
		return runChaosRole(ctx, role, stdout, stderr)
	}
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	workerapp.SetUsage(fs, "Usage: chaos [flags]   the chaos suite: kills, restarts and faults under real runs (docs/CHAOS.md)\nFlags:\n")
	o := chaosOptions{ChunkTokens: 200, Seed: 1, SimLatency: 100 * time.Millisecond, ModelTimeout: 2 * time.Second, ScenarioTimeout: 15 * time.Minute, Progress: stdout}
	fs.DurationVar(&o.Downtime, "downtime", 3*time.Second, "how long the server stays down at each restart")
	fs.DurationVar(&o.SimLatency, "latency", o.SimLatency, "service time of every simulated model call")
	fs.DurationVar(&o.S3Hang, "s3-hang", 12*time.Second, "how long S3 stops answering in the s3-hang scenario (longer than the 2 s heartbeat timeout and the 10 s S3 operation deadline)")
	fs.IntVar(&o.Chunks, "chunks", 200, "chunks in the generated document")
	fs.IntVar(&o.Kills, "kills", 10, "SIGKILLs of the worker process during the kill scenario")
	fs.IntVar(&o.Restarts, "restarts", 1, "SIGKILLs and restarts of the Temporal server and S3 during the restart scenario")
	fs.Float64Var(&o.FaultRate, "fault-rate", 0.2, "share of model calls failing (429, 500, 503, slow, malformed) in the faults scenario")
	fs.Float64Var(&o.S3FaultRate, "s3-fault-rate", 0.05, "share of S3 requests answered 503 SlowDown or 500 InternalError in the faults scenario")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of kill points and injected faults")
	fs.StringVar(&o.Starter, "starter", "", "the starter binary the ask scenario runs; empty builds ./starter (in a memagent checkout)")
	out := fs.String("out", "docs/CHAOS.md", `markdown report; "" writes none`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.Chunks < 10 || o.Kills < 0 || o.Restarts < 0 || o.FaultRate < 0 || o.FaultRate >= 1 || o.S3FaultRate < 0 || o.S3FaultRate >= 1 {
		return errors.New("--chunks must be at least 10, --kills and --restarts not negative, the fault rates within [0, 1)")
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this program to re-execute as worker and stack: %w", err)
	}
	o.Exe = exe
	if o.Starter == "" {
		dir, err := os.MkdirTemp("", "memagent-chaos-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if o.Starter, err = buildStarter(ctx, dir, "./starter", stderr); err != nil {
			return err
		}
	}
	command := fmt.Sprintf("go run ./chaos --chunks %d --latency %s --kills %d --restarts %d --downtime %s --s3-hang %s --fault-rate %g --s3-fault-rate %g --seed %d",
		o.Chunks, o.SimLatency, o.Kills, o.Restarts, o.Downtime, o.S3Hang, o.FaultRate, o.S3FaultRate, o.Seed)
	began := time.Now()
	rows, err := runChaosSuite(ctx, o)
	if len(rows) > 0 {
		fmt.Fprintln(stdout)
		fmt.Fprint(stdout, chaosTable(rows))
	}
	if *out != "" && len(rows) > 0 {
		report := fmt.Sprintf("# Chaos suite\n\n`%s`, %s, %s/%s, %d CPUs, %s in all.\n\n%s\n%s",
			command, began.UTC().Format("2006-01-02 15:04 MST"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(),
			time.Since(began).Round(time.Second), chaosTable(rows), chaosNotes(o))
		if werr := os.MkdirAll(filepath.Dir(*out), 0o755); werr != nil {
			return errors.Join(err, werr)
		}
		if werr := os.WriteFile(*out, []byte(report), 0o644); werr != nil {
			return errors.Join(err, fmt.Errorf("write report: %w", werr))
		}
		fmt.Fprintf(stdout, "\nreport written to %s\n", *out)
	}
	if err != nil {
		return err
	}
	return chaosCheck(rows, o)
}

// buildStarter builds the starter package pkg ("./starter" from the
// module's root) into dir and returns the binary's path.
func buildStarter(ctx context.Context, dir, pkg string, stderr io.Writer) (string, error) {
	out := filepath.Join(dir, "starter")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build ./starter for the ask scenario (run from a memagent checkout, or pass --starter): %w", err)
	}
	return out, nil
}
