package inference

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// holdServer is an OpenAI-compatible server that keeps each completion
// until the test releases its prompt, and writes down what happened in
// order: "start <prompt>", "end <prompt>", "canceled <prompt>".
// releaseAll answers every completion from then on.
type holdServer struct {
	srv *httptest.Server

	mu     sync.Mutex
	gates  map[string]chan struct{}
	open   bool // set by releaseAll: every later completion answers at once
	events []string
}

func newHoldServer(t *testing.T) *holdServer {
	t.Helper()
	h := &holdServer{gates: map[string]chan struct{}{}}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	t.Cleanup(h.releaseAll) // runs before srv.Close
	return h
}

func (h *holdServer) url() string { return h.srv.URL + "/v1" }

func (h *holdServer) gate(prompt string) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := h.gates[prompt]
	if g == nil {
		g = make(chan struct{})
		if h.open {
			close(g)
		}
		h.gates[prompt] = g
	}
	return g
}

func (h *holdServer) release(prompt string) { close(h.gate(prompt)) }

func (h *holdServer) releaseAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.open = true
	for _, g := range h.gates {
		select {
		case <-g:
		default:
			close(g)
		}
	}
}

func (h *holdServer) note(e string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
}

func (h *holdServer) log() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.events)
}

func (h *holdServer) saw(e string) bool { return slices.Contains(h.log(), e) }

func (h *holdServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	prompt := req.Messages[len(req.Messages)-1].Content
	h.note("start " + prompt)
	select {
	case <-h.gate(prompt):
	case <-r.Context().Done():
		h.note("canceled " + prompt)
		return
	}
	h.note("end " + prompt)
	fmt.Fprintf(w, `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}`, prompt)
}

// call starts a completion of prompt at level and returns where its error
// will be sent.
func call(p *Pool, level int, prompt string) <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx := WithPriority(context.Background(), Priority{Level: level, Key: prompt})
		out, err := p.Complete(ctx, Request{Prompt: prompt})
		if err == nil && out.Text != prompt {
			err = fmt.Errorf("answer %q, want %q", out.Text, prompt)
		}
		done <- err
	}()
	return done
}

func wait(t *testing.T, what string, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return", what)
	}
}

func index(events []string, e string) int { return slices.Index(events, e) }

func TestParsePriorityHold(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    int
		wantErr bool
	}{
		{"off", 0, false}, {"0", 0, false}, {"on", DefaultPriorityHold, false}, {"ON", DefaultPriorityHold, false},
		{"1", 1, false}, {"4", 4, false}, {"5", 0, true}, {"-1", 0, true}, {"30s", 0, true},
	} {
		got, err := ParsePriorityHold(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParsePriorityHold(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// A batch call already at the server keeps running when a question's call
// arrives; new batch calls wait in the pool, though the endpoint has free
// slots, until the question's call has ended and HoldLinger has passed,
// and then all start. Nothing is canceled.
func TestPoolHoldsBackLessUrgentCalls(t *testing.T) {
	h := newHoldServer(t)
	p := newTestPool(t, 8, func(c *PoolConfig) { c.PriorityHold = DefaultPriorityHold }, h.url())

	b0 := call(p, 4, "b0")
	waitFor(t, "b0 is at the server", func() bool { return h.saw("start b0") })
	q := call(p, 2, "q")
	waitFor(t, "q is at the server beside b0", func() bool { return h.saw("start q") })
	b1, b2 := call(p, 4, "b1"), call(p, 4, "b2")
	waitFor(t, "b1 and b2 wait in the pool", func() bool { return p.waiting() == 2 })

	h.release("b0")
	wait(t, "b0", b0)
	if n := p.waiting(); n != 2 {
		t.Errorf("after b0 ended: %d waiting, want b1 and b2 still held while q runs", n)
	}
	h.release("q")
	wait(t, "q", q)
	waitFor(t, "b1 and b2 start after q", func() bool { return h.saw("start b1") && h.saw("start b2") })
	h.release("b1")
	h.release("b2")
	wait(t, "b1", b1)
	wait(t, "b2", b2)

	ev := h.log()
	for _, b := range []string{"start b1", "start b2"} {
		if index(ev, b) < index(ev, "end q") {
			t.Errorf("%s before q ended: %q", b, ev)
		}
	}
	for _, e := range ev {
		if len(e) > 8 && e[:8] == "canceled" {
			t.Errorf("%s: a call at the server was canceled: %q", e, ev)
		}
	}
	if s := p.Stats()[0]; s.InFlight != 0 || s.Requests != 4 {
		t.Errorf("Stats() = %+v, want nothing in flight and 4 requests, each sent once", s)
	}
}

// Only calls of PriorityHold or more urgent hold back others: a review's
// call (3) does not hold back a batch's (4) at the default.
func TestPoolHoldOnlyFromItsLevel(t *testing.T) {
	h := newHoldServer(t)
	p := newTestPool(t, 4, func(c *PoolConfig) { c.PriorityHold = DefaultPriorityHold }, h.url())
	r := call(p, 3, "r")
	waitFor(t, "r is at the server", func() bool { return h.saw("start r") })
	b := call(p, 4, "b")
	waitFor(t, "b starts beside r", func() bool { return h.saw("start b") })
	h.releaseAll()
	wait(t, "r", r)
	wait(t, "b", b)
}

// The hold is per endpoint: a batch call goes to the endpoint without the
// question's call, up to its cap, and only the next one waits.
func TestPoolHoldUsesEndpointWithoutUrgentCalls(t *testing.T) {
	a, b := newHoldServer(t), newHoldServer(t)
	p := newTestPool(t, 2, func(c *PoolConfig) { c.PriorityHold = DefaultPriorityHold }, a.url(), b.url())
	q := call(p, 2, "q")
	waitFor(t, "q is at a server", func() bool { return a.saw("start q") || b.saw("start q") })
	free := b
	if b.saw("start q") {
		free = a
	}
	b1, b2, b3 := call(p, 4, "b1"), call(p, 4, "b2"), call(p, 4, "b3")
	waitFor(t, "two batch calls start and one waits", func() bool {
		n := 0
		for _, s := range []string{"start b1", "start b2", "start b3"} {
			if free.saw(s) {
				n++
			}
		}
		return n == 2 && p.waiting() == 1
	})
	free.releaseAll()
	for i, d := range []<-chan error{b1, b2, b3} {
		wait(t, fmt.Sprintf("b%d", i+1), d)
	}
	if a.saw("start b3") && b.saw("start b3") {
		t.Error("b3 sent twice")
	}
	a.releaseAll()
	b.releaseAll()
	wait(t, "q", q)
}

// A held call waits at most MaxHold, even while urgent calls never stop;
// with no hold it does not wait at all.
func TestPoolHoldIsBounded(t *testing.T) {
	for _, hold := range []time.Duration{0, 200 * time.Millisecond} {
		t.Run(fmt.Sprint(hold), func(t *testing.T) {
			h := newHoldServer(t)
			p := newTestPool(t, 4, func(c *PoolConfig) {
				if hold > 0 {
					c.PriorityHold = DefaultPriorityHold
				}
			}, h.url())
			p.maxHold = hold
			q := call(p, 1, "q")
			waitFor(t, "q is at the server", func() bool { return h.saw("start q") })
			start := time.Now()
			b := call(p, 5, "b")
			waitFor(t, "b starts while q still runs", func() bool { return h.saw("start b") })
			if waited := time.Since(start); waited < hold {
				t.Errorf("b started after %s, want at least the hold, %s", waited, hold)
			}
			if h.saw("end q") {
				t.Error("q ended: the test proves nothing")
			}
			h.releaseAll()
			wait(t, "b", b)
			wait(t, "q", q)
		})
	}
}
