package simulator

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Fault defaults.
const (
	// DefaultRetryAfter is the Retry-After sent with 429 and 503 answers
	// when Options.RetryAfter is zero.
	DefaultRetryAfter = time.Second
	// DefaultSlowDelay is how long a slow fault stalls when
	// Faults.SlowDelay is zero: longer than any sane client timeout, so
	// that the client gives up first.
	DefaultSlowDelay = time.Hour
)

// FaultKind names a kind of injected fault.
type FaultKind string

// Fault kinds. Each request's outcome for an injected fault is "fault_"
// followed by its kind, e.g. "fault_429".
const (
	// FaultRateLimited answers 429 with a Retry-After header.
	FaultRateLimited FaultKind = "429"
	// FaultServerError answers 500.
	FaultServerError FaultKind = "500"
	// FaultUnavailable answers 503 with a Retry-After header.
	FaultUnavailable FaultKind = "503"
	// FaultSlow stalls for Faults.SlowDelay while holding a slot, then
	// answers normally if the client is still there.
	FaultSlow FaultKind = "slow"
	// FaultMalformed answers 200 with a chat completion body cut in half,
	// as a connection dropped mid-body looks to a client.
	FaultMalformed FaultKind = "malformed"
	// FaultContextOverflow answers 400 "maximum context length is N
	// tokens" whatever the request's size. It is permanent, so FaultRate
	// does not include it.
	FaultContextOverflow FaultKind = "context_overflow"
)

// faultKinds is every kind in the order a draw is mapped to them.
var faultKinds = [...]FaultKind{FaultRateLimited, FaultServerError, FaultUnavailable, FaultSlow, FaultMalformed, FaultContextOverflow}

// transientKinds are the kinds FaultRate spreads over.
var transientKinds = [...]FaultKind{FaultRateLimited, FaultServerError, FaultUnavailable, FaultSlow, FaultMalformed}

// ErrorShape says which body an injected error carries.
type ErrorShape int

// Error body shapes.
const (
	// ShapeAlternate sends nested, flat, nested, ... in turn across the
	// injected errors of one server.
	ShapeAlternate ErrorShape = iota
	// ShapeNested sends the OpenAI shape {"error":{"message":...}} that
	// vLLM uses.
	ShapeNested
	// ShapeFlat sends the SGLang shape {"object":"error","message":...}.
	ShapeFlat
	// ShapeRandom picks the shape from the seeded source, flat with
	// probability FlatShare.
	ShapeRandom
)

// Faults injects failures into POST /v1/chat/completions at given rates.
// Each request that passes validation makes one draw from a source seeded
// with Seed and gets at most one fault; the probabilities are taken in the
// order of the fields below, and a sum above 1 leaves the later kinds only
// what remains. A request that fails validation gets its 400 and no fault,
// so permanent errors stay deterministic under chaos. Faults never change
// what a later successful call answers: the policy depends on the request
// content alone.
type Faults struct {
	// RateLimited is the probability of a 429 with Retry-After.
	RateLimited float64
	// ServerError is the probability of a 500.
	ServerError float64
	// Unavailable is the probability of a 503 with Retry-After.
	Unavailable float64
	// Slow is the probability of stalling for SlowDelay.
	Slow float64
	// Malformed is the probability of a 200 with a truncated body.
	Malformed float64
	// ContextOverflow is the probability of a 400 context-length error.
	ContextOverflow float64
	// Seed seeds the source the draws come from; the same seed and the
	// same order of arrivals inject the same faults.
	Seed uint64
	// SlowDelay is how long a slow fault stalls; zero means
	// DefaultSlowDelay.
	SlowDelay time.Duration
	// Shape chooses the body of injected errors; the zero value
	// alternates nested and flat.
	Shape ErrorShape
	// FlatShare is the probability of a flat body under ShapeRandom; zero
	// means one half.
	FlatShare float64
}

// injector draws faults and error shapes from one seeded source.
type injector struct {
	cum       [len(faultKinds)]float64 // cumulative probabilities
	any       bool
	slowDelay time.Duration
	shape     ErrorShape
	flatShare float64

	mu   sync.Mutex
	rng  *rand.Rand
	turn int // for ShapeAlternate
}

func newInjector(f Faults, rate float64) *injector {
	probs := map[FaultKind]float64{
		FaultRateLimited: f.RateLimited, FaultServerError: f.ServerError, FaultUnavailable: f.Unavailable,
		FaultSlow: f.Slow, FaultMalformed: f.Malformed, FaultContextOverflow: f.ContextOverflow,
	}
	if rate > 0 {
		for _, k := range transientKinds {
			probs[k] += rate / float64(len(transientKinds))
		}
	}
	in := &injector{
		slowDelay: f.SlowDelay,
		shape:     f.Shape,
		flatShare: f.FlatShare,
		rng:       rand.New(rand.NewPCG(f.Seed, f.Seed^0x6d656d6167656e74)),
	}
	if in.slowDelay <= 0 {
		in.slowDelay = DefaultSlowDelay
	}
	if in.flatShare <= 0 {
		in.flatShare = 0.5
	}
	sum := 0.0
	for i, k := range faultKinds {
		sum = min(sum+max(probs[k], 0), 1)
		in.cum[i] = sum
	}
	in.any = sum > 0
	return in
}

// draw returns the fault for one request, or "" for none.
func (in *injector) draw() FaultKind {
	if !in.any {
		return ""
	}
	in.mu.Lock()
	u := in.rng.Float64()
	in.mu.Unlock()
	for i, c := range in.cum {
		if u < c {
			return faultKinds[i]
		}
	}
	return ""
}

// flat reports whether the next injected error body is flat.
func (in *injector) flat() bool {
	switch in.shape {
	case ShapeNested:
		return false
	case ShapeFlat:
		return true
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.shape == ShapeRandom {
		return in.rng.Float64() < in.flatShare
	}
	in.turn++
	return in.turn%2 == 0
}

// errorType is the "type" of an error body for a status, in vLLM's style.
func errorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "BadRequestError"
	case http.StatusNotFound:
		return "NotFoundError"
	case http.StatusTooManyRequests:
		return "RateLimitError"
	case http.StatusInternalServerError:
		return "InternalServerError"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailableError"
	}
	return strings.ReplaceAll(http.StatusText(status), " ", "") + "Error"
}

// retryAfter renders d as whole seconds, rounded up, at least one.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(int(math.Ceil(d.Seconds())), 1))
}

// injectError answers an injected error status in the shape the injector
// picks, with Retry-After on 429 and 503.
func (s *Server) injectError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", retryAfter(s.retryAfter))
	}
	if s.faults.flat() {
		s.flatError(w, r, status, errorType(status), msg)
		return
	}
	s.nestedError(w, r, status, errorType(status), msg)
}

// injectFault answers an immediate fault. It returns false for
// FaultSlow, which the caller serves after a stall.
func (s *Server) injectFault(w http.ResponseWriter, r *http.Request, kind FaultKind) bool {
	switch kind {
	case FaultRateLimited:
		s.injectError(w, r, http.StatusTooManyRequests, "The simulator is rate limiting this request (an injected fault). Retry after the Retry-After delay.")
	case FaultServerError:
		s.injectError(w, r, http.StatusInternalServerError, "The simulator failed this request (an injected fault).")
	case FaultUnavailable:
		s.injectError(w, r, http.StatusServiceUnavailable, "The simulator is temporarily unavailable (an injected fault). Retry after the Retry-After delay.")
	case FaultContextOverflow:
		s.injectError(w, r, http.StatusBadRequest, fmt.Sprintf(
			"The simulator's maximum context length is %d tokens, and this request was refused as if it did not fit (an injected fault). "+
				"Shorten the messages or lower max_tokens.", s.maxLen))
	case FaultMalformed:
		b, _ := json.Marshal(chatResponse{
			ID: fmt.Sprintf("chatcmpl-sim-%d", s.seq.Add(1)), Object: "chat.completion", Created: time.Now().Unix(), Model: s.model,
			Choices: []chatChoice{{Message: responseMessage{Role: "assistant"}, FinishReason: "stop"}},
		})
		s.log.DebugContext(r.Context(), "simulator sent a truncated body (an injected fault)")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(b[:len(b)/2])
	default:
		return false
	}
	return true
}
