package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/internal/config"
	"github.com/memagent/memagent/internal/workerapp"
)

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterFlags(fs)
	asJSON := fs.Bool("json", false, "print the progress as JSON")
	showMemory := fs.Bool("memory", false, "also print the current memory")
	showHistory := fs.Bool("history", false, "also list every run of the workflow (continue-as-new generations) with its history size")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: starter status [flags] WORKFLOW_ID")
	}
	cfg.Normalize()
	s := &session{cfg: cfg, logger: cliLogger(stderr)}
	if err := s.connect(ctx); err != nil {
		return err
	}
	defer s.close()
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	p, err := queryProgress(qctx, s.temporal, fs.Arg(0))
	cancel()
	if err != nil {
		err = fmt.Errorf("query %s: %w (queries need a running worker)", fs.Arg(0), err)
		if !*showHistory {
			return err
		}
		fmt.Fprintln(stderr, "starter:", err)
		return printRuns(ctx, stdout, s.temporal, s.cfg.TemporalNamespace, fs.Arg(0))
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(p)
	}
	pct := 0.0
	if p.TokensTotal > 0 {
		pct = 100 * float64(p.TokensDone) / float64(p.TokensTotal)
	}
	fmt.Fprintf(stdout, "stage:  %s (run %d)\nchunks: %d/%d\ntokens: %d/%d (%.1f%%)\ncalls:  %d (%d prompt + %d completion tokens)\n",
		p.Stage, p.Run, p.ChunksDone, p.ChunksTotal, p.TokensDone, p.TokensTotal, pct, p.Usage.Calls, p.Usage.PromptTokens, p.Usage.CompletionTokens)
	if p.Answer != "" {
		fmt.Fprintf(stdout, "answer: %s\n", p.Answer)
	}
	if *showMemory {
		fmt.Fprintf(stdout, "memory:\n%s\n", p.Memory)
	}
	if *showHistory {
		return printRuns(ctx, stdout, s.temporal, s.cfg.TemporalNamespace, fs.Arg(0))
	}
	return nil
}

// printRuns lists the runs of one workflow id, oldest first, with the size
// of each run's history: the figure continue-as-new keeps bounded.
func printRuns(ctx context.Context, w io.Writer, c client.Client, namespace, id string) error {
	runs, err := workerapp.ListRuns(ctx, c, namespace, id)
	if err != nil {
		return err
	}
	var maxEvents, maxBytes int64
	fmt.Fprintf(w, "runs:   %d\n", len(runs))
	for i, r := range runs {
		fmt.Fprintf(w, "  %3d  %s  %-22s %6d events %9d bytes\n", i+1, r.GetExecution().GetRunId(), r.GetStatus(), r.GetHistoryLength(), r.GetHistorySizeBytes())
		maxEvents, maxBytes = max(maxEvents, r.GetHistoryLength()), max(maxBytes, r.GetHistorySizeBytes())
	}
	fmt.Fprintf(w, "largest run history: %d events, %d bytes\n", maxEvents, maxBytes)
	return nil
}
