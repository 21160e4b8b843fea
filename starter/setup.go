package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/memagent/memagent/internal/config"
	"github.com/memagent/memagent/internal/searchattrs"
	"github.com/memagent/memagent/internal/workerapp"
	"github.com/memagent/memagent/workflows"
)

// runSetup registers memagent's search attributes in the namespace. Run it
// once per namespace before the first worker: a run that upserts an
// unregistered attribute blocks until it is registered.
func runSetup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("setup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: setup takes only flags", fs.Args())
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
