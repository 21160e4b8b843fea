package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/memagent/memagent/internal/simulator"
	"github.com/memagent/memagent/internal/tokenizer"
)

// runSimulator serves the inference simulator on its own, as a stand-in
// for an external OpenAI-compatible pool.
func runSimulator(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("simulator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8000", "listen address")
	model := fs.String("model", simulator.DefaultModel, "model id to serve")
	maxLen := fs.Int("max-model-len", simulator.DefaultMaxModelLen, "context length reported at /v1/models and enforced")
	latency := fs.Duration("latency", 0, "added to every completion")
	if err := fs.Parse(args); err != nil {
		return err
	}
	tok, err := tokenizer.New(tokenizer.CL100K)
	if err != nil {
		return err
	}
	sim := simulator.New(simulator.Options{Model: *model, MaxModelLen: *maxLen, Tokenizer: tok, Latency: *latency,
		Logger: slog.New(slog.NewTextHandler(stderr, nil))})
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("simulator: %w", err)
	}
	srv := &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "inference simulator (not a model) serving %q at http://%s/v1\n", *model, l.Addr())
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
