package inference

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/secret"
)

// fakeServer is a minimal OpenAI-compatible server whose answers a test
// can change while it runs. It counts the completions it receives and the
// most it has had in flight at once.
type fakeServer struct {
	name string
	srv  *httptest.Server
	gate chan struct{} // when non-nil, completions wait for it to close

	mu           sync.Mutex
	status       int // of completions; 0 means 200
	retryAfter   string
	healthStatus int // of /health; 0 means 200
	modelID      string
	maxLen       int

	hits, healthHits, modelHits atomic.Int64
	cur, peak                   atomic.Int64
}

// newFakeServer starts a server; gated servers hold every completion until
// release is called or the test ends.
func newFakeServer(t *testing.T, name string, gated bool) *fakeServer {
	t.Helper()
	f := &fakeServer{name: name, modelID: "m", maxLen: 8192}
	if gated {
		f.gate = make(chan struct{})
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	if gated {
		t.Cleanup(f.release) // runs before srv.Close
	}
	return f
}

func (f *fakeServer) url() string { return f.srv.URL + "/v1" }

func (f *fakeServer) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.gate:
	default:
		close(f.gate)
	}
}

func (f *fakeServer) set(fn func(f *fakeServer)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	status, retryAfter, healthStatus, modelID, maxLen := f.status, f.retryAfter, f.healthStatus, f.modelID, f.maxLen
	f.mu.Unlock()
	switch r.URL.Path {
	case "/health":
		f.healthHits.Add(1)
		w.WriteHeader(max(healthStatus, 200))
	case "/v1/models":
		f.modelHits.Add(1)
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []map[string]any{{"id": modelID, "object": "model", "max_model_len": maxLen}}})
	case "/v1/chat/completions":
		io.Copy(io.Discard, r.Body)
		f.hits.Add(1)
		n := f.cur.Add(1)
		for p := f.peak.Load(); n > p && !f.peak.CompareAndSwap(p, n); p = f.peak.Load() {
		}
		if f.gate != nil {
			select {
			case <-f.gate:
			case <-r.Context().Done():
			}
		}
		// Leave before answering: the client frees its slot as soon as
		// it has the answer, and may send the next request at once.
		f.cur.Add(-1)
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		if status != 0 && status != 200 {
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"object":"error","message":"%s says %d","code":%d}`, f.name, status, status)
			return
		}
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":4}}}`, f.name)
	default:
		http.NotFound(w, r)
	}
}

// closedURL returns a base URL where nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/v1"
}

// newTestPool builds a pool over urls with the health checker off and a
// long ejection, so that nothing changes behind a test's back.
func newTestPool(t *testing.T, maxInFlight int, mod func(*PoolConfig), urls ...string) *Pool {
	t.Helper()
	cfg := PoolConfig{Model: "m", HealthInterval: -1, EjectFor: time.Hour, Logger: slog.New(slog.DiscardHandler)}
	for _, u := range urls {
		cfg.Endpoints = append(cfg.Endpoints, EndpointConfig{BaseURL: secret.Endpoint(u), APIKey: "sk-pool-test", MaxInFlight: maxInFlight})
	}
	if mod != nil {
		mod(&cfg)
	}
	p, err := NewPool(cfg)
	if err != nil {
		t.Fatalf("NewPool: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// waitFor polls cond until it holds, failing the test after a deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func (p *Pool) waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waiters.Len()
}

func TestParseEndpoints(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr string
	}{
		{"one", "http://gpu-1:8000/v1", []string{"http://gpu-1:8000/v1"}, ""},
		{"several with spaces", " http://gpu-1:8000/v1 ,http://gpu-2:8000/v1,  https://gpu-3/v1/ ", []string{"http://gpu-1:8000/v1", "http://gpu-2:8000/v1", "https://gpu-3/v1"}, ""},
		{"trailing and doubled commas", "http://a/v1,,http://b/v1,", []string{"http://a/v1", "http://b/v1"}, ""},
		{"empty", "", nil, "OPENAI_BASE_URL is empty"},
		{"only commas", " , ,", nil, "OPENAI_BASE_URL is empty"},
		{"bare host", "http://a/v1,gpu-2:8000", nil, "OPENAI_BASE_URL entry 2"},
		{"wrong scheme", "ftp://a/v1", nil, "OPENAI_BASE_URL entry 1"},
		{"unparsable", "http://[::1", nil, "OPENAI_BASE_URL entry 1"},
		{"duplicate", "http://a/v1, http://a/v1/", nil, "OPENAI_BASE_URL lists http://a/v1 twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseEndpoints(tt.in, "key", 8)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseEndpoints(%q): got %v, %v; want an error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseEndpoints(%q): %v", tt.in, err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("ParseEndpoints(%q) = %+v, want URLs %v", tt.in, got, tt.want)
			}
			for i, ep := range got {
				if want := (EndpointConfig{BaseURL: secret.Endpoint(tt.want[i]), APIKey: "key", MaxInFlight: 8}); ep != want {
					t.Errorf("endpoint %d = %+v, want %+v", i, ep, want)
				}
			}
		})
	}
	if _, err := ParseEndpoints("http://a/v1", "", -1); err == nil {
		t.Errorf("ParseEndpoints with max in-flight -1: got no error, want one")
	}
}

func TestNewPoolValidates(t *testing.T) {
	tests := []struct {
		name    string
		cfg     PoolConfig
		wantErr string
	}{
		{"no endpoints", PoolConfig{}, "no model endpoints"},
		{"bad URL", PoolConfig{Endpoints: []EndpointConfig{{BaseURL: "gpu-1:8000"}}}, "endpoint 1"},
		{"negative cap", PoolConfig{Endpoints: []EndpointConfig{{BaseURL: "http://a/v1", MaxInFlight: -2}}}, "negative"},
		{"duplicate", PoolConfig{Endpoints: []EndpointConfig{{BaseURL: "http://a/v1"}, {BaseURL: "http://a/v1/"}}}, "twice"},
		{"negative eject", PoolConfig{Endpoints: []EndpointConfig{{BaseURL: "http://a/v1"}}, EjectFor: -time.Second}, "negative"},
		{"negative timeout", PoolConfig{Endpoints: []EndpointConfig{{BaseURL: "http://a/v1"}}, RequestTimeout: -time.Second}, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewPool(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("NewPool: got %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}

	p, err := NewPool(PoolConfig{Endpoints: []EndpointConfig{{BaseURL: "http://a/v1"}, {BaseURL: "http://user:secret@b/v1", MaxInFlight: 3}}})
	if err != nil {
		t.Fatalf("NewPool: %v", err)
	}
	defer p.Close()
	if got, want := p.Capacity(), DefaultMaxInFlight+3; got != want {
		t.Errorf("Capacity() = %d, want %d", got, want)
	}
	if p.ejectFor != DefaultEjectFor || p.healthInterval != DefaultHealthInterval {
		t.Errorf("defaults: eject %s health %s, want %s and %s", p.ejectFor, p.healthInterval, DefaultEjectFor, DefaultHealthInterval)
	}
	stats := p.Stats()
	if stats[0].MaxInFlight != DefaultMaxInFlight || stats[1].MaxInFlight != 3 || strings.Contains(stats[1].URL, "secret") {
		t.Errorf("Stats() = %+v, want caps %d and 3 and no password", stats, DefaultMaxInFlight)
	}
	for _, ep := range p.endpoints {
		if ep.client.http.Transport.(*recordingTransport).base != p.endpoints[0].client.http.Transport.(*recordingTransport).base {
			t.Errorf("endpoint %s has its own transport, want one shared by the pool", ep.url)
		}
	}
}

func TestPoolCompletePassesResultAndErrorThrough(t *testing.T) {
	ok := newFakeServer(t, "ok", false)
	p := newTestPool(t, 4, nil, ok.url())
	got, err := p.Complete(context.Background(), Request{Prompt: "p", MaxTokens: 8})
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	got.Latency = 0
	if want := (Completion{Text: "ok", Model: "m", FinishReason: "stop", PromptTokens: 10, CompletionTokens: 2, CachedTokens: 4}); got != want {
		t.Errorf("Complete = %+v, want %+v", got, want)
	}

	_, err = p.Complete(context.Background(), Request{Prompt: "p", MaxTokens: -1})
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindBadRequest {
		t.Errorf("invalid request: got %v, want a bad_request *Error", err)
	}

	ok.set(func(f *fakeServer) { f.status = 401 })
	_, err = p.Complete(context.Background(), Request{Prompt: "p"})
	if !errors.As(err, &e) || e.Kind != KindAuth || e.StatusCode != 401 || !strings.Contains(e.Message, "ok says 401") {
		t.Errorf("401: got %v, want the endpoint's auth *Error unchanged", err)
	}
	if s := p.Stats()[0]; s.Requests != 2 || s.Failures != 0 || !s.Ejected.IsZero() {
		t.Errorf("Stats() = %+v, want 2 requests (the invalid one never sent), no failures, not ejected after a 401", s)
	}
}

func TestPoolNeverExceedsMaxInFlight(t *testing.T) {
	const perEndpoint, callers = 4, 200
	servers := []*fakeServer{newFakeServer(t, "a", true), newFakeServer(t, "b", true), newFakeServer(t, "c", true)}
	p := newTestPool(t, perEndpoint, nil, servers[0].url(), servers[1].url(), servers[2].url())

	var wg sync.WaitGroup
	var failed atomic.Int64
	for range callers {
		wg.Go(func() {
			if _, err := p.Complete(context.Background(), Request{Prompt: "p"}); err != nil {
				failed.Add(1)
				t.Errorf("Complete: %v", err)
			}
		})
	}
	// Every slot fills and everyone else queues.
	waitFor(t, "every endpoint is full and the rest wait", func() bool {
		var n int64
		for _, s := range servers {
			n += s.cur.Load()
		}
		return n == 3*perEndpoint && p.waiting() == callers-3*perEndpoint
	})
	for i, s := range p.Stats() {
		if s.InFlight != perEndpoint {
			t.Errorf("endpoint %d in flight = %d, want %d", i, s.InFlight, perEndpoint)
		}
	}
	for _, s := range servers {
		s.release()
	}
	wg.Wait()

	var total int64
	for _, s := range servers {
		if peak := s.peak.Load(); peak != perEndpoint {
			t.Errorf("server %s peak concurrency = %d, want exactly %d", s.name, peak, perEndpoint)
		}
		total += s.hits.Load()
	}
	if total != callers || failed.Load() != 0 {
		t.Errorf("servers saw %d requests with %d failures, want %d and 0", total, failed.Load(), callers)
	}
	for i, s := range p.Stats() {
		if s.InFlight != 0 {
			t.Errorf("endpoint %d still has %d in flight", i, s.InFlight)
		}
	}
}

func TestPoolSpreadsLoadEvenly(t *testing.T) {
	const callers, each = 30, 20
	servers := []*fakeServer{newFakeServer(t, "a", false), newFakeServer(t, "b", false), newFakeServer(t, "c", false)}
	p := newTestPool(t, 8, nil, servers[0].url(), servers[1].url(), servers[2].url())
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for range each {
				if _, err := p.Complete(context.Background(), Request{Prompt: "p"}); err != nil {
					t.Errorf("Complete: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	const total = callers * each
	for _, s := range servers {
		// An even share is 200; 120 and 280 are about seven standard
		// deviations of a fair random split away.
		if n := s.hits.Load(); n < total/5 || n > total*7/15 {
			t.Errorf("server %s got %d of %d requests, want roughly a third", s.name, n, total)
		}
	}
}

func TestPoolEjectsFailingEndpoint(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		wantKind ErrorKind
		wantHits int64 // requests the bad endpoint sees before it is ejected
	}{
		{"503 ejects at once", 503, KindServer, 1},
		{"429 ejects at once", 429, KindRateLimited, 1},
		{"500 ejects after three in a row", 500, KindServer, ejectAfterFailures},
		{"504 ejects after three in a row", 504, KindServer, ejectAfterFailures},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			good1, bad, good2 := newFakeServer(t, "good1", false), newFakeServer(t, "bad", false), newFakeServer(t, "good2", false)
			bad.set(func(f *fakeServer) { f.status = tt.status })
			p := newTestPool(t, 4, func(c *PoolConfig) { c.EjectFor = time.Minute }, good1.url(), bad.url(), good2.url())

			var errs int64
			for range 100 {
				_, err := p.Complete(context.Background(), Request{Prompt: "p"})
				if err == nil {
					continue
				}
				errs++
				var e *Error
				if !errors.As(err, &e) || e.Kind != tt.wantKind || e.StatusCode != tt.status || !strings.Contains(e.Message, "bad says") {
					t.Errorf("Complete: got %v, want the endpoint's %s error (HTTP %d) unchanged", err, tt.wantKind, tt.status)
				}
			}
			if got := bad.hits.Load(); got != tt.wantHits || errs != got {
				t.Errorf("bad endpoint saw %d requests and callers %d errors, want %d of each", got, errs, tt.wantHits)
			}
			s := p.Stats()[1]
			if s.Ejected.IsZero() || s.Failures != tt.wantHits {
				t.Errorf("bad endpoint stats = %+v, want ejected with %d failures", s, tt.wantHits)
			}
			if got := good1.hits.Load() + good2.hits.Load(); got != 100-tt.wantHits {
				t.Errorf("good endpoints saw %d requests, want %d", got, 100-tt.wantHits)
			}
		})
	}
}

func TestPoolEjectsUnreachableEndpoint(t *testing.T) {
	good := newFakeServer(t, "good", false)
	dead := closedURL(t)
	p := newTestPool(t, 4, func(c *PoolConfig) { c.EjectFor = time.Minute }, dead, good.url())

	var first error
	for i := 0; first == nil && i < 200; i++ {
		_, first = p.Complete(context.Background(), Request{Prompt: "p"})
	}
	var e *Error
	if !errors.As(first, &e) || e.Kind != KindConnection {
		t.Fatalf("first failure: got %v, want a connection *Error", first)
	}
	s := p.Stats()[0]
	if left := time.Until(s.Ejected); left < 50*time.Second || left > time.Minute {
		t.Errorf("unreachable endpoint ejected for %s more, want about a minute (stats %+v)", left, s)
	}
	for range 50 {
		if _, err := p.Complete(context.Background(), Request{Prompt: "p"}); err != nil {
			t.Fatalf("Complete after ejection: %v", err)
		}
	}
}

func TestPoolRetryAfterExtendsEjection(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		retryAfter string
		min, max   time.Duration
	}{
		{"429 retry after 120s", 429, "120", 110 * time.Second, 120 * time.Second},
		{"503 retry after 30s", 503, "30", 25 * time.Second, 30 * time.Second},
		{"503 without header", 503, "", 9 * time.Second, 10 * time.Second},
		{"retry after shorter than eject time", 429, "1", 9 * time.Second, 10 * time.Second},
		{"retry after capped", 429, "86400", 4 * time.Minute, maxRetryAfterEject},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := newFakeServer(t, "bad", false)
			bad.set(func(f *fakeServer) { f.status, f.retryAfter = tt.status, tt.retryAfter })
			p := newTestPool(t, 4, func(c *PoolConfig) { c.EjectFor = 10 * time.Second }, bad.url())
			before := time.Now()
			if _, err := p.Complete(context.Background(), Request{Prompt: "p"}); err == nil {
				t.Fatal("Complete: got no error, want one")
			}
			until := p.Stats()[0].Ejected
			if until.IsZero() {
				t.Fatal("endpoint not ejected")
			}
			if d := until.Sub(before); d < tt.min || d > tt.max+time.Second {
				t.Errorf("ejected for %s, want between %s and %s", d, tt.min, tt.max)
			}
		})
	}
}

func TestPoolReinstatesAfterEjectFor(t *testing.T) {
	flaky, good := newFakeServer(t, "flaky", false), newFakeServer(t, "good", false)
	flaky.set(func(f *fakeServer) { f.status = 503 })
	p := newTestPool(t, 4, func(c *PoolConfig) { c.EjectFor = 20 * time.Millisecond }, flaky.url(), good.url())

	for i := 0; flaky.hits.Load() == 0 && i < 200; i++ {
		p.Complete(context.Background(), Request{Prompt: "p"})
	}
	if flaky.hits.Load() != 1 {
		t.Fatalf("flaky endpoint saw %d requests, want 1", flaky.hits.Load())
	}
	flaky.set(func(f *fakeServer) { f.status = 0 })
	waitFor(t, "the ejection ends", func() bool { return p.Stats()[0].Ejected.IsZero() })
	for i := 0; flaky.hits.Load() < 2; i++ {
		if i == 500 {
			t.Fatal("the reinstated endpoint got no request in 500 calls")
		}
		if _, err := p.Complete(context.Background(), Request{Prompt: "p"}); err != nil {
			t.Fatalf("Complete: %v", err)
		}
	}
}

func TestPoolEjectionBackoff(t *testing.T) {
	const base = 5 * time.Second
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	p := newTestPool(t, 4, func(c *PoolConfig) { c.EjectFor = base }, "http://a/v1")
	p.now = func() time.Time { return now }
	ep := p.endpoints[0]
	unavailable := &Error{Kind: KindServer, StatusCode: 503}
	internal := &Error{Kind: KindServer, StatusCode: 500}

	// record sends an outcome for a request started at start, and returns
	// how long the endpoint is ejected from now.
	record := func(start time.Time, err error) time.Duration {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.recordLocked(ep, start, err)
		if !ep.ejected(now) {
			return 0
		}
		return ep.ejectedUntil.Sub(now)
	}
	steps := []struct {
		name    string
		advance time.Duration // before the step
		early   bool          // the request started before the latest ejection
		err     error
		want    time.Duration
	}{
		{"first 503", 0, false, unavailable, base},
		{"503 while ejected does not double", time.Second, false, unavailable, base - time.Second},
		{"503 with Retry-After while ejected extends", 0, false, &Error{Kind: KindRateLimited, StatusCode: 429, RetryAfter: 30 * time.Second}, 30 * time.Second},
		{"second ejection doubles", 31 * time.Second, false, unavailable, 2 * base},
		{"stale failure does not double", 11 * time.Second, true, unavailable, 0},
		{"third doubles again", 0, false, unavailable, 4 * base},
		{"fourth", 21 * time.Second, false, unavailable, 8 * base},
		{"fifth", 41 * time.Second, false, unavailable, time.Minute},
		{"capped at a minute", 61 * time.Second, false, unavailable, time.Minute},
		{"stale success keeps the ejection", 1 * time.Second, true, nil, time.Minute - time.Second},
		{"fresh success reinstates", 0, false, nil, 0},
		{"after a success it starts over", 0, false, unavailable, base},
		{"500 once", 6 * time.Second, false, internal, 0},
		{"500 twice", 0, false, &Error{Kind: KindTimeout}, 0},
		{"rejected request is neutral", 0, false, &Error{Kind: KindBadRequest, StatusCode: 400}, 0},
		{"canceled is neutral", 0, false, &Error{Kind: KindCanceled}, 0},
		{"third failure in a row ejects, doubled", 0, false, internal, 2 * base},
		{"success resets", 11 * time.Second, false, nil, 0},
		{"500 after reset", 0, false, internal, 0},
		{"success between failures", 0, false, nil, 0},
		{"500 again", 0, false, internal, 0},
		{"500 second in a row", 0, false, internal, 0},
		{"refused connection ejects at once", 0, false, &Error{Kind: KindConnection, Err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}}, base},
	}
	for _, st := range steps {
		now = now.Add(st.advance)
		start := now
		if st.early {
			start = ep.ejectedAt.Add(-time.Second)
		}
		if got := record(start, st.err); got != st.want {
			t.Fatalf("%s: ejected for %s, want %s", st.name, got, st.want)
		}
	}
	if s := p.Stats()[0]; s.Failures != 17 {
		t.Errorf("Failures = %d, want 17 (neutral outcomes not counted)", s.Failures)
	}
}

func TestPoolAllEjectedUsesSoonestToReturn(t *testing.T) {
	a, b := newFakeServer(t, "a", false), newFakeServer(t, "b", false)
	for _, f := range []*fakeServer{a, b} {
		f.set(func(f *fakeServer) { f.status = 503 })
	}
	p := newTestPool(t, 4, func(c *PoolConfig) { c.EjectFor = time.Minute }, a.url(), b.url())
	for range 2 {
		if _, err := p.Complete(context.Background(), Request{Prompt: "p"}); err == nil {
			t.Fatal("Complete: got no error from a 503 endpoint")
		}
	}
	stats := p.Stats()
	if stats[0].Ejected.IsZero() || stats[1].Ejected.IsZero() || a.hits.Load() != 1 || b.hits.Load() != 1 {
		t.Fatalf("after two calls: stats %+v, hits a=%d b=%d; want both ejected after one request each", stats, a.hits.Load(), b.hits.Load())
	}
	soonest, other := a, b
	if stats[1].Ejected.Before(stats[0].Ejected) {
		soonest, other = b, a
	}
	for range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := p.Complete(ctx, Request{Prompt: "p"})
		cancel()
		var e *Error
		if !errors.As(err, &e) || e.StatusCode != 503 {
			t.Fatalf("Complete with every endpoint ejected: got %v, want the endpoint's 503", err)
		}
	}
	if soonest.hits.Load() != 6 || other.hits.Load() != 1 {
		t.Errorf("hits: soonest %d, other %d; want 6 and 1", soonest.hits.Load(), other.hits.Load())
	}
	if after := p.Stats(); !after[0].Ejected.Equal(stats[0].Ejected) || !after[1].Ejected.Equal(stats[1].Ejected) {
		t.Errorf("ejections moved from %v/%v to %v/%v, want failures during an ejection not to extend it", stats[0].Ejected, stats[1].Ejected, after[0].Ejected, after[1].Ejected)
	}
}

func TestPoolWaiterGetsEndpointWhenEjectionEnds(t *testing.T) {
	busy, back := newFakeServer(t, "busy", true), newFakeServer(t, "back", false)
	p := newTestPool(t, 1, nil, busy.url(), back.url())
	p.mu.Lock()
	p.endpoints[1].ejectedUntil = time.Now().Add(50 * time.Millisecond)
	p.endpoints[1].cause = causeFailures
	p.mu.Unlock()

	go p.Complete(context.Background(), Request{Prompt: "p"})
	waitFor(t, "the only endpoint in rotation is full", func() bool { return busy.cur.Load() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := p.Complete(ctx, Request{Prompt: "p"})
	if err != nil || got.Text != "back" {
		t.Errorf("Complete: got %q, %v; want an answer from the endpoint whose ejection ended", got.Text, err)
	}
}

func TestPoolWaitEndsWithContext(t *testing.T) {
	tests := []struct {
		name     string
		ctx      func() (context.Context, context.CancelFunc)
		cancel   bool
		wantKind ErrorKind
		wantIs   error
	}{
		{"canceled", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }, true, KindCanceled, context.Canceled},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		}, false, KindTimeout, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, "busy", true)
			p := newTestPool(t, 1, nil, srv.url())
			firstDone := make(chan error, 1)
			go func() {
				_, err := p.Complete(context.Background(), Request{Prompt: "p"})
				firstDone <- err
			}()
			waitFor(t, "the slot is taken", func() bool { return srv.cur.Load() == 1 })

			ctx, cancel := tt.ctx()
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := p.Complete(ctx, Request{Prompt: "p"})
				done <- err
			}()
			if tt.cancel {
				waitFor(t, "the second caller waits", func() bool { return p.waiting() == 1 })
				cancel()
			}
			select {
			case err := <-done:
				var e *Error
				if !errors.As(err, &e) || e.Kind != tt.wantKind || e.StatusCode != 0 || !errors.Is(err, tt.wantIs) {
					t.Errorf("Complete: got %v, want a %s *Error wrapping %v", err, tt.wantKind, tt.wantIs)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Complete did not return after its context ended")
			}
			if n := p.waiting(); n != 0 {
				t.Errorf("%d waiters left, want 0", n)
			}

			srv.release()
			if err := <-firstDone; err != nil {
				t.Errorf("first Complete: %v", err)
			}
			if s := p.Stats()[0]; s.InFlight != 0 || s.Requests != 1 {
				t.Errorf("Stats() = %+v, want nothing in flight and 1 request", s)
			}
		})
	}

	t.Run("already canceled", func(t *testing.T) {
		srv := newFakeServer(t, "idle", false)
		p := newTestPool(t, 1, nil, srv.url())
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := p.Complete(ctx, Request{Prompt: "p"})
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindCanceled || srv.hits.Load() != 0 {
			t.Errorf("Complete: got %v with %d requests sent, want a canceled *Error and none", err, srv.hits.Load())
		}
	})
}

func TestPoolCanceledWaitersDoNotLeakSlots(t *testing.T) {
	srv := newFakeServer(t, "s", false)
	p := newTestPool(t, 2, nil, srv.url())
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%7)*time.Millisecond)
			defer cancel()
			p.Complete(ctx, Request{Prompt: "p"})
		})
	}
	wg.Wait()
	if s := p.Stats()[0]; s.InFlight != 0 {
		t.Errorf("Stats() = %+v, want nothing in flight", s)
	}
	if n := p.waiting(); n != 0 {
		t.Errorf("%d waiters left, want 0", n)
	}
	if _, err := p.Complete(context.Background(), Request{Prompt: "p"}); err != nil {
		t.Errorf("Complete afterwards: %v", err)
	}
}

func TestPoolHealthCheck(t *testing.T) {
	a, b := newFakeServer(t, "a", false), newFakeServer(t, "b", false)
	b.set(func(f *fakeServer) { f.maxLen = 4096 })
	p := newTestPool(t, 4, nil, a.url(), b.url())
	ctx := context.Background()

	if got := p.MaxModelLen(); got != 0 {
		t.Errorf("MaxModelLen() before any check = %d, want 0", got)
	}
	p.checkAll(ctx)
	if got := p.MaxModelLen(); got != 4096 {
		t.Errorf("MaxModelLen() = %d, want the smaller 4096", got)
	}
	if a.healthHits.Load() != 1 || a.modelHits.Load() != 1 {
		t.Errorf("a saw %d /health and %d /models requests, want 1 each", a.healthHits.Load(), a.modelHits.Load())
	}

	b.set(func(f *fakeServer) { f.healthStatus = 503 })
	p.checkAll(ctx)
	if s := p.Stats()[1]; s.Ejected.IsZero() {
		t.Fatalf("b after a failed check: %+v, want ejected", s)
	}
	for range 20 {
		if got, err := p.Complete(ctx, Request{Prompt: "p"}); err != nil || got.Text != "a" {
			t.Fatalf("Complete: got %q, %v; want an answer from a", got.Text, err)
		}
	}
	if b.hits.Load() != 0 {
		t.Errorf("ejected b got %d requests, want 0", b.hits.Load())
	}

	b.set(func(f *fakeServer) { f.healthStatus, f.maxLen = 0, 2048 })
	p.checkAll(ctx)
	if s := p.Stats()[1]; !s.Ejected.IsZero() {
		t.Errorf("b after a passing check: %+v, want reinstated", s)
	}
	if got := p.MaxModelLen(); got != 2048 {
		t.Errorf("MaxModelLen() = %d, want the refreshed 2048", got)
	}
	for i := 0; b.hits.Load() == 0; i++ {
		if i == 500 {
			t.Fatal("reinstated b got no request in 500 calls")
		}
		p.Complete(ctx, Request{Prompt: "p"})
	}
}

func TestPoolHealthCheckOutcomes(t *testing.T) {
	tests := []struct {
		name    string
		set     func(f *fakeServer)
		dead    bool
		wantErr string
	}{
		{name: "healthy", set: func(f *fakeServer) {}},
		{name: "no health endpoint", set: func(f *fakeServer) { f.healthStatus = 404 }},
		{name: "health 503", set: func(f *fakeServer) { f.healthStatus = 503 }, wantErr: "HTTP 503"},
		{name: "model not served", set: func(f *fakeServer) { f.modelID = "other" }, wantErr: `model "m" is not listed`},
		{name: "unreachable", dead: true, wantErr: "connection"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := closedURL(t)
			if !tt.dead {
				f := newFakeServer(t, "s", false)
				f.set(tt.set)
				u = f.url()
			}
			p := newTestPool(t, 4, nil, u)
			maxLen, err := p.check(context.Background(), p.endpoints[0])
			if tt.wantErr == "" {
				if err != nil || maxLen != 8192 {
					t.Errorf("check = %d, %v; want 8192 and no error", maxLen, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("check: got %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestPoolHealthCheckReinstatesOnlyWhatItCanJudge(t *testing.T) {
	tests := []struct {
		cause         ejectCause
		wantReinstate bool
	}{
		{causeHealth, true},
		{causeUnreachable, true},
		{causeUnavailable, false},
		{causeRateLimited, false},
		{causeFailures, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.cause), func(t *testing.T) {
			f := newFakeServer(t, "s", false)
			p := newTestPool(t, 4, nil, f.url())
			p.mu.Lock()
			p.endpoints[0].ejectedUntil, p.endpoints[0].cause = time.Now().Add(time.Hour), tt.cause
			p.mu.Unlock()
			p.checkAll(context.Background())
			if got := p.Stats()[0].Ejected.IsZero(); got != tt.wantReinstate {
				t.Errorf("reinstated = %v, want %v", got, tt.wantReinstate)
			}
		})
	}
}

func TestPoolStartAndClose(t *testing.T) {
	f := newFakeServer(t, "s", false)
	p := newTestPool(t, 4, func(c *PoolConfig) { c.HealthInterval = 5 * time.Millisecond }, f.url())
	p.Start(context.Background())
	p.Start(context.Background()) // a second Start does nothing
	waitFor(t, "three health checks ran", func() bool { return f.healthHits.Load() >= 3 })
	if got := p.MaxModelLen(); got != 8192 {
		t.Errorf("MaxModelLen() = %d, want 8192 from the checker", got)
	}
	closed := make(chan struct{})
	go func() {
		p.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	select {
	case <-p.checkDone:
	default:
		t.Error("Close returned before the checker stopped")
	}
	p.Close() // twice is fine

	t.Run("disabled", func(t *testing.T) {
		p := newTestPool(t, 4, nil, f.url())
		p.Start(context.Background())
		if p.checkDone != nil {
			t.Error("Start with a negative HealthInterval started a checker")
		}
	})
	t.Run("stops with its context", func(t *testing.T) {
		p := newTestPool(t, 4, func(c *PoolConfig) { c.HealthInterval = 5 * time.Millisecond }, f.url())
		ctx, cancel := context.WithCancel(context.Background())
		p.Start(ctx)
		cancel()
		select {
		case <-p.checkDone:
		case <-time.After(5 * time.Second):
			t.Fatal("checker did not stop when its context ended")
		}
	})
}

func TestPoolModels(t *testing.T) {
	first, second := newFakeServer(t, "first", false), newFakeServer(t, "second", false)
	second.set(func(f *fakeServer) { f.maxLen = 4096 })
	p := newTestPool(t, 4, nil, first.url(), second.url())
	p.mu.Lock()
	p.endpoints[0].ejectedUntil = time.Now().Add(time.Hour)
	p.mu.Unlock()

	models, err := p.Models(context.Background())
	if err != nil || len(models) != 1 || models[0] != (ModelInfo{ID: "m", MaxModelLen: 4096}) {
		t.Fatalf("Models = %+v, %v; want the second endpoint's list", models, err)
	}
	if first.modelHits.Load() != 0 || p.MaxModelLen() != 4096 {
		t.Errorf("first endpoint asked %d times, MaxModelLen %d; want 0 and 4096", first.modelHits.Load(), p.MaxModelLen())
	}

	t.Run("falls through to the next endpoint", func(t *testing.T) {
		ok := newFakeServer(t, "ok", false)
		p := newTestPool(t, 4, nil, closedURL(t), ok.url())
		if models, err := p.Models(context.Background()); err != nil || len(models) != 1 {
			t.Errorf("Models = %+v, %v; want the reachable endpoint's list", models, err)
		}
	})
	t.Run("every endpoint down", func(t *testing.T) {
		p := newTestPool(t, 4, nil, closedURL(t), closedURL(t))
		_, err := p.Models(context.Background())
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindConnection {
			t.Errorf("Models: got %v, want a connection *Error", err)
		}
	})
}
