package inference

import (
	"testing"
	"time"
)

// Against the simulator's batch model, whose batch (2 sequences) the
// worker's cap fills with batch calls: with server priority, a question's
// call on the reserve preempts one of them and is answered while both are
// still outstanding; with priority off it gets no reserve and waits in the
// pool for a batch call to end. Every call is answered once.
func TestPoolReserveSimulatorPreempts(t *testing.T) {
	for _, form := range []ServerPriority{PriorityVLLM, PriorityOff} {
		t.Run(string(form), func(t *testing.T) {
			w := newBatchWorld(t, form, func(c *PoolConfig) { c.PriorityReserve = 1 })
			sim, p := w.sim, w.p
			b0, b1 := w.call(4, "b0?", 800), w.call(4, "b1?", 800) // 4,000 bytes: 1,000 tokens
			waitFor(t, "both batch calls run at the server", func() bool { return sim.Stats().InFlight == 2 })
			q := w.call(2, "q?", 1)
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
