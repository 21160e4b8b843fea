package simulator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

// Options configure a Server. The zero value works.
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
	// Latency is added to every successful completion, as the time a GPU
	// would take. A request whose client goes away meanwhile is dropped.
	Latency time.Duration
	// Logger receives debug records only; nil discards them.
	Logger *slog.Logger
	// MaxCalls bounds the calls kept for Calls; zero or less means
	// DefaultMaxCalls. The oldest are forgotten first.
	MaxCalls int
}

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
}

// Server is an OpenAI-compatible HTTP server that stands in for a pool of
// GPUs serving a MemAgent model. It is an http.Handler serving
// POST /v1/chat/completions, GET /v1/models and GET /health. It is safe for
// concurrent use.
type Server struct {
	model    string
	maxLen   int
	count    counter
	latency  time.Duration
	log      *slog.Logger
	maxCalls int
	mux      *http.ServeMux
	seq      atomic.Uint64

	mu    sync.Mutex
	calls []Call // a ring once full: the oldest is at calls[next]
	next  int
}

// New returns a simulator configured by opts.
func New(opts Options) *Server {
	s := &Server{
		model:    opts.Model,
		maxLen:   opts.MaxModelLen,
		latency:  max(opts.Latency, 0),
		log:      opts.Logger,
		maxCalls: opts.MaxCalls,
		mux:      http.NewServeMux(),
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

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var req chatRequest
	body := http.MaxBytesReader(w, r.Body, maxBody)
	if err := json.NewDecoder(body).Decode(&req); err != nil {
		s.flatError(w, r, http.StatusBadRequest, "BadRequestError", "request body is not a chat completion request: "+err.Error())
		return
	}
	// Reading to the end lets net/http notice a client that hangs up
	// during the simulated latency.
	_, _ = io.Copy(io.Discard, body)
	if req.Model != "" && req.Model != s.model {
		s.nestedError(w, r, http.StatusNotFound, "NotFoundError", fmt.Sprintf("The model `%s` does not exist: this simulator serves %q.", req.Model, s.model))
		return
	}
	if req.Stream {
		s.flatError(w, r, http.StatusBadRequest, "BadRequestError", "stream is not supported by the simulator")
		return
	}
	userText, found := "", false
	promptTokens := 0
	for _, m := range req.Messages {
		t := m.text()
		promptTokens += s.count(t)
		if m.Role == "user" {
			userText, found = t, true
		}
	}
	if !found {
		s.flatError(w, r, http.StatusBadRequest, "BadRequestError", "messages hold no user message")
		return
	}

	maxTokens := req.MaxTokens
	if req.MaxCompletionTokens != nil {
		maxTokens = req.MaxCompletionTokens
	}
	budget := s.maxLen - promptTokens
	switch {
	case maxTokens != nil && *maxTokens < 1:
		s.nestedError(w, r, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("max_tokens must be at least 1, got %d.", *maxTokens))
		return
	case maxTokens != nil && promptTokens+*maxTokens > s.maxLen:
		s.contextError(w, r, promptTokens, *maxTokens)
		return
	case maxTokens == nil && budget < 1:
		s.contextError(w, r, promptTokens, 1)
		return
	case maxTokens != nil:
		budget = *maxTokens
	}

	p, err := parsePrompt(userText)
	if err != nil {
		s.flatError(w, r, http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}

	if s.latency > 0 {
		t := time.NewTimer(s.latency)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			s.log.DebugContext(ctx, "simulator dropped call: client went away", "error", ctx.Err())
			return
		}
	}

	call := Call{Kind: KindFinal, Question: p.question, MemoryIn: p.memory}
	var out string
	var truncated bool
	if p.hasSection {
		sum := sha256.Sum256([]byte(p.section))
		call.Kind, call.ChunkSHA256 = KindUpdate, hex.EncodeToString(sum[:])
		out, truncated = updateMemory(p.question, p.memory, p.section, budget, s.count)
	} else {
		out, truncated = fitBudget(finalReply(answerFrom(p.question, p.memory)), budget, s.count)
	}
	call.Output = out
	s.record(call)

	finish := "stop"
	if truncated {
		finish = "length"
	}
	completionTokens := s.count(out)
	s.log.DebugContext(ctx, "simulator call",
		"kind", call.Kind, "prompt_tokens", promptTokens, "completion_tokens", completionTokens,
		"max_tokens", budget, "finish_reason", finish, "question", call.Question, "output", out)

	writeJSON(w, http.StatusOK, chatResponse{
		ID:      fmt.Sprintf("chatcmpl-sim-%d", s.seq.Add(1)),
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   s.model,
		Choices: []chatChoice{{
			Message:      responseMessage{Role: "assistant", Content: out},
			FinishReason: finish,
		}},
		Usage: chatUsage{PromptTokens: promptTokens, CompletionTokens: completionTokens, TotalTokens: promptTokens + completionTokens},
	})
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
