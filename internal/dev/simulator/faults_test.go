package simulator_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/secret"
)

// validBody is a chat completion request the simulator answers.
const validBody = `{"model":"memagent-simulator","messages":[{"role":"user","content":"<problem>Who built the gate?</problem><memory>Ada Byron built the gate.</memory>"}],"max_tokens":50}`

// observed is what a client saw of one response.
type observed struct {
	status     int
	retryAfter string
	body       []byte
}

func send(url, body string) (observed, error) {
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		return observed{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return observed{resp.StatusCode, resp.Header.Get("Retry-After"), b}, err
}

// kindOf names the fault a client saw, "" for a good answer.
func kindOf(o observed) simulator.FaultKind {
	switch o.status {
	case http.StatusTooManyRequests:
		return simulator.FaultRateLimited
	case http.StatusInternalServerError:
		return simulator.FaultServerError
	case http.StatusServiceUnavailable:
		return simulator.FaultUnavailable
	case http.StatusBadRequest:
		return simulator.FaultContextOverflow
	case http.StatusOK:
		if !json.Valid(o.body) {
			return simulator.FaultMalformed
		}
		return ""
	}
	return simulator.FaultKind(http.StatusText(o.status))
}

func TestFaultRates(t *testing.T) {
	const n = 2000
	perKind := map[simulator.FaultKind]float64{
		simulator.FaultRateLimited: 0.05, simulator.FaultServerError: 0.10, simulator.FaultUnavailable: 0.05,
		simulator.FaultSlow: 0.05, simulator.FaultMalformed: 0.05, simulator.FaultContextOverflow: 0.05,
	}
	everyTransient := map[simulator.FaultKind]float64{
		simulator.FaultRateLimited: 0.04, simulator.FaultServerError: 0.04, simulator.FaultUnavailable: 0.04,
		simulator.FaultSlow: 0.04, simulator.FaultMalformed: 0.04, simulator.FaultContextOverflow: 0,
	}
	tests := []struct {
		name string
		opts simulator.Options
		want map[simulator.FaultKind]float64
	}{
		{"per kind", simulator.Options{Faults: simulator.Faults{
			RateLimited: 0.05, ServerError: 0.10, Unavailable: 0.05, Slow: 0.05, Malformed: 0.05, ContextOverflow: 0.05,
			Seed: 7, SlowDelay: time.Millisecond,
		}}, perKind},
		{"FaultRate 0.2 over every transient kind", simulator.Options{FaultRate: 0.2, Faults: simulator.Faults{Seed: 11, SlowDelay: time.Millisecond}}, everyTransient},
		{"FaultRate adds to a kind", simulator.Options{FaultRate: 0.1, Faults: simulator.Faults{ServerError: 0.1, Seed: 3, SlowDelay: time.Millisecond}}, map[simulator.FaultKind]float64{
			simulator.FaultRateLimited: 0.02, simulator.FaultServerError: 0.12, simulator.FaultUnavailable: 0.02,
			simulator.FaultSlow: 0.02, simulator.FaultMalformed: 0.02, simulator.FaultContextOverflow: 0,
		}},
		{"no faults by default", simulator.Options{}, map[simulator.FaultKind]float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.RetryAfter = 4 * time.Second
			sim, srv := startSimulator(t, tt.opts)
			seen := make(map[simulator.FaultKind]int)
			var mu sync.Mutex
			var wg sync.WaitGroup
			jobs := make(chan int)
			for range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range jobs {
						o, err := send(srv.URL, validBody)
						if err != nil {
							t.Errorf("POST: %v", err)
							continue
						}
						k := kindOf(o)
						if (k == simulator.FaultRateLimited || k == simulator.FaultUnavailable) && o.retryAfter != "4" {
							t.Errorf("%s: Retry-After %q, want 4", k, o.retryAfter)
						}
						mu.Lock()
						seen[k]++
						mu.Unlock()
					}
				}()
			}
			for i := range n {
				jobs <- i
			}
			close(jobs)
			wg.Wait()

			st := sim.Stats()
			injected := 0
			for _, k := range []simulator.FaultKind{simulator.FaultRateLimited, simulator.FaultServerError, simulator.FaultUnavailable,
				simulator.FaultSlow, simulator.FaultMalformed, simulator.FaultContextOverflow} {
				p, got := tt.want[k], st.Faults[k]
				injected += got
				if tol := 4*math.Sqrt(n*p*(1-p)) + 1; math.Abs(float64(got)-n*p) > tol {
					t.Errorf("%s: %d of %d injected, want %.0f ± %.0f", k, got, n, n*p, tol)
				}
				if k == simulator.FaultSlow {
					continue // a slow answer looks good to the client
				}
				if seen[k] != got {
					t.Errorf("%s: clients saw %d, Stats counted %d", k, seen[k], got)
				}
				if r := st.Requests["fault_"+string(k)]; r != got {
					t.Errorf("%s: requests outcome %d, faults %d; want equal", k, r, got)
				}
			}
			if ok := st.Requests[simulator.OutcomeOK]; ok+injected != n || seen[""] != ok+st.Faults[simulator.FaultSlow] {
				t.Errorf("%d ok and %d faults of %d requests, clients saw %d good answers", ok, injected, n, seen[""])
			}
		})
	}
}

func TestFaultsDoNotChangeAnswers(t *testing.T) {
	_, clean := startSimulator(t, simulator.Options{})
	want, err := send(clean.URL, validBody)
	if err != nil || want.status != http.StatusOK {
		t.Fatalf("clean simulator: %d %v", want.status, err)
	}
	var wantResp struct {
		Choices []struct{ Message struct{ Content string } }
	}
	if err := json.Unmarshal(want.body, &wantResp); err != nil {
		t.Fatalf("decode: %v", err)
	}

	_, srv := startSimulator(t, simulator.Options{FaultRate: 0.5, Faults: simulator.Faults{ContextOverflow: 0.2, SlowDelay: time.Millisecond}})
	good := 0
	for range 200 {
		o, err := send(srv.URL, validBody)
		if err != nil {
			t.Fatalf("POST: %v", err)
		}
		if kindOf(o) != "" {
			continue
		}
		good++
		var got struct {
			Choices []struct{ Message struct{ Content string } }
		}
		if err := json.Unmarshal(o.body, &got); err != nil || got.Choices[0].Message.Content != wantResp.Choices[0].Message.Content {
			t.Fatalf("answer %q (%v) after faults, want %q", o.body, err, wantResp.Choices[0].Message.Content)
		}
	}
	if good == 0 || good == 200 {
		t.Errorf("%d good answers of 200, want some but not all", good)
	}
}

func TestFaultBodiesParse(t *testing.T) {
	prompt := memagent.DefaultTemplates().RenderFinal("Who built the gate?", "Ada built the gate.")
	tests := []struct {
		name      string
		faults    simulator.Faults
		wantKind  inference.ErrorKind
		wantRetry time.Duration
	}{
		{"429", simulator.Faults{RateLimited: 1}, inference.KindRateLimited, 2 * time.Second},
		{"500", simulator.Faults{ServerError: 1}, inference.KindServer, 0},
		{"503", simulator.Faults{Unavailable: 1}, inference.KindServer, 2 * time.Second},
		{"context overflow", simulator.Faults{ContextOverflow: 1}, inference.KindPromptTooLong, 0},
	}
	shapes := []struct {
		name  string
		shape simulator.ErrorShape
	}{{"nested", simulator.ShapeNested}, {"flat", simulator.ShapeFlat}}
	for _, tt := range tests {
		for _, sh := range shapes {
			t.Run(tt.name+" "+sh.name, func(t *testing.T) {
				f := tt.faults
				f.Shape = sh.shape
				_, srv := startSimulator(t, simulator.Options{Faults: f, RetryAfter: 2 * time.Second})

				_, v := post(t, srv.URL, validBody)
				if _, nested := v["error"].(map[string]any); nested != (sh.shape == simulator.ShapeNested) {
					t.Errorf("body %v: nested = %v, want %v", v, nested, sh.shape == simulator.ShapeNested)
				}
				if sh.shape == simulator.ShapeFlat && v["object"] != "error" {
					t.Errorf("flat body %v: object = %v, want error", v, v["object"])
				}

				_, err := newClient(t, srv, simulator.DefaultModel).Complete(context.Background(), inference.Request{Prompt: prompt, MaxTokens: 50})
				var e *inference.Error
				if !errors.As(err, &e) || e.Kind != tt.wantKind || e.RetryAfter != tt.wantRetry {
					t.Fatalf("Complete: got %v (%+v), want kind %s with Retry-After %s", err, e, tt.wantKind, tt.wantRetry)
				}
				if !strings.Contains(e.Message, "injected fault") {
					t.Errorf("message %q does not say the fault was injected", e.Message)
				}
				if tt.wantKind == inference.KindPromptTooLong && !strings.Contains(e.Message, "maximum context length is 32768 tokens") {
					t.Errorf("message %q does not give the context length", e.Message)
				}
			})
		}
	}
}

func TestErrorShapeChoice(t *testing.T) {
	tests := []struct {
		name   string
		faults simulator.Faults
		want   []bool // nested?
	}{
		{"alternate by default", simulator.Faults{ServerError: 1}, []bool{true, false, true, false}},
		{"random, all flat", simulator.Faults{ServerError: 1, Shape: simulator.ShapeRandom, FlatShare: 1}, []bool{false, false, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := startSimulator(t, simulator.Options{Faults: tt.faults})
			for i, want := range tt.want {
				_, v := post(t, srv.URL, validBody)
				if _, nested := v["error"].(map[string]any); nested != want {
					t.Errorf("error %d: body %v, nested = %v, want %v", i, v, nested, want)
				}
			}
		})
	}
}

func TestMalformedAndSlowFaults(t *testing.T) {
	prompt := memagent.DefaultTemplates().RenderFinal("Who built the gate?", "Ada built the gate.")

	t.Run("malformed is a retryable error", func(t *testing.T) {
		_, srv := startSimulator(t, simulator.Options{Faults: simulator.Faults{Malformed: 1}})
		o, err := send(srv.URL, validBody)
		if err != nil || o.status != http.StatusOK || json.Valid(o.body) || !strings.HasPrefix(string(o.body), `{"id":"chatcmpl-sim-`) {
			t.Errorf("got %d %q (%v), want 200 with a truncated completion", o.status, o.body, err)
		}
		_, err = newClient(t, srv, simulator.DefaultModel).Complete(context.Background(), inference.Request{Prompt: prompt, MaxTokens: 50})
		var e *inference.Error
		if !errors.As(err, &e) || !e.Retryable() {
			t.Errorf("Complete: got %v, want a retryable error", err)
		}
	})

	t.Run("slow outlasts the client and frees its slot", func(t *testing.T) {
		sim, srv := startSimulator(t, simulator.Options{Slots: 1, Faults: simulator.Faults{Slow: 1}})
		c, err := inference.New(inference.Config{BaseURL: secret.Endpoint(srv.URL + "/v1"), Model: simulator.DefaultModel, RequestTimeout: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Complete(context.Background(), inference.Request{Prompt: prompt, MaxTokens: 50})
		var e *inference.Error
		if !errors.As(err, &e) || e.Kind != inference.KindTimeout {
			t.Fatalf("Complete: got %v, want a timeout", err)
		}
		waitFor(t, "the slot to be freed", func() bool { return sim.Stats().Open == 0 })
		st := sim.Stats()
		if st.Faults[simulator.FaultSlow] != 1 || st.InFlight != 0 || st.Latency.Count != 0 || len(sim.Calls()) != 0 {
			t.Errorf("stats %+v, %d calls: want one slow fault, the slot free and nothing recorded", st, len(sim.Calls()))
		}
	})

	t.Run("slow answers when the client waits", func(t *testing.T) {
		sim, srv := startSimulator(t, simulator.Options{Faults: simulator.Faults{Slow: 1, SlowDelay: 30 * time.Millisecond}})
		comp, err := newClient(t, srv, simulator.DefaultModel).Complete(context.Background(), inference.Request{Prompt: prompt, MaxTokens: 50})
		if err != nil || comp.Latency < 30*time.Millisecond || memagent.ExtractAnswer(comp.Text).Text != "Ada" {
			t.Errorf("Complete: %+v, %v; want Ada after at least 30ms", comp, err)
		}
		if st := sim.Stats(); st.Requests["fault_slow"] != 1 || st.Requests[simulator.OutcomeOK] != 0 || st.Latency.Count != 1 {
			t.Errorf("requests %v, %d latencies; want one fault_slow that was answered", st.Requests, st.Latency.Count)
		}
	})
}

func TestFailAll(t *testing.T) {
	prompt := memagent.DefaultTemplates().RenderFinal("Who built the gate?", "Ada built the gate.")

	t.Run("one of three pool members always fails", func(t *testing.T) {
		var sims []*simulator.Server
		var clients []*inference.Client
		for _, failAll := range []int{0, 503, 0} {
			sim, srv := startSimulator(t, simulator.Options{FailAll: failAll})
			sims = append(sims, sim)
			clients = append(clients, newClient(t, srv, simulator.DefaultModel))
		}
		for i, c := range clients {
			for range 3 {
				_, err := c.Complete(context.Background(), inference.Request{Prompt: prompt, MaxTokens: 50})
				if gotFail := err != nil; gotFail != (i == 1) {
					t.Errorf("member %d: Complete: %v, want failure %v", i, err, i == 1)
				}
			}
		}
		if st := sims[1].Stats(); st.Requests[simulator.OutcomeFailAll] != 3 || len(sims[1].Calls()) != 0 {
			t.Errorf("failing member: requests %v, want 3 fail_all and no calls", st.Requests)
		}
	})

	tests := []struct {
		status    int
		wantKind  inference.ErrorKind
		wantRetry time.Duration
	}{
		{503, inference.KindServer, time.Second},
		{500, inference.KindServer, 0},
		{429, inference.KindRateLimited, time.Second},
		{400, inference.KindBadRequest, 0},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			_, srv := startSimulator(t, simulator.Options{FailAll: tt.status})
			_, err := newClient(t, srv, simulator.DefaultModel).Complete(context.Background(), inference.Request{Prompt: prompt, MaxTokens: 50})
			var e *inference.Error
			if !errors.As(err, &e) || e.StatusCode != tt.status || e.Kind != tt.wantKind || e.RetryAfter != tt.wantRetry {
				t.Errorf("Complete: got %v (%+v), want %d %s with Retry-After %s", err, e, tt.status, tt.wantKind, tt.wantRetry)
			}
			// The rest of the server stays up.
			for _, path := range []string{"/health", "/v1/models", "/metrics"} {
				resp, err := http.Get(srv.URL + path)
				if err != nil {
					t.Fatalf("GET %s: %v", path, err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("GET %s = %d, want 200", path, resp.StatusCode)
				}
			}
		})
	}
}
