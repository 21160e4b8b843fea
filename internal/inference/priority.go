package inference

import (
	"container/list"
	"context"
	"time"
)

// Priority orders a request among those waiting for a slot of a busy pool:
// Level 1 goes first … 5 last (0 counts as 3, the middle); among requests
// of one level, keys share the slots in proportion to their weights, and a
// key's own requests go oldest first. It mirrors Temporal's task-queue
// Priority, so a worker's in-process queue agrees with the server's.
type Priority struct {
	Level  int
	Key    string
	Weight float64 // 0 counts as 1
	// Remaining is the calls the caller's run has left, this one
	// included (0: unknown). Among the waiters of one level and key, the
	// one with the most goes first (critical path first: the run with the
	// longest chain of calls ahead decides when the work ends), unless a
	// waiter has waited MaxBypass or longer: those go first, oldest first,
	// so that a short run is never starved by long ones.
	Remaining int
}

// MaxBypass bounds how long a call may be passed over by calls of runs
// with more work left.
const MaxBypass = 30 * time.Second

type priorityKey struct{}

// WithPriority returns ctx carrying p for the pool's queue.
func WithPriority(ctx context.Context, p Priority) context.Context {
	return context.WithValue(ctx, priorityKey{}, p)
}

func priorityFrom(ctx context.Context) Priority {
	p, _ := ctx.Value(priorityKey{}).(Priority)
	if p.Level <= 0 {
		p.Level = 3
	}
	if p.Weight <= 0 {
		p.Weight = 1
	}
	return p
}

// fairQueue is the waiters of a pool: by level, then by start-time fair
// queueing between keys (each key has a virtual finish tag that grows by
// 1/weight per request served; the key with the smallest goes next, and a
// key that starts waiting joins at the current virtual time so it cannot
// claim the past, or at the tag it had reached if that is later, so that
// a key whose queue runs dry between two of its calls cannot claim the
// future either), then oldest first within a key. Not safe for concurrent
// use: the pool's mutex guards it.
type fairQueue struct {
	n      int
	levels map[int]map[string]*list.List // level → key → waiters, oldest first
	tags   map[string]float64            // key → virtual tag, while it has waiters
	// idle holds the tags of keys without waiters that are still ahead of
	// vtime: a key that comes back before vtime reaches its tag resumes at
	// it. Entries are dropped once vtime has caught up with them.
	idle  map[string]float64
	vtime float64 // the tag of the key served last
}

func (q *fairQueue) Len() int { return q.n }

func (q *fairQueue) push(w *waiter) {
	if q.levels == nil {
		q.levels, q.tags = map[int]map[string]*list.List{}, map[string]float64{}
	}
	keys := q.levels[w.prio.Level]
	if keys == nil {
		keys = map[string]*list.List{}
		q.levels[w.prio.Level] = keys
	}
	l := keys[w.prio.Key]
	if l == nil {
		l = list.New()
		keys[w.prio.Key] = l
	}
	if _, ok := q.tags[w.prio.Key]; !ok {
		q.tags[w.prio.Key] = max(q.vtime, q.idle[w.prio.Key])
		delete(q.idle, w.prio.Key)
	}
	w.elem = l.PushBack(w)
	q.n++
}

// remove takes w off the queue (its caller gave up).
func (q *fairQueue) remove(w *waiter) {
	l := q.levels[w.prio.Level][w.prio.Key]
	if l == nil || w.elem == nil {
		return
	}
	l.Remove(w.elem)
	w.elem = nil
	q.n--
	q.prune(w.prio.Level, w.prio.Key, l)
}

// pop returns the next waiter at now, or nil.
func (q *fairQueue) pop(now time.Time) *waiter {
	if q.n == 0 {
		return nil
	}
	level, best, bestTag, l, e := q.next(now)
	w := l.Remove(e).(*waiter)
	w.elem = nil
	q.n--
	q.vtime = bestTag
	q.tags[best] = bestTag + 1/w.prio.Weight
	for k, t := range q.idle {
		if t <= q.vtime {
			delete(q.idle, k)
		}
	}
	q.prune(level, best, l)
	return w
}

// peek returns the waiter pop would return at now, leaving it queued, or
// nil.
func (q *fairQueue) peek(now time.Time) *waiter {
	if q.n == 0 {
		return nil
	}
	_, _, _, _, e := q.next(now)
	return e.Value.(*waiter)
}

// next finds the waiter to serve at now: its level, key, the key's tag,
// the key's list and its element. The queue must not be empty.
func (q *fairQueue) next(now time.Time) (level int, best string, bestTag float64, l *list.List, e *list.Element) {
	for lv := range q.levels {
		if level == 0 || lv < level {
			level = lv
		}
	}
	keys := q.levels[level]
	first := true
	for k := range keys {
		t := q.tags[k]
		if first || t < bestTag || (t == bestTag && k < best) {
			best, bestTag, first = k, t, false
		}
	}
	l = keys[best]
	return level, best, bestTag, l, nextOfKey(l, now)
}

// oldest is when the longest-waiting waiter of level started waiting.
func (q *fairQueue) oldest(level int) (since time.Time, ok bool) {
	for _, l := range q.levels[level] {
		if w := l.Front().Value.(*waiter); !ok || w.since.Before(since) {
			since, ok = w.since, true
		}
	}
	return since, ok
}

// oldestAny is when the longest-waiting waiter started waiting.
func (q *fairQueue) oldestAny() (since time.Time, ok bool) {
	for level := range q.levels {
		if s, found := q.oldest(level); found && (!ok || s.Before(since)) {
			since, ok = s, true
		}
	}
	return since, ok
}

func (q *fairQueue) prune(level int, key string, l *list.List) {
	if l.Len() > 0 {
		return
	}
	delete(q.levels[level], key)
	if len(q.levels[level]) == 0 {
		delete(q.levels, level)
	}
	for _, keys := range q.levels {
		if keys[key] != nil {
			return
		}
	}
	if t := q.tags[key]; t > q.vtime {
		if q.idle == nil {
			q.idle = map[string]float64{}
		}
		q.idle[key] = t
	}
	delete(q.tags, key)
}

// nextOfKey is the element of one key's waiters (oldest first) to serve at now:
// the oldest if it has waited MaxBypass or longer, else the one whose run
// has the most calls left, the oldest of those on a tie.
func nextOfKey(l *list.List, now time.Time) *list.Element {
	front := l.Front()
	if now.Sub(front.Value.(*waiter).since) >= MaxBypass {
		return front
	}
	best := front
	for e := front.Next(); e != nil; e = e.Next() {
		if e.Value.(*waiter).prio.Remaining > best.Value.(*waiter).prio.Remaining {
			best = e
		}
	}
	return best
}
