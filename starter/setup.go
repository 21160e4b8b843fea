package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/memagent/memagent/internal/config"
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
	added, err := registerSearchAttributes(ctx, c.OperatorService(), cfg.TemporalNamespace, attrs)
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

// registerSearchAttributes adds the attributes missing from the namespace
// and returns their names. An attribute that exists with the same type is
// left alone, so running it again is a no-op; one that exists with another
// type, or a system attribute of the same name, is an error and nothing is
// added.
func registerSearchAttributes(ctx context.Context, op operatorservice.OperatorServiceClient, namespace string, attrs map[string]enumspb.IndexedValueType) ([]string, error) {
	list, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("list search attributes of namespace %s: %w", namespace, err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		want := attrs[name]
		if _, ok := list.GetSystemAttributes()[name]; ok {
			return nil, fmt.Errorf("search attribute %s is a system attribute of this server: memagent cannot use it", name)
		}
		if got, ok := list.GetCustomAttributes()[name]; ok {
			if got != want {
				return nil, fmt.Errorf("search attribute %s exists in namespace %s as %s, memagent needs %s: remove it (temporal operator search-attribute remove --name %s) if nothing else uses it, or run memagent in another namespace",
					name, namespace, got, want, name)
			}
			continue
		}
		missing[name] = want
	}
	if len(missing) == 0 {
		return nil, nil
	}
	_, err = op.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: namespace, SearchAttributes: missing})
	var exists *serviceerror.AlreadyExists
	var invalid *serviceerror.InvalidArgument
	switch {
	case errors.As(err, &exists):
		// Someone else added them in between: the next run checks types.
	case errors.As(err, &invalid):
		return nil, fmt.Errorf("add search attributes to namespace %s: %w (SQL visibility allows 3 Int, 10 Keyword and 3 Text custom attributes per namespace; memagent needs 2 Int and 5 Keyword: see `temporal operator search-attribute list`)", namespace, err)
	case err != nil:
		return nil, fmt.Errorf("add search attributes to namespace %s: %w", namespace, err)
	}
	return slices.Sorted(maps.Keys(missing)), nil
}
