package simulator

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// CapacityMode chooses how a replica shares its GPU between the sequences
// it serves.
type CapacityMode string

// Capacity modes.
const (
	// CapacitySlots (also the empty string) gives each sequence a slot
	// that it holds for a ServiceTime fixed at admission. It is the
	// default.
	CapacitySlots CapacityMode = "slots"
	// CapacityBatch steps each replica like a continuous-batching server
	// (vLLM): see BatchOptions.
	CapacityBatch CapacityMode = "batch"
)

// Defaults of BatchOptions. They stand for a 7B model (Qwen2.5-7B, the
// base of MemAgent's smaller model) in FP16 on one 48 GB GPU of the L40S
// class (about 860 GB/s of memory bandwidth and 360 TFLOPS of dense FP16),
// serving MemAgent calls of about 6K context tokens. They are estimates
// from first principles, not measurements:
//
//   - A decode step reads all 15 GB of weights once: 15 GB at about 70% of
//     860 GB/s is about 25 ms, hence DefaultStepBase.
//   - Each running sequence adds reading its KV cache: Qwen2.5-7B keeps
//     56 KiB per token (28 layers × 4 KV heads × 128 dims × K and V × 2
//     bytes), so 6K tokens are about 340 MB, about 0.55 ms at 600 GB/s
//     effective, hence DefaultStepPerSeq: 25 ms at batch 1, about 60 ms at
//     64 sequences.
//   - Prefill is compute-bound: 2 FLOPs per parameter per token is 15
//     GFLOP per token, and at about 40% of 360 TFLOPS that is about 10,000
//     tokens/s, hence DefaultBatchPrefillTokensPerSec.
//   - The KV cache is what is left of 48 GB × 0.9 after the weights, about
//     28 GB or 500K tokens: about 70 sequences of 7K tokens, hence
//     DefaultMaxNumSeqs (vLLM's own default, 128 to 256, would preempt
//     here).
//   - DefaultMaxNumBatchedTokens is the default of vLLM's scheduler
//     configuration.
const (
	DefaultMaxNumSeqs               = 64
	DefaultMaxNumBatchedTokens      = 2048
	DefaultStepBase                 = 24500 * time.Microsecond
	DefaultStepPerSeq               = 550 * time.Microsecond
	DefaultBatchPrefillTokensPerSec = 10_000
)

// BatchOptions configure CapacityBatch. Each replica runs a scheduler that
// steps like vLLM's with chunked prefill. A step first gives every
// sequence that has its prompt prefilled one decode token, then spends what
// is left of MaxNumBatchedTokens on prompts in order of arrival, a long
// prompt taking several steps. A step lasts
//
//	StepBase + StepPerSeq × (sequences in the step) + (prompt tokens in the step) / PrefillTokensPerSec
//
// so throughput rises with the number of sequences and flattens as
// StepPerSeq comes to dominate, and a long prompt costs each of its
// neighbours' tokens at most MaxNumBatchedTokens/PrefillTokensPerSec. A
// sequence whose prompt is done in a step gets its first completion token
// from that step; a request is answered when its last completion token
// (at least one, the end of sequence) is decoded. The zero value takes the
// Default constants.
type BatchOptions struct {
	// MaxNumSeqs is how many sequences a replica runs at once, vLLM's
	// --max-num-seqs; zero or less means DefaultMaxNumSeqs. It plays the
	// part of Options.Slots: requests beyond it wait in the queue.
	MaxNumSeqs int
	// MaxNumBatchedTokens is the tokens one step may process, decode
	// tokens included, vLLM's --max-num-batched-tokens; zero or less means
	// DefaultMaxNumBatchedTokens. It is raised to MaxNumSeqs if below.
	MaxNumBatchedTokens int
	// StepBase is the time of a step with one sequence decoding, less
	// StepPerSeq; zero or less means DefaultStepBase.
	StepBase time.Duration
	// StepPerSeq is what each sequence in a step adds to its time; zero
	// means DefaultStepPerSeq, negative means nothing.
	StepPerSeq time.Duration
	// PrefillTokensPerSec is how fast a replica prefills prompt tokens;
	// zero or less means DefaultBatchPrefillTokensPerSec.
	PrefillTokensPerSec float64
}

// WithDefaults returns o with its zero fields set to the defaults.
func (o BatchOptions) WithDefaults() BatchOptions {
	if o.MaxNumSeqs <= 0 {
		o.MaxNumSeqs = DefaultMaxNumSeqs
	}
	o.MaxNumBatchedTokens = max(cmp.Or(max(o.MaxNumBatchedTokens, 0), DefaultMaxNumBatchedTokens), o.MaxNumSeqs)
	if o.StepBase <= 0 {
		o.StepBase = DefaultStepBase
	}
	switch {
	case o.StepPerSeq == 0:
		o.StepPerSeq = DefaultStepPerSeq
	case o.StepPerSeq < 0:
		o.StepPerSeq = 0
	}
	if o.PrefillTokensPerSec <= 0 {
		o.PrefillTokensPerSec = DefaultBatchPrefillTokensPerSec
	}
	return o
}

// StepTime is how long a step of seqs sequences and prefill prompt tokens
// lasts; o must have its defaults.
func (o BatchOptions) StepTime(seqs, prefill int) time.Duration {
	return o.StepBase + time.Duration(seqs)*o.StepPerSeq + seconds(float64(prefill)/o.PrefillTokensPerSec)
}

// seq is one request in a replica's batch. Its fields are guarded by the
// replica's mu.
type seq struct {
	prompt, completion int // tokens to prefill and to decode
	prefilled, decoded int
	canceled           bool
	done               chan struct{} // closed when the last token is decoded
	// preempted is closed when the scheduler takes s out of the batch for
	// a more urgent request (see batcher.preempt); resume gives it a new
	// one. epoch counts its stays in a batch, so that a step planned
	// before a preemption does not advance it.
	// epoch is atomic because a batch the sequence has left reads it when
	// it commits a step planned before, while another batch may own it.
	preempted chan struct{}
	epoch     atomic.Int64
	inBatch   bool
	original  int // the prompt as sent
	prio      int // the request's priority, lower first (priority policy)
}

// gone reports whether s has left the batch: answered or aborted.
func (s *seq) gone() bool { return s.canceled || s.decoded == s.completion }

// step is one planned forward pass.
type step struct {
	seqs    []*seq
	epochs  []int64 // of each of seqs when planned
	chunks  []int   // prompt tokens each of seqs prefills; 0 for a decode
	prefill int     // sum of chunks
	dur     time.Duration
}

// batcher is one replica's scheduler. Requests hold a slot of the pool
// before they are submitted, so it never has more than MaxNumSeqs
// sequences; one goroutine steps it while it has any and exits when it has
// none.
type batcher struct {
	o    BatchOptions // with defaults
	wake chan struct{}
	// priority gives prompt chunks to sequences by (priority, arrival),
	// as vLLM's priority policy orders its running requests; otherwise
	// by arrival.
	priority bool

	mu      sync.Mutex
	seqs    []*seq // in order of arrival
	looping bool
	busy    time.Duration // simulated GPU time spent in steps
	prefill time.Duration // the part of busy spent on prompt tokens
	steps   int
	// thrown counts the tokens aborted sequences had prefilled or
	// decoded: work done for no answer.
	thrown int
}

func newBatcher(o BatchOptions) *batcher {
	return &batcher{o: o.WithDefaults(), wake: make(chan struct{}, 1)}
}

// submit adds a sequence and returns it; its done channel closes when it is
// decoded. Its caller must abort it if it stops waiting.
func (b *batcher) submit(promptTokens, completionTokens int) *seq {
	return b.submitPrio(promptTokens, completionTokens, 0)
}

// submitPrio is submit for a request of priority prio.
func (b *batcher) submitPrio(promptTokens, completionTokens, prio int) *seq {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.add(promptTokens, completionTokens)
	s.prio = prio
	if !b.looping {
		b.looping = true
		go b.loop()
	}
	return s
}

// add appends a sequence to the batch; mu must be held.
func (b *batcher) add(promptTokens, completionTokens int) *seq {
	s := &seq{prompt: max(promptTokens, 0), completion: max(completionTokens, 1), done: make(chan struct{}), preempted: make(chan struct{}), inBatch: true}
	s.original = s.prompt
	b.seqs = append(b.seqs, s)
	return s
}

// preempt takes s out of the batch, as vLLM preempts a running request
// by recomputation: its KV cache is dropped, so when it resumes it
// prefills its prompt and the tokens it had decoded again, then decodes
// the rest. It returns false, changing nothing, when s has already left
// (answered, aborted or preempted).
func (b *batcher) preempt(s *seq) bool {
	b.mu.Lock()
	if s.gone() || !s.inBatch {
		b.mu.Unlock()
		return false
	}
	s.inBatch = false
	s.epoch.Add(1)
	b.seqs = slices.DeleteFunc(b.seqs, func(x *seq) bool { return x == s })
	s.prompt, s.prefilled = s.original+s.decoded, 0
	close(s.preempted)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	return true
}

// resume puts a preempted s into this batch (a replica's; not necessarily
// the one it left) and returns the channel that is closed if it is
// preempted again.
func (b *batcher) resume(s *seq) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	s.inBatch = true
	s.preempted = make(chan struct{})
	b.seqs = append(b.seqs, s)
	if !b.looping {
		b.looping = true
		go b.loop()
	}
	return s.preempted
}

// abort takes s out of the batch at the end of the current step; if no
// other sequence is left, the step is abandoned at once.
func (b *batcher) abort(s *seq) {
	b.mu.Lock()
	if !s.gone() {
		b.thrown += s.prefilled + s.decoded
	}
	s.canceled = true
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// loop steps the batch until it is empty. Steps are timed against absolute
// deadlines, so that a late wake-up does not slow the simulated GPU down.
func (b *batcher) loop() {
	next := time.Now()
	for {
		b.mu.Lock()
		st := b.plan()
		if len(st.seqs) == 0 {
			b.looping = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		next = next.Add(st.dur)
		if !b.sleepUntil(next) {
			// Every sequence left was aborted: the step is not finished,
			// and the replica idles from now.
			next = time.Now()
			continue
		}
		b.mu.Lock()
		b.commit(st)
		b.mu.Unlock()
	}
}

// sleepUntil waits for t; it returns false early when an abort leaves no
// live sequence.
func (b *batcher) sleepUntil(t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
			return true
		case <-b.wake:
			b.mu.Lock()
			live := b.live()
			b.mu.Unlock()
			if !live {
				return false
			}
		}
	}
}

// live reports whether any sequence is still in the batch; mu must be held.
func (b *batcher) live() bool {
	for _, s := range b.seqs {
		if !s.gone() && s.inBatch {
			return true
		}
	}
	return false
}

// plan drops answered and aborted sequences and chooses the next step: a decode token
// for every sequence past its prompt, then prompt chunks in order of
// arrival (of priority, then arrival, under the priority policy) within
// what is left of the token budget. mu must be held.
func (b *batcher) plan() step {
	kept := b.seqs[:0]
	for _, s := range b.seqs {
		if !s.gone() && s.inBatch {
			kept = append(kept, s)
		}
	}
	clear(b.seqs[len(kept):])
	b.seqs = kept

	var st step
	budget := b.o.MaxNumBatchedTokens
	for _, s := range b.seqs {
		if budget == 0 || len(st.seqs) == b.o.MaxNumSeqs {
			break
		}
		if s.prefilled == s.prompt {
			st.seqs, st.chunks, st.epochs = append(st.seqs, s), append(st.chunks, 0), append(st.epochs, s.epoch.Load())
			budget--
		}
	}
	prefilling := b.seqs
	if b.priority {
		prefilling = slices.Clone(b.seqs)
		slices.SortStableFunc(prefilling, func(x, y *seq) int { return cmp.Compare(x.prio, y.prio) })
	}
	for _, s := range prefilling {
		if budget == 0 || len(st.seqs) == b.o.MaxNumSeqs {
			break
		}
		if n := min(s.prompt-s.prefilled, budget); n > 0 {
			st.seqs, st.chunks, st.epochs = append(st.seqs, s), append(st.chunks, n), append(st.epochs, s.epoch.Load())
			st.prefill += n
			budget -= n
		}
	}
	st.dur = b.o.StepTime(len(st.seqs), st.prefill)
	return st
}

// commit applies a finished step: prompts advance by their chunks, every
// sequence past its prompt gains a token, and the decoded ones are
// answered and leave. mu must be held.
func (b *batcher) commit(st step) {
	b.busy += st.dur
	b.prefill += seconds(float64(st.prefill) / b.o.PrefillTokensPerSec)
	b.steps++
	for i, s := range st.seqs {
		if s.epoch.Load() != st.epochs[i] {
			continue // preempted during the step: its work is lost
		}
		s.prefilled += st.chunks[i]
		if s.prefilled == s.prompt {
			s.decoded++
		}
		if s.decoded == s.completion {
			close(s.done) // and it leaves at the next plan
		}
	}
}

// batchStats is a consistent snapshot of a batcher.
type batchStats struct {
	busy, prefill time.Duration
	steps, thrown int
}

func (b *batcher) stats() batchStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return batchStats{busy: b.busy, prefill: b.prefill, steps: b.steps, thrown: b.thrown}
}
