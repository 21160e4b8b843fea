package inference

import (
	"fmt"
	"testing"
	"time"
)

func pushN(q *fairQueue, n int, level int, key string, weight float64) {
	for range n {
		q.push(&waiter{prio: Priority{Level: level, Key: key, Weight: weight}})
	}
}

func TestFairQueueLevelsFirst(t *testing.T) {
	var q fairQueue
	pushN(&q, 3, 4, "batch", 1)
	pushN(&q, 2, 2, "", 1)
	var got []int
	for q.Len() > 0 {
		got = append(got, q.pop(time.Time{}).prio.Level)
	}
	if fmt.Sprint(got) != "[2 2 4 4 4]" {
		t.Fatalf("levels served %v, want the two of level 2 first", got)
	}
}

// TestFairQueueShares: two backlogged keys of one level share the slots
// equally, and 2:1 with weights 2 and 1.
func TestFairQueueShares(t *testing.T) {
	for _, tc := range []struct {
		wa, wb float64
		want   int // of 30 served, those of a
	}{{1, 1, 15}, {2, 1, 20}} {
		var q fairQueue
		pushN(&q, 100, 4, "a", tc.wa)
		pushN(&q, 100, 4, "b", tc.wb)
		a := 0
		for range 30 {
			if q.pop(time.Time{}).prio.Key == "a" {
				a++
			}
		}
		if a != tc.want {
			t.Errorf("weights %g:%g: a got %d of 30, want %d", tc.wa, tc.wb, a, tc.want)
		}
	}
}

// TestFairQueueLateKey: a key that starts waiting after another has been
// served for a while gets its share from then on, not a burst for the past.
func TestFairQueueLateKey(t *testing.T) {
	var q fairQueue
	pushN(&q, 100, 4, "a", 1)
	for range 20 {
		q.pop(time.Time{})
		pushN(&q, 1, 4, "a", 1)
	}
	pushN(&q, 100, 4, "b", 1)
	b := 0
	for range 10 {
		if q.pop(time.Time{}).prio.Key == "b" {
			b++
		}
	}
	if b < 4 || b > 6 {
		t.Errorf("late key got %d of the next 10, want about 5", b)
	}
}

func TestFairQueueRemove(t *testing.T) {
	var q fairQueue
	w1 := &waiter{prio: Priority{Level: 3, Key: "k", Weight: 1}}
	w2 := &waiter{prio: Priority{Level: 3, Key: "k", Weight: 1}}
	q.push(w1)
	q.push(w2)
	q.remove(w1)
	q.remove(w1) // a second remove does nothing
	if q.Len() != 1 || q.pop(time.Time{}) != w2 || q.Len() != 0 || len(q.tags) != 0 || len(q.levels) != 0 {
		t.Fatalf("queue after removes: len %d, tags %v, levels %v", q.Len(), q.tags, q.levels)
	}
}

// TestCriticalPathFirst: among the waiters of one key, the run with the
// most calls left goes first; a waiter passed over for MaxBypass goes
// before any, so a short run is never starved.
func TestCriticalPathFirst(t *testing.T) {
	var q fairQueue
	t0 := time.Unix(1000, 0)
	for i, left := range []int{1, 40, 5, 40, 12} {
		q.push(&waiter{prio: Priority{Level: 4, Key: "k", Remaining: left}, since: t0.Add(time.Duration(i) * time.Second)})
	}
	var got []int
	for q.Len() > 0 {
		got = append(got, q.pop(t0.Add(10*time.Second)).prio.Remaining)
	}
	if fmt.Sprint(got) != "[40 40 12 5 1]" {
		t.Errorf("served %v, want the most calls left first: [40 40 12 5 1]", got)
	}

	// The short run's call has waited MaxBypass: it goes first.
	q.push(&waiter{prio: Priority{Level: 4, Key: "k", Remaining: 1}, since: t0})
	q.push(&waiter{prio: Priority{Level: 4, Key: "k", Remaining: 40}, since: t0.Add(time.Second)})
	if w := q.pop(t0.Add(MaxBypass)); w.prio.Remaining != 1 {
		t.Errorf("after MaxBypass the run with %d calls left went first, want the one passed over", w.prio.Remaining)
	}
	q.pop(t0)

	// Keys still share by weight: the critical path orders within a key.
	q.push(&waiter{prio: Priority{Level: 4, Key: "a", Remaining: 1}, since: t0})
	q.push(&waiter{prio: Priority{Level: 4, Key: "b", Remaining: 99}, since: t0})
	q.push(&waiter{prio: Priority{Level: 4, Key: "b", Remaining: 98}, since: t0})
	first, second := q.pop(t0), q.pop(t0)
	if first.prio.Key == second.prio.Key {
		t.Errorf("two calls of key %s in a row while key %s waited", first.prio.Key, map[string]string{"a": "b", "b": "a"}[first.prio.Key])
	}
}

// TestFairQueueRefilledKey: a key whose queue runs dry and fills again
// keeps the tag it had reached, so it gets its share and no more. Key b
// joins after a has been served for a while and never has more than one
// call waiting: each is replaced as soon as it is served, before the next
// slot frees (a tenant whose calls come back quickly). Forgetting b's tag
// when its queue emptied put its next call at the virtual time of the call
// just served, ahead of a, so b took every slot.
func TestFairQueueRefilledKey(t *testing.T) {
	for _, tc := range []struct {
		wa, wb float64
		want   int // of 30 served after b joins, those of b
	}{{1, 1, 15}, {2, 1, 10}} {
		var q fairQueue
		pushN(&q, 100, 4, "a", tc.wa)
		for range 20 {
			q.pop(time.Time{})
			pushN(&q, 1, 4, "a", tc.wa)
		}
		pushN(&q, 1, 4, "b", tc.wb)
		b := 0
		for range 30 {
			w := q.pop(time.Time{})
			pushN(&q, 1, 4, w.prio.Key, w.prio.Weight)
			if w.prio.Key == "b" {
				b++
			}
		}
		if b < tc.want-1 || b > tc.want+1 {
			t.Errorf("weights %g:%g: b, refilled as soon as served, got %d of 30, want %d±1", tc.wa, tc.wb, b, tc.want)
		}
	}
}
