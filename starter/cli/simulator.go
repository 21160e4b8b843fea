package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/tokenizer"
)

// runSimulator serves the inference simulator on its own, as a stand-in
// for an external OpenAI-compatible pool, with the capacity and faults of
// one when asked.
func bindSimulator(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	fs := cmd.Flags()
	addr := fs.String("addr", "127.0.0.1:8000", "listen address")
	model := fs.String("model", simulator.DefaultModel, "model id to serve")
	maxLen := fs.Int("max-model-len", simulator.DefaultMaxModelLen, "context length reported at /v1/models and enforced")
	latency := fs.Duration("latency", 0, "fixed time each completion holds its slot")
	replicas := fs.Int("replicas", 1, "replicas in the simulated pool")
	capacity := fs.String("capacity", string(simulator.CapacitySlots), "capacity model: slots (a slot per sequence for a time fixed at admission) or batch (continuous batching, like vLLM)")
	slots := fs.Int("slots", simulator.DefaultSlots, "sequences each replica serves at once (capacity slots)")
	prefill := fs.Float64("prefill-tps", 0, "prompt tokens per second of one sequence (capacity slots; 0: instantaneous)")
	decode := fs.Float64("decode-tps", 0, "completion tokens per second of one sequence (capacity slots; 0: instantaneous)")
	maxSeqs := fs.Int("max-num-seqs", simulator.DefaultMaxNumSeqs, "sequences each replica's batch runs at once (capacity batch)")
	maxBatched := fs.Int("max-num-batched-tokens", simulator.DefaultMaxNumBatchedTokens, "tokens one step processes, prompt chunks and decode tokens (capacity batch)")
	stepBase := fs.Duration("step-base", simulator.DefaultStepBase, "time of a decode step, less the per-sequence part (capacity batch)")
	stepPerSeq := fs.Duration("step-per-seq", simulator.DefaultStepPerSeq, "time each sequence adds to a step (capacity batch)")
	batchPrefill := fs.Float64("batch-prefill-tps", simulator.DefaultBatchPrefillTokensPerSec, "prompt tokens per second of one replica (capacity batch)")
	scheduling := fs.String("scheduling-policy", simulator.SchedulingFCFS, "how waiting requests are served, as vLLM's --scheduling-policy: fcfs (in order of arrival; a request's priority other than 0 is refused) or priority (by the request's priority, lower first, then arrival; with capacity batch a more urgent request preempts the least urgent running one)")
	maxQueue := fs.Int("max-queue", 0, "requests that may wait for a slot before the rest get 503 (0: unbounded)")
	faultRate := fs.Float64("fault-rate", 0, "probability of a fault per completion, spread evenly over 429, 500, 503, slow and malformed")
	seed := fs.Uint64("seed", 0, "seed of the fault draws")
	failAll := fs.Int("fail-all", 0, "answer every completion with this HTTP status, e.g. 503 (0: off)")
	policy := fs.String("policy", simulator.PolicyExtractive, `how completions are made: "extractive" (keep sentences that share words with the question) or "chain" (each memory a hash of the one before and the chunk: answers that depend on every chunk read, in order, for checking that checkpoint reuse equals a full reading)`)
	return func(args []string) (err error) {
		switch {
		case *replicas < 1:
			return fmt.Errorf("simulator: --replicas is %d: set it to 1 or more", *replicas)
		case *capacity != string(simulator.CapacitySlots) && *capacity != string(simulator.CapacityBatch):
			return fmt.Errorf("simulator: --capacity is %q: set it to slots or batch", *capacity)
		case *slots < 1:
			return fmt.Errorf("simulator: --slots is %d: set it to 1 or more", *slots)
		case *maxSeqs < 1 || *maxBatched < *maxSeqs:
			return fmt.Errorf("simulator: --max-num-seqs (%d) must be 1 or more and --max-num-batched-tokens (%d) at least as many", *maxSeqs, *maxBatched)
		case *stepBase <= 0 || *stepPerSeq < 0 || *batchPrefill <= 0:
			return fmt.Errorf("simulator: --step-base (%s) and --batch-prefill-tps (%g) must be positive and --step-per-seq (%s) not negative", *stepBase, *batchPrefill, *stepPerSeq)
		case *prefill < 0 || *decode < 0:
			return fmt.Errorf("simulator: --prefill-tps (%g) and --decode-tps (%g) must not be negative: 0 means instantaneous", *prefill, *decode)
		case *scheduling != simulator.SchedulingFCFS && *scheduling != simulator.SchedulingPriority:
			return fmt.Errorf("simulator: --scheduling-policy is %q: set it to fcfs or priority", *scheduling)
		case *maxQueue < 0:
			return fmt.Errorf("simulator: --max-queue is %d: set it to 0 (unbounded) or more", *maxQueue)
		case *faultRate < 0 || *faultRate > 1:
			return fmt.Errorf("simulator: --fault-rate is %g: set it between 0 and 1, e.g. 0.2", *faultRate)
		case *policy != simulator.PolicyExtractive && *policy != simulator.PolicyChain:
			return fmt.Errorf("simulator: --policy is %q: set it to extractive or chain", *policy)
		case *failAll != 0 && (*failAll < 400 || *failAll > 599):
			return fmt.Errorf("simulator: --fail-all is %d: set it to an HTTP error status (400 to 599) or 0", *failAll)
		}
		tok, err := tokenizer.New(tokenizer.Qwen)
		if err != nil {
			return err
		}
		perSeq := *stepPerSeq
		if perSeq == 0 {
			perSeq = -1 // BatchOptions reads zero as the default
		}
		sim := simulator.New(simulator.Options{Model: *model, MaxModelLen: *maxLen, Tokenizer: tok, Latency: *latency,
			Logger:   slog.New(slog.NewTextHandler(stderr, nil)),
			Replicas: *replicas, Capacity: simulator.CapacityMode(*capacity),
			Slots: *slots, PrefillTokensPerSec: *prefill, DecodeTokensPerSec: *decode,
			Batch:            simulator.BatchOptions{MaxNumSeqs: *maxSeqs, MaxNumBatchedTokens: *maxBatched, StepBase: *stepBase, StepPerSeq: perSeq, PrefillTokensPerSec: *batchPrefill},
			SchedulingPolicy: *scheduling,
			MaxQueue:         *maxQueue, FaultRate: *faultRate, Faults: simulator.Faults{Seed: *seed}, FailAll: *failAll, Policy: *policy})
		l, err := net.Listen("tcp", *addr)
		if err != nil {
			return fmt.Errorf("simulator: %w", err)
		}
		srv := &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second}
		shape := fmt.Sprintf("%d replicas x %d slots", *replicas, *slots)
		if *capacity == string(simulator.CapacityBatch) {
			shape = fmt.Sprintf("%d replicas batching up to %d sequences", *replicas, *maxSeqs)
		}
		fmt.Fprintf(stdout, "inference simulator (not a model) serving %q at http://%s/v1 (%s; metrics at /metrics)\n",
			*model, l.Addr(), shape)
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
}
