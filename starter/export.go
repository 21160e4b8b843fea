package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	memclient "github.com/memagent/memagent/client"
	"github.com/memagent/memagent/internal/config"
	"github.com/memagent/memagent/internal/workerapp"
	"github.com/memagent/memagent/rollout"
)

const exportUsage = `usage: starter export rollouts BATCH_WORKFLOW_ID --out FILE [--reward sub_em|em|f1]

Writes the rollouts of a finished BatchQA run (run it with --samples K for
groups of K) as JSON Lines, one record per model turn: the exact chat
messages sent, the text returned, loss_mask 1 for a memory update and 0 for
the final answer, and the sample's reward spread evenly over its turns.
See docs/ROLLOUTS.md.
`

func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "rollouts" {
		fmt.Fprint(stderr, exportUsage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return flag.ErrHelp
		}
		return errors.New(`export what? "starter export rollouts BATCH_WORKFLOW_ID --out FILE"`)
	}
	return runExportRollouts(ctx, args[1:], stdout, stderr)
}

func runExportRollouts(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("export rollouts", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterFlags(fs)
	out := fs.String("out", "", "JSON Lines `file` to write (required)")
	reward := fs.String("reward", rollout.RewardSubEM, `reward metric, as the MemAgent paper scores: "sub_em", "em" or "f1"`)
	update := fs.String("update-template", "", "the worker's memory-update prompt `file`, if it ran with one (default the built-in prompt)")
	final := fs.String("final-template", "", "the worker's final-answer prompt `file`, if it ran with one")
	asJSON := fs.Bool("json", false, "print the counts as JSON")
	// The workflow id comes first, flags after it.
	var id string
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		id, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if id == "" && fs.NArg() == 1 {
		id = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: export rollouts takes one workflow id", fs.Args())
	}
	if id == "" {
		return errors.New("no batch: pass the BatchQA workflow id, as in starter export rollouts memagent-batch-… --out rollouts.jsonl")
	}
	if *out == "" {
		return errors.New("no --out: pass the file to write, such as --out rollouts.jsonl")
	}
	tmpl, err := workerapp.LoadTemplates(*update, *final)
	if err != nil {
		return err
	}
	opts := rollout.Options{Reward: *reward, Templates: tmpl}
	ctx, s, end, err := startCommand(ctx, cfg, stderr, *asJSON, "starter export rollouts")
	if err != nil {
		return err
	}
	defer func() { end(err) }()
	res, err := memclient.New(s.temporal, memclient.Options{TaskQueue: cfg.TaskQueue}).GetBatch(ctx, id, "").Get(ctx)
	if err != nil {
		return fmt.Errorf("batch %s: %w", id, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(*out), ".rollouts-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	st, err := rollout.Export(ctx, s.store, res.ReportURI, opts, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// Renamed whole, so a failed export never leaves half a file.
	if err := os.Rename(tmp.Name(), *out); err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(struct {
			rollout.Stats
			Out string `json:"out"`
		}{st, *out})
	}
	fmt.Fprintf(stdout, "%s: %d turns of %d samples in %d groups (left out: %d failed, %d without gold answers)\n",
		*out, st.Turns, st.Samples, st.Groups, st.Failed, st.Unscored)
	if st.Unverified > 0 {
		fmt.Fprintf(stdout, "%d turns come from runs that stored no prompt digest: their prompts are rebuilt, not proved\n", st.Unverified)
	}
	return nil
}
