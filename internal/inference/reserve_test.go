package inference

import (
	"fmt"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

func TestParsePriorityReserve(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    int
		wantErr bool
	}{
		{"", PriorityReserveAuto, false}, {"auto", PriorityReserveAuto, false}, {" AUTO ", PriorityReserveAuto, false},
		{"off", 0, false}, {"0", 0, false}, {"4", 4, false}, {"1024", 1024, false},
		{"1025", 0, true}, {"-1", 0, true}, {"25%", 0, true}, {"on", 0, true},
	} {
		got, err := ParsePriorityReserve(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParsePriorityReserve(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// The reserve applies only to servers that order by priority, and auto is
// a quarter of the cap, at least one slot.
func TestEndpointReserve(t *testing.T) {
	for _, tt := range []struct {
		n    int
		form ServerPriority
		cap  int
		want int
	}{
		{PriorityReserveAuto, PriorityVLLM, 16, 4},
		{PriorityReserveAuto, PrioritySGLang, 64, 16},
		{PriorityReserveAuto, PriorityVLLM, 1, 1},
		{PriorityReserveAuto, PriorityVLLM, 6, 2},
		{PriorityReserveAuto, PriorityOff, 16, 0},
		{PriorityReserveAuto, "", 16, 0},
		{3, PriorityVLLM, 16, 3},
		{3, PriorityOff, 16, 0},
		{0, PriorityVLLM, 16, 0},
	} {
		if got := endpointReserve(tt.n, tt.form, tt.cap); got != tt.want {
			t.Errorf("endpointReserve(%d, %q, %d) = %d, want %d", tt.n, tt.form, tt.cap, got, tt.want)
		}
	}
}

// maxConcurrent is the most calls the server had started and not yet
// ended or seen canceled, from its log.
func maxConcurrent(events []string) int {
	n, most := 0, 0
	for _, e := range events {
		switch {
		case strings.HasPrefix(e, "start "):
			n++
			most = max(most, n)
		case strings.HasPrefix(e, "end "), strings.HasPrefix(e, "canceled "):
			n--
		}
	}
	return most
}

// With a server that orders by priority, a question's call goes to the
// server beyond the cap of 2 while two batch calls run there, up to the
// reserve (1): the next question waits, and so does every batch call
// until the calls outstanding are below the cap again, reserved ones
// counted. With priority off there is no reserve: the question waits in
// the pool for a batch call to end. No call is sent twice or canceled.
func TestPoolReserve(t *testing.T) {
	for _, form := range []ServerPriority{PriorityVLLM, PrioritySGLang, PriorityOff} {
		t.Run(string(form), func(t *testing.T) {
			h := newHoldServer(t)
			p := newTestPool(t, 2, func(c *PoolConfig) {
				c.Endpoints[0].Priority = form
				c.PriorityReserve = 1
			}, h.url())
			reserved := form != PriorityOff
			if got, want := p.Stats()[0].Reserve, map[bool]int{true: 1, false: 0}[reserved]; got != want {
				t.Fatalf("Stats().Reserve = %d, want %d", got, want)
			}

			b0, b1 := call(p, 4, "b0"), call(p, 4, "b1")
			waitFor(t, "b0 and b1 are at the server", func() bool { return h.saw("start b0") && h.saw("start b1") })
			q0 := call(p, 2, "q0")
			if reserved {
				waitFor(t, "q0 is at the server beyond the cap", func() bool { return h.saw("start q0") })
				if s := p.Stats()[0]; s.InFlight != 3 {
					t.Errorf("InFlight = %d, want 3: the cap of 2 and q0 on the reserve", s.InFlight)
				}
			} else {
				waitFor(t, "q0 waits in the pool", func() bool { return p.waiting() == 1 })
			}
			q1 := call(p, 2, "q1")
			b2 := call(p, 4, "b2")
			waitFor(t, "the rest wait in the pool", func() bool { return p.waiting() == map[bool]int{true: 2, false: 3}[reserved] })

			// b0 ends: the most urgent waiter takes the slot, on the
			// reserve if it must; b2 still waits.
			h.release("b0")
			wait(t, "b0", b0)
			first := map[bool]string{true: "q1", false: "q0"}[reserved]
			waitFor(t, first+" starts after b0", func() bool { return h.saw("start " + first) })
			if h.saw("start b2") {
				t.Fatalf("b2 started beyond the cap: %q", h.log())
			}
			if s := p.Stats()[0]; s.InFlight > 2+s.Reserve {
				t.Fatalf("InFlight = %d, beyond the cap and reserve (%d+%d)", s.InFlight, s.MaxInFlight, s.Reserve)
			}

			// b1 ends: with the reserve, the questions hold the cap now
			// and b2 waits; without it, q1 takes the slot.
			h.release("b1")
			wait(t, "b1", b1)
			if reserved {
				if n := p.waiting(); n != 1 {
					t.Errorf("after b1 ended: %d waiting, want b2 (the cap is held by q0 and q1)", n)
				}
				if h.saw("start b2") {
					t.Errorf("b2 started while the questions held the cap: %q", h.log())
				}
			} else {
				waitFor(t, "q1 starts after b1", func() bool { return h.saw("start q1") })
			}
			h.releaseAll()
			for i, d := range []<-chan error{q0, q1, b2} {
				wait(t, fmt.Sprintf("call %d", i), d)
			}

			ev := h.log()
			if got, want := maxConcurrent(ev), map[bool]int{true: 3, false: 2}[reserved]; got != want {
				t.Errorf("at most %d calls at the server at once, want %d: %q", got, want, ev)
			}
			for _, e := range ev {
				if strings.HasPrefix(e, "canceled") {
					t.Errorf("%s: a call at the server was canceled: %q", e, ev)
				}
			}
			if s := p.Stats()[0]; s.InFlight != 0 || s.Requests != 5 {
				t.Errorf("Stats() = %+v, want nothing in flight and 5 requests, each sent once", s)
			}
		})
	}
}

// Only a call more urgent than the least urgent one outstanding takes the
// reserve, and only one of ReserveLevel or more urgent: a question's call
// waits behind questions at the cap, a review's behind batches.
func TestPoolReserveOnlyForMoreUrgent(t *testing.T) {
	for _, tt := range []struct {
		name          string
		running, next int
		reserved      bool
	}{
		{"question behind questions", 2, 2, false},
		{"question behind reviews", 3, 2, true},
		{"priority 1 behind questions", 2, 1, true},
		{"review behind batches", 4, 3, false},
		{"batch behind batches", 4, 4, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHoldServer(t)
			p := newTestPool(t, 1, func(c *PoolConfig) {
				c.Endpoints[0].Priority = PriorityVLLM
				c.PriorityReserve = PriorityReserveAuto
			}, h.url())
			r := call(p, tt.running, "r")
			waitFor(t, "r is at the server", func() bool { return h.saw("start r") })
			n := call(p, tt.next, "n")
			if tt.reserved {
				waitFor(t, "n is at the server beside r", func() bool { return h.saw("start n") })
			} else {
				waitFor(t, "n waits in the pool", func() bool { return p.waiting() == 1 })
				if h.saw("start n") {
					t.Errorf("n started beyond the cap: %q", h.log())
				}
			}
			h.releaseAll()
			wait(t, "r", r)
			wait(t, "n", n)
		})
	}
}

// The reserve is a gauge beside the capacity, and in-flight counts the
// calls on it.
func TestPoolReserveMetrics(t *testing.T) {
	h := newHoldServer(t)
	reader := sdkmetric.NewManualReader()
	p := newTestPool(t, 1, func(c *PoolConfig) {
		c.Endpoints[0].Priority = PriorityVLLM
		c.PriorityReserve = 2
		c.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	}, h.url())
	b := call(p, 4, "b")
	waitFor(t, "b is at the server", func() bool { return h.saw("start b") })
	q := call(p, 2, "q")
	waitFor(t, "q is at the server", func() bool { return h.saw("start q") })
	ep := "endpoint=" + h.url()
	if got := collect(t, reader, metricReserve)[ep]; got != 2 {
		t.Errorf("%s{%s} = %v, want 2", metricReserve, ep, got)
	}
	if got := collect(t, reader, metricInFlight)[ep]; got != 2 {
		t.Errorf("%s{%s} = %v, want 2: the cap's call and the reserved one", metricInFlight, ep, got)
	}
	h.releaseAll()
	wait(t, "b", b)
	wait(t, "q", q)
}
