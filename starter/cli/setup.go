package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/memagent/memagent/internal/clientconf"
	"github.com/memagent/memagent/internal/searchattrs"
)

// runSetup registers memagent's search attributes in the namespace, and
// with --create-namespace the namespace first. Run it once per namespace
// before the first worker: a run that upserts an unregistered attribute
// blocks until it is registered.
func bindSetup(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	cfg, cfgErr := clientconf.Load()
	connectionFlags(cmd, &cfg)
	create := cmd.Flags().Bool("create-namespace", false, "register the namespace first if it does not exist (a self-hosted cluster; not Temporal Cloud)")
	retention := cmd.Flags().Duration("retention", 72*time.Hour, "how long a new namespace keeps closed runs (with --create-namespace)")
	return func(args []string) (err error) {
		if cfgErr != nil {
			return cfgErr
		}
		if len(args) > 0 {
			return fmt.Errorf("unexpected arguments %q: setup takes only flags", args)
		}
		if *create && *retention < 24*time.Hour {
			return fmt.Errorf("--retention is %s: Temporal keeps closed runs at least a day, set 24h or more", *retention)
		}
		cfg.Normalize()
		c, err := cfg.Dial(ctx, cliLogger(stderr))
		if err != nil {
			return err
		}
		defer c.Close()
		if *create {
			created, err := ensureNamespace(ctx, c.WorkflowService(), cfg.TemporalNamespace, *retention)
			if err != nil {
				return err
			}
			state := "exists"
			if created {
				state = fmt.Sprintf("created, retention %s", *retention)
			}
			fmt.Fprintf(stdout, "namespace %s %s\n", cfg.TemporalNamespace, state)
		}
		attrs := searchattrs.Memagent()
		added, err := ensureAttributes(ctx, func() ([]string, error) {
			return searchattrs.Ensure(ctx, c.OperatorService(), cfg.TemporalNamespace, attrs, true)
		})
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

// ensureNamespace registers namespace with the given retention unless it
// exists, and reports whether it registered it.
func ensureNamespace(ctx context.Context, ws workflowservice.WorkflowServiceClient, namespace string, retention time.Duration) (bool, error) {
	_, err := ws.RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace:                        namespace,
		WorkflowExecutionRetentionPeriod: durationpb.New(retention),
		Description:                      "memagent",
	})
	var exists *serviceerror.NamespaceAlreadyExists
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &exists):
		return false, nil
	default:
		return false, fmt.Errorf("register namespace %s: %w", namespace, err)
	}
}

// namespaceWait bounds how long setup waits for a namespace it just
// registered to reach the frontend's namespace cache, which a server
// refreshes every few seconds.
const namespaceWait = 30 * time.Second

// ensureAttributes runs ensure until it stops failing with NamespaceNotFound
// (a namespace registered a moment ago), for at most namespaceWait.
func ensureAttributes(ctx context.Context, ensure func() ([]string, error)) ([]string, error) {
	deadline := time.Now().Add(namespaceWait)
	for {
		added, err := ensure()
		var notFound *serviceerror.NamespaceNotFound
		if err == nil || !errors.As(err, &notFound) || time.Now().After(deadline) {
			return added, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
