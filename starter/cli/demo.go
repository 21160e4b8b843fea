package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/tokenizer"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
)

// The demo's planted fact, question and answer.
const (
	demoQuestion = docgen.Question
	demoAnswer   = docgen.Answer
)

// demoOn is `demo` on the dev stack start starts: the devstack command's
// (WithDevStack).
func demoOn(start StartDevStack) func(context.Context, *cobra.Command, io.Writer, io.Writer) func([]string) error {
	return func(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func([]string) error {
		return bindDemo(ctx, cmd, stdout, stderr, start)
	}
}

func bindDemo(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer, start StartDevStack) func(args []string) error {
	fs := cmd.Flags()
	cfg, cfgErr := config.Load()
	tokens := fs.Int("tokens", 120_000, "length of the generated document in tokens")
	depth := fs.Float64("depth", 0.62, "where the planted fact sits, 0 (start) to 1 (end)")
	dataDir := fs.String("data-dir", defaultDemoDir(), "where the demo's Temporal and S3 state is kept")
	inMemory := fs.Bool("in-memory", false, "keep nothing on disk")
	keep := fs.Bool("keep", false, "keep the stack and its Web UI running after the answer, until Ctrl-C")
	var req askRequest
	finish := askFlags(fs, &req)
	return func(args []string) (err error) {
		if cfgErr != nil {
			return cfgErr
		}
		if err := finish(); err != nil {
			return err
		}
		if *tokens < 1000 || *depth < 0 || *depth > 1 {
			return fmt.Errorf("--tokens must be at least 1000 and --depth within [0, 1]")
		}
		dir := *dataDir
		if *inMemory {
			dir = ""
		}
		logger := cliLogger(stderr)
		_, modelSet := os.LookupEnv("OPENAI_BASE_URL")
		fmt.Fprintln(stdout, "starting the embedded stack (Temporal server, Web UI, S3 server, inference simulator) ...")
		d, err := start(ctx, DevStackOptions{DataDir: dir, FreePorts: !*keep, Simulator: !modelSet, Logger: logger})
		if err != nil {
			return err
		}
		defer d.Close()
		cfg = d.Configure(cfg)
		cfg.Normalize()
		run, err := workerapp.Start(ctx, cfg, workerapp.Options{Logger: logger})
		if err != nil {
			return err
		}
		defer run.Stop()
		s := &session{cfg: cfg.Client(), logger: logger, progress: stdout, progressTTY: isTerminal(stdout)}
		if err := s.connect(ctx); err != nil {
			return err
		}
		defer s.close()

		tok, err := tokenizer.New(req.Options.WithDefaults().Tokenizer)
		if err != nil {
			return err
		}
		doc := docgen.Needle(tok, *tokens, *depth, 7)
		path := filepath.Join(os.TempDir(), "memagent-demo-document.txt")
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			return fmt.Errorf("write demo document: %w", err)
		}
		defer os.Remove(path)
		model := "the inference simulator (extractive stand-in, not a model)"
		if modelSet {
			model = strings.Join(cfg.ModelURLs, ",")
		}
		fmt.Fprintf(stdout, "document: %d tokens (%d bytes), the planted fact at %.0f%% depth\nquestion: %s\nmodel:    %s\n",
			tok.Count(doc), len(doc), *depth*100, demoQuestion, model)
		req.Doc, req.Question, req.Golds = path, demoQuestion, []string{demoAnswer}
		req.Fresh = true
		res, err := s.ask(ctx, req)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout)
		if err := printResult(stdout, cfg.Client(), res, false); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Expected: %s\n\n", demoAnswer)
		runPath := fmt.Sprintf("/namespaces/%s/workflows/%s", cfg.TemporalNamespace, res.WorkflowID)
		switch {
		case *keep:
			fmt.Fprintf(stdout, "Web UI:   %s%s\nThe stack keeps running; Ctrl-C stops it.\n", d.UIURL, runPath)
			<-ctx.Done()
		case dir != "":
			fmt.Fprintf(stdout, "To browse this run in the Temporal Web UI:\n  go run ./devstack --no-worker --data-dir %s\n  then open %s%s\n", dir, config.DevUIURL, runPath)
		}
		return nil
	}
}

func defaultDemoDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "memagent", "demo")
	}
	return filepath.Join(os.TempDir(), "memagent-demo")
}

func bindGenDoc(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	fs := cmd.Flags()
	tokens := fs.Int("tokens", 120_000, "length in tokens (Qwen)")
	depth := fs.Float64("depth", 0.62, "where the planted fact sits, 0 (start) to 1 (end)")
	seed := fs.Uint64("seed", 7, "seed of the filler")
	out := fs.String("out", "", "output file (required)")
	return func(args []string) (err error) {
		if *out == "" || *tokens < 1 || *depth < 0 || *depth > 1 {
			return errors.New("usage: starter gen-doc --tokens N --out PATH [--depth 0..1] [--seed N]")
		}
		tok, err := tokenizer.New(tokenizer.Qwen)
		if err != nil {
			return err
		}
		doc := docgen.Needle(tok, *tokens, *depth, *seed)
		if err := os.WriteFile(*out, []byte(doc), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s: %d bytes, about %d tokens\nquestion: %s\nanswer:   %s\n", *out, len(doc), *tokens, demoQuestion, demoAnswer)
		return nil
	}
}
