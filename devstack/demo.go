package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/memagent/memagent/internal/dev/devenv"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/devaddr"
	"github.com/memagent/memagent/internal/tokenizer"
	"github.com/memagent/memagent/starter/cli"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
)

// demoUsage heads the devstack's usage with its forms.
const demoUsage = `Usage: devstack [flags]        the dev stack and a worker on it (--no-worker: the stack alone)
       devstack demo [flags]   the quick start: the stack answers a question about a generated document (demo --help)
       devstack gen-doc|simulator|eval ...   the developer's tools (devstack COMMAND --help)
Flags of devstack:
`

// demoAskFlags are the starter's ask flags the demo takes and hands on to
// the question it asks.
var demoAskFlags = []string{"chunk-tokens", "memory-tokens", "answer-tokens", "temperature", "top-p", "tokenizer",
	"reuse", "invalid-utf8", "ocr", "ocr-lang"}

// bindDemo is `devstack demo`: the embedded stack and a worker in this
// process, and the starter's `ask` (package starter/cli, run in process)
// about a generated document, pointed at the stack through the
// environment as a person would point it.
func bindDemo(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	fs := cmd.Flags()
	tokens := fs.Int("tokens", 120_000, "length of the generated document in tokens")
	depth := fs.Float64("depth", 0.62, "where the planted fact sits, 0 (start) to 1 (end)")
	dataDir := fs.String("data-dir", defaultDemoDir(), "where the demo's Temporal and S3 state is kept")
	inMemory := fs.Bool("in-memory", false, "keep nothing on disk")
	keep := fs.Bool("keep", false, "keep the stack and its Web UI running after the answer, until Ctrl-C")
	// The ask flags are the starter's own, defaults and help included.
	ask, _, err := cli.NewRoot(ctx, io.Discard, io.Discard).Find([]string{"ask"})
	if err != nil {
		panic(err) // the starter has an ask command
	}
	for _, name := range demoAskFlags {
		fs.AddFlag(ask.Flags().Lookup(name))
	}
	return func(args []string) (err error) {
		if *tokens < 1000 || *depth < 0 || *depth > 1 {
			return badRequest(fmt.Errorf("--tokens must be at least 1000 and --depth within [0, 1]"))
		}
		cfg, err := config.Load()
		if err != nil {
			return badRequest(err)
		}
		tok, err := tokenizer.New(fs.Lookup("tokenizer").Value.String())
		if err != nil {
			return badRequest(fmt.Errorf("--tokenizer: %w", err))
		}
		dir := *dataDir
		if *inMemory {
			dir = ""
		}
		logger := toolLogger(stderr)
		_, modelSet := os.LookupEnv("OPENAI_BASE_URL")
		fmt.Fprintln(stdout, "starting the embedded stack (Temporal server, Web UI, S3 server, inference simulator) ...")
		d, err := devenv.Start(ctx, devenv.Options{DataDir: dir, FreePorts: !*keep, Simulator: !modelSet, Logger: logger})
		if err != nil {
			return err
		}
		defer d.Close()
		cfg = cfg.AtDevStack(d.Addresses())
		cfg.Normalize()
		run, err := workerapp.Start(ctx, cfg, workerapp.Options{Logger: logger})
		if err != nil {
			return err
		}
		defer run.Stop()
		pointAt(d.Addresses())

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
		fmt.Fprintf(stdout, "document: %d tokens (%d bytes), the planted fact at %.0f%% depth\nquestion: %s\nmodel:    %s\n\n",
			tok.Count(doc), len(doc), *depth*100, docgen.Question, model)
		askArgs := append([]string{"ask", "--doc", path, "--question", docgen.Question, "--answer", docgen.Answer, "--fresh"},
			changedFlags(fs, demoAskFlags)...)
		// The answer as ask prints it, which names the run's workflow id.
		var answer bytes.Buffer
		if err := cli.Run(ctx, askArgs, io.MultiWriter(stdout, &answer), stderr); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Expected: %s\n\n", docgen.Answer)
		id := ""
		if m := workflowLine.FindStringSubmatch(answer.String()); m != nil {
			id = m[1]
		}
		runPath := fmt.Sprintf("/namespaces/%s/workflows/%s", cfg.TemporalNamespace, id)
		switch {
		case *keep:
			fmt.Fprintf(stdout, "Web UI:   %s%s\nThe stack keeps running; Ctrl-C stops it.\n", d.Stack.UIURL, runPath)
			<-ctx.Done()
		case dir != "":
			fmt.Fprintf(stdout, "To browse this run in the Temporal Web UI:\n  go run ./devstack --no-worker --data-dir %s\n  then open %s%s\n", dir, config.DevUIURL, runPath)
		}
		return nil
	}
}

// workflowLine is the line of ask's answer that names the run.
var workflowLine = regexp.MustCompile(`(?m)^Workflow: (\S+)`)

// stackEnv are the variables that point a client (the starter) at a dev
// stack, which the demo sets in its own process; TestDemoAnswers restores
// them.
var stackEnv = []string{"TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID",
	"AWS_SECRET_ACCESS_KEY", "AWS_REGION", "MEMAGENT_BUCKET", "MEMAGENT_CREATE_BUCKET", "MEMAGENT_S3_PATH_STYLE"}

// pointAt sets this process's environment to the stack at s, as
// Config.AtDevStack points the worker's configuration, for the starter's
// commands run in process.
func pointAt(s devaddr.Stack) {
	for name, v := range map[string]string{
		"TEMPORAL_ADDRESS": s.TemporalAddress, "TEMPORAL_NAMESPACE": s.Namespace,
		"AWS_ENDPOINT_URL_S3": s.S3Endpoint, "AWS_ACCESS_KEY_ID": s.S3AccessKey, "AWS_SECRET_ACCESS_KEY": s.S3SecretKey,
		"AWS_REGION": s.Region, "MEMAGENT_BUCKET": s.Bucket, "MEMAGENT_CREATE_BUCKET": "true", "MEMAGENT_S3_PATH_STYLE": "true",
	} {
		os.Setenv(name, v)
	}
}

func defaultDemoDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "memagent", "demo")
	}
	return filepath.Join(os.TempDir(), "memagent-demo")
}
