package workerapptest

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/dev/devenv"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
)

// Stack is a running dev stack with a worker.
type Stack struct {
	Dev    *devenv.Env
	Worker *workerapp.Running
	Config config.Config
}

// Start starts the dev stack, the simulator and a worker; all stop when t
// ends. It fails t if anything does not start.
func Start(t testing.TB) *Stack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	d, err := devenv.Start(ctx, devenv.Options{FreePorts: true, Simulator: true, DisableUI: true, Logger: logger})
	if err != nil {
		t.Fatalf("start dev stack: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	cfg := config.Default().AtDevStack(d.Addresses())
	cfg.HTTPAddr = ""
	cfg.LogLevel = slog.LevelError
	if err := cfg.Validate(); err != nil {
		t.Fatalf("worker configuration: %v", err)
	}
	// The worker outlives ctx, which bounds the start only.
	w, err := workerapp.Start(context.WithoutCancel(ctx), cfg, workerapp.Options{Logger: logger})
	if err != nil {
		t.Fatalf("start worker: %v", err)
	}
	t.Cleanup(w.Stop)
	return &Stack{Dev: d, Worker: w, Config: cfg}
}

// Env is the process environment with the stack's client environment
// (embedstack.Stack.ClientEnv) in place of any value it had, and without the
// other TEMPORAL_, AWS_ and MEMAGENT_ variables, which would point a client
// elsewhere (a profile, a session token, a TLS certificate).
func (s *Stack) Env() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "TEMPORAL_") || strings.HasPrefix(name, "AWS_") || strings.HasPrefix(name, "MEMAGENT_") {
			continue
		}
		env = append(env, kv)
	}
	for _, v := range s.Dev.Stack.ClientEnv() {
		env = append(env, v.Name+"="+v.Value)
	}
	return env
}
