package simulator

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for the zero Options.
const (
	// DefaultModel is the model id the simulator serves and reports. It
	// names the simulator, so that no log or result can pass it off as a
	// model.
	DefaultModel = "memagent-simulator"
	// DefaultMaxModelLen is the context length, in tokens, that requests
	// are checked against.
	DefaultMaxModelLen = 32768
	// DefaultMaxCalls is how many calls Calls remembers.
	DefaultMaxCalls = 100000
)

// Call kinds.
const (
	// KindUpdate is a memory-update call: the prompt has a <section>.
	KindUpdate = "update"
	// KindFinal is a final-answer call: the prompt has no <section>.
	KindFinal = "final"
)

// maxBody caps a request body.
const maxBody = 64 << 20

// Tokenizer counts tokens. memagent.Tokenizer satisfies it; the simulator
// needs nothing more, so it asks for nothing more.
type Tokenizer interface {
	Count(text string) int
}

// Options configure a Server. The zero value works: one replica of
// DefaultSlots slots, instantaneous service, an unbounded queue and no
// faults.
type Options struct {
	// Model is the model id to serve; "" means DefaultModel. Requests
	// naming another model get a 404.
	Model string
	// MaxModelLen is the context length in tokens; zero or less means
	// DefaultMaxModelLen.
	MaxModelLen int
	// Tokenizer counts prompt and completion tokens. Nil means an
	// approximation of one token per four bytes.
	Tokenizer Tokenizer
	// Latency is the fixed part of ServiceTime, the time a request holds
	// its slot. Under CapacityBatch it is added after the batch has
	// decoded the request, holding its slot but not the replica's steps.
	// A request whose client goes away meanwhile is dropped: its slot is
	// freed and no call is recorded.
	Latency time.Duration
	// Logger receives debug records only; nil discards them.
	Logger *slog.Logger
	// MaxCalls bounds the calls kept for Calls; zero or less means
	// DefaultMaxCalls. The oldest are forgotten first.
	MaxCalls int

	// Replicas is how many replicas the pool has; zero or less means one.
	Replicas int
	// Capacity chooses how a replica serves its sequences: CapacitySlots
	// (the default, also "") or CapacityBatch. Other values mean
	// CapacitySlots.
	Capacity CapacityMode
	// Slots is how many sequences each replica serves at once under
	// CapacitySlots; zero or less means DefaultSlots. A request holds one
	// slot of the least-loaded replica for ServiceTime; when every slot is
	// busy it waits in a FIFO queue.
	Slots int
	// PrefillTokensPerSec and DecodeTokensPerSec are the speeds of one
	// sequence under CapacitySlots; zero or less means instantaneous. See
	// ServiceTime.
	PrefillTokensPerSec, DecodeTokensPerSec float64
	// DecodeSlowdown slows decoding on a busy replica under
	// CapacitySlots; zero means none. See ServiceTime.
	DecodeSlowdown float64
	// Batch configures CapacityBatch, where a request holds one of the
	// least-loaded replica's Batch.MaxNumSeqs slots (waiting in the same
	// FIFO queue when all are busy) until the replica's scheduler has
	// prefilled its prompt and decoded its completion.
	Batch BatchOptions
	// SchedulingPolicy is how waiting requests are ordered, as vLLM's
	// --scheduling-policy: SchedulingFCFS (also "") serves them in order
	// of arrival, and a request whose priority field is not 0 is refused
	// with 400, as vLLM refuses it; SchedulingPriority serves them by
	// (priority, arrival), lower first, and under CapacityBatch a waiting
	// request preempts the least urgent running one that is less urgent
	// than itself (see pool). Other values mean SchedulingFCFS.
	SchedulingPolicy string
	// MaxQueue bounds the requests waiting for a slot; zero or less means
	// unbounded. Over it a request gets 503 with a nested error body and
	// Retry-After, as vLLM answers with --max-num-queued-reqs.
	MaxQueue int
	// RetryAfter is sent with every 429 and 503, rounded up to whole
	// seconds; zero means DefaultRetryAfter.
	RetryAfter time.Duration

	// Policy is how completions are made: PolicyExtractive (the default,
	// also "") or PolicyChain.
	Policy string

	// Faults injects failures at given rates.
	Faults Faults
	// FaultRate is added evenly over the transient fault kinds (429, 500,
	// 503, slow and malformed): 0.2 gives each of them 0.04.
	FaultRate float64
	// FailAll, when nonzero, is the HTTP status (400 to 599) every chat
	// completion is answered with, in the nested shape, with Retry-After
	// for 429 and 503: a pool member that is always down. Other values
	// mean 500. /health, /v1/models and /tokenize still answer normally.
	FailAll int
}

// Scheduling policies (Options.SchedulingPolicy).
const (
	SchedulingFCFS     = "fcfs"
	SchedulingPriority = "priority"
)

// Call records one completion the simulator answered. It holds the hash of
// the chunk rather than the chunk, so that recording stays small.
type Call struct {
	// Kind is KindUpdate or KindFinal.
	Kind string
	// Question is the text of the <problem> block.
	Question string
	// MemoryIn is the text of the <memory> block.
	MemoryIn string
	// Output is the completion text sent back.
	Output string
	// ChunkSHA256 is the hex SHA-256 of the <section> text, less the one
	// line break the templates put on each side; "" for a final call.
	ChunkSHA256 string
	// Messages are the roles of the request's messages, in order, and
	// PromptSHA256 the hex SHA-256 of the user message's text as received:
	// what a test compares a prompt rebuilt from stored traces with.
	Messages     []string
	PromptSHA256 string
	// Service is the time the call held the pool: its service time under
	// CapacitySlots, its time in the batch (and Latency) under
	// CapacityBatch; a slow fault's extra delay is not counted.
	Service time.Duration
}

// Server is an OpenAI-compatible HTTP server that stands in for a pool of
// GPUs serving a MemAgent model. It is an http.Handler serving
// POST /v1/chat/completions, GET /v1/models, GET /health, POST /tokenize and
// GET /metrics. It is safe for concurrent use.
type Server struct {
	opts       Options // as given, for ServiceTime
	model      string
	maxLen     int
	count      counter
	log        *slog.Logger
	maxCalls   int
	retryAfter time.Duration
	failAll    int
	mux        *http.ServeMux
	seq        atomic.Uint64
	pool       *pool
	batchers   []*batcher // one per replica under CapacityBatch, else nil
	faults     *injector
	meter      *meter

	mu    sync.Mutex
	calls []Call // a ring once full: the oldest is at calls[next]
	next  int
}

// New returns a simulator configured by opts.
func New(opts Options) *Server {
	s := &Server{
		opts:       opts,
		model:      opts.Model,
		maxLen:     opts.MaxModelLen,
		log:        opts.Logger,
		maxCalls:   opts.MaxCalls,
		retryAfter: opts.RetryAfter,
		failAll:    opts.FailAll,
		mux:        http.NewServeMux(),
		faults:     newInjector(opts.Faults, opts.FaultRate),
		meter:      newMeter(),
	}
	replicas, slots := max(opts.Replicas, 1), cmp.Or(max(opts.Slots, 0), DefaultSlots)
	if opts.Capacity == CapacityBatch {
		s.opts.Batch = opts.Batch.WithDefaults()
		slots = s.opts.Batch.MaxNumSeqs
		for range replicas {
			b := newBatcher(s.opts.Batch)
			b.priority = opts.SchedulingPolicy == SchedulingPriority
			s.batchers = append(s.batchers, b)
		}
	}
	s.pool = newPool(replicas, slots, max(opts.MaxQueue, 0), opts.SchedulingPolicy == SchedulingPriority)
	if s.retryAfter <= 0 {
		s.retryAfter = DefaultRetryAfter
	}
	if s.failAll != 0 && (s.failAll < 400 || s.failAll > 599) {
		s.failAll = http.StatusInternalServerError
	}
	if s.model == "" {
		s.model = DefaultModel
	}
	if s.maxLen <= 0 {
		s.maxLen = DefaultMaxModelLen
	}
	if s.maxCalls <= 0 {
		s.maxCalls = DefaultMaxCalls
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if opts.Tokenizer != nil {
		s.count = opts.Tokenizer.Count
	} else {
		s.count = approxCount
	}
	s.mux.HandleFunc("POST /v1/chat/completions", s.chat)
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	s.mux.HandleFunc("POST /tokenize", s.tokenize)
	s.mux.Handle("GET /metrics", s.metricsHandler())
	return s
}

// approxCount estimates tokens as one per four bytes, rounded up.
func approxCount(s string) int { return (len(s) + 3) / 4 }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Calls returns the calls answered so far, oldest first, at most
// Options.MaxCalls of them.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Call, 0, len(s.calls))
	out = append(out, s.calls[s.next:]...)
	return append(out, s.calls[:s.next]...)
}

// Reset forgets all recorded calls.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls, s.next = nil, 0
}

func (s *Server) record(c Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.calls) < s.maxCalls {
		s.calls = append(s.calls, c)
		return
	}
	s.calls[s.next] = c
	s.next = (s.next + 1) % s.maxCalls
}

type chatRequest struct {
	Model               string        `json:"model"`
	Messages            []chatMessage `json:"messages"`
	MaxTokens           *int          `json:"max_tokens"`
	MaxCompletionTokens *int          `json:"max_completion_tokens"`
	Stream              bool          `json:"stream"`
	// Priority is vLLM's extension: lower is served earlier, 0 by default.
	Priority int `json:"priority"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text returns the message content, which is either a string or a list of
// parts of which the text parts count.
func (m chatMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

type chatResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   chatUsage    `json:"usage"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      responseMessage `json:"message"`
	FinishReason string          `json:"finish_reason"`
}

type responseMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// chat serves POST /v1/chat/completions. In order: FailAll; validation
// (400/404, never a fault); one fault draw; a slot, waiting in the queue or
// refused with 503 when it is full; the policy's answer, held back for
// ServiceTime or until the replica's batch has decoded it (plus the stall
// of a slow fault). All counting is done before the first byte of the
// answer goes out, so a client that has its answer sees Stats that include
// it.
func (s *Server) chat(rw http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ctx := r.Context()
	s.meter.begin()
	outcome := OutcomeInvalid
	var (
		slot     *ticket
		answered bool
		usage    chatUsage
	)
	finish := sync.OnceFunc(func() {
		if slot != nil {
			s.pool.release(slot)
		}
		if answered {
			s.meter.answered(usage.PromptTokens, usage.CompletionTokens, time.Since(start))
		}
		s.meter.end(outcome)
	})
	defer finish()
	w := &hookWriter{ResponseWriter: rw, before: finish}

	body := http.MaxBytesReader(rw, r.Body, maxBody)
	if s.failAll != 0 {
		outcome = OutcomeFailAll
		s.refuseAll(w, r, body)
		return
	}
	c, ok := s.readChat(w, r, body)
	if !ok {
		return
	}

	// From here on a request that ends without an answer lost its client.
	outcome = OutcomeCanceled
	fault := s.faults.draw()
	if fault != "" {
		outcome = faultOutcome(fault)
	}
	if s.injectFault(w, r, fault) {
		return
	}
	t, g, err := s.pool.acquire(ctx, c.req.Priority)
	switch {
	case errors.Is(err, errQueueFull):
		outcome = OutcomeQueueFull
		s.queueFull(w, r)
		return
	case err != nil:
		s.log.DebugContext(ctx, "simulator dropped call: client went away", "error", ctx.Err())
		return
	}
	slot = t

	call, truncated := s.answer(c)
	completionTokens := s.count(call.Output)
	if !s.serve(ctx, t, g, fault, c.promptTokens, completionTokens, &call) {
		return
	}
	s.record(call)

	finishReason := "stop"
	if truncated {
		finishReason = "length"
	}
	s.log.DebugContext(ctx, "simulator call",
		"kind", call.Kind, "prompt_tokens", c.promptTokens, "completion_tokens", completionTokens,
		"max_tokens", c.budget, "finish_reason", finishReason, "replica", g.replica, "question", call.Question, "output", call.Output)

	if fault == "" {
		outcome = OutcomeOK
	}
	usage = chatUsage{PromptTokens: c.promptTokens, CompletionTokens: completionTokens, TotalTokens: c.promptTokens + completionTokens}
	answered = true
	writeJSON(w, http.StatusOK, chatResponse{
		ID:      fmt.Sprintf("chatcmpl-sim-%d", s.seq.Add(1)),
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   s.model,
		Choices: []chatChoice{{
			Message:      responseMessage{Role: "assistant", Content: call.Output},
			FinishReason: finishReason,
		}},
		Usage: usage,
	})
}

// refuseAll answers with FailAll's status, having read the body.
func (s *Server) refuseAll(w http.ResponseWriter, r *http.Request, body io.Reader) {
	_, _ = io.Copy(io.Discard, body)
	if s.failAll == http.StatusTooManyRequests || s.failAll == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", retryAfter(s.retryAfter))
	}
	s.nestedError(w, r, s.failAll, errorType(s.failAll), fmt.Sprintf("The simulator answers every completion with HTTP %d because it was started with FailAll.", s.failAll))
}

// queueFull answers 503 with Retry-After when no slot is free and the queue
// is full.
func (s *Server) queueFull(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Retry-After", retryAfter(s.retryAfter))
	s.nestedError(w, r, http.StatusServiceUnavailable, errorType(http.StatusServiceUnavailable), fmt.Sprintf(
		"The simulator's queue is full: %d requests are waiting for %d slots. Retry after the Retry-After delay.",
		s.pool.maxQueue, len(s.pool.load)*s.pool.slots))
}

// chatCall is a valid request: its messages, the last user message's text
// and parsed prompt, the prompt's tokens and the completion's budget.
type chatCall struct {
	req          chatRequest
	userText     string
	prompt       prompt
	promptTokens int
	budget       int
}

// readChat decodes and validates a request; on a problem it writes the
// error (400 or 404) and returns false.
func (s *Server) readChat(w http.ResponseWriter, r *http.Request, body io.Reader) (chatCall, bool) {
	var c chatCall
	if err := json.NewDecoder(body).Decode(&c.req); err != nil {
		s.flatError(w, r, http.StatusBadRequest, "BadRequestError", "request body is not a chat completion request: "+err.Error())
		return c, false
	}
	// Reading to the end lets net/http notice a client that hangs up
	// while the request waits or is served.
	_, _ = io.Copy(io.Discard, body)
	if c.req.Model != "" && c.req.Model != s.model {
		s.nestedError(w, r, http.StatusNotFound, "NotFoundError", fmt.Sprintf("The model `%s` does not exist: this simulator serves %q.", c.req.Model, s.model))
		return c, false
	}
	if c.req.Stream {
		s.flatError(w, r, http.StatusBadRequest, "BadRequestError", "stream is not supported by the simulator")
		return c, false
	}
	if c.req.Priority != 0 && s.opts.SchedulingPolicy != SchedulingPriority {
		s.nestedError(w, r, http.StatusBadRequest, "BadRequestError", fmt.Sprintf(
			"Got priority %d but priority scheduling is not enabled: start the simulator with --scheduling-policy priority, as vLLM, or send no priority (MEMAGENT_MODEL_PRIORITY=off).", c.req.Priority))
		return c, false
	}
	found := false
	for _, m := range c.req.Messages {
		t := m.text()
		c.promptTokens += s.count(t)
		if m.Role == "user" {
			c.userText, found = t, true
		}
	}
	if !found {
		s.flatError(w, r, http.StatusBadRequest, "BadRequestError", "messages hold no user message")
		return c, false
	}
	if !s.setBudget(w, r, &c) {
		return c, false
	}
	p, err := parsePrompt(c.userText)
	if err != nil {
		s.flatError(w, r, http.StatusBadRequest, "BadRequestError", err.Error())
		return c, false
	}
	c.prompt = p
	return c, true
}

// setBudget sets the completion's budget: max_completion_tokens, else
// max_tokens, else what the context leaves. A budget that does not fit is a
// 400.
func (s *Server) setBudget(w http.ResponseWriter, r *http.Request, c *chatCall) bool {
	maxTokens := c.req.MaxTokens
	if c.req.MaxCompletionTokens != nil {
		maxTokens = c.req.MaxCompletionTokens
	}
	c.budget = s.maxLen - c.promptTokens
	switch {
	case maxTokens != nil && *maxTokens < 1:
		s.nestedError(w, r, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("max_tokens must be at least 1, got %d.", *maxTokens))
		return false
	case maxTokens != nil && c.promptTokens+*maxTokens > s.maxLen:
		s.contextError(w, r, c.promptTokens, *maxTokens)
		return false
	case maxTokens == nil && c.budget < 1:
		s.contextError(w, r, c.promptTokens, 1)
		return false
	case maxTokens != nil:
		c.budget = *maxTokens
	}
	return true
}

// answer is the policy's reply to a call, as the Call to record (without
// its service time), and whether it was cut to the budget.
func (s *Server) answer(c chatCall) (Call, bool) {
	p := c.prompt
	call := Call{Kind: KindFinal, Question: p.question, MemoryIn: p.memory}
	promptSum := sha256.Sum256([]byte(c.userText))
	call.PromptSHA256 = hex.EncodeToString(promptSum[:])
	for _, m := range c.req.Messages {
		call.Messages = append(call.Messages, m.Role)
	}
	var truncated bool
	switch {
	case p.hasSection:
		sum := sha256.Sum256([]byte(p.section))
		call.Kind, call.ChunkSHA256 = KindUpdate, hex.EncodeToString(sum[:])
		if s.opts.Policy == PolicyChain {
			call.Output = chainMemory(p.question, p.memory, p.section)
		} else {
			call.Output, truncated = updateMemory(p.question, p.memory, p.section, c.budget, s.count)
		}
	case s.opts.Policy == PolicyChain:
		call.Output = finalReply(p.memory)
	default:
		call.Output, truncated = fitBudget(finalReply(answerFrom(p.question, p.memory)), c.budget, s.count)
	}
	return call, truncated
}

// serve holds the answer back for the service time (the replica's batch
// decoding it, or ServiceTime) plus a slow fault's stall, and sets
// call.Service. It returns false if the client went away first.
func (s *Server) serve(ctx context.Context, t *ticket, g grant, fault FaultKind, promptTokens, completionTokens int, call *Call) bool {
	var delay time.Duration
	if s.batchers != nil {
		began := time.Now()
		if !s.decode(ctx, t, g, promptTokens, completionTokens) {
			return false
		}
		delay = max(s.opts.Latency, 0)
		call.Service = time.Since(began) + delay
	} else {
		delay = s.opts.ServiceTime(promptTokens, completionTokens, g.load)
		call.Service = delay
	}
	if fault == FaultSlow {
		delay += s.faults.slowDelay
	}
	if delay <= 0 {
		return true
	}
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		s.log.DebugContext(ctx, "simulator dropped call: client went away", "error", ctx.Err())
		return false
	}
}

// decode has the batch of g's replica prefill and decode one request. A
// request preempted by a more urgent one (SchedulingPriority) waits in the
// pool's queue again, then resumes in the batch of the replica it is
// granted. It returns false, having taken the request out of the batch or
// the queue, if the client goes away first.
func (s *Server) decode(ctx context.Context, t *ticket, g grant, promptTokens, completionTokens int) bool {
	b := s.batchers[g.replica]
	q := b.submitPrio(promptTokens, completionTokens, t.prio)
	var preempted <-chan struct{} = q.preempted
	s.pool.attach(t, b, q)
	for {
		select {
		case <-q.done:
			return true
		case <-preempted:
			g, err := s.pool.wait(ctx, t)
			if err != nil {
				s.log.DebugContext(ctx, "simulator dropped call: client went away", "error", err)
				return false
			}
			b = s.batchers[g.replica]
			preempted = b.resume(q)
			s.pool.attach(t, b, q)
		case <-ctx.Done():
			b.abort(q)
			s.log.DebugContext(ctx, "simulator dropped call: client went away", "error", ctx.Err())
			return false
		}
	}
}

// hookWriter runs before once, just before the status goes out.
type hookWriter struct {
	http.ResponseWriter
	before func()
	wrote  bool
}

func (h *hookWriter) WriteHeader(status int) {
	if !h.wrote {
		h.wrote = true
		h.before()
	}
	h.ResponseWriter.WriteHeader(status)
}

func (h *hookWriter) Write(b []byte) (int, error) {
	if !h.wrote {
		h.WriteHeader(http.StatusOK)
	}
	return h.ResponseWriter.Write(b)
}

func (s *Server) contextError(w http.ResponseWriter, r *http.Request, promptTokens, maxTokens int) {
	s.nestedError(w, r, http.StatusBadRequest, "BadRequestError", fmt.Sprintf(
		"The simulator's maximum context length is %d tokens, but this request needs %d tokens "+
			"(%d in the messages and %d for the completion). Shorten the messages or lower max_tokens.",
		s.maxLen, promptTokens+maxTokens, promptTokens, maxTokens))
}

type modelList struct {
	Object string      `json:"object"`
	Data   []modelCard `json:"data"`
}

type modelCard struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	MaxModelLen int    `json:"max_model_len"`
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, modelList{
		Object: "list",
		Data:   []modelCard{{ID: s.model, Object: "model", OwnedBy: DefaultModel, MaxModelLen: s.maxLen}},
	})
}

// The simulator answers errors in both shapes seen in the wild, so that
// clients are exercised against both: the nested OpenAI shape (for the
// context and model checks, as vLLM does) and the flat shape of vLLM's and
// SGLang's validation errors (for malformed requests).

type errorBody struct {
	Object  string  `json:"object,omitempty"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

func (s *Server) nestedError(w http.ResponseWriter, r *http.Request, status int, typ, msg string) {
	s.log.DebugContext(r.Context(), "simulator rejected request", "status", status, "error", msg)
	writeJSON(w, status, struct {
		Error errorBody `json:"error"`
	}{errorBody{Message: msg, Type: typ, Code: status}})
}

func (s *Server) flatError(w http.ResponseWriter, r *http.Request, status int, typ, msg string) {
	s.log.DebugContext(r.Context(), "simulator rejected request", "status", status, "error", msg)
	writeJSON(w, status, errorBody{Object: "error", Message: msg, Type: typ, Code: status})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	// The client may have gone; there is no one to tell.
	_ = json.NewEncoder(w).Encode(v)
}
