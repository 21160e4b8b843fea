package inference

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// DefaultPriorityEvict is the window MEMAGENT_MODEL_PRIORITY_EVICT=on
// means: a less urgent call that started at most this long ago is stopped
// for an urgent one (PoolConfig.PriorityEvict). A chunk update of the
// paper's setting decodes for tens of seconds on a busy server, so the
// calls stopped are those still prefilling or early in their decode, and
// the GPU time one stop throws away is at most this.
const DefaultPriorityEvict = 10 * time.Second

// maxPriorityEvict bounds an explicit window: a call older than this has
// done too much work to throw away for a question.
const maxPriorityEvict = 10 * time.Minute

// ParsePriorityEvict reads MEMAGENT_MODEL_PRIORITY_EVICT: "" or "off" (or
// "0") stops nothing, "on" is DefaultPriorityEvict, and a duration up to
// ten minutes (Go syntax: 5s, 1m30s) is the window.
func ParsePriorityEvict(s string) (time.Duration, error) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case "", "off", "0", "false", "no":
		return 0, nil
	case "on", "true", "yes":
		return DefaultPriorityEvict, nil
	default:
		if d, err := time.ParseDuration(v); err == nil && d > 0 && d <= maxPriorityEvict {
			return d, nil
		}
	}
	return 0, fmt.Errorf("model priority evict %q: want off, on (calls started in the last %s), or a duration up to %s (e.g. 5s): the age under which a batch's call at a server told priorities is stopped and sent again later for a question's", s, DefaultPriorityEvict, maxPriorityEvict)
}

// errEvicted is the cause of the context of a call stopped for a more
// urgent one.
var errEvicted = errors.New("inference: call stopped for a more urgent one; it is sent again")

// evictCall is one completion outstanding at an endpoint that eviction may stop
// (registered by startCall); its fields are guarded by Pool.mu.
type evictCall struct {
	level   int
	start   time.Time
	cancel  context.CancelCauseFunc
	evicted bool
}

// evictable reports whether a call of level at ep may be stopped for an
// urgent one: eviction is on, the hold holds calls of level back (so that
// the call, sent again, waits until the urgent calls are done), and ep's
// server orders by priority, a self-hosted vLLM or SGLang that frees the
// sequence when its client goes away.
func (p *Pool) evictable(ep *endpoint, level int) bool {
	return p.evict > 0 && p.hold > 0 && holdLevel(level) > p.hold && ep.ordered
}

// startCall registers a call of level at ep for eviction and returns the
// context to send it with; a call that may not be stopped gets ctx itself
// and a nil *call.
// A call stopped once (again) is never stopped again.
func (p *Pool) startCall(ctx context.Context, ep *endpoint, level int, again bool) (context.Context, *evictCall) {
	if again || !p.evictable(ep, level) {
		return ctx, nil
	}
	cctx, cancel := context.WithCancelCause(ctx)
	c := &evictCall{level: holdLevel(level), start: p.now(), cancel: cancel}
	p.mu.Lock()
	if ep.calls == nil {
		ep.calls = make(map[*evictCall]struct{})
	}
	ep.calls[c] = struct{}{}
	p.mu.Unlock()
	return cctx, c
}

// endCall unregisters c and reports whether it was stopped for an urgent
// call.
func (p *Pool) endCall(ep *endpoint, c *evictCall) bool {
	if c == nil {
		return false
	}
	p.mu.Lock()
	delete(ep.calls, c)
	evicted := c.evicted
	p.mu.Unlock()
	c.cancel(nil)
	return evicted
}

// evictLocked stops the calls at ep that the hold would have kept back
// from a call of level (p.hold or more urgent) and that started within
// the window (stoppableLocked), so that their sequences leave the
// server's batch and the urgent call's steps run without their prompts.
// Each comes back to the pool's queue (complete) and is sent again once
// the hold lets it, and never stopped a second time.
func (p *Pool) evictLocked(ep *endpoint, level int, now time.Time) {
	if !p.evictsFor(level) {
		return
	}
	for c := range ep.calls {
		if p.stoppableLocked(c, level, now) {
			c.evicted = true
			c.cancel(errEvicted)
		}
	}
}

// evictsFor reports whether a call of level stops others: eviction is on
// and the hold holds others back for it.
func (p *Pool) evictsFor(level int) bool { return p.evict > 0 && holdLevel(level) <= p.hold }

// stoppableLocked reports whether c may be stopped for a call of level:
// it was not stopped before, is less urgent, and started within the
// window.
func (p *Pool) stoppableLocked(c *evictCall, level int, now time.Time) bool {
	return !c.evicted && c.level > holdLevel(level) && now.Sub(c.start) <= p.evict
}

// evictForWaiterLocked makes room for an urgent waiter of level that found
// no free slot: it stops the young less urgent calls at the endpoint in
// rotation that has the most of them. Their slots come back through
// releaseEvicted, and the queue hands them to the waiter first.
func (p *Pool) evictForWaiterLocked(level int, now time.Time) {
	if !p.evictsFor(level) {
		return
	}
	var best *endpoint
	most := 0
	for _, ep := range p.endpoints {
		if ep.ejected(now) {
			continue
		}
		n := 0
		for c := range ep.calls {
			if p.stoppableLocked(c, level, now) {
				n++
			}
		}
		if n > most {
			best, most = ep, n
		}
	}
	if best != nil {
		p.evictLocked(best, level, now)
	}
}

// releaseEvicted gives back the slot of a call stopped for an urgent one.
// The endpoint did nothing wrong, so its health does not change.
func (p *Pool) releaseEvicted(ep *endpoint, level int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ep.inFlight--
	ep.evictions++
	ep.hold.inFlight[holdLevel(level)]--
	p.dispatchLocked()
}
