package simulator_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/memagent"
)

// waitFor polls cond until it holds or ten seconds pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// finalPrompt is a final-answer prompt for question i.
func finalPrompt(i int) string {
	return memagent.DefaultTemplates().RenderFinal(fmt.Sprintf("Who built gate %d?", i), "Ada built the gate.")
}

// inBackground runs a completion of prompt that lasts until ctx ends or the
// simulator answers; its error is sent to errs.
func inBackground(ctx context.Context, wg *sync.WaitGroup, c *inference.Client, prompt string, errs chan<- error) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err := c.Complete(ctx, inference.Request{Prompt: prompt, MaxTokens: 50})
		errs <- err
	}()
}

func TestServiceTime(t *testing.T) {
	tests := []struct {
		name                     string
		opts                     simulator.Options
		prompt, completion, load int
		want                     time.Duration
	}{
		{"zero options are instantaneous", simulator.Options{}, 1000, 100, 1, 0},
		{"fixed latency only", simulator.Options{Latency: 30 * time.Millisecond}, 1000, 100, 1, 30 * time.Millisecond},
		{"prefill", simulator.Options{PrefillTokensPerSec: 1000}, 500, 100, 1, 500 * time.Millisecond},
		{"decode", simulator.Options{DecodeTokensPerSec: 50}, 500, 100, 1, 2 * time.Second},
		{"all three add up", simulator.Options{Latency: time.Second, PrefillTokensPerSec: 1000, DecodeTokensPerSec: 50}, 500, 100, 1, 3500 * time.Millisecond},
		{"slowdown ignored without neighbours", simulator.Options{DecodeTokensPerSec: 50, DecodeSlowdown: 0.5}, 0, 100, 1, 2 * time.Second},
		{"slowdown with three neighbours", simulator.Options{DecodeTokensPerSec: 50, DecodeSlowdown: 0.5}, 0, 100, 4, 5 * time.Second},
		{"slowdown leaves prefill alone", simulator.Options{PrefillTokensPerSec: 1000, DecodeSlowdown: 0.5}, 500, 100, 4, 500 * time.Millisecond},
		{"negative values are zero", simulator.Options{Latency: -time.Second, PrefillTokensPerSec: -1, DecodeTokensPerSec: -1}, 500, 100, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.opts.ServiceTime(tt.prompt, tt.completion, tt.load); got != tt.want {
				t.Errorf("ServiceTime(%d, %d, %d) = %s, want %s", tt.prompt, tt.completion, tt.load, got, tt.want)
			}
		})
	}
}

func TestLatencyGrowsWithTokens(t *testing.T) {
	opts := simulator.Options{Tokenizer: wordTokenizer{}, Latency: 5 * time.Millisecond, PrefillTokensPerSec: 2000, DecodeTokensPerSec: 200}
	sim, srv := startSimulator(t, opts)
	c := newClient(t, srv, simulator.DefaultModel)
	tmpl := memagent.DefaultTemplates()
	// Each row costs more than the one before: 200 more prompt words are
	// 100ms of prefill, 7 more completion words 35ms of decode.
	tests := []struct {
		name        string
		memoryWords int
		maxTokens   int
	}{
		{"short prompt, short answer", 0, 2},
		{"long prompt, short answer", 200, 2},
		{"long prompt, long answer", 200, 9},
	}
	var prev, sum time.Duration
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			memory := strings.Repeat("filler ", tt.memoryWords) + "Ada Byron built the gate."
			comp, err := c.Complete(context.Background(), inference.Request{Prompt: tmpl.RenderFinal("Who built the gate?", memory), MaxTokens: tt.maxTokens})
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			want := opts.ServiceTime(comp.PromptTokens, comp.CompletionTokens, 1)
			if want <= prev {
				t.Errorf("service time %s for %d+%d tokens, want more than the previous row's %s", want, comp.PromptTokens, comp.CompletionTokens, prev)
			}
			if comp.Latency < want || comp.Latency > want+2*time.Second {
				t.Errorf("latency %s, want at least %s and not much more", comp.Latency, want)
			}
			prev = want
			sum += want
		})
	}
	st := sim.Stats()
	if st.Latency.Count != len(tests) || st.Latency.Sum < sum {
		t.Errorf("latency histogram %d observations summing to %s, want %d summing to at least %s", st.Latency.Count, st.Latency.Sum, len(tests), sum)
	}
}

func TestSlotsAndQueue(t *testing.T) {
	tests := []struct {
		replicas, slots int
		wantLoad        []int
	}{
		{1, 4, []int{4}},
		{2, 2, []int{2, 2}},
		{4, 1, []int{1, 1, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d replicas × %d slots", tt.replicas, tt.slots), func(t *testing.T) {
			sim, srv := startSimulator(t, simulator.Options{Replicas: tt.replicas, Slots: tt.slots, Latency: time.Hour})
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
			waitFor(t, "the first four to take every slot", func() bool { return sim.Stats().InFlight == capacity })
			for i := capacity; i < n; i++ {
				inBackground(rest, &wg, c, finalPrompt(i), errs)
			}
			waitFor(t, "eight to queue", func() bool { return sim.Stats().Queued == n-capacity })
			st := sim.Stats()
			if st.Slots != capacity || st.InFlight != capacity || !slices.Equal(st.ReplicaInFlight, tt.wantLoad) || st.Open != n {
				t.Errorf("stats %+v, want %d slots all busy as %v and %d open", st, capacity, tt.wantLoad, n)
			}

			// The first four go away: four of the queue take their
			// slots, and the queue shrinks by as many.
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
			st = sim.Stats()
			if st.MaxInFlight != capacity || st.MaxQueued != n-capacity || st.InFlight != 0 || st.Queued != 0 || st.Requests[simulator.OutcomeCanceled] != n {
				t.Errorf("stats %+v: want at most %d in flight, %d queued at most, none left and %d canceled", st, capacity, n-capacity, n)
			}
			if calls := sim.Calls(); len(calls) != 0 {
				t.Errorf("got %d calls, want none recorded for requests whose client left", len(calls))
			}
		})
	}
}

func TestQueueIsFIFO(t *testing.T) {
	// One slot. A blocker whose 100000-word prompt would take 100s to
	// prefill holds it while three requests queue; it is then canceled and
	// the three, 60ms each, must be served in their order of arrival.
	sim, srv := startSimulator(t, simulator.Options{
		Slots: 1, Tokenizer: wordTokenizer{}, MaxModelLen: 200000, PrefillTokensPerSec: 1000,
	})
	c := newClient(t, srv, simulator.DefaultModel)
	tmpl := memagent.DefaultTemplates()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	blocker, cancelBlocker := context.WithCancel(context.Background())
	defer cancelBlocker()
	inBackground(blocker, &wg, c, tmpl.RenderFinal("Blocker?", strings.Repeat("w ", 100000)), errs)
	waitFor(t, "the blocker to take the slot", func() bool { return sim.Stats().InFlight == 1 })
	var want []string
	for i := range 3 {
		inBackground(context.Background(), &wg, c, finalPrompt(i), errs)
		waitFor(t, fmt.Sprintf("request %d to queue", i), func() bool { return sim.Stats().Queued == i+1 })
		want = append(want, fmt.Sprintf("Who built gate %d?", i))
	}
	cancelBlocker()
	wg.Wait()
	close(errs)
	canceled := 0
	for err := range errs {
		if err != nil {
			canceled++
		}
	}
	if canceled != 1 {
		t.Errorf("%d requests failed, want only the blocker", canceled)
	}
	var got []string
	for _, call := range sim.Calls() {
		got = append(got, call.Question)
	}
	if !slices.Equal(got, want) {
		t.Errorf("served %q, want %q", got, want)
	}
}

func TestQueueFull(t *testing.T) {
	sim, srv := startSimulator(t, simulator.Options{Slots: 1, MaxQueue: 2, Latency: time.Hour, RetryAfter: 2500 * time.Millisecond})
	c := newClient(t, srv, simulator.DefaultModel)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for i := range 3 {
		inBackground(ctx, &wg, c, finalPrompt(i), errs)
	}
	waitFor(t, "one in flight and two queued", func() bool { st := sim.Stats(); return st.InFlight == 1 && st.Queued == 2 })

	body := `{"messages":[{"role":"user","content":"<problem>q</problem>"}]}`
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "3" {
		t.Errorf("over the queue: status %d, Retry-After %q; want 503 and 3", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	status, v := post(t, srv.URL, body)
	inner, nested := v["error"].(map[string]any)
	if status != http.StatusServiceUnavailable || !nested || !strings.Contains(fmt.Sprint(inner["message"]), "queue is full") {
		t.Errorf("over the queue: %d %v, want 503 with a nested error saying the queue is full", status, v)
	}
	_, err = c.Complete(context.Background(), inference.Request{Prompt: finalPrompt(9), MaxTokens: 50})
	var e *inference.Error
	if !errors.As(err, &e) || e.Kind != inference.KindServer || e.RetryAfter != 3*time.Second || !e.Retryable() {
		t.Errorf("Complete over the queue: got %v (%+v), want a retryable server error with Retry-After 3s", err, e)
	}

	cancel()
	wg.Wait()
	waitFor(t, "every request to end", func() bool { return sim.Stats().Open == 0 })
	st := sim.Stats()
	if st.Requests[simulator.OutcomeQueueFull] != 3 || st.Requests[simulator.OutcomeCanceled] != 3 || st.MaxQueued != 2 {
		t.Errorf("requests %v, max queued %d; want 3 queue_full, 3 canceled and at most 2 queued", st.Requests, st.MaxQueued)
	}
}
