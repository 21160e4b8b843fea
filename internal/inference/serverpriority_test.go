package inference

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/memagent/memagent/internal/secret"
)

// bodyServer answers every chat completion and keeps the bodies it was
// sent, as they arrived.
type bodyServer struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []map[string]json.RawMessage
}

func newBodyServer(t *testing.T) *bodyServer {
	t.Helper()
	b := &bodyServer{}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(r.Body)
		var body map[string]json.RawMessage
		if err == nil {
			err = json.Unmarshal(raw, &body)
		}
		if err != nil || r.ContentLength != int64(len(raw)) {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		b.mu.Lock()
		b.bodies = append(b.bodies, body)
		b.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"model":"test-model","choices":[{"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`)
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *bodyServer) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.bodies)
}

// last is the last body the server received.
func (b *bodyServer) last(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.bodies) == 0 {
		t.Fatal("the server received no request")
	}
	return b.bodies[len(b.bodies)-1]
}

// TestServerPriorityInBody sends a completion in each form and level and
// checks the body the server received: the priority field in the form's
// scale, none when off, and the request's own fields intact.
func TestServerPriorityInBody(t *testing.T) {
	tests := []struct {
		form  ServerPriority
		level int // in the context; 0: none there
		want  string
	}{
		{PriorityVLLM, 1, "-2"},
		{PriorityVLLM, 2, "-1"},
		{PriorityVLLM, 4, "1"},
		{PriorityVLLM, 5, "2"},
		{PriorityVLLM, 0, "0"},
		{PrioritySGLang, 1, "200"},
		{PrioritySGLang, 2, "100"},
		{PrioritySGLang, 4, "-100"},
		{PrioritySGLang, 0, "0"},
		{PriorityOff, 2, ""},
		{"", 2, ""},
	}
	srv := newBodyServer(t)
	for _, tt := range tests {
		t.Run(string(tt.form)+"/"+string(rune('0'+tt.level)), func(t *testing.T) {
			c := newTestClient(t, srv.srv.URL, func(cfg *Config) { cfg.Priority = tt.form })
			ctx := context.Background()
			if tt.level != 0 {
				ctx = WithPriority(ctx, Priority{Level: tt.level, Key: "tenant"})
			}
			if _, err := c.Complete(ctx, Request{Prompt: "the prompt", MaxTokens: 7}); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			body := srv.last(t)
			got, ok := body["priority"]
			switch {
			case tt.want == "" && ok:
				t.Errorf("priority = %s, want none", got)
			case tt.want != "" && string(got) != tt.want:
				t.Errorf("priority = %q, want %s", got, tt.want)
			}
			if string(body["model"]) != `"test-model"` || string(body["max_tokens"]) != "7" || !strings.Contains(string(body["messages"]), "the prompt") {
				t.Errorf("the request's own fields changed: model %s, max_tokens %s, messages %s", body["model"], body["max_tokens"], body["messages"])
			}
		})
	}
}

// TestPoolServerPriorityPerEndpoint builds a mixed pool (vLLM, SGLang, a
// server without priority) from one setting per endpoint and checks what
// each server received for the same call.
func TestPoolServerPriorityPerEndpoint(t *testing.T) {
	vllm, sglang, plain := newBodyServer(t), newBodyServer(t), newBodyServer(t)
	eps, err := Endpoints(APIOpenAI, []string{vllm.srv.URL + "/v1", sglang.srv.URL + "/v1", plain.srv.URL + "/v1"}, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := SetServerPriorities(eps, []string{"vllm", "SGLang", "off"}); err != nil {
		t.Fatalf("SetServerPriorities: %v", err)
	}
	p, err := NewPool(PoolConfig{Endpoints: eps, Model: "test-model", HealthInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	ctx := WithPriority(context.Background(), Priority{Level: 2})
	// One slot each: three calls held at once would need all three; sent
	// one after another they go to whichever is free, so send until each
	// server has had one.
	for i := 0; i < 200; i++ {
		if _, err := p.Complete(ctx, Request{Prompt: "p"}); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if vllm.count() > 0 && sglang.count() > 0 && plain.count() > 0 {
			break
		}
	}
	if got := string(vllm.last(t)["priority"]); got != "-1" {
		t.Errorf("vLLM endpoint got priority %q, want -1", got)
	}
	if got := string(sglang.last(t)["priority"]); got != "100" {
		t.Errorf("SGLang endpoint got priority %q, want 100", got)
	}
	if got, ok := plain.last(t)["priority"]; ok {
		t.Errorf("endpoint with priority off got priority %s, want none", got)
	}
}

func TestSetServerPriorities(t *testing.T) {
	eps := []EndpointConfig{{BaseURL: secret.Endpoint("http://a/v1")}, {BaseURL: secret.Endpoint("http://b/v1")}}
	tests := []struct {
		forms   []string
		want    []ServerPriority
		wantErr string
	}{
		{nil, []ServerPriority{"", ""}, ""},
		{[]string{"vllm"}, []ServerPriority{PriorityVLLM, PriorityVLLM}, ""},
		{[]string{"sglang", " OFF "}, []ServerPriority{PrioritySGLang, PriorityOff}, ""},
		{[]string{"vllm", "vllm", "vllm"}, nil, "3 model server priorities for 2 model servers"},
		{[]string{"triton"}, nil, `"triton": use vllm`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.forms, ","), func(t *testing.T) {
			got := append([]EndpointConfig(nil), eps...)
			err := SetServerPriorities(got, tt.forms)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if got[i].Priority != tt.want[i] {
					t.Errorf("endpoint %d: priority %q, want %q", i, got[i].Priority, tt.want[i])
				}
			}
		})
	}
}

func TestAddBodyField(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"a":1}`, `{"priority":3,"a":1}`},
		{` { "a":1}`, `{"priority":3,"a":1}`},
		{`{}`, `{"priority":3}`},
		{`[1]`, `[1]`},
		{``, ``},
	} {
		if got := string(addBodyField([]byte(tt.in), priorityMember(3))); got != tt.want {
			t.Errorf("addBodyField(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
