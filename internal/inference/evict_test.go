package inference

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/dev/simulator"
)

func TestParsePriorityEvict(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 0, "off": 0, "0": 0, "on": DefaultPriorityEvict, " ON ": DefaultPriorityEvict, "5s": 5 * time.Second, "1m30s": 90 * time.Second, "10m": 10 * time.Minute} {
		if got, err := ParsePriorityEvict(in); err != nil || got != want {
			t.Errorf("ParsePriorityEvict(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"-1s", "11m", "5", "soon", "1h"} {
		if _, err := ParsePriorityEvict(in); err == nil || !strings.Contains(err.Error(), "want off, on") {
			t.Errorf("ParsePriorityEvict(%q) = %v; want an error that says what to set", in, err)
		}
	}
}

// batchWorld is the simulator's batch model with a batch of two
// sequences, which two batch calls (priority 4) fill, and a pool that
// keeps at most two calls there and tells the server priorities in form
// (a server by priority for vllm, first come, first served for off); mod
// sets the rest of the pool's configuration.
type batchWorld struct {
	t   *testing.T
	sim *simulator.Server
	p   *Pool
}

func newBatchWorld(t *testing.T, form ServerPriority, mod func(*PoolConfig)) *batchWorld {
	policy := simulator.SchedulingPriority
	if form == PriorityOff {
		policy = simulator.SchedulingFCFS
	}
	sim := simulator.New(simulator.Options{Model: "m", Capacity: simulator.CapacityBatch, SchedulingPolicy: policy,
		// A batch call's 1,000-token prompt takes some 2.5 s to prefill,
		// 64 tokens a step of 74 ms; a question's few tokens, a step or
		// two.
		Batch: simulator.BatchOptions{MaxNumSeqs: 2, MaxNumBatchedTokens: 64, StepBase: 10 * time.Millisecond, StepPerSeq: -1, PrefillTokensPerSec: 1000}})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	p := newTestPool(t, 2, func(c *PoolConfig) {
		c.Endpoints[0].Priority = form
		mod(c)
	}, srv.URL+"/v1")
	return &batchWorld{t: t, sim: sim, p: p}
}

// newEvictWorld is a batchWorld whose pool holds batch calls back for
// questions and stops those younger than evict.
func newEvictWorld(t *testing.T, form ServerPriority, evict time.Duration) *batchWorld {
	return newBatchWorld(t, form, func(c *PoolConfig) {
		c.PriorityHold = DefaultPriorityHold
		c.PriorityEvict = evict
	})
}

// call completes a MemAgent prompt (the simulator answers only those) of
// about tokens tokens at priority level, in the background.
func (w *batchWorld) call(level int, q string, tokens int) <-chan error {
	ch := make(chan error, 1)
	go func() {
		ctx := WithPriority(context.Background(), Priority{Level: level})
		prompt := "<problem>" + q + "</problem>\n<memory>No previous memory</memory>\n<section>" + strings.Repeat("word ", tokens) + "</section>"
		_, err := w.p.Complete(ctx, Request{Prompt: prompt, MaxTokens: 4})
		ch <- err
	}()
	return ch
}

func (w *batchWorld) wait(what string, ch <-chan error) {
	w.t.Helper()
	select {
	case err := <-ch:
		if err != nil {
			w.t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(30 * time.Second):
		w.t.Fatalf("%s: no answer in 30 s", what)
	}
}

// A question's call stops the batch calls that started within the window
// at a server told priorities: the server drops their sequences, the
// question is answered with neither of them at the server, and each is
// sent again once the question is done (the hold) and answered; the pool
// counts two evictions and five requests, and the server two requests
// canceled and three answered, so nothing answered was asked twice.
func TestPoolEvictStopsYoungBatchCalls(t *testing.T) {
	w := newEvictWorld(t, PriorityVLLM, time.Minute)
	b0, b1 := w.call(4, "b0?", 1000), w.call(4, "b1?", 1000)
	waitFor(t, "both batch calls run at the server", func() bool { return w.sim.Stats().InFlight == 2 })
	w.wait("question", w.call(2, "q?", 1))
	if got := w.sim.Stats().Requests[simulator.OutcomeOK]; got != 1 {
		t.Errorf("%d calls answered when the question was; want 1: the question alone, the batch calls stopped", got)
	}
	if n := w.sim.Stats().Requests[simulator.OutcomeCanceled]; n != 2 {
		t.Errorf("the server dropped %d calls; want the 2 batch calls", n)
	}
	w.wait("batch call b0", b0)
	w.wait("batch call b1", b1)
	st := w.p.Stats()[0]
	if st.Evictions != 2 || st.Requests != 5 || st.InFlight != 0 {
		t.Errorf("pool: %d evictions, %d requests, %d in flight; want 2, 5 (each batch call sent twice, the question once), 0", st.Evictions, st.Requests, st.InFlight)
	}
	if got := w.sim.Stats().Requests[simulator.OutcomeOK]; got != 3 {
		t.Errorf("the server answered %d calls; want 3", got)
	}
}

// A batch call is stopped at most once: a second question, arriving while
// the batch calls sent again run, waits for a slot instead.
func TestPoolEvictOnce(t *testing.T) {
	w := newEvictWorld(t, PriorityVLLM, time.Minute)
	b0, b1 := w.call(4, "b0?", 1000), w.call(4, "b1?", 1000)
	waitFor(t, "both batch calls run at the server", func() bool { return w.sim.Stats().InFlight == 2 })
	w.wait("first question", w.call(2, "q1?", 1))
	waitFor(t, "both batch calls run again", func() bool { return w.sim.Stats().InFlight == 2 && w.p.Stats()[0].InFlight == 2 })
	q2 := w.call(2, "q2?", 1)
	waitFor(t, "the second question waits for a slot", func() bool { return w.p.waiting() == 1 })
	if n := w.sim.Stats().Requests[simulator.OutcomeCanceled]; n != 2 {
		t.Errorf("the server dropped %d calls; want the first 2 only", n)
	}
	w.wait("second question", q2)
	w.wait("batch call b0", b0)
	w.wait("batch call b1", b1)
	if st := w.p.Stats()[0]; st.Evictions != 2 || st.Requests != 6 {
		t.Errorf("pool: %d evictions, %d requests; want 2 and 6", st.Evictions, st.Requests)
	}
}

// Nothing is stopped when eviction is off, when the calls are older than
// the window, or at a server not told priorities (a hosted API may bill
// a dropped call): there the question waits for a batch call to end.
func TestPoolEvictOnlyWhereAllowed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		form  ServerPriority
		evict time.Duration
	}{
		{"off", PriorityVLLM, 0},
		{"older than the window", PriorityVLLM, time.Nanosecond},
		{"server not told priorities", PriorityOff, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newEvictWorld(t, tc.form, tc.evict)
			b0, b1 := w.call(4, "b0?", 1000), w.call(4, "b1?", 1000)
			waitFor(t, "both batch calls run at the server", func() bool { return w.sim.Stats().InFlight == 2 })
			w.wait("question", w.call(2, "q?", 1))
			w.wait("batch call b0", b0)
			w.wait("batch call b1", b1)
			st := w.p.Stats()[0]
			if st.Evictions != 0 || st.Requests != 3 {
				t.Errorf("pool: %d evictions, %d requests; want 0 and 3", st.Evictions, st.Requests)
			}
			if n := w.sim.Stats().Requests[simulator.OutcomeCanceled]; n != 0 {
				t.Errorf("the server dropped %d calls; want none", n)
			}
		})
	}
}

// A caller that gives up on a call that was stopped gets its own error,
// and the call is not sent again.
func TestPoolEvictCallerGone(t *testing.T) {
	w := newEvictWorld(t, PriorityVLLM, time.Minute)
	ctx, cancel := context.WithCancel(WithPriority(context.Background(), Priority{Level: 4}))
	errc := make(chan error, 1)
	go func() {
		prompt := "<problem>b?</problem>\n<memory>No previous memory</memory>\n<section>" + strings.Repeat("word ", 1000) + "</section>"
		_, err := w.p.Complete(ctx, Request{Prompt: prompt, MaxTokens: 4})
		errc <- err
	}()
	waitFor(t, "the batch call runs at the server", func() bool { return w.sim.Stats().InFlight == 1 })
	q := w.call(2, "q?", 1)
	waitFor(t, "the batch call is stopped", func() bool { return w.p.Stats()[0].Evictions == 1 })
	cancel()
	select {
	case err := <-errc:
		if e, ok := err.(*Error); !ok || e.Kind != KindCanceled {
			t.Errorf("caller gone: %v; want a KindCanceled error", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the canceled call did not return")
	}
	w.wait("question", q)
	if st := w.p.Stats()[0]; st.Requests != 2 || st.InFlight != 0 {
		t.Errorf("pool: %d requests, %d in flight; want 2 and 0", st.Requests, st.InFlight)
	}
}
