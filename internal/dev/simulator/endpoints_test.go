package simulator_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/memagent"
)

func TestTokenize(t *testing.T) {
	_, srv := startSimulator(t, simulator.Options{Tokenizer: wordTokenizer{}, MaxModelLen: 4096})
	tests := []struct {
		name       string
		body       string
		wantStatus int
		wantCount  int
	}{
		{"prompt", `{"model":"memagent-simulator","prompt":"one two three"}`, 200, 3},
		{"empty prompt", `{"prompt":""}`, 200, 0},
		{"messages sum their text", `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"one two three"}]}]}`, 200, 5},
		{"both", `{"prompt":"a","messages":[{"role":"user","content":"b"}]}`, 400, 0},
		{"neither", `{"model":"memagent-simulator"}`, 400, 0},
		{"not JSON", `{"prompt":`, 400, 0},
		{"unknown model", `{"model":"gpt-imaginary","prompt":"a"}`, 404, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL+"/tokenize", "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatalf("POST /tokenize: %v", err)
			}
			defer resp.Body.Close()
			var got struct {
				Count       int   `json:"count"`
				MaxModelLen int   `json:"max_model_len"`
				Tokens      []int `json:"tokens"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if tt.wantStatus == 200 && (got.Count != tt.wantCount || got.MaxModelLen != 4096 || len(got.Tokens) != tt.wantCount) {
				t.Errorf("got %+v, want count %d, max_model_len 4096 and as many tokens", got, tt.wantCount)
			}
		})
	}

	t.Run("count is a completion's prompt_tokens", func(t *testing.T) {
		prompt := memagent.DefaultTemplates().RenderFinal("Who built the gate?", "Ada built the gate.")
		comp, err := newClient(t, srv, simulator.DefaultModel).Complete(context.Background(), inference.Request{Prompt: prompt, MaxTokens: 50})
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		body, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": prompt}}})
		resp, err := http.Post(srv.URL+"/tokenize", "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatalf("POST /tokenize: %v", err)
		}
		defer resp.Body.Close()
		var got struct{ Count int }
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || got.Count != comp.PromptTokens {
			t.Errorf("count %d (%v), want prompt_tokens %d", got.Count, err, comp.PromptTokens)
		}
	})
}

// sampleLine is one sample of the text exposition format.
var sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_][a-zA-Z0-9_]*="[^"]*"(,[a-zA-Z_][a-zA-Z0-9_]*="[^"]*")*\})? (\S+)$`)

// scrape reads GET /metrics, checks the format and returns each series'
// value by its name and labels as written.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q, want text/plain; version=0.0.4", ct)
	}
	types := map[string]string{}
	series := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(f, " ")
			if _, dup := types[name]; dup {
				t.Errorf("TYPE for %s twice", name)
			}
			types[name] = typ
			continue
		}
		if strings.HasPrefix(line, "# HELP ") {
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("line %q is not a sample", line)
			continue
		}
		family := m[1]
		if typ := types[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(family, "_bucket"), "_sum"), "_count")]; typ == "" && types[family] == "" {
			t.Errorf("sample %q comes before its TYPE line", line)
		}
		v, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			t.Errorf("line %q: value: %v", line, err)
		}
		key := family + m[2]
		if _, dup := series[key]; dup {
			t.Errorf("series %s twice", key)
		}
		series[key] = v
	}
	return series
}

func TestMetrics(t *testing.T) {
	sim, srv := startSimulator(t, simulator.Options{Replicas: 2, Slots: 3, Tokenizer: wordTokenizer{}})
	c := newClient(t, srv, simulator.DefaultModel)
	for i := range 2 {
		if _, err := c.Complete(context.Background(), inference.Request{Prompt: finalPrompt(i), MaxTokens: 50}); err != nil {
			t.Fatalf("Complete: %v", err)
		}
	}
	if _, err := c.Complete(context.Background(), inference.Request{Prompt: "no problem block", MaxTokens: 50}); err == nil {
		t.Fatalf("Complete: want an error for a prompt without <problem>")
	}
	got := scrape(t, srv.URL)
	st := sim.Stats()

	want := map[string]float64{
		`memagent_sim_requests_total{outcome="ok"}`:                     2,
		`memagent_sim_requests_total{outcome="invalid"}`:                1,
		`memagent_sim_requests_total{outcome="fault_429"}`:              0,
		`memagent_sim_requests_total{outcome="fault_malformed"}`:        0,
		`memagent_sim_requests_total{outcome="queue_full"}`:             0,
		`memagent_sim_prompt_tokens_total`:                              float64(st.PromptTokens),
		`memagent_sim_completion_tokens_total`:                          float64(st.CompletionTokens),
		`memagent_sim_requests_in_flight`:                               0,
		`memagent_sim_replica_requests_in_flight{replica="1"}`:          0,
		`memagent_sim_max_in_flight`:                                    1,
		`memagent_sim_queue_length`:                                     0,
		`memagent_sim_max_queue_length`:                                 0,
		`memagent_sim_requests_open`:                                    0,
		`memagent_sim_max_requests_open`:                                1,
		`memagent_sim_slots`:                                            6,
		`memagent_sim_request_duration_seconds_count`:                   2,
		`memagent_sim_request_duration_seconds_bucket{le="+Inf"}`:       2,
		`memagent_sim_request_duration_seconds_bucket{le="600"}`:        2,
		`memagent_sim_request_duration_seconds_sum`:                     st.Latency.Sum.Seconds(),
		`memagent_sim_request_duration_seconds_bucket{le="0.005"}`:      float64(st.Latency.Buckets[0].Count),
		`memagent_sim_replica_requests_in_flight{replica="0"}`:          0,
		`memagent_sim_requests_total{outcome="fault_context_overflow"}`: 0,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if st.PromptTokens == 0 || st.CompletionTokens == 0 {
		t.Errorf("Stats tokens %d/%d, want both counted", st.PromptTokens, st.CompletionTokens)
	}
	// Buckets are cumulative.
	prev := 0.0
	for _, b := range st.Latency.Buckets {
		if float64(b.Count) < prev {
			t.Errorf("bucket %s holds %d, fewer than the one before", b.UpperBound, b.Count)
		}
		prev = float64(b.Count)
	}
}

func TestMetricsIgnoreOtherEndpoints(t *testing.T) {
	sim, srv := startSimulator(t, simulator.Options{FailAll: 503})
	for _, path := range []string{"/health", "/v1/models", "/metrics"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	st := sim.Stats()
	total := 0
	for _, n := range st.Requests {
		total += n
	}
	if total != 0 || st.MaxOpen != 0 {
		t.Errorf("requests %v, max open %d; want nothing counted outside completions", st.Requests, st.MaxOpen)
	}
}
