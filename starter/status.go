package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/memagent/memagent/internal/config"
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
	p, err := queryProgress(ctx, s.temporal, fs.Arg(0))
	if err != nil {
		return fmt.Errorf("query %s: %w", fs.Arg(0), err)
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
	return nil
}
