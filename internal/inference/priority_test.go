package inference

import (
	"fmt"
	"testing"
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
		got = append(got, q.pop().prio.Level)
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
			if q.pop().prio.Key == "a" {
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
		q.pop()
		pushN(&q, 1, 4, "a", 1)
	}
	pushN(&q, 100, 4, "b", 1)
	b := 0
	for range 10 {
		if q.pop().prio.Key == "b" {
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
	if q.Len() != 1 || q.pop() != w2 || q.Len() != 0 || len(q.tags) != 0 || len(q.levels) != 0 {
		t.Fatalf("queue after removes: len %d, tags %v, levels %v", q.Len(), q.tags, q.levels)
	}
}
