package inference

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/dev/simulator"
)

// Against the simulator's batch model, whose batch (2 sequences) the
// worker's cap fills with batch calls: with server priority, a question's
// call on the reserve preempts one of them and is answered while both are
// still outstanding; with priority off it gets no reserve and waits in the
// pool for a batch call to end. Every call is answered once.
func TestPoolReserveSimulatorPreempts(t *testing.T) {
	for _, form := range []ServerPriority{PriorityVLLM, PriorityOff} {
		t.Run(string(form), func(t *testing.T) {
			policy := simulator.SchedulingPriority
			if form == PriorityOff {
				policy = simulator.SchedulingFCFS
			}
			sim := simulator.New(simulator.Options{Model: "m", Capacity: simulator.CapacityBatch, SchedulingPolicy: policy,
				// Two batch calls' 1,000-token prompts take some 2.5 s to
				// prefill, 64 tokens a step of 74 ms; a question's few
				// tokens, a step or two.
				Batch: simulator.BatchOptions{MaxNumSeqs: 2, MaxNumBatchedTokens: 64, StepBase: 10 * time.Millisecond, StepPerSeq: -1, PrefillTokensPerSec: 1000}})
			srv := httptest.NewServer(sim)
			t.Cleanup(srv.Close)
			p := newTestPool(t, 2, func(c *PoolConfig) {
				c.Endpoints[0].Priority = form
				c.PriorityReserve = 1
			}, srv.URL+"/v1")

			done := func(level int, prompt string) <-chan error {
				ch := make(chan error, 1)
				go func() {
					ctx := WithPriority(context.Background(), Priority{Level: level})
					_, err := p.Complete(ctx, Request{Prompt: prompt, MaxTokens: 4})
					ch <- err
				}()
				return ch
			}
			// MemAgent prompts, as the simulator answers only those.
			prompt := func(q, section string) string {
				return "<problem>" + q + "</problem>\n<memory>No previous memory</memory>\n<section>" + section + "</section>"
			}
			long := strings.Repeat("word ", 800) // 4,000 bytes: 1,000 tokens
			b0, b1 := done(4, prompt("b0?", long)), done(4, prompt("b1?", long))
			waitFor(t, "both batch calls run at the server", func() bool { return sim.Stats().InFlight == 2 })
			q := done(2, prompt("q?", "word"))
			var err error
			select {
			case err = <-q:
			case <-time.After(30 * time.Second):
				t.Fatal("the question was not answered")
			}
			if err != nil {
				t.Fatalf("question: %v", err)
			}
			outstanding := p.Stats()[0].InFlight
			preemptions := sim.Stats().Preemptions
			if form != PriorityOff {
				if outstanding != 2 || preemptions < 1 {
					t.Errorf("question answered with %d batch calls outstanding and %d preemptions; want both outstanding and a preemption", outstanding, preemptions)
				}
			} else if outstanding == 2 || preemptions != 0 {
				t.Errorf("question answered with %d batch calls outstanding and %d preemptions; want it to have waited for one to end, and none", outstanding, preemptions)
			}
			for _, b := range []<-chan error{b0, b1} {
				if err := <-b; err != nil {
					t.Errorf("batch call: %v", err)
				}
			}
			if s := p.Stats()[0]; s.Requests != 3 {
				t.Errorf("%d requests, want 3: each call sent once", s.Requests)
			}
		})
	}
}
