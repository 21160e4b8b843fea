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
// for an external OpenAI-compatible pool, with the capacity and faults of
// one when asked.
func runSimulator(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("simulator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8000", "listen address")
	model := fs.String("model", simulator.DefaultModel, "model id to serve")
	maxLen := fs.Int("max-model-len", simulator.DefaultMaxModelLen, "context length reported at /v1/models and enforced")
	latency := fs.Duration("latency", 0, "fixed time each completion holds its slot")
	replicas := fs.Int("replicas", 1, "replicas in the simulated pool")
	slots := fs.Int("slots", simulator.DefaultSlots, "sequences each replica serves at once")
	prefill := fs.Float64("prefill-tps", 0, "prompt tokens per second of one sequence (0: instantaneous)")
	decode := fs.Float64("decode-tps", 0, "completion tokens per second of one sequence (0: instantaneous)")
	maxQueue := fs.Int("max-queue", 0, "requests that may wait for a slot before the rest get 503 (0: unbounded)")
	faultRate := fs.Float64("fault-rate", 0, "probability of a fault per completion, spread evenly over 429, 500, 503, slow and malformed")
	seed := fs.Uint64("seed", 0, "seed of the fault draws")
	failAll := fs.Int("fail-all", 0, "answer every completion with this HTTP status, e.g. 503 (0: off)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *replicas < 1:
		return fmt.Errorf("simulator: --replicas is %d: set it to 1 or more", *replicas)
	case *slots < 1:
		return fmt.Errorf("simulator: --slots is %d: set it to 1 or more", *slots)
	case *prefill < 0 || *decode < 0:
		return fmt.Errorf("simulator: --prefill-tps (%g) and --decode-tps (%g) must not be negative: 0 means instantaneous", *prefill, *decode)
	case *maxQueue < 0:
		return fmt.Errorf("simulator: --max-queue is %d: set it to 0 (unbounded) or more", *maxQueue)
	case *faultRate < 0 || *faultRate > 1:
		return fmt.Errorf("simulator: --fault-rate is %g: set it between 0 and 1, e.g. 0.2", *faultRate)
	case *failAll != 0 && (*failAll < 400 || *failAll > 599):
		return fmt.Errorf("simulator: --fail-all is %d: set it to an HTTP error status (400 to 599) or 0", *failAll)
	}
	tok, err := tokenizer.New(tokenizer.Qwen)
	if err != nil {
		return err
	}
	sim := simulator.New(simulator.Options{Model: *model, MaxModelLen: *maxLen, Tokenizer: tok, Latency: *latency,
		Logger:   slog.New(slog.NewTextHandler(stderr, nil)),
		Replicas: *replicas, Slots: *slots, PrefillTokensPerSec: *prefill, DecodeTokensPerSec: *decode, MaxQueue: *maxQueue,
		FaultRate: *faultRate, Faults: simulator.Faults{Seed: *seed}, FailAll: *failAll})
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("simulator: %w", err)
	}
	srv := &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "inference simulator (not a model) serving %q at http://%s/v1 (%d replicas x %d slots; metrics at /metrics)\n",
		*model, l.Addr(), *replicas, *slots)
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
