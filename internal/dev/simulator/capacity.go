package simulator

import (
	"container/list"
	"context"
	"errors"
	"sync"
	"time"
)

// DefaultSlots is how many sequences one replica serves at once when
// Options.Slots is zero.
const DefaultSlots = 8

// errQueueFull is returned by acquire when Options.MaxQueue requests are
// already waiting.
var errQueueFull = errors.New("queue full")

// ServiceTime is how long a request holds its slot: Latency plus
// promptTokens/PrefillTokensPerSec plus completionTokens at the decode
// rate. A zero or negative rate costs nothing. load is the number of
// sequences on the replica when the request is admitted, this one included;
// with DecodeSlowdown d the decode rate is DecodeTokensPerSec/(1+d×(load−1)),
// computed once at admission and not revised as neighbours come and go.
func (o Options) ServiceTime(promptTokens, completionTokens, load int) time.Duration {
	d := max(o.Latency, 0)
	if o.PrefillTokensPerSec > 0 {
		d += seconds(float64(promptTokens) / o.PrefillTokensPerSec)
	}
	if o.DecodeTokensPerSec > 0 {
		rate := o.DecodeTokensPerSec / (1 + max(o.DecodeSlowdown, 0)*float64(max(load-1, 0)))
		d += seconds(float64(completionTokens) / rate)
	}
	return d
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// pool is the slots of Replicas replicas and the queue in front of them.
// A request takes one slot of the least-loaded replica (the lowest index
// on a tie); when every slot is busy it waits its turn: in order of arrival
// (first come, first served), or under the priority policy in order of
// (priority, arrival), lower first, as vLLM's --scheduling-policy priority
// orders its waiting requests. Under the priority policy a waiting request
// at the head of the queue also preempts the least urgent running one (the
// largest (priority, arrival)) that is less urgent than itself and is in a
// replica's batch (CapacityBatch): that one goes back to the queue, keeping
// its arrival, and the head takes its slot. That is SGLang's rule
// (--enable-priority-scheduling preempts at --max-running-requests) and
// vLLM's V0 engine's (_schedule_priority_preemption); vLLM's V1 engine
// preempts the least urgent running request only when its KV cache has no
// blocks left, and lets a waiting request wait at --max-num-seqs.
type pool struct {
	slots    int  // per replica
	maxQueue int  // 0 means unbounded
	priority bool // the priority policy

	mu          sync.Mutex
	load        []int     // sequences running on each replica
	queue       list.List // of *ticket, in the order they are served
	running     map[*ticket]struct{}
	arrivals    uint64
	inFlight    int
	maxInFlight int
	maxQueued   int
	preemptions int
}

type grant struct{ replica, load int }

// ticket is one request's place in the pool, from its arrival to its
// release. Its fields are guarded by pool.mu.
type ticket struct {
	prio    int
	arrival uint64
	grant   chan grant // buffered: sending never blocks
	elem    *list.Element
	replica int  // while running
	runs    bool // holds a slot
	// b and s are the batch the request is in and its sequence there,
	// while it is (CapacityBatch): only then can it be preempted.
	b *batcher
	s *seq
}

func newPool(replicas, slots, maxQueue int, priority bool) *pool {
	return &pool{slots: slots, maxQueue: maxQueue, priority: priority, load: make([]int, replicas), running: map[*ticket]struct{}{}}
}

// before reports whether t is served before u: under the priority policy
// by (priority, arrival), else by arrival.
func (p *pool) before(t, u *ticket) bool {
	if p.priority && t.prio != u.prio {
		return t.prio < u.prio
	}
	return t.arrival < u.arrival
}

// acquire takes a slot for a new request of priority prio (lower is more
// urgent; ignored under first come, first served), waiting in the queue if
// none is free. It returns the request's ticket and the slot's grant: the
// replica and its load with this request included. A request whose ctx
// ends while it waits leaves the queue; one that is granted a slot at that
// moment gives it back.
func (p *pool) acquire(ctx context.Context, prio int) (*ticket, grant, error) {
	p.mu.Lock()
	p.arrivals++
	t := &ticket{prio: prio, arrival: p.arrivals, grant: make(chan grant, 1)}
	if p.queue.Len() == 0 {
		if r := p.leastLoaded(); p.load[r] < p.slots {
			g := p.take(t, r)
			p.mu.Unlock()
			return t, g, nil
		}
	}
	if p.maxQueue > 0 && p.queue.Len() >= p.maxQueue {
		p.mu.Unlock()
		return nil, grant{}, errQueueFull
	}
	p.enqueue(t)
	p.preemptLocked()
	p.mu.Unlock()
	g, err := p.wait(ctx, t)
	return t, g, err
}

// wait waits for t's grant: t is queued.
func (p *pool) wait(ctx context.Context, t *ticket) (grant, error) {
	select {
	case g := <-t.grant:
		return g, nil
	case <-ctx.Done():
	}
	p.mu.Lock()
	// Grants are sent under mu, so either the grant is in the channel or
	// the ticket is still queued.
	select {
	case <-t.grant:
		p.mu.Unlock()
		p.release(t)
	default:
		p.queue.Remove(t.elem)
		t.elem = nil
		p.mu.Unlock()
	}
	return grant{}, ctx.Err()
}

// enqueue puts t in the queue at its place; mu must be held.
func (p *pool) enqueue(t *ticket) {
	e := p.queue.Back()
	for e != nil && p.before(t, e.Value.(*ticket)) {
		e = e.Prev()
	}
	if e == nil {
		t.elem = p.queue.PushFront(t)
	} else {
		t.elem = p.queue.InsertAfter(t, e)
	}
	p.maxQueued = max(p.maxQueued, p.queue.Len())
}

// attach records that t's request is sequence s of batch b, which makes
// it preemptible, and lets a more urgent waiter preempt it at once.
func (p *pool) attach(t *ticket, b *batcher, s *seq) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t.b, t.s = b, s
	p.preemptLocked()
}

// preemptLocked, under the priority policy, gives the head of the queue
// the slot of the least urgent preemptible running request while that
// one is less urgent than the head; the preempted request goes back to
// the queue. mu must be held.
func (p *pool) preemptLocked() {
	for p.priority && p.queue.Len() > 0 {
		head := p.queue.Front().Value.(*ticket)
		var victim *ticket
		for t := range p.running {
			if t.s != nil && p.before(head, t) && (victim == nil || p.before(victim, t)) {
				victim = t
			}
		}
		if victim == nil {
			return
		}
		if !victim.b.preempt(victim.s) {
			// It has just finished or gone: it frees its slot itself.
			victim.b, victim.s = nil, nil
			continue
		}
		r := victim.replica
		delete(p.running, victim)
		victim.runs, victim.b, victim.s = false, nil, nil
		p.enqueue(victim)
		p.queue.Remove(head.elem)
		head.elem = nil
		head.replica, head.runs = r, true
		p.running[head] = struct{}{}
		p.preemptions++
		head.grant <- grant{replica: r, load: p.load[r]}
	}
}

// release frees t's slot, if it holds one, and hands a slot to the
// first waiter.
func (p *pool) release(t *ticket) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !t.runs {
		return
	}
	t.runs, t.b, t.s = false, nil, nil
	delete(p.running, t)
	p.load[t.replica]--
	p.inFlight--
	if front := p.queue.Front(); front != nil {
		w := p.queue.Remove(front).(*ticket)
		w.elem = nil
		w.grant <- p.take(w, p.leastLoaded())
	}
}

// take occupies a slot of replica r for t; mu must be held.
func (p *pool) take(t *ticket, r int) grant {
	p.load[r]++
	p.inFlight++
	p.maxInFlight = max(p.maxInFlight, p.inFlight)
	t.replica, t.runs = r, true
	p.running[t] = struct{}{}
	return grant{replica: r, load: p.load[r]}
}

// leastLoaded returns the replica with the fewest running sequences; mu
// must be held.
func (p *pool) leastLoaded() int {
	best := 0
	for r, n := range p.load {
		if n < p.load[best] {
			best = r
		}
	}
	return best
}

// poolStats is a consistent snapshot of the pool.
type poolStats struct {
	load                  []int
	inFlight, maxInFlight int
	queued, maxQueued     int
	preemptions           int
}

func (p *pool) stats() poolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return poolStats{
		load:     append([]int(nil), p.load...),
		inFlight: p.inFlight, maxInFlight: p.maxInFlight,
		queued: p.queue.Len(), maxQueued: p.maxQueued,
		preemptions: p.preemptions,
	}
}
