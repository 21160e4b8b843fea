package simulator_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/secret"
)

// memagent.Tokenizer must be usable as the simulator's Tokenizer.
var _ simulator.Tokenizer = memagent.Tokenizer(nil)

// wordTokenizer is a memagent.Tokenizer counting runs of non-space bytes.
type wordTokenizer struct{}

func (wordTokenizer) Name() string { return "test-words" }

func (wordTokenizer) TokenLens(text string) []int {
	var lens []int
	start := 0
	for i := 1; i <= len(text); i++ {
		if i == len(text) || (text[i] == ' ' && text[i-1] != ' ') {
			lens = append(lens, i-start)
			start = i
		}
	}
	return lens
}

func (wordTokenizer) Count(text string) int { return len(strings.Fields(text)) }

func startSimulator(t *testing.T, opts simulator.Options) (*simulator.Server, *httptest.Server) {
	t.Helper()
	sim := simulator.New(opts)
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	return sim, srv
}

func newClient(t *testing.T, srv *httptest.Server, model string) *inference.Client {
	t.Helper()
	c, err := inference.New(inference.Config{BaseURL: secret.Endpoint(srv.URL + "/v1"), Model: model, RequestTimeout: time.Minute})
	if err != nil {
		t.Fatalf("inference.New: %v", err)
	}
	return c
}

func chunksWithFact(n, plant int) []string {
	chunks := make([]string, n)
	for i := range chunks {
		var b strings.Builder
		for j := 0; j < 30; j++ {
			fmt.Fprintf(&b, "Entry %d of the ledger notes a calm day at the harbour. ", i*30+j)
			if i == plant && j == 12 {
				b.WriteString("The access code for the north gate is 7391-ALPHA. ")
			}
		}
		chunks[i] = b.String()
	}
	return chunks
}

func TestMemAgentLoopOverHTTP(t *testing.T) {
	const question = "What is the access code for the north gate?"
	tests := []struct {
		name string
		tok  simulator.Tokenizer
	}{
		{"approximate counts", nil},
		{"memagent tokenizer", wordTokenizer{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim, srv := startSimulator(t, simulator.Options{Tokenizer: tt.tok})
			c := newClient(t, srv, simulator.DefaultModel)
			tmpl := memagent.DefaultTemplates()
			ctx := context.Background()
			count := func(s string) int { return (len(s) + 3) / 4 }
			if tt.tok != nil {
				count = tt.tok.Count
			}

			const maxTokens = 48
			chunks := chunksWithFact(6, 3)
			memory := memagent.InitialMemory
			for i, chunk := range chunks {
				prompt := tmpl.RenderUpdate(question, memory, chunk)
				comp, err := c.Complete(ctx, inference.Request{Prompt: prompt, MaxTokens: maxTokens, Temperature: 0.7, TopP: 0.95})
				if err != nil {
					t.Fatalf("chunk %d: Complete: %v", i, err)
				}
				if comp.PromptTokens != count(prompt) || comp.CompletionTokens != count(comp.Text) {
					t.Errorf("chunk %d: usage %d/%d, want %d/%d", i, comp.PromptTokens, comp.CompletionTokens, count(prompt), count(comp.Text))
				}
				if comp.CompletionTokens > maxTokens || comp.FinishReason != "stop" {
					t.Errorf("chunk %d: %d completion tokens, finish %q; want at most %d, stop", i, comp.CompletionTokens, comp.FinishReason, maxTokens)
				}
				if comp.Model != simulator.DefaultModel {
					t.Errorf("chunk %d: model %q, want %q", i, comp.Model, simulator.DefaultModel)
				}
				memory = comp.Text
			}
			comp, err := c.Complete(ctx, inference.Request{Prompt: tmpl.RenderFinal(question, memory), MaxTokens: 64})
			if err != nil {
				t.Fatalf("final: Complete: %v", err)
			}
			ans := memagent.ExtractAnswer(comp.Text)
			if !ans.Found || ans.Text != "7391-ALPHA" {
				t.Errorf("final answer %+v from %q, want 7391-ALPHA", ans, comp.Text)
			}

			calls := sim.Calls()
			if len(calls) != len(chunks)+1 {
				t.Fatalf("got %d calls, want %d", len(calls), len(chunks)+1)
			}
			for i, chunk := range chunks {
				sum := sha256.Sum256([]byte(chunk))
				if got, want := calls[i].ChunkSHA256, hex.EncodeToString(sum[:]); got != want || calls[i].Kind != simulator.KindUpdate || calls[i].Question != question {
					t.Errorf("call %d = {%s %q sha %s}, want {update %q sha %s}", i, calls[i].Kind, calls[i].Question, got, question, want)
				}
			}
			if calls[0].MemoryIn != memagent.InitialMemory {
				t.Errorf("first call memory %q, want %q", calls[0].MemoryIn, memagent.InitialMemory)
			}
			last := calls[len(calls)-1]
			if last.Kind != simulator.KindFinal || last.MemoryIn != memory || last.Output != comp.Text || last.ChunkSHA256 != "" {
				t.Errorf("final call = %+v, want kind final with the last memory and the answer", last)
			}
			sim.Reset()
			if n := len(sim.Calls()); n != 0 {
				t.Errorf("after Reset got %d calls, want 0", n)
			}
		})
	}
}

func TestErrorsOverHTTP(t *testing.T) {
	_, srv := startSimulator(t, simulator.Options{MaxModelLen: 100, Tokenizer: wordTokenizer{}})
	// 41 words: the tags stick to the first and last w.
	prompt41 := "<problem>Who?</problem><memory>x</memory><section>" + strings.Repeat("w ", 40) + "</section>"
	tests := []struct {
		name     string
		model    string
		req      inference.Request
		wantKind inference.ErrorKind
		wantMsg  []string
	}{
		{"prompt plus max_tokens too long", simulator.DefaultModel, inference.Request{Prompt: prompt41, MaxTokens: 61}, inference.KindPromptTooLong, []string{"maximum context length is 100 tokens", "102 tokens", "41 in the messages", "61 for the completion"}},
		{"prompt alone too long", simulator.DefaultModel, inference.Request{Prompt: strings.Repeat("w ", 100) + "<problem>Q</problem>"}, inference.KindPromptTooLong, []string{"maximum context length is 100 tokens"}},
		{"unknown model", "gpt-imaginary", inference.Request{Prompt: prompt41, MaxTokens: 10}, inference.KindModelNotFound, []string{"gpt-imaginary", "does not exist"}},
		{"not a MemAgent prompt", simulator.DefaultModel, inference.Request{Prompt: "Tell me a joke.", MaxTokens: 10}, inference.KindBadRequest, []string{"<problem>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, srv, tt.model)
			_, err := c.Complete(context.Background(), tt.req)
			var e *inference.Error
			if !errors.As(err, &e) || e.Kind != tt.wantKind {
				t.Fatalf("Complete: got %v, want kind %q", err, tt.wantKind)
			}
			for _, m := range tt.wantMsg {
				if !strings.Contains(e.Message, m) {
					t.Errorf("Message %q does not contain %q", e.Message, m)
				}
			}
		})
	}
	t.Run("max_tokens fits exactly", func(t *testing.T) {
		c := newClient(t, srv, simulator.DefaultModel)
		if _, err := c.Complete(context.Background(), inference.Request{Prompt: prompt41, MaxTokens: 59}); err != nil {
			t.Fatalf("Complete: %v", err)
		}
	})
}

// post sends a raw body and decodes the JSON answer.
func post(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("decode response: %v", err)
	}
	return resp.StatusCode, v
}

func TestErrorBodyShapes(t *testing.T) {
	_, srv := startSimulator(t, simulator.Options{MaxModelLen: 50})
	tests := []struct {
		name       string
		body       string
		wantStatus int
		wantNested bool
	}{
		{"no problem is flat", `{"model":"memagent-simulator","messages":[{"role":"user","content":"hi"}]}`, 400, false},
		{"bad JSON is flat", `{"messages":`, 400, false},
		{"no user message is flat", `{"messages":[{"role":"system","content":"<problem>q</problem>"}]}`, 400, false},
		{"context is nested", `{"messages":[{"role":"user","content":"<problem>q</problem>"}],"max_tokens":100}`, 400, true},
		{"max_completion_tokens counts", `{"messages":[{"role":"user","content":"<problem>q</problem>"}],"max_tokens":5,"max_completion_tokens":100}`, 400, true},
		{"zero max_tokens is nested", `{"messages":[{"role":"user","content":"<problem>q</problem>"}],"max_tokens":0}`, 400, true},
		{"unknown model is nested", `{"model":"x","messages":[{"role":"user","content":"<problem>q</problem>"}]}`, 404, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, v := post(t, srv.URL, tt.body)
			if status != tt.wantStatus {
				t.Errorf("status = %d, want %d", status, tt.wantStatus)
			}
			inner, nested := v["error"].(map[string]any)
			if nested != tt.wantNested {
				t.Fatalf("body %v: nested = %v, want %v", v, nested, tt.wantNested)
			}
			if !nested {
				inner = v
				if v["object"] != "error" {
					t.Errorf("flat body object = %v, want error", v["object"])
				}
			}
			if msg, _ := inner["message"].(string); msg == "" || inner["code"] != float64(tt.wantStatus) {
				t.Errorf("error body %v: want a message and code %d", inner, tt.wantStatus)
			}
		})
	}
}

func TestContentParts(t *testing.T) {
	_, srv := startSimulator(t, simulator.Options{})
	body := `{"messages":[{"role":"user","content":[{"type":"text","text":"<problem>Who built the gate?</problem>"},{"type":"text","text":"<memory>Ada Byron built the gate.</memory>"}]}],"max_tokens":50}`
	status, v := post(t, srv.URL, body)
	if status != 200 {
		t.Fatalf("status = %d (%v), want 200", status, v)
	}
	content := v["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]
	if content != `After reviewing the memory, the answer is \boxed{Ada Byron}.` {
		t.Errorf("content = %q, want the boxed answer Ada Byron", content)
	}
}

func TestFinalAnswerTruncatedToBudget(t *testing.T) {
	sim, srv := startSimulator(t, simulator.Options{Tokenizer: wordTokenizer{}})
	c := newClient(t, srv, simulator.DefaultModel)
	prompt := memagent.DefaultTemplates().RenderFinal("Who built the gate?", "Ada Byron built the gate.")
	comp, err := c.Complete(context.Background(), inference.Request{Prompt: prompt, MaxTokens: 3})
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if comp.FinishReason != "length" || comp.CompletionTokens > 3 || comp.Text != "After reviewing the" {
		t.Errorf("got %q (%d tokens, %s), want 3 words and finish length", comp.Text, comp.CompletionTokens, comp.FinishReason)
	}
	if calls := sim.Calls(); len(calls) != 1 || calls[0].Output != comp.Text {
		t.Errorf("calls = %+v, want one with the truncated output", calls)
	}
}

func TestModelsAndHealth(t *testing.T) {
	_, srv := startSimulator(t, simulator.Options{Model: "sim-a", MaxModelLen: 8192})
	c := newClient(t, srv, "sim-a")
	models, err := c.Models(context.Background())
	if err != nil {
		t.Fatalf("Models: %v", err)
	}
	if want := []inference.ModelInfo{{ID: "sim-a", MaxModelLen: 8192}}; len(models) != 1 || models[0] != want[0] {
		t.Errorf("Models = %+v, want %+v", models, want)
	}

	resp, err := http.Get(srv.URL + "/v1/models")
	if err != nil {
		t.Fatalf("GET /v1/models: %v", err)
	}
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			Object  string `json:"object"`
			OwnedBy string `json:"owned_by"`
		} `json:"data"`
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil || list.Object != "list" || len(list.Data) != 1 || list.Data[0].Object != "model" || list.Data[0].OwnedBy != "memagent-simulator" {
		t.Errorf("GET /v1/models = %+v (%v), want a list owned by memagent-simulator", list, err)
	}

	tests := []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "/health", http.StatusOK},
		{http.MethodGet, "/v1/chat/completions", http.StatusMethodNotAllowed},
		{http.MethodGet, "/v1/nothing", http.StatusNotFound},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, srv.URL+tt.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tt.method, tt.path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s %s = %d, want %d", tt.method, tt.path, resp.StatusCode, tt.want)
		}
	}
}

func TestLatency(t *testing.T) {
	prompt := memagent.DefaultTemplates().RenderFinal("Who built the gate?", "Ada built the gate.")

	t.Run("added to each call", func(t *testing.T) {
		_, srv := startSimulator(t, simulator.Options{Latency: 50 * time.Millisecond})
		c := newClient(t, srv, simulator.DefaultModel)
		comp, err := c.Complete(context.Background(), inference.Request{Prompt: prompt, MaxTokens: 50})
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if comp.Latency < 50*time.Millisecond {
			t.Errorf("latency %s, want at least 50ms", comp.Latency)
		}
	})

	t.Run("client going away drops the call", func(t *testing.T) {
		sim, srv := startSimulator(t, simulator.Options{Latency: time.Hour})
		c := newClient(t, srv, simulator.DefaultModel)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := c.Complete(ctx, inference.Request{Prompt: prompt, MaxTokens: 50})
		var e *inference.Error
		if !errors.As(err, &e) || e.Kind != inference.KindTimeout {
			t.Fatalf("Complete: got %v, want a timeout", err)
		}
		if n := len(sim.Calls()); n != 0 {
			t.Errorf("got %d calls, want 0", n)
		}
		// srv.Close in cleanup waits for the handler: it must notice the
		// client has gone rather than sleep for an hour.
	})
}

func TestConcurrentCallsAreBounded(t *testing.T) {
	sim, srv := startSimulator(t, simulator.Options{MaxCalls: 5})
	c := newClient(t, srv, simulator.DefaultModel)
	tmpl := memagent.DefaultTemplates()
	const n = 12
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			prompt := tmpl.RenderUpdate("Who built the gate?", memagent.InitialMemory, fmt.Sprintf("Worker %d built the gate.", i))
			if _, err := c.Complete(context.Background(), inference.Request{Prompt: prompt, MaxTokens: 50}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Complete: %v", err)
	}
	if got := len(sim.Calls()); got != 5 {
		t.Errorf("got %d calls, want the bound 5", got)
	}

	// Sequential calls show that the oldest are forgotten first.
	sim.Reset()
	for i := range 7 {
		prompt := tmpl.RenderFinal(fmt.Sprintf("Question %d?", i), "Nothing.")
		if _, err := c.Complete(context.Background(), inference.Request{Prompt: prompt, MaxTokens: 50}); err != nil {
			t.Fatalf("Complete: %v", err)
		}
	}
	var got []string
	for _, call := range sim.Calls() {
		got = append(got, call.Question)
	}
	want := []string{"Question 2?", "Question 3?", "Question 4?", "Question 5?", "Question 6?"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("questions = %q, want %q", got, want)
	}
}

func TestLogsTextOnlyAtDebug(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, srv := startSimulator(t, simulator.Options{Logger: logger})
	c := newClient(t, srv, simulator.DefaultModel)
	prompt := memagent.DefaultTemplates().RenderUpdate("Where is the secret vault?", memagent.InitialMemory, "The secret vault is under the old mill.")
	if _, err := c.Complete(context.Background(), inference.Request{Prompt: prompt, MaxTokens: 50}); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if _, err := c.Complete(context.Background(), inference.Request{Prompt: "no problem here about the secret vault"}); err == nil {
		t.Fatalf("Complete: want an error for a prompt without <problem>")
	}
	dec := json.NewDecoder(&buf)
	records := 0
	for {
		var rec map[string]any
		if err := dec.Decode(&rec); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decode log: %v", err)
		}
		records++
		if rec["level"] != "DEBUG" {
			t.Errorf("log record at %v: %v, want only debug records", rec["level"], rec)
		}
	}
	if records == 0 {
		t.Errorf("no debug records, want one per request")
	}
}

// TestChainPolicyOverHTTP pins what PolicyChain answers: a memory update is
// "chain-" and the first 16 bytes of SHA-256 over question, memory and
// section (each followed by a zero byte); a final call boxes the memory.
func TestChainPolicyOverHTTP(t *testing.T) {
	_, srv := startSimulator(t, simulator.Options{Policy: simulator.PolicyChain})
	h := sha256.Sum256([]byte("Who?\x00m0\x00the chunk\x00"))
	wantUpdate := "chain-" + hex.EncodeToString(h[:16])
	tests := []struct{ name, prompt, want string }{
		{"update", "<problem>Who?</problem><memory>m0</memory><section>the chunk</section>", wantUpdate},
		{"final", "<problem>Who?</problem><memory>" + wantUpdate + "</memory>", `After reviewing the memory, the answer is \boxed{` + wantUpdate + `}.`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": tt.prompt}}, "max_tokens": 50})
			status, v := post(t, srv.URL, string(body))
			if status != 200 {
				t.Fatalf("status = %d (%v), want 200", status, v)
			}
			choice := v["choices"].([]any)[0].(map[string]any)
			if got := choice["message"].(map[string]any)["content"]; got != tt.want {
				t.Errorf("content = %q, want %q", got, tt.want)
			}
			if choice["finish_reason"] != "stop" {
				t.Errorf("finish_reason = %v, want stop", choice["finish_reason"])
			}
		})
	}
}

func TestStreamRefused(t *testing.T) {
	_, srv := startSimulator(t, simulator.Options{})
	status, v := post(t, srv.URL, `{"stream":true,"messages":[{"role":"user","content":"<problem>q</problem>"}]}`)
	if status != 400 || v["message"] != "stream is not supported by the simulator" || v["object"] != "error" {
		t.Errorf("stream request: status %d, body %v; want a flat 400 saying stream is not supported", status, v)
	}
}

// TestPriorityNeedsThePolicy: as vLLM, the simulator refuses a priority
// other than 0 unless it schedules by priority, and accepts it when it
// does.
func TestPriorityNeedsThePolicy(t *testing.T) {
	const body = `{"priority":-1,"messages":[{"role":"user","content":"<problem>q</problem><memory>m</memory>"}]}`
	_, fcfs := startSimulator(t, simulator.Options{})
	status, v := post(t, fcfs.URL, body)
	if msg, _ := v["error"].(map[string]any)["message"].(string); status != 400 || !strings.Contains(msg, "--scheduling-policy priority") {
		t.Errorf("priority -1 under fcfs: status %d, body %v; want 400 naming --scheduling-policy priority", status, v)
	}
	if status, v := post(t, fcfs.URL, `{"priority":0,"messages":[{"role":"user","content":"<problem>q</problem><memory>m</memory>"}]}`); status != 200 {
		t.Errorf("priority 0 under fcfs: status %d, body %v; want 200", status, v)
	}
	_, prio := startSimulator(t, simulator.Options{SchedulingPolicy: simulator.SchedulingPriority, Capacity: simulator.CapacityBatch})
	if status, v := post(t, prio.URL, body); status != 200 {
		t.Errorf("priority -1 under the priority policy: status %d, body %v; want 200", status, v)
	}
}
