package inference

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/secret"
)

func newTestClient(t *testing.T, baseURL string, mod func(*Config)) *Client {
	t.Helper()
	cfg := Config{BaseURL: secret.Endpoint(baseURL + "/v1"), APIKey: "sk-test-secret-key-0123456789", Model: "test-model"}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func TestNewValidatesConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"valid", Config{BaseURL: "http://localhost:8000/v1", Model: "m"}, ""},
		{"trailing slash", Config{BaseURL: "https://host/v1/", Model: "m"}, ""},
		{"empty base URL", Config{Model: "m"}, "not a URL"},
		{"unparsable", Config{BaseURL: "http://[::1", Model: "m"}, "not a URL"},
		{"wrong scheme", Config{BaseURL: "ftp://host/v1", Model: "m"}, "http or https"},
		{"no host", Config{BaseURL: "http:///v1", Model: "m"}, "http or https"},
		{"bare host", Config{BaseURL: "localhost:8000", Model: "m"}, "http or https"},
		{"negative timeout", Config{BaseURL: "http://host/v1", Model: "m", RequestTimeout: -time.Second}, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.cfg)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("New: got error %v, want none", err)
				}
				if got := c.Model(); got != tt.cfg.Model {
					t.Errorf("Model() = %q, want %q", got, tt.cfg.Model)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New: got error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestNewSetsTimeoutWithoutChangingCallerClient(t *testing.T) {
	tests := []struct {
		name        string
		client      *http.Client
		timeout     time.Duration
		wantTimeout time.Duration
	}{
		{"default client", nil, 0, DefaultRequestTimeout},
		{"request timeout", nil, time.Minute, time.Minute},
		{"caller client without timeout", &http.Client{}, 2 * time.Minute, 2 * time.Minute},
		{"caller client timeout kept", &http.Client{Timeout: 3 * time.Second}, time.Minute, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before http.Client
			if tt.client != nil {
				before = *tt.client
			}
			c, err := New(Config{BaseURL: "http://host/v1", Model: "m", RequestTimeout: tt.timeout, HTTPClient: tt.client})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if got := c.http.Timeout; got != tt.wantTimeout {
				t.Errorf("client timeout = %s, want %s", got, tt.wantTimeout)
			}
			if tt.client != nil && (tt.client.Timeout != before.Timeout || tt.client.Transport != before.Transport) {
				t.Errorf("caller's client changed: got %+v, want %+v", *tt.client, before)
			}
		})
	}
}

// chatBody is what the tests read back from a request body.
type chatBody struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	MaxTokens   *int     `json:"max_tokens"`
	Temperature *float64 `json:"temperature"`
	TopP        *float64 `json:"top_p"`
}

func TestCompleteSendsRequestAndParsesUsage(t *testing.T) {
	tests := []struct {
		name            string
		req             Request
		usage           string
		wantTemperature func(float64) bool
		wantTopP        bool
		wantMaxTokens   bool
		wantCached      int
	}{
		{
			name:            "greedy temperature zero still sent",
			req:             Request{Prompt: "<problem>q</problem>", MaxTokens: 1024, Temperature: 0, TopP: 0.95},
			usage:           `{"prompt_tokens":120,"completion_tokens":7,"total_tokens":127,"prompt_tokens_details":{"cached_tokens":64}}`,
			wantTemperature: func(v float64) bool { return v > 0 && v < 1e-6 },
			wantTopP:        true,
			wantMaxTokens:   true,
			wantCached:      64,
		},
		{
			name:            "sampling temperature",
			req:             Request{Prompt: "p", MaxTokens: 10, Temperature: 0.7, TopP: 0.95},
			usage:           `{"prompt_tokens":120,"completion_tokens":7,"total_tokens":127}`,
			wantTemperature: func(v float64) bool { return v > 0.69 && v < 0.71 },
			wantTopP:        true,
			wantMaxTokens:   true,
		},
		{
			name:            "server defaults for max_tokens and top_p",
			req:             Request{Prompt: "p", Temperature: 1},
			usage:           `{"prompt_tokens":120,"completion_tokens":7,"total_tokens":127,"prompt_tokens_details":null}`,
			wantTemperature: func(v float64) bool { return v == 1 },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got chatBody
			var gotAuth, gotPath string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotPath, gotAuth = r.URL.Path, r.Header.Get("Authorization")
				if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
					t.Errorf("decode request body: %v", err)
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"id":"x","object":"chat.completion","model":"served-name","choices":[{"index":0,"message":{"role":"assistant","content":"the new memory"},"finish_reason":"length"}],"usage":`+tt.usage+`}`)
			}))
			defer srv.Close()
			c := newTestClient(t, srv.URL, nil)

			comp, err := c.Complete(context.Background(), tt.req)
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if gotPath != "/v1/chat/completions" {
				t.Errorf("path = %q, want /v1/chat/completions", gotPath)
			}
			if gotAuth != "Bearer sk-test-secret-key-0123456789" {
				t.Errorf("Authorization = %q, want the bearer key", gotAuth)
			}
			if got.Model != "test-model" {
				t.Errorf("model = %q, want test-model", got.Model)
			}
			if len(got.Messages) != 1 || got.Messages[0].Role != "user" || got.Messages[0].Content != tt.req.Prompt {
				t.Errorf("messages = %+v, want one user message with the prompt", got.Messages)
			}
			if got.Temperature == nil || !tt.wantTemperature(*got.Temperature) {
				t.Errorf("temperature = %v, want a value for %g", got.Temperature, tt.req.Temperature)
			}
			if (got.TopP != nil) != tt.wantTopP {
				t.Errorf("top_p = %v, want present=%v", got.TopP, tt.wantTopP)
			}
			if (got.MaxTokens != nil) != tt.wantMaxTokens || (got.MaxTokens != nil && *got.MaxTokens != tt.req.MaxTokens) {
				t.Errorf("max_tokens = %v, want %d (present=%v)", got.MaxTokens, tt.req.MaxTokens, tt.wantMaxTokens)
			}
			want := Completion{Text: "the new memory", Model: "served-name", FinishReason: "length", PromptTokens: 120, CompletionTokens: 7, CachedTokens: tt.wantCached}
			comp.Latency = 0
			if comp != want {
				t.Errorf("Complete = %+v, want %+v", comp, want)
			}
		})
	}
}

func TestCompleteRejectsInvalidRequest(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1) }))
	defer srv.Close()
	c := newTestClient(t, srv.URL, nil)
	tests := []struct {
		name string
		req  Request
	}{
		{"negative max tokens", Request{Prompt: "p", MaxTokens: -1}},
		{"negative temperature", Request{Prompt: "p", Temperature: -0.1}},
		{"top_p above one", Request{Prompt: "p", TopP: 1.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Complete(context.Background(), tt.req)
			var e *Error
			if !errors.As(err, &e) || e.Kind != KindBadRequest || e.Retryable() {
				t.Fatalf("Complete: got %v, want a non-retryable bad_request *Error", err)
			}
		})
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("server saw %d requests, want 0", n)
	}
}

func TestCompleteClassifiesHTTPErrors(t *testing.T) {
	now := time.Now()
	httpDate := now.Add(90 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name          string
		status        int
		body          string
		retryAfter    string
		wantKind      ErrorKind
		wantMsg       string
		wantRetryable bool
		wantAfter     [2]time.Duration // inclusive range
	}{
		{"400 nested too long", 400, `{"error":{"message":"This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.","type":"BadRequestError","param":null,"code":400}}`, "", KindPromptTooLong, "maximum context length is 8192", false, [2]time.Duration{}},
		{"400 flat too long", 400, `{"object":"error","message":"The input (9000 tokens) is longer than the model's context length (8192 tokens).","type":"BadRequestError","param":null,"code":400}`, "", KindPromptTooLong, "context length (8192", false, [2]time.Duration{}},
		{"400 flat prompt is too long", 400, `{"object":"error","message":"Prompt is too long","type":"BadRequestError","code":400}`, "", KindPromptTooLong, "Prompt is too long", false, [2]time.Duration{}},
		{"413", 413, `request entity too large`, "", KindPromptTooLong, "request entity too large", false, [2]time.Duration{}},
		{"400 nested other", 400, `{"error":{"message":"top_p must be in (0, 1], got 1.5.","type":"BadRequestError","code":400}}`, "", KindBadRequest, "top_p must be", false, [2]time.Duration{}},
		{"400 flat other", 400, `{"object":"error","message":"temperature must be non-negative","type":"BadRequestError","code":400}`, "", KindBadRequest, "temperature must be", false, [2]time.Duration{}},
		{"422 flat", 422, `{"object":"error","message":"[{'type': 'missing', 'loc': ('body', 'messages'), 'msg': 'Field required'}]","type":"Bad Request","code":400}`, "", KindBadRequest, "Field required", false, [2]time.Duration{}},
		{"422 fastapi detail", 422, `{"detail":[{"loc":["body","messages"],"msg":"field required"}]}`, "", KindBadRequest, "field required", false, [2]time.Duration{}},
		{"400 model does not exist", 400, `{"object":"error","message":"The model ` + "`gpt-x`" + ` does not exist.","type":"NotFoundError","code":404}`, "", KindModelNotFound, "does not exist", false, [2]time.Duration{}},
		{"404 nested", 404, `{"error":{"message":"The model ` + "`gpt-x`" + ` does not exist.","type":"NotFoundError","code":404}}`, "", KindModelNotFound, "gpt-x", false, [2]time.Duration{}},
		{"404 plain path", 404, "404 page not found", "", KindModelNotFound, "base URL includes the API path", false, [2]time.Duration{}},
		{"401 nested", 401, `{"error":{"message":"Unauthorized","type":"AuthenticationError","code":401}}`, "", KindAuth, "Unauthorized", false, [2]time.Duration{}},
		{"403 flat", 403, `{"object":"error","message":"Forbidden","type":"PermissionDenied","code":403}`, "", KindAuth, "Forbidden", false, [2]time.Duration{}},
		{"408", 408, `{"error":"request timed out"}`, "", KindTimeout, "request timed out", true, [2]time.Duration{}},
		{"429 seconds", 429, `{"error":{"message":"Too many requests","type":"RateLimitError","code":429}}`, "7", KindRateLimited, "Too many requests", true, [2]time.Duration{7 * time.Second, 7 * time.Second}},
		{"503 date", 503, `{"object":"error","message":"Service is overloaded","type":"ServiceUnavailableError","code":503}`, httpDate, KindServer, "overloaded", true, [2]time.Duration{80 * time.Second, 91 * time.Second}},
		{"500 text", 500, "Internal Server Error", "", KindServer, "Internal Server Error", true, [2]time.Duration{}},
		{"502 empty body", 502, "", "", KindServer, "Bad Gateway", true, [2]time.Duration{}},
		{"418 other 4xx", 418, `{"error":{"message":"teapot"}}`, "", KindBadRequest, "teapot", false, [2]time.Duration{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				if tt.retryAfter != "" {
					w.Header().Set("Retry-After", tt.retryAfter)
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			c := newTestClient(t, srv.URL, nil)

			_, err := c.Complete(context.Background(), Request{Prompt: "p", MaxTokens: 8})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Complete: got %T %v, want *Error", err, err)
			}
			if e.Kind != tt.wantKind || e.StatusCode != tt.status {
				t.Errorf("got kind %q status %d, want %q %d", e.Kind, e.StatusCode, tt.wantKind, tt.status)
			}
			if !strings.Contains(e.Message, tt.wantMsg) {
				t.Errorf("Message = %q, want it to contain %q", e.Message, tt.wantMsg)
			}
			if got := e.Retryable(); got != tt.wantRetryable {
				t.Errorf("Retryable() = %v, want %v", got, tt.wantRetryable)
			}
			if e.RetryAfter < tt.wantAfter[0] || e.RetryAfter > tt.wantAfter[1] {
				t.Errorf("RetryAfter = %s, want in [%s, %s]", e.RetryAfter, tt.wantAfter[0], tt.wantAfter[1])
			}
			if e.Err != nil {
				t.Errorf("Err = %v, want nil for a server-reported error", e.Err)
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("server saw %d requests, want exactly 1 (no retries)", n)
			}
		})
	}
}

func TestErrorMessageNeverQuotesPromptOrKey(t *testing.T) {
	prompt := "<problem>\nWhat is the access code for the north gate?\n</problem>\n<memory>\nThe secret plan of the company is described in the third section of the report.\n</memory>"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		// Echo the request and the key back, as a validation error might.
		msg := "1 validation error: input " + string(body) + " auth " + r.Header.Get("Authorization") + strings.Repeat(" padding", 200)
		b, _ := json.Marshal(map[string]any{"object": "error", "message": msg, "code": 400})
		w.WriteHeader(http.StatusBadRequest)
		w.Write(b)
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, nil)

	_, err := c.Complete(context.Background(), Request{Prompt: prompt, MaxTokens: 8})
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Complete: got %v, want *Error", err)
	}
	for _, leak := range []string{"access code", "north gate", "secret plan", "third section", "sk-test-secret-key-0123456789"} {
		if strings.Contains(e.Error(), leak) {
			t.Errorf("Error() = %q, contains %q", e.Error(), leak)
		}
	}
	if !strings.Contains(e.Message, "1 validation error") || !strings.Contains(e.Message, "withheld") {
		t.Errorf("Message = %q, want the start of the server message and a note that the prompt was withheld", e.Message)
	}
	if len(e.Message) > maxMessage {
		t.Errorf("len(Message) = %d, want at most %d", len(e.Message), maxMessage)
	}
}

func TestErrorMessageIsCapped(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, strings.Repeat("é", 5000))
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, nil)
	_, err := c.Complete(context.Background(), Request{Prompt: "p"})
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Complete: got %v, want *Error", err)
	}
	if len(e.Message) > maxMessage || !strings.HasSuffix(e.Message, "...") {
		t.Errorf("len(Message) = %d ending %q, want at most %d ending in ...", len(e.Message), e.Message[len(e.Message)-5:], maxMessage)
	}
	if !strings.HasPrefix(e.Message, "éé") || strings.ContainsRune(e.Message, '\uFFFD') {
		t.Errorf("Message was cut inside a rune: %q", e.Message)
	}
}

func TestCompleteClassifiesBadSuccessBodies(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string
	}{
		{"no choices", `{"id":"x","choices":[],"usage":{}}`, "no choices"},
		{"not JSON", `<html>proxy page</html>`, "invalid character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			c := newTestClient(t, srv.URL, nil)
			_, err := c.Complete(context.Background(), Request{Prompt: "p"})
			var e *Error
			if !errors.As(err, &e) || e.Kind != KindServer || e.StatusCode != 200 || !strings.Contains(e.Message, tt.want) {
				t.Fatalf("Complete: got %v, want server error with status 200 mentioning %q", err, tt.want)
			}
		})
	}
}

func TestCompleteTransportFailures(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		c := newTestClient(t, "http://"+addr, nil)
		_, err = c.Complete(context.Background(), Request{Prompt: "p"})
		assertKind(t, err, KindConnection)
	})

	t.Run("connection closed without response", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			conn.Close()
		}))
		defer srv.Close()
		c := newTestClient(t, srv.URL, nil)
		_, err := c.Complete(context.Background(), Request{Prompt: "p"})
		assertKind(t, err, KindConnection)
	})

	t.Run("request timeout", func(t *testing.T) {
		srv, _ := blockingServer(t)
		c := newTestClient(t, srv.URL, func(cfg *Config) { cfg.RequestTimeout = 100 * time.Millisecond })
		_, err := c.Complete(context.Background(), Request{Prompt: "p"})
		assertKind(t, err, KindTimeout)
	})

	t.Run("caller deadline", func(t *testing.T) {
		srv, _ := blockingServer(t)
		c := newTestClient(t, srv.URL, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := c.Complete(ctx, Request{Prompt: "p"})
		assertKind(t, err, KindTimeout)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("errors.Is(err, context.DeadlineExceeded) = false for %v", err)
		}
	})

	t.Run("caller cancel", func(t *testing.T) {
		srv, arrived := blockingServer(t)
		c := newTestClient(t, srv.URL, nil)
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-arrived
			cancel()
		}()
		_, err := c.Complete(ctx, Request{Prompt: "p"})
		e := assertKind(t, err, KindCanceled)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("errors.Is(err, context.Canceled) = false for %v", err)
		}
		if e != nil && !e.Retryable() {
			t.Errorf("Retryable() = false for a canceled call, want true")
		}
	})
}

// blockingServer answers nothing until the client goes away or the test
// ends. The returned channel receives once per request that has arrived.
func blockingServer(t *testing.T) (*httptest.Server, <-chan struct{}) {
	t.Helper()
	arrived := make(chan struct{}, 16)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reading the whole body lets the server notice the client hanging up.
		io.Copy(io.Discard, r.Body)
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs before srv.Close
	return srv, arrived
}

func assertKind(t *testing.T, err error, want ErrorKind) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %T %v, want *Error of kind %q", err, err, want)
	}
	if e.Kind != want {
		t.Errorf("kind = %q (%v), want %q", e.Kind, e, want)
	}
	if e.StatusCode != 0 {
		t.Errorf("StatusCode = %d, want 0 for a transport failure", e.StatusCode)
	}
	if e.Err == nil {
		t.Errorf("Err = nil, want the transport error")
	}
	if strings.Contains(e.Error(), "sk-test-secret-key") {
		t.Errorf("Error() = %q leaks the API key", e.Error())
	}
	return e
}

func TestModels(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		body     string
		want     []ModelInfo
		wantKind ErrorKind
	}{
		{
			name:   "vllm with max_model_len",
			status: 200,
			body:   `{"object":"list","data":[{"id":"BytedTsinghua-SIA/RL-MemoryAgent-14B","object":"model","owned_by":"vllm","max_model_len":32768},{"id":"lora","object":"model"}]}`,
			want:   []ModelInfo{{ID: "BytedTsinghua-SIA/RL-MemoryAgent-14B", MaxModelLen: 32768}, {ID: "lora"}},
		},
		{name: "empty list", status: 200, body: `{"object":"list","data":[]}`, want: []ModelInfo{}},
		{name: "unauthorized", status: 401, body: `{"error":{"message":"Unauthorized"}}`, wantKind: KindAuth},
		{name: "wrong path", status: 404, body: `{"detail":"Not Found"}`, wantKind: KindModelNotFound},
		{name: "garbage", status: 200, body: `nope`, wantKind: KindServer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotPath, gotAuth string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotPath, gotAuth = r.URL.Path, r.Header.Get("Authorization")
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			c := newTestClient(t, srv.URL, nil)
			got, err := c.Models(context.Background())
			if gotPath != "/v1/models" || gotAuth != "Bearer sk-test-secret-key-0123456789" {
				t.Errorf("request path %q auth %q, want /v1/models with the bearer key", gotPath, gotAuth)
			}
			if tt.wantKind != "" {
				var e *Error
				if !errors.As(err, &e) || e.Kind != tt.wantKind {
					t.Fatalf("Models: got %v, want *Error of kind %q", err, tt.wantKind)
				}
				return
			}
			if err != nil {
				t.Fatalf("Models: %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Models = %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("Models[%d] = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"3", 3 * time.Second},
		{" 120 ", 2 * time.Minute},
		{"1.5", 1500 * time.Millisecond},
		{"-4", 0},
		{"NaN", 0},
		{"99999999999", maxRetryAfter},
		{"Sat, 01 Mar 2025 12:00:30 GMT", 30 * time.Second},
		{"Saturday, 01-Mar-25 12:01:00 GMT", time.Minute},
		{"Sat, 01 Mar 2025 11:00:00 GMT", 0},
		{"soon", 0},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := parseRetryAfter(tt.in, now); got != tt.want {
				t.Errorf("parseRetryAfter(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestErrorString(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{Kind: KindPromptTooLong, StatusCode: 400, Message: "too long"}, "model server: prompt_too_long (HTTP 400): too long"},
		{&Error{Kind: KindConnection, Message: "dial tcp: refused"}, "model server: connection: dial tcp: refused"},
		{&Error{Kind: KindServer}, "model server: server"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestCompleteNeedsAModel(t *testing.T) {
	c, err := New(Config{BaseURL: "http://127.0.0.1:1/v1"})
	if err != nil {
		t.Fatalf("New without a model: %v", err)
	}
	_, err = c.Complete(context.Background(), Request{Prompt: "p"})
	var ie *Error
	if !errors.As(err, &ie) || ie.Kind != KindBadRequest || !strings.Contains(ie.Message, "MEMAGENT_MODEL") {
		t.Errorf("Complete without a model: got %v, want a bad_request error naming MEMAGENT_MODEL", err)
	}
}

func TestTokenize(t *testing.T) {
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/tokenize" || r.Method != http.MethodPost {
			http.Error(w, `{"object":"error","message":"not found","code":404}`, http.StatusNotFound)
			return
		}
		_ = json.NewDecoder(r.Body).Decode(&got)
		_, _ = w.Write([]byte(`{"count":7,"max_model_len":32768,"tokens":[1,2,3,4,5,6,7]}`))
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: secret.Endpoint(srv.URL + "/v1"), Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.Tokenize(context.Background(), "m", "some text")
	if err != nil || n != 7 {
		t.Fatalf("Tokenize = %d, %v; want 7 (POST at the root, not under /v1)", n, err)
	}
	if got["prompt"] != "some text" || got["model"] != "m" {
		t.Errorf("request body = %v, want model and prompt", got)
	}
	bad, err := New(Config{BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	var ie *Error
	if _, err := bad.Tokenize(context.Background(), "m", "x"); !errors.As(err, &ie) || ie.Kind != KindConnection {
		t.Errorf("Tokenize on a closed port: %v, want a connection error", err)
	}
}
