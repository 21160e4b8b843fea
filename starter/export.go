package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	memclient "github.com/memagent/memagent/client"
	"github.com/memagent/memagent/internal/assemble"
	"github.com/memagent/memagent/internal/config"
	"github.com/memagent/memagent/rollout"
)

func bindExportRollouts(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	fs := cmd.Flags()
	cfg, cfgErr := config.Load()
	connectionFlags(cmd, &cfg)
	out := fs.String("out", "", "JSON Lines `file` to write (required)")
	reward := fs.String("reward", rollout.RewardSubEM, `reward metric, as the MemAgent paper scores: "sub_em", "em" or "f1"`)
	update := fs.String("update-template", "", "the worker's memory-update prompt `file`, if it ran with one (default the built-in prompt)")
	final := fs.String("final-template", "", "the worker's final-answer prompt `file`, if it ran with one")
	asJSON := outputFlag(cmd, "print the counts as JSON")
	return func(args []string) (err error) {
		if cfgErr != nil {
			return cfgErr
		}
		var id string
		if len(args) == 1 {
			id = args[0]
		} else if len(args) > 1 {
			return fmt.Errorf("unexpected arguments %q: export rollouts takes one workflow id", args)
		}
		if id == "" {
			return errors.New("no batch: pass the BatchQA workflow id, as in starter export rollouts memagent-batch-… --out rollouts.jsonl")
		}
		if *out == "" {
			return errors.New("no --out: pass the file to write, such as --out rollouts.jsonl")
		}
		tmpl, err := assemble.LoadTemplates(*update, *final)
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
			return printJSON(stdout, struct {
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
}
