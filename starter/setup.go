package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/spf13/cobra"

	"github.com/memagent/memagent/internal/config"
	"github.com/memagent/memagent/internal/searchattrs"
	"github.com/memagent/memagent/internal/workerapp"
	"github.com/memagent/memagent/workflows"
)

// runSetup registers memagent's search attributes in the namespace. Run it
// once per namespace before the first worker: a run that upserts an
// unregistered attribute blocks until it is registered.
func bindSetup(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	cfg, cfgErr := config.Load()
	connectionFlags(cmd, &cfg)
	return func(args []string) (err error) {
		if cfgErr != nil {
			return cfgErr
		}
		if len(args) > 0 {
			return fmt.Errorf("unexpected arguments %q: setup takes only flags", args)
		}
		cfg.Normalize()
		c, err := workerapp.Dial(ctx, cfg, cliLogger(stderr))
		if err != nil {
			return err
		}
		defer c.Close()
		attrs := workflows.SearchAttributes()
		added, err := searchattrs.Ensure(ctx, c.OperatorService(), cfg.TemporalNamespace, attrs, true)
		if err != nil {
			return err
		}
		for _, name := range slices.Sorted(maps.Keys(attrs)) {
			state := "already registered"
			if slices.Contains(added, name) {
				state = "added"
			}
			fmt.Fprintf(stdout, "%-24s %-8s %s\n", name, attrs[name], state)
		}
		fmt.Fprintf(stdout, "namespace %s has memagent's %d search attributes\n", cfg.TemporalNamespace, len(attrs))
		return nil
	}
}
