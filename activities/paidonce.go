package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/s3store"
)

// A model call is paid for once. An activity that called the model keeps
// the completion in three places before anything else can fail:
//
//   - in the worker's memory (keptCalls), for a retry on the same worker
//     when Temporal and S3 are both out of reach after the call,
//   - in its heartbeat details (paidCalls), which Temporal hands to the
//     next attempt even when this one fails on S3 or times out, and
//   - in S3, in the chunk's trace (or the run's result), which survives a
//     worker killed before its heartbeat reached the server.
//
// A retry given the same memory reuses the completion instead of calling
// the model again, and the usage it reports counts every call that was
// made, the repeats included (Usage.RepeatedCalls).

// paidCalls is what one attempt hands the next through heartbeat details.
type paidCalls struct {
	// Calls and Usage are every model call the attempts so far made.
	Calls int       `json:"calls"`
	Usage api.Usage `json:"usage"`
	// Kept is the last completion, for the input whose digest it names.
	Kept *KeptCompletion `json:"kept,omitempty"`
}

// KeptCompletion is a completion as kept for a retry (actwire's).
type KeptCompletion = actwire.KeptCompletion

func keep(digest string, c inference.Completion) *KeptCompletion {
	return &KeptCompletion{InputSHA256: digest, Text: c.Text, Model: c.Model, FinishReason: c.FinishReason,
		PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens, CachedTokens: c.CachedTokens,
		LatencyMS: c.Latency.Milliseconds()}
}

func completionOf(k *KeptCompletion) inference.Completion {
	return inference.Completion{Text: k.Text, Model: k.Model, FinishReason: k.FinishReason,
		PromptTokens: k.PromptTokens, CompletionTokens: k.CompletionTokens, CachedTokens: k.CachedTokens,
		Latency: time.Duration(k.LatencyMS) * time.Millisecond}
}

// inputDigest names what a completion answered: a retry reuses a
// completion only for the same question, memory and chunk.
func inputDigest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		b, _ := json.Marshal(p)
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// priorCalls reads what earlier attempts of this activity paid for.
func priorCalls(ctx context.Context) paidCalls {
	var p paidCalls
	if activity.IsActivity(ctx) && activity.HasHeartbeatDetails(ctx) {
		if err := activity.GetHeartbeatDetails(ctx, &p); err != nil {
			return paidCalls{}
		}
	}
	return p
}

func attempt(ctx context.Context) int32 {
	if activity.IsActivity(ctx) {
		return activity.GetInfo(ctx).Attempt
	}
	return 1
}

// paidCompletion returns the completion for the input with digest: one an
// earlier attempt kept (in its heartbeat details, or as found by stored,
// which reads what it wrote to S3), or a new call. It returns the calls
// made for this input so far, the new one included, for the usage.
func (a *Activities) paidCompletion(ctx context.Context, hb *heartbeat, key, digest string, stored func() *KeptCompletion,
	call func() (inference.Completion, error)) (inference.Completion, paidCalls, error) {
	prior := priorCalls(ctx)
	if local, ok := a.kept.get(key); ok && local.Calls >= prior.Calls {
		// This worker made the calls: it knows them even when neither
		// the heartbeat nor S3 got them.
		prior = local
	}
	if prior.Kept != nil && prior.Kept.InputSHA256 == digest {
		a.logger().InfoContext(ctx, "model call reused from an earlier attempt", "attempt", attempt(ctx))
		return completionOf(prior.Kept), prior, nil
	}
	if attempt(ctx) > 1 {
		if k := stored(); k != nil && k.InputSHA256 == digest {
			if prior.Calls == 0 {
				// The attempt that paid died before its heartbeat reached
				// the server: its call is known from S3 alone.
				c := completionOf(k)
				prior = paidCalls{Calls: 1, Usage: usageOf(c), Kept: k}
			}
			a.logger().InfoContext(ctx, "model call reused from its stored record", "attempt", attempt(ctx))
			return completionOf(k), prior, nil
		}
	}
	c, err := call()
	if err != nil {
		return c, prior, err
	}
	prior.Calls++
	prior.Usage = prior.Usage.Add(usageOf(c))
	prior.Kept = keep(digest, c)
	a.kept.put(key, prior)
	hb.set(prior)
	return c, prior, nil
}

// maxKeptCalls bounds the completions a worker keeps in memory for the
// retries of activities that failed after paying; the oldest go first.
const maxKeptCalls = 4096

// keptCalls is the worker's memory of paid completions, by the output
// they were for (a chunk's trace, a result), until the activity that paid
// completes.
type keptCalls struct {
	mu    sync.Mutex
	m     map[string]paidCalls
	order []string
}

func (k *keptCalls) get(key string) (paidCalls, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	p, ok := k.m[key]
	return p, ok
}

func (k *keptCalls) put(key string, p paidCalls) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = make(map[string]paidCalls)
	}
	if _, ok := k.m[key]; !ok {
		k.order = append(k.order, key)
	}
	k.m[key] = p
	for len(k.order) > maxKeptCalls {
		delete(k.m, k.order[0])
		k.order = k.order[1:]
	}
}

// done forgets key: its activity completed, and its output in S3 keeps the
// completion for any later attempt.
func (k *keptCalls) done(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.m[key]; ok {
		delete(k.m, key)
		k.order = slices.DeleteFunc(k.order, func(s string) bool { return s == key })
	}
}

// usage is what the activity reports for the calls in p: all of them, the
// ones before the last as repeats.
func (p paidCalls) usage() api.Usage {
	u := p.Usage
	u.Calls = p.Calls
	u.RepeatedCalls = max(p.Calls-1, 0)
	return u
}

// heartbeat records an activity's heartbeats, with its latest details, for
// as long as the activity runs: model calls and S3 operations alike, so a
// slow S3 request does not look like a dead worker.
type heartbeat struct {
	// actx is the activity's context; nil outside an activity (tests).
	actx    context.Context
	mu      sync.Mutex
	details any
	done    chan struct{}
	wg      sync.WaitGroup
}

type heartbeatKey struct{}

// beginHeartbeat starts heartbeating; calls of startHeartbeat under the
// returned context do nothing, as this one covers them.
func (a *Activities) beginHeartbeat(ctx context.Context) (context.Context, *heartbeat) {
	hb := &heartbeat{done: make(chan struct{})}
	if !activity.IsActivity(ctx) {
		return ctx, hb
	}
	hb.actx = ctx
	hb.wg.Add(1)
	go func() {
		defer hb.wg.Done()
		t := time.NewTicker(a.heartbeatEvery(ctx))
		defer t.Stop()
		for {
			select {
			case <-hb.done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				hb.record(ctx)
			}
		}
	}()
	return context.WithValue(ctx, heartbeatKey{}, hb), hb
}

// set replaces the details and records them at once (a heartbeat without
// them would erase them for the next attempt), in the background: the
// heartbeat RPC runs beside the S3 writes of the trace, which keeps the
// same completion, instead of before them, and stop waits for it, so the
// activity never completes with it in flight.
func (hb *heartbeat) set(details any) {
	hb.mu.Lock()
	hb.details = details
	hb.mu.Unlock()
	if hb.actx != nil {
		hb.wg.Add(1)
		go func() {
			defer hb.wg.Done()
			hb.record(hb.actx)
		}()
	}
}

func (hb *heartbeat) record(ctx context.Context) {
	hb.mu.Lock()
	d := hb.details
	hb.mu.Unlock()
	if d == nil {
		activity.RecordHeartbeat(ctx)
		return
	}
	activity.RecordHeartbeat(ctx, d)
}

func (hb *heartbeat) stop() {
	select {
	case <-hb.done:
	default:
		close(hb.done)
	}
	hb.wg.Wait()
}

// DefaultS3OpTimeout bounds one small S3 operation of a model activity
// (a chunk read, a trace or result write): well inside the heartbeat
// timeout, so a hung store fails the attempt instead of stalling it.
const DefaultS3OpTimeout = 10 * time.Second

func (a *Activities) s3ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, a.s3Timeout())
}

func (a *Activities) s3Timeout() time.Duration {
	if a.S3OpTimeout <= 0 {
		return DefaultS3OpTimeout
	}
	return a.S3OpTimeout
}

// readKept reads a JSON object an earlier attempt wrote, or nil.
func (a *Activities) readKept(ctx context.Context, loc s3store.Location, v any) bool {
	sctx, cancel := a.s3ctx(ctx)
	defer cancel()
	data, err := a.Store.ReadAll(sctx, loc)
	if err != nil {
		if !errors.Is(err, s3store.ErrNotFound) {
			a.logger().WarnContext(ctx, "stored record of an earlier attempt not readable", "object", loc.String(), "err", err)
		}
		return false
	}
	return json.Unmarshal(data, v) == nil
}
