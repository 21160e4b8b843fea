package simulator

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Outcomes of a chat completion request. Every request ends in exactly one;
// an injected fault ends in "fault_" followed by its FaultKind.
const (
	// OutcomeOK is a completion answered.
	OutcomeOK = "ok"
	// OutcomeInvalid is a request refused by validation (400 or 404).
	OutcomeInvalid = "invalid"
	// OutcomeQueueFull is a 503 because MaxQueue requests were waiting.
	OutcomeQueueFull = "queue_full"
	// OutcomeFailAll is an answer forced by Options.FailAll.
	OutcomeFailAll = "fail_all"
	// OutcomeCanceled is a request whose client went away before it was
	// answered; nothing is recorded for it.
	OutcomeCanceled = "canceled"
)

// outcomes lists every outcome in the order /metrics writes them.
var outcomes = func() []string {
	out := []string{OutcomeOK, OutcomeInvalid, OutcomeQueueFull, OutcomeFailAll, OutcomeCanceled}
	for _, k := range faultKinds {
		out = append(out, faultOutcome(k))
	}
	return out
}()

func faultOutcome(k FaultKind) string { return "fault_" + string(k) }

// latencyBuckets are the upper bounds of the latency histogram.
var latencyBuckets = []time.Duration{
	5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
	30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute,
}

// Stats is a snapshot of a Server's counters and gauges, the same numbers
// GET /metrics exposes. Only POST /v1/chat/completions is counted.
type Stats struct {
	// Requests counts completion requests by outcome (the Outcome
	// constants and "fault_<kind>"); every outcome is present.
	Requests map[string]int
	// Faults counts injected faults by kind; every kind is present.
	Faults map[FaultKind]int
	// PromptTokens and CompletionTokens sum the usage of answered
	// completions.
	PromptTokens, CompletionTokens int
	// InFlight is how many requests hold a slot now; MaxInFlight the most
	// that ever did at once. It never exceeds Slots.
	InFlight, MaxInFlight int
	// ReplicaInFlight is InFlight per replica.
	ReplicaInFlight []int
	// Queued is how many requests wait for a slot now; MaxQueued the most
	// that ever did at once.
	Queued, MaxQueued int
	// Open is how many completion requests the server is handling now, in
	// any stage (queued, in a slot, stalled by a fault, being refused);
	// MaxOpen the most ever at once. A test compares MaxOpen with a
	// client's concurrency cap: unlike MaxInFlight it is not bounded by
	// Slots, so a client that exceeds its cap shows here.
	Open, MaxOpen int
	// Slots is the capacity: replicas × slots per replica (under
	// CapacityBatch, replicas × Batch.MaxNumSeqs).
	Slots int
	// ReplicaBusy is, under CapacityBatch, the simulated time each
	// replica has spent in steps, the GPU's busy time: over wall time it
	// is the replica's utilisation. Steps counts the steps of all
	// replicas. Both are zero under CapacitySlots.
	ReplicaBusy []time.Duration
	Steps       int
	// Latency is the time from arrival to answer of answered completions,
	// queueing included.
	Latency Histogram
}

// Histogram is a latency distribution with cumulative buckets, as
// Prometheus keeps one.
type Histogram struct {
	// Count and Sum are the number and total of the observations.
	Count int
	Sum   time.Duration
	// Buckets hold the observations at most UpperBound, cumulatively;
	// the implicit +Inf bucket is Count.
	Buckets []Bucket
}

// Bucket is one cumulative histogram bucket.
type Bucket struct {
	// UpperBound is the bucket's inclusive limit, Prometheus's "le".
	UpperBound time.Duration
	// Count is how many observations were at most UpperBound.
	Count int
}

// meter holds the counters that are not the pool's.
type meter struct {
	mu               sync.Mutex
	outcomes         map[string]int
	promptTokens     int
	completionTokens int
	open, maxOpen    int
	latCount         int
	latSum           time.Duration
	latBuckets       []int // not cumulative
}

func newMeter() *meter {
	return &meter{outcomes: make(map[string]int), latBuckets: make([]int, len(latencyBuckets))}
}

func (m *meter) begin() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.open++
	m.maxOpen = max(m.maxOpen, m.open)
}

func (m *meter) end(outcome string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.open--
	m.outcomes[outcome]++
}

func (m *meter) answered(promptTokens, completionTokens int, latency time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.promptTokens += promptTokens
	m.completionTokens += completionTokens
	m.latCount++
	m.latSum += latency
	for i, ub := range latencyBuckets {
		if latency <= ub {
			m.latBuckets[i]++
			break
		}
	}
}

// Stats returns a snapshot of the counters and gauges.
func (s *Server) Stats() Stats {
	p := s.pool.stats()
	st := Stats{
		Requests:        make(map[string]int, len(outcomes)),
		Faults:          make(map[FaultKind]int, len(faultKinds)),
		InFlight:        p.inFlight,
		MaxInFlight:     p.maxInFlight,
		ReplicaInFlight: p.load,
		Queued:          p.queued,
		MaxQueued:       p.maxQueued,
		Slots:           len(p.load) * s.pool.slots,
	}
	for _, b := range s.batchers {
		bs := b.stats()
		st.ReplicaBusy = append(st.ReplicaBusy, bs.busy)
		st.Steps += bs.steps
	}
	m := s.meter
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, o := range outcomes {
		st.Requests[o] = m.outcomes[o]
	}
	for _, k := range faultKinds {
		st.Faults[k] = m.outcomes[faultOutcome(k)]
	}
	st.PromptTokens, st.CompletionTokens = m.promptTokens, m.completionTokens
	st.Open, st.MaxOpen = m.open, m.maxOpen
	st.Latency = Histogram{Count: m.latCount, Sum: m.latSum, Buckets: make([]Bucket, len(latencyBuckets))}
	cum := 0
	for i, ub := range latencyBuckets {
		cum += m.latBuckets[i]
		st.Latency.Buckets[i] = Bucket{UpperBound: ub, Count: cum}
	}
	return st
}

// metrics writes Stats in the Prometheus text exposition format 0.0.4.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	st := s.Stats()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	b := bufio.NewWriter(w)
	metric := func(name, typ, help string) {
		fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	sample := func(name string, v int) { fmt.Fprintf(b, "%s %d\n", name, v) }

	metric("memagent_sim_requests_total", "counter", "Chat completion requests by outcome.")
	for _, o := range outcomes {
		fmt.Fprintf(b, "memagent_sim_requests_total{outcome=%q} %d\n", o, st.Requests[o])
	}
	metric("memagent_sim_prompt_tokens_total", "counter", "Prompt tokens of answered completions.")
	sample("memagent_sim_prompt_tokens_total", st.PromptTokens)
	metric("memagent_sim_completion_tokens_total", "counter", "Completion tokens of answered completions.")
	sample("memagent_sim_completion_tokens_total", st.CompletionTokens)
	metric("memagent_sim_requests_in_flight", "gauge", "Requests holding a slot.")
	sample("memagent_sim_requests_in_flight", st.InFlight)
	metric("memagent_sim_replica_requests_in_flight", "gauge", "Requests holding a slot, by replica.")
	for i, n := range st.ReplicaInFlight {
		fmt.Fprintf(b, "memagent_sim_replica_requests_in_flight{replica=\"%d\"} %d\n", i, n)
	}
	metric("memagent_sim_max_in_flight", "gauge", "The most requests that ever held a slot at once.")
	sample("memagent_sim_max_in_flight", st.MaxInFlight)
	metric("memagent_sim_queue_length", "gauge", "Requests waiting for a slot.")
	sample("memagent_sim_queue_length", st.Queued)
	metric("memagent_sim_max_queue_length", "gauge", "The most requests that ever waited at once.")
	sample("memagent_sim_max_queue_length", st.MaxQueued)
	metric("memagent_sim_requests_open", "gauge", "Chat completion requests being handled in any stage.")
	sample("memagent_sim_requests_open", st.Open)
	metric("memagent_sim_max_requests_open", "gauge", "The most chat completion requests ever handled at once.")
	sample("memagent_sim_max_requests_open", st.MaxOpen)
	metric("memagent_sim_slots", "gauge", "Capacity: replicas times slots per replica.")
	sample("memagent_sim_slots", st.Slots)

	if s.batchers != nil {
		metric("memagent_sim_replica_busy_seconds_total", "counter", "Simulated time each replica spent stepping its batch.")
		for i, d := range st.ReplicaBusy {
			fmt.Fprintf(b, "memagent_sim_replica_busy_seconds_total{replica=\"%d\"} %s\n", i, strconv.FormatFloat(d.Seconds(), 'g', -1, 64))
		}
		metric("memagent_sim_batch_steps_total", "counter", "Steps of the replicas' batches.")
		sample("memagent_sim_batch_steps_total", st.Steps)
	}

	const lat = "memagent_sim_request_duration_seconds"
	metric(lat, "histogram", "Time from arrival to answer of answered completions, queueing included.")
	for _, bk := range st.Latency.Buckets {
		fmt.Fprintf(b, "%s_bucket{le=\"%s\"} %d\n", lat, strconv.FormatFloat(bk.UpperBound.Seconds(), 'g', -1, 64), bk.Count)
	}
	fmt.Fprintf(b, "%s_bucket{le=\"+Inf\"} %d\n", lat, st.Latency.Count)
	fmt.Fprintf(b, "%s_sum %s\n", lat, strconv.FormatFloat(st.Latency.Sum.Seconds(), 'g', -1, 64))
	fmt.Fprintf(b, "%s_count %d\n", lat, st.Latency.Count)
	// The client may have gone; there is no one to tell.
	_ = b.Flush()
}
