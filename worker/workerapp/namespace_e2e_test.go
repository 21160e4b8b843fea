package workerapp_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
)

// A worker on a namespace where `starter setup` never ran registers
// memagent's search attributes at start where the server allows it, so a
// run started by any client completes instead of sitting in a failing
// workflow task; its log says it registered them, and not that they were
// not checked (its plugin is in the worker's options only).
func TestWorkerOnFreshNamespaceRegistersSearchAttributes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded stack")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d, store, _ := startDev(ctx, t)
	const ns = "fresh"
	if err := d.Stack.RegisterNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}

	cfg := config.Default().AtDevStack(d.Addresses())
	cfg.HTTPAddr, cfg.LogLevel, cfg.TemporalNamespace = "", slog.LevelError, ns
	var logs lockedBuffer
	w, err := workerapp.Start(ctx, cfg, workerapp.Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatalf("worker on a namespace without memagent's search attributes: %v", err)
	}
	defer w.Stop()
	if said := logs.String(); !strings.Contains(said, "registered memagent's search attributes") || strings.Contains(said, "not checked") {
		t.Errorf("the worker's log at start does not say it registered the search attributes, or says they were not checked:\n%s", said)
	}

	doc := s3store.Location{Bucket: d.Stack.Bucket, Key: "docs/fresh.txt"}
	if err := store.Put(ctx, doc, []byte("The harbour master keeps the ledger. The vault code is 7391-ALPHA."), "text/plain"); err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(client.Options{HostPort: d.Stack.TemporalAddress, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "fresh-1", TaskQueue: api.DefaultTaskQueue},
		api.DocumentQAName, api.DocumentQAInput{Reuse: api.ReuseNone, Document: doc.String(), Question: "What is the vault code?",
			Options: api.ModelOptions{ChunkTokens: 64}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	var res api.DocumentQAResult
	if err := run.Get(runCtx, &res); err != nil {
		t.Fatalf("run on the fresh namespace: %v", err)
	}
	if res.Answer != "7391-ALPHA" {
		t.Errorf("answer %q", res.Answer)
	}
}
