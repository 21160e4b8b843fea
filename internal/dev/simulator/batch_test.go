package simulator_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/memagent"
)

// updatePrompt is a memory-update prompt whose answer is some 30 words.
func updatePrompt(i int) string {
	return memagent.DefaultTemplates().RenderUpdate("Who built the gate?", memagent.InitialMemory,
		fmt.Sprintf("Worker %d built the gate at dawn with stones from the river, and the gate has stood since the winter of the great flood, guarded by the builders of the northern quarter.", i))
}

func TestBatchAnswersLikeSlots(t *testing.T) {
	const n = 12
	answers := func(opts simulator.Options) ([]string, *simulator.Server, string) {
		sim, srv := startSimulator(t, opts)
		c := newClient(t, srv, simulator.DefaultModel)
		out := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				comp, err := c.Complete(context.Background(), inference.Request{Prompt: updatePrompt(i), MaxTokens: 50})
				if err != nil {
					t.Errorf("Complete %d: %v", i, err)
					return
				}
				out[i] = comp.Text
			})
		}
		wg.Wait()
		return out, sim, srv.URL
	}
	want, _, _ := answers(simulator.Options{Tokenizer: wordTokenizer{}})
	got, sim, url := answers(simulator.Options{Tokenizer: wordTokenizer{}, Capacity: simulator.CapacityBatch, Replicas: 2,
		Batch: simulator.BatchOptions{MaxNumSeqs: 4, StepBase: time.Millisecond, StepPerSeq: time.Millisecond, PrefillTokensPerSec: 1e6}})
	if !slices.Equal(got, want) {
		t.Errorf("batch answers %q, want the slot mode's %q", got, want)
	}
	st := sim.Stats()
	if st.Slots != 8 || st.MaxInFlight > 8 || st.Requests[simulator.OutcomeOK] != n || st.Latency.Count != n {
		t.Errorf("stats %+v: want 8 slots, at most 8 in flight and %d answered", st, n)
	}
	// Each request needs one step per completion token at least, and
	// every step costs at least StepBase plus a sequence.
	if len(st.ReplicaBusy) != 2 || st.Steps == 0 || st.ReplicaBusy[0]+st.ReplicaBusy[1] < time.Duration(st.Steps)*2*time.Millisecond {
		t.Errorf("busy %v over %d steps, want two replicas busy at least 2ms a step", st.ReplicaBusy, st.Steps)
	}
	m := scrape(t, url)
	busy := m[`memagent_sim_replica_busy_seconds_total{replica="0"}`] + m[`memagent_sim_replica_busy_seconds_total{replica="1"}`]
	if m["memagent_sim_batch_steps_total"] != float64(st.Steps) || busy != st.ReplicaBusy[0].Seconds()+st.ReplicaBusy[1].Seconds() || m["memagent_sim_slots"] != 8 {
		t.Errorf("metrics show %v steps, %v s busy, %v slots; want %d, %v, 8", m["memagent_sim_batch_steps_total"], busy, m["memagent_sim_slots"], st.Steps, st.ReplicaBusy)
	}
}

func TestBatchSlotsAndQueue(t *testing.T) {
	// Steps of an hour: admitted requests stay in the batch, the rest
	// queue, and cancellations move the queue up as in the slot mode.
	sim, srv := startSimulator(t, simulator.Options{Capacity: simulator.CapacityBatch, Replicas: 2, Batch: simulator.BatchOptions{MaxNumSeqs: 2, StepBase: time.Hour}})
	c := newClient(t, srv, simulator.DefaultModel)
	const n, capacity = 12, 4
	errs := make(chan error, n)
	var wg sync.WaitGroup
	first, cancelFirst := context.WithCancel(context.Background())
	rest, cancelRest := context.WithCancel(context.Background())
	defer cancelRest()
	for i := range capacity {
		inBackground(first, &wg, c, finalPrompt(i), errs)
	}
	waitFor(t, "the first four to fill both batches", func() bool { return sim.Stats().InFlight == capacity })
	for i := capacity; i < n; i++ {
		inBackground(rest, &wg, c, finalPrompt(i), errs)
	}
	waitFor(t, "eight to queue", func() bool { return sim.Stats().Queued == n-capacity })
	if st := sim.Stats(); st.Slots != capacity || !slices.Equal(st.ReplicaInFlight, []int{2, 2}) {
		t.Errorf("stats %+v, want %d slots busy as [2 2]", st, capacity)
	}
	cancelFirst()
	waitFor(t, "the queue to move up", func() bool { st := sim.Stats(); return st.Queued == n-2*capacity && st.InFlight == capacity })
	cancelRest()
	wg.Wait()
	close(errs)
	for err := range errs {
		var e *inference.Error
		if !errors.As(err, &e) || e.Kind != inference.KindCanceled {
			t.Errorf("Complete: got %v, want canceled", err)
		}
	}
	waitFor(t, "every request to end", func() bool { return sim.Stats().Open == 0 })
	st := sim.Stats()
	if st.MaxInFlight != capacity || st.Requests[simulator.OutcomeCanceled] != n || st.Steps != 0 || len(sim.Calls()) != 0 {
		t.Errorf("stats %+v, %d calls: want at most %d in flight, %d canceled, no step finished and no call recorded", st, len(sim.Calls()), capacity, n)
	}
}

// TestBatchingSharesSteps compares, in wall time, eight requests sent at
// once with one alone, on a replica whose steps cost the same whatever
// they hold: batched, the eight take about as long as one (a slot-mode
// replica with one slot would take eight times as long).
func TestBatchingSharesSteps(t *testing.T) {
	_, srv := startSimulator(t, simulator.Options{Tokenizer: wordTokenizer{}, Capacity: simulator.CapacityBatch,
		Batch: simulator.BatchOptions{StepBase: 10 * time.Millisecond, StepPerSeq: -1, PrefillTokensPerSec: 1e9}})
	c := newClient(t, srv, simulator.DefaultModel)
	call := func(i int) (int, error) {
		comp, err := c.Complete(context.Background(), inference.Request{Prompt: updatePrompt(i), MaxTokens: 50})
		return comp.CompletionTokens, err
	}
	start := time.Now()
	tokens, err := call(0)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	alone := time.Since(start)
	if tokens < 10 {
		t.Fatalf("%d completion tokens, want at least 10 for the steps to dominate", tokens)
	}
	if alone < time.Duration(tokens)*10*time.Millisecond {
		t.Errorf("one request of %d tokens took %s, want at least one 10ms step a token", tokens, alone)
	}
	start = time.Now()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if _, err := call(i); err != nil {
				t.Errorf("Complete: %v", err)
			}
		})
	}
	wg.Wait()
	if together := time.Since(start); together > 3*alone {
		t.Errorf("eight requests at once took %s, one alone %s: want under 3× (ideally 1×)", together, alone)
	}
}
