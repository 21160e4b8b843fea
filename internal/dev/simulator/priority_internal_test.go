package simulator

import (
	"context"
	"testing"
	"time"
)

// waitQueued waits until p has n requests queued.
func waitQueued(t *testing.T, p *pool, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for p.stats().queued != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests queued, want %d", p.stats().queued, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPoolOrder: with one slot held, requests of priorities 5, 1, 3, 1
// arriving in that order are granted it in order of (priority, arrival)
// under the priority policy, of arrival under first come, first served.
func TestPoolOrder(t *testing.T) {
	for _, tt := range []struct {
		name     string
		priority bool
		want     []int // indexes into prios
	}{
		{"priority", true, []int{1, 3, 2, 0}},
		{"fcfs", false, []int{0, 1, 2, 3}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newPool(1, 1, 0, tt.priority)
			ctx := context.Background()
			first, _, err := p.acquire(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			prios := []int{5, 1, 3, 1}
			granted := make(chan int, len(prios))
			tickets := make(chan *ticket, len(prios))
			for i, prio := range prios {
				go func() {
					tk, _, err := p.acquire(ctx, prio)
					if err != nil {
						t.Error(err)
					}
					tickets <- tk
					granted <- i
				}()
				waitQueued(t, p, i+1)
			}
			p.release(first)
			for _, want := range tt.want {
				got := <-granted
				if got != want {
					t.Fatalf("granted request %d (priority %d), want %d (priority %d)", got, prios[got], want, prios[want])
				}
				p.release(<-tickets)
			}
		})
	}
}

// TestPoolPreempts: under the priority policy a more urgent arrival takes
// the slot of the least urgent running sequence in a batch, which waits
// again and resumes after it, recomputing what it had decoded; an arrival
// no more urgent than any running sequence waits; without the policy no
// one is preempted.
func TestPoolPreempts(t *testing.T) {
	ctx := context.Background()
	b := newBatcher(BatchOptions{StepBase: time.Hour}) // no step ends during the test
	p := newPool(1, 2, 0, true)

	// Two batch requests (priority 1) fill both slots.
	var batch []*ticket
	var seqs []*seq
	for range 2 {
		tk, _, err := p.acquire(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		s := b.submit(100, 50)
		p.attach(tk, b, s)
		batch, seqs = append(batch, tk), append(seqs, s)
	}
	b.mu.Lock()
	seqs[1].decoded = 7 // as if it had run for a while
	b.mu.Unlock()

	// A request of the same priority waits: equal is not more urgent.
	same := make(chan *ticket, 1)
	go func() {
		tk, _, _ := p.acquire(ctx, 1)
		same <- tk
	}()
	waitQueued(t, p, 1)
	if n := p.stats().preemptions; n != 0 {
		t.Fatalf("%d preemptions for a request no more urgent than the running ones", n)
	}

	// A question (priority -1) preempts the later of the two.
	q, g, err := p.acquire(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-seqs[1].preempted:
	default:
		t.Fatal("the latest least urgent sequence was not preempted")
	}
	select {
	case <-seqs[0].preempted:
		t.Fatal("the earlier sequence was preempted too")
	default:
	}
	st := p.stats()
	if st.preemptions != 1 || st.inFlight != 2 || st.queued != 2 || g.replica != 0 {
		t.Fatalf("after the preemption: %+v, grant %+v; want 1 preemption, 2 in flight, 2 queued", st, g)
	}
	b.mu.Lock()
	prompt, prefilled, inBatch := seqs[1].prompt, seqs[1].prefilled, seqs[1].inBatch
	b.mu.Unlock()
	if prompt != 107 || prefilled != 0 || inBatch {
		t.Errorf("the preempted sequence must prefill its prompt and its 7 tokens again: prompt %d, prefilled %d, in batch %v", prompt, prefilled, inBatch)
	}

	// The preempted one keeps its arrival, so it goes before the request
	// of equal priority that came after it.
	resumed := make(chan grant, 1)
	go func() {
		g, err := p.wait(ctx, batch[1])
		if err != nil {
			t.Error(err)
		}
		resumed <- g
	}()
	p.release(q)
	g = <-resumed
	b.resume(seqs[1])
	p.attach(batch[1], b, seqs[1])
	select {
	case tk := <-same:
		t.Fatalf("the later request of equal priority got a slot before the preempted one (%+v)", tk)
	default:
	}
	p.release(batch[0])
	p.release(<-same)
	p.release(batch[1])
	if st := p.stats(); st.inFlight != 0 || st.queued != 0 {
		t.Errorf("after every release: %+v", st)
	}

	// First come, first served never preempts.
	fcfs := newPool(1, 1, 0, false)
	low, _, _ := fcfs.acquire(ctx, 5)
	fcfs.attach(low, b, b.submit(10, 10))
	done := make(chan struct{})
	go func() {
		tk, _, _ := fcfs.acquire(ctx, -2)
		fcfs.release(tk)
		close(done)
	}()
	waitQueued(t, fcfs, 1)
	if n := fcfs.stats().preemptions; n != 0 {
		t.Errorf("first come, first served preempted %d times", n)
	}
	fcfs.release(low)
	<-done
}

// TestBatchPrefillsByPriority: under the priority policy the step's
// prompt budget goes to the most urgent sequence first; otherwise to the
// first to arrive.
func TestBatchPrefillsByPriority(t *testing.T) {
	for _, tt := range []struct {
		priority bool
		want     string
	}{{true, "urgent"}, {false, "batch"}} {
		b := newBatcher(BatchOptions{})
		b.priority = tt.priority
		b.mu.Lock()
		batch := b.add(3000, 5)
		batch.prio = 1
		urgent := b.add(3000, 5)
		urgent.prio = -1
		st := b.plan()
		b.mu.Unlock()
		if len(st.seqs) != 1 {
			t.Fatalf("priority %v: the first step prefills %d sequences, want the budget (%d) spent on one", tt.priority, len(st.seqs), b.o.MaxNumBatchedTokens)
		}
		got := map[*seq]string{batch: "batch", urgent: "urgent"}[st.seqs[0]]
		if got != tt.want {
			t.Errorf("priority policy %v: the first step prefills the %s sequence, want the %s one", tt.priority, got, tt.want)
		}
	}
}
