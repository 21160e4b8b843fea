package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/memagent/memagent/internal/dev/devenv"
	"github.com/memagent/memagent/starter/cli"
	"github.com/memagent/memagent/worker/config"
)

// demoUsage heads the devstack's usage with its two forms.
const demoUsage = `Usage: devstack [flags]        the dev stack and a worker on it (--no-worker: the stack alone)
       devstack demo [flags]   the quick start: the stack answers a question about a generated document (demo --help)
Flags of devstack:
`

// demo runs `devstack demo`: the starter's command tree (package
// starter/cli) with the embedded dev stack under its demo, which the
// starter, linking no Temporal server, cannot run. It exits.
func demo() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr, cli.WithName("devstack"), cli.WithDevStack(startDevStack))
	stop()
	os.Exit(code)
}

// startDevStack is the demo's stack: devenv's, as the devstack command
// itself runs it.
func startDevStack(ctx context.Context, o cli.DevStackOptions) (*cli.DevStack, error) {
	d, err := devenv.Start(ctx, devenv.Options{DataDir: o.DataDir, FreePorts: o.FreePorts, Simulator: o.Simulator, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	return &cli.DevStack{Configure: func(c config.Config) config.Config { return c.AtDevStack(d.Addresses()) }, UIURL: d.Stack.UIURL, Close: d.Close}, nil
}
