package cli

import (
	"context"
	"log/slog"

	"github.com/memagent/memagent/worker/config"
)

// Option changes the command tree that Main, Run and NewRoot build.
type Option func(*options)

type options struct {
	// name is the program's name: the root command's and the one-line
	// error's prefix.
	name string
	// devStack starts the stack `demo` runs on; nil in the starter.
	devStack StartDevStack
}

func buildOptions(opts []Option) options {
	o := options{name: "starter"}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithName names the program in usage lines and errors ("starter" by
// default).
func WithName(name string) Option { return func(o *options) { o.name = name } }

// WithDevStack gives `demo` the embedded dev stack it runs on. The
// devstack command passes one; the starter links no Temporal server, and
// its `demo` says to run `go run ./devstack demo`.
func WithDevStack(start StartDevStack) Option { return func(o *options) { o.devStack = start } }

// StartDevStack starts the embedded dev stack (Temporal server, Web UI,
// S3-compatible server and, with Simulator, the inference simulator) with
// memagent's search attributes registered.
type StartDevStack func(ctx context.Context, o DevStackOptions) (*DevStack, error)

// DevStackOptions are the demo's choices for the stack.
type DevStackOptions struct {
	// DataDir keeps Temporal's and S3's state; "" keeps it in memory.
	DataDir string
	// FreePorts listens on free loopback ports instead of the usual ones.
	FreePorts bool
	// Simulator starts the inference simulator (no model server is set).
	Simulator bool
	Logger    *slog.Logger
}

// DevStack is a running dev stack.
type DevStack struct {
	// Configure points a configuration at the stack.
	Configure func(config.Config) config.Config
	// UIURL is the Temporal Web UI's base URL.
	UIURL string
	// Close stops the stack's servers (and the simulator, if started) and
	// releases their ports; state under DataDir stays for the next start.
	// The demo calls it once, after its worker has stopped.
	Close func() error
}
