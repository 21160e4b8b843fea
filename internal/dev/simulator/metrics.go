package simulator

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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
	// ReplicaPrefill is the part of ReplicaBusy spent prefilling prompt
	// tokens (recomputed ones of preempted requests included).
	ReplicaPrefill []time.Duration
	Steps          int
	// ThrownTokens counts, under CapacityBatch, the prompt tokens
	// prefilled and the tokens decoded by requests whose client went away
	// before their answer: GPU work that answered nothing.
	ThrownTokens int
	// Preemptions counts the running requests preempted for more urgent
	// ones (SchedulingPriority under CapacityBatch).
	Preemptions int
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
		Preemptions:     p.preemptions,
	}
	for _, b := range s.batchers {
		bs := b.stats()
		st.ReplicaBusy = append(st.ReplicaBusy, bs.busy)
		st.ReplicaPrefill = append(st.ReplicaPrefill, bs.prefill)
		st.Steps += bs.steps
		st.ThrownTokens += bs.thrown
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

// collector exposes a Server's Stats to Prometheus, read once per scrape
// so that /metrics and Stats never disagree.
type collector struct {
	s                                        *Server
	requests, promptTokens, completionTokens *prometheus.Desc
	inFlight, replicaInFlight, maxInFlight   *prometheus.Desc
	queue, maxQueue, open, maxOpen, slots    *prometheus.Desc
	replicaBusy, batchSteps, requestDuration *prometheus.Desc
}

func newCollector(s *Server) *collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("memagent_sim_"+name, help, labels, nil)
	}
	return &collector{
		s:                s,
		requests:         d("requests_total", "Chat completion requests by outcome.", "outcome"),
		promptTokens:     d("prompt_tokens_total", "Prompt tokens of answered completions."),
		completionTokens: d("completion_tokens_total", "Completion tokens of answered completions."),
		inFlight:         d("requests_in_flight", "Requests holding a slot."),
		replicaInFlight:  d("replica_requests_in_flight", "Requests holding a slot, by replica.", "replica"),
		maxInFlight:      d("max_in_flight", "The most requests that ever held a slot at once."),
		queue:            d("queue_length", "Requests waiting for a slot."),
		maxQueue:         d("max_queue_length", "The most requests that ever waited at once."),
		open:             d("requests_open", "Chat completion requests being handled in any stage."),
		maxOpen:          d("max_requests_open", "The most chat completion requests ever handled at once."),
		slots:            d("slots", "Capacity: replicas times slots per replica."),
		replicaBusy:      d("replica_busy_seconds_total", "Simulated time each replica spent stepping its batch.", "replica"),
		batchSteps:       d("batch_steps_total", "Steps of the replicas' batches."),
		requestDuration:  d("request_duration_seconds", "Time from arrival to answer of answered completions, queueing included."),
	}
}

// Describe sends every descriptor, the batch ones included.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.requests, c.promptTokens, c.completionTokens, c.inFlight, c.replicaInFlight,
		c.maxInFlight, c.queue, c.maxQueue, c.open, c.maxOpen, c.slots, c.replicaBusy, c.batchSteps, c.requestDuration} {
		ch <- d
	}
}

// Collect sends one snapshot of Stats.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	send := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, t, v, labels...)
	}
	for _, o := range outcomes {
		send(c.requests, prometheus.CounterValue, float64(st.Requests[o]), o)
	}
	send(c.promptTokens, prometheus.CounterValue, float64(st.PromptTokens))
	send(c.completionTokens, prometheus.CounterValue, float64(st.CompletionTokens))
	send(c.inFlight, prometheus.GaugeValue, float64(st.InFlight))
	for i, n := range st.ReplicaInFlight {
		send(c.replicaInFlight, prometheus.GaugeValue, float64(n), strconv.Itoa(i))
	}
	send(c.maxInFlight, prometheus.GaugeValue, float64(st.MaxInFlight))
	send(c.queue, prometheus.GaugeValue, float64(st.Queued))
	send(c.maxQueue, prometheus.GaugeValue, float64(st.MaxQueued))
	send(c.open, prometheus.GaugeValue, float64(st.Open))
	send(c.maxOpen, prometheus.GaugeValue, float64(st.MaxOpen))
	send(c.slots, prometheus.GaugeValue, float64(st.Slots))
	if c.s.batchers != nil {
		for i, d := range st.ReplicaBusy {
			send(c.replicaBusy, prometheus.CounterValue, d.Seconds(), strconv.Itoa(i))
		}
		send(c.batchSteps, prometheus.CounterValue, float64(st.Steps))
	}
	buckets := make(map[float64]uint64, len(st.Latency.Buckets))
	for _, b := range st.Latency.Buckets {
		buckets[b.UpperBound.Seconds()] = uint64(b.Count)
	}
	ch <- prometheus.MustNewConstHistogram(c.requestDuration, uint64(st.Latency.Count), st.Latency.Sum.Seconds(), buckets)
}

// metricsHandler serves Stats in the Prometheus text format from a
// registry of the Server's own, so that two simulators in one process
// never share series.
func (s *Server) metricsHandler() http.Handler {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(newCollector(s))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})
}
