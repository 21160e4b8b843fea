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

// pool is the slots of Replicas replicas and the FIFO queue in front of
// them. A request takes one slot of the least-loaded replica (the lowest
// index on a tie); when every slot is busy it waits its turn.
type pool struct {
	slots    int // per replica
	maxQueue int // 0 means unbounded

	mu          sync.Mutex
	load        []int     // sequences running on each replica
	queue       list.List // of *waiter, oldest first
	inFlight    int
	maxInFlight int
	maxQueued   int
}

type grant struct{ replica, load int }

type waiter struct{ grant chan grant }

func newPool(replicas, slots, maxQueue int) *pool {
	return &pool{slots: slots, maxQueue: maxQueue, load: make([]int, replicas)}
}

// acquire takes a slot, waiting in the queue if none is free. It returns
// the replica and its load with this request included. A request whose ctx
// ends while it waits leaves the queue; one that is granted a slot at that
// moment gives it back.
func (p *pool) acquire(ctx context.Context) (grant, error) {
	p.mu.Lock()
	if p.queue.Len() == 0 {
		if r := p.leastLoaded(); p.load[r] < p.slots {
			g := p.take(r)
			p.mu.Unlock()
			return g, nil
		}
	}
	if p.maxQueue > 0 && p.queue.Len() >= p.maxQueue {
		p.mu.Unlock()
		return grant{}, errQueueFull
	}
	w := &waiter{grant: make(chan grant, 1)}
	e := p.queue.PushBack(w)
	p.maxQueued = max(p.maxQueued, p.queue.Len())
	p.mu.Unlock()

	select {
	case g := <-w.grant:
		return g, nil
	case <-ctx.Done():
	}
	p.mu.Lock()
	// Grants are sent under mu, so either the grant is in the channel or
	// the waiter is still queued.
	select {
	case g := <-w.grant:
		p.mu.Unlock()
		p.release(g.replica)
	default:
		p.queue.Remove(e)
		p.mu.Unlock()
	}
	return grant{}, ctx.Err()
}

// release frees a slot of replica r and hands a slot to the oldest waiter.
func (p *pool) release(r int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.load[r]--
	p.inFlight--
	if front := p.queue.Front(); front != nil {
		w := p.queue.Remove(front).(*waiter)
		w.grant <- p.take(p.leastLoaded())
	}
}

// take occupies a slot of replica r; mu must be held.
func (p *pool) take(r int) grant {
	p.load[r]++
	p.inFlight++
	p.maxInFlight = max(p.maxInFlight, p.inFlight)
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
}

func (p *pool) stats() poolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return poolStats{
		load:     append([]int(nil), p.load...),
		inFlight: p.inFlight, maxInFlight: p.maxInFlight,
		queued: p.queue.Len(), maxQueued: p.maxQueued,
	}
}
