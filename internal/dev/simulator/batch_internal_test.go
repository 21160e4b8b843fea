package simulator

import (
	"fmt"
	"testing"
	"time"
)

// request is one request of a virtual-time run.
type request struct {
	at                 time.Duration // arrival
	prompt, completion int
}

// virtualRun is the outcome of stepping a batcher in virtual time.
type virtualRun struct {
	done  []time.Duration // completion time of each request, by index
	steps []step
	end   time.Duration
}

// runVirtual steps a batcher without its goroutine, on a virtual clock, the
// way loop does on the real one: arrivals join at the next step boundary,
// at most MaxNumSeqs at a time (the pool's part), the rest waiting in
// order. next, if not nil, is called when request i is answered and may
// return a follow-up to arrive at once (a closed-loop client).
func runVirtual(t *testing.T, o BatchOptions, reqs []request, next func(i int) (request, bool)) virtualRun {
	t.Helper()
	b := newBatcher(o)
	var (
		now     time.Duration
		run     virtualRun
		waiting []int // indexes into reqs, arrived or not, in order
		running = map[*seq]int{}
	)
	for i := range reqs {
		waiting = append(waiting, i)
		run.done = append(run.done, -1)
	}
	for len(waiting) > 0 || len(running) > 0 {
		for len(waiting) > 0 && reqs[waiting[0]].at <= now && len(running) < b.o.MaxNumSeqs {
			i := waiting[0]
			waiting = waiting[1:]
			running[b.add(reqs[i].prompt, reqs[i].completion)] = i
		}
		if len(running) == 0 {
			now = reqs[waiting[0]].at
			continue
		}
		st := b.plan()
		if len(st.seqs) == 0 {
			t.Fatalf("at %s: %d sequences in the batch and an empty step", now, len(running))
		}
		now += st.dur
		b.commit(st)
		run.steps = append(run.steps, st)
		for _, s := range st.seqs {
			select {
			case <-s.done:
			default:
				continue
			}
			i := running[s]
			delete(running, s)
			run.done[i] = now
			if next == nil {
				continue
			}
			if r, ok := next(i); ok {
				r.at = now
				reqs = append(reqs, r)
				run.done = append(run.done, -1)
				waiting = append(waiting, len(reqs)-1)
			}
		}
		if len(run.steps) > 1_000_000 {
			t.Fatalf("still stepping after a million steps")
		}
	}
	run.end = now
	return run
}

func TestBatchOptionsDefaults(t *testing.T) {
	o := BatchOptions{}.WithDefaults()
	if o.MaxNumSeqs != DefaultMaxNumSeqs || o.MaxNumBatchedTokens != DefaultMaxNumBatchedTokens || o.StepBase != DefaultStepBase ||
		o.StepPerSeq != DefaultStepPerSeq || o.PrefillTokensPerSec != DefaultBatchPrefillTokensPerSec {
		t.Errorf("zero BatchOptions with defaults = %+v", o)
	}
	// The figures the defaults were chosen for: about 25 ms a step at
	// batch 1, about 60 ms at 64, and 10,000 prompt tokens a second.
	tests := []struct {
		name          string
		seqs, prefill int
		lo, hi        time.Duration
	}{
		{"one sequence decoding", 1, 0, 24 * time.Millisecond, 26 * time.Millisecond},
		{"64 sequences decoding", 64, 0, 55 * time.Millisecond, 65 * time.Millisecond},
		{"10,000 prompt tokens take a second", 1, 10_000, 1020 * time.Millisecond, 1030 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := o.StepTime(tt.seqs, tt.prefill); got < tt.lo || got > tt.hi {
				t.Errorf("StepTime(%d, %d) = %s, want %s to %s", tt.seqs, tt.prefill, got, tt.lo, tt.hi)
			}
		})
	}
	if got := (BatchOptions{MaxNumSeqs: 300, MaxNumBatchedTokens: 100, StepPerSeq: -1}).WithDefaults(); got.MaxNumBatchedTokens != 300 || got.StepPerSeq != 0 {
		t.Errorf("WithDefaults = %+v, want the token budget raised to 300 sequences and no per-sequence cost", got)
	}
}

func TestBatchStep(t *testing.T) {
	o := BatchOptions{MaxNumSeqs: 4, MaxNumBatchedTokens: 100, StepBase: 10 * time.Millisecond, StepPerSeq: time.Millisecond, PrefillTokensPerSec: 1000}
	b := newBatcher(o)
	long := b.add(250, 2) // prefilled over three steps
	short := b.add(30, 1) // waits for the budget, then one token
	empty := b.add(0, 0)  // no prompt and no completion: one token
	b.add(10, 5)
	var chunks [][]int
	for range 3 {
		st := b.plan()
		var c []int
		c = append(c, st.chunks...)
		chunks = append(chunks, c)
		if want := o.StepTime(len(st.seqs), st.prefill); st.dur != want {
			t.Errorf("step of %d sequences and %d prompt tokens lasts %s, want %s", len(st.seqs), st.prefill, st.dur, want)
		}
		if st.prefill+len(st.seqs)-countPrefilling(st) > o.MaxNumBatchedTokens {
			t.Errorf("step processes %d tokens, over the budget %d", st.prefill+len(st.seqs)-countPrefilling(st), o.MaxNumBatchedTokens)
		}
		b.commit(st)
	}
	// Step 1: the empty sequence decodes its one token first; the long
	// prompt takes the other 99 tokens. Step 2: the empty one has left,
	// and the long prompt takes all 100. Step 3: 51 tokens end the long
	// prompt (and give it its first token), 30 are the short prompt and 10
	// the fourth's.
	want := [][]int{{0, 99}, {100}, {51, 30, 10}}
	if fmt.Sprint(chunks) != fmt.Sprint(want) {
		t.Errorf("chunks per step %v, want %v", chunks, want)
	}
	for _, c := range []struct {
		name string
		s    *seq
		done bool
	}{{"long", long, false}, {"short", short, true}, {"empty", empty, true}} {
		select {
		case <-c.s.done:
			if !c.done {
				t.Errorf("%s answered after three steps, want not yet", c.name)
			}
		default:
			if c.done {
				t.Errorf("%s not answered after three steps (prefilled %d of %d, decoded %d of %d)", c.name, c.s.prefilled, c.s.prompt, c.s.decoded, c.s.completion)
			}
		}
	}
	if long.decoded != 1 || long.prefilled != 250 {
		t.Errorf("long: %d prefilled, %d decoded; want 250 and the first token", long.prefilled, long.decoded)
	}

	// However many sequences the batch holds, a step takes MaxNumSeqs.
	b = newBatcher(BatchOptions{MaxNumSeqs: 2})
	for range 3 {
		b.add(0, 5)
	}
	if st := b.plan(); len(st.seqs) != 2 {
		t.Errorf("a step of %d sequences with MaxNumSeqs 2", len(st.seqs))
	}
}

func countPrefilling(st step) int {
	n := 0
	for _, c := range st.chunks {
		if c > 0 {
			n++
		}
	}
	return n
}

// TestBatchThroughputShape runs closed-loop clients (each sends its next
// request when the last is answered) at several concurrencies against one
// replica with the default options, in virtual time. Tokens per second
// rise with concurrency, each step up gaining less, and stop rising at
// MaxNumSeqs.
func TestBatchThroughputShape(t *testing.T) {
	const perClient = 4
	throughput := func(clients int) float64 {
		var reqs []request
		sent := make([]int, 0, clients)
		owner := map[int]int{} // request index to client
		for c := range clients {
			owner[len(reqs)] = c
			reqs = append(reqs, request{prompt: 1000, completion: 200})
			sent = append(sent, 1)
		}
		n := len(reqs)
		run := runVirtual(t, BatchOptions{}, reqs, func(i int) (request, bool) {
			c := owner[i]
			if sent[c] == perClient {
				return request{}, false
			}
			sent[c]++
			owner[n] = c
			n++
			return request{prompt: 1000, completion: 200}, true
		})
		return float64(clients*perClient*1200) / run.end.Seconds()
	}
	concurrency := []int{1, 4, 16, 64, 128}
	var got []float64
	for _, c := range concurrency {
		got = append(got, throughput(c))
	}
	t.Logf("tokens/s at concurrency %v: %.0f", concurrency, got)
	for i := 1; i < 4; i++ {
		if got[i] <= got[i-1] {
			t.Errorf("throughput %.0f tokens/s at %d clients, want more than %.0f at %d", got[i], concurrency[i], got[i-1], concurrency[i-1])
		}
	}
	// Each fourfold step gains less than the one before.
	for i := 2; i < 4; i++ {
		if g, prev := got[i]/got[i-1], got[i-1]/got[i-2]; g >= prev {
			t.Errorf("gain ×%.2f from %d to %d clients, want less than the ×%.2f before", g, concurrency[i-1], concurrency[i], prev)
		}
	}
	// Batching pays: 64 sequences give far more than one, far less than 64×.
	if r := got[3] / got[0]; r < 10 || r > 40 {
		t.Errorf("throughput at 64 clients is %.1f× that at one, want between 10× and 40×", r)
	}
	// Past MaxNumSeqs the extra clients only queue.
	if r := got[4] / got[3]; r < 0.95 || r > 1.05 {
		t.Errorf("throughput at 128 clients is %.3f× that at 64, want flat (MaxNumSeqs is %d)", r, DefaultMaxNumSeqs)
	}
}

// TestLongPromptDoesNotStallDecode sends eight short requests and, just
// after them, one whose 100,000-token prompt would take ten seconds to
// prefill at once. The eight still get a token every step: each step is
// slowed by at most the budget's share of prefill.
func TestLongPromptDoesNotStallDecode(t *testing.T) {
	o := BatchOptions{}.WithDefaults()
	short := make([]request, 8)
	for i := range short {
		short[i] = request{prompt: 100, completion: 100}
	}
	alone := runVirtual(t, o, short, nil)
	withLong := runVirtual(t, o, append(short[:8:8], request{prompt: 100_000, completion: 10}), nil)

	longSteps := 0
	for _, st := range withLong.steps {
		for i, s := range st.seqs {
			if s.prompt == 100_000 && st.chunks[i] > 0 {
				longSteps++
			}
		}
		if tokens := st.prefill + len(st.seqs) - countPrefilling(st); tokens > o.MaxNumBatchedTokens {
			t.Errorf("a step processes %d tokens, over the budget %d", tokens, o.MaxNumBatchedTokens)
		}
	}
	if least := (100_000 + o.MaxNumBatchedTokens - 1) / o.MaxNumBatchedTokens; longSteps < least {
		t.Errorf("the long prompt was prefilled in %d steps, want at least %d (chunked)", longSteps, least)
	}
	// The bound: every step the long prompt was in costs at most the whole
	// budget in prefill and one more sequence.
	share := o.StepTime(1, o.MaxNumBatchedTokens) - o.StepTime(0, 0)
	bound := time.Duration(longSteps) * share
	for i := range short {
		delay := withLong.done[i] - alone.done[i]
		if delay < 0 || delay > bound {
			t.Errorf("short request %d answered %s later beside the long prompt, want at most %s (%d steps × %s)", i, delay, bound, longSteps, share)
		}
	}
	// Every step carries every short request still decoding, so none
	// waits longer than one step with a full budget of prefill between two
	// tokens; without chunking one step would have held them for ten
	// seconds.
	var at, gap time.Duration
	last := map[*seq]time.Duration{}
	for _, st := range withLong.steps {
		at += st.dur
		for _, s := range st.seqs {
			if s.prompt == 100 {
				gap = max(gap, at-last[s])
				last[s] = at
			}
		}
	}
	if limit := o.StepTime(9, o.MaxNumBatchedTokens); gap > limit {
		t.Errorf("a short request waited %s between two of its steps, want at most %s", gap, limit)
	}
	if withLong.done[8] < 10*time.Second {
		t.Errorf("long request answered at %s, want no sooner than its 10s of prefill", withLong.done[8])
	}
}

func TestBatchLoopIdlesAndAborts(t *testing.T) {
	b := newBatcher(BatchOptions{StepBase: time.Hour})
	q := b.submit(10, 10)
	looping := func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.looping }
	if !looping() {
		t.Fatalf("no loop after submit")
	}
	// The only sequence is aborted mid-step: the hour-long step is
	// abandoned and the loop exits.
	b.abort(q)
	deadline := time.Now().Add(10 * time.Second)
	for looping() {
		if time.Now().After(deadline) {
			t.Fatalf("loop still running 10s after its only sequence was aborted")
		}
		time.Sleep(time.Millisecond)
	}
	if st := b.stats(); st.steps != 0 || st.busy != 0 {
		t.Errorf("stats %+v after an abandoned step, want none counted", st)
	}

	// A fast batch answers and then idles.
	b = newBatcher(BatchOptions{StepBase: time.Millisecond, StepPerSeq: -1, PrefillTokensPerSec: 1e9})
	qs := []*seq{b.submit(5, 3), b.submit(50, 2)}
	for _, q := range qs {
		select {
		case <-q.done:
		case <-time.After(10 * time.Second):
			t.Fatalf("sequence not answered within 10s")
		}
	}
	deadline = time.Now().Add(10 * time.Second)
	for looping() {
		if time.Now().After(deadline) {
			t.Fatalf("loop still running with an empty batch")
		}
		time.Sleep(time.Millisecond)
	}
	if st := b.stats(); st.steps != 3 {
		t.Errorf("%d steps, want 3 (both prompts and first tokens, then two more tokens for the first)", st.steps)
	}
}

// An aborted sequence's prefilled and decoded tokens count as thrown away;
// an answered one's, and a second abort, do not.
func TestBatchCountsThrownTokens(t *testing.T) {
	b := newBatcher(BatchOptions{MaxNumSeqs: 4, MaxNumBatchedTokens: 100, StepBase: time.Millisecond, PrefillTokensPerSec: 1000})
	aborted := b.add(150, 5)
	answered := b.add(0, 1)
	for range 3 { // 99 + 51 prompt tokens, then a token decoded
		b.commit(b.plan())
	}
	if answered.decoded != 1 || aborted.prefilled != 150 || aborted.decoded != 2 {
		t.Fatalf("after three steps: answered decoded %d, aborted prefilled %d and decoded %d; want 1, 150, 2", answered.decoded, aborted.prefilled, aborted.decoded)
	}
	b.abort(aborted)
	b.abort(aborted)
	b.abort(answered)
	if st := b.stats(); st.thrown != 152 {
		t.Errorf("%d tokens thrown away, want 152: the aborted sequence's prompt and two tokens", st.thrown)
	}
}
