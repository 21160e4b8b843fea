package workerapp_test

import (
	"context"
	"log/slog"
	"os"
	"testing"

	"github.com/memagent/memagent/internal/dev/devenv"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/secret"
)

// startDev starts the dev stack with the simulator for an external test,
// and returns it with an S3 store on it (bypassing any proxy the test puts
// in front of the worker) and a logger quiet below errors.
func startDev(ctx context.Context, t *testing.T) (*devenv.Env, *s3store.Store, *slog.Logger) {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	d, err := devenv.Start(ctx, devenv.Options{FreePorts: true, Simulator: true, DisableUI: true, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	store, err := s3store.New(ctx, s3store.Config{Endpoint: secret.Endpoint(d.Stack.S3Endpoint), Region: d.Stack.Region,
		AccessKeyID: d.Stack.S3AccessKey, SecretAccessKey: secret.Value(d.Stack.S3SecretKey)})
	if err != nil {
		t.Fatal(err)
	}
	return d, store, logger
}
