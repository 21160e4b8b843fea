package inference

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/secret"
)

const (
	azureKey        = "azure-test-key-0123456789abcdef"
	azureDeployment = "qa-prod.v2"
)

// seen is one request a dialect server received.
type seen struct {
	method, path, apiVersion string
	apiKeyHeader, authHeader string
	body                     map[string]json.RawMessage
}

// dialectServer records requests and answers each with respond.
type dialectServer struct {
	*httptest.Server
	mu      sync.Mutex
	reqs    []seen
	respond func(w http.ResponseWriter, r *http.Request)
}

func newDialectServer(t *testing.T, respond func(w http.ResponseWriter, r *http.Request)) *dialectServer {
	t.Helper()
	s := &dialectServer{respond: respond}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(data))
		var body map[string]json.RawMessage
		_ = json.Unmarshal(data, &body)
		s.mu.Lock()
		s.reqs = append(s.reqs, seen{method: r.Method, path: r.URL.Path, apiVersion: r.URL.Query().Get("api-version"),
			apiKeyHeader: r.Header.Get("api-key"), authHeader: r.Header.Get("Authorization"), body: body})
		s.mu.Unlock()
		s.respond(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *dialectServer) requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.reqs...)
}

// completionBody is a chat completion as OpenAI and Azure send it.
func completionBody(content string, extra string) string {
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-2024-11-20",
"choices":[{"index":0,"message":{"role":"assistant","content":%q%s},"finish_reason":"stop"}],
"usage":{"prompt_tokens":120,"completion_tokens":9,"total_tokens":129,"completion_tokens_details":{"reasoning_tokens":0}}}`, content, extra)
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// azureServer speaks Azure OpenAI's dialect: the deployment in the path, the
// api-version query parameter, the api-key header, and Azure's error
// bodies for a wrong key, an unknown deployment and a missing version.
func azureServer(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) *dialectServer {
	return newDialectServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("api-version") == "" {
			writeJSON(w, http.StatusNotFound, `{"error":{"code":"404","message":"Resource not found"}}`)
			return
		}
		if r.Header.Get("api-key") != azureKey {
			writeJSON(w, http.StatusUnauthorized, `{"error":{"code":"401","message":"Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."}}`)
			return
		}
		if r.URL.Path != "/openai/deployments/"+azureDeployment+"/chat/completions" {
			writeJSON(w, http.StatusNotFound, `{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."}}`)
			return
		}
		answer(w, r)
	})
}

func newAzureClient(t *testing.T, endpoint string, mod func(*Config)) *Client {
	t.Helper()
	cfg := Config{API: APIAzure, BaseURL: secret.Endpoint(endpoint), APIKey: azureKey, Model: azureDeployment}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func TestAzureCompletes(t *testing.T) {
	srv := azureServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, completionBody("The memory so far: the vault code is 7391.", ""))
	})
	for _, tc := range []struct {
		name, endpoint, version, wantVersion string
	}{
		{"default version", srv.URL, "", DefaultAzureAPIVersion},
		{"configured version", srv.URL + "/", "2025-04-01-preview", "2025-04-01-preview"},
		{"endpoint with /openai", srv.URL + "/openai/", "", DefaultAzureAPIVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newAzureClient(t, tc.endpoint, func(c *Config) { c.APIVersion = tc.version })
			before := len(srv.requests())
			out, err := c.Complete(context.Background(), Request{Prompt: "<problem>q</problem>", MaxTokens: 256, Temperature: 0.7, TopP: 0.95})
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if out.Text != "The memory so far: the vault code is 7391." || out.PromptTokens != 120 || out.CompletionTokens != 9 {
				t.Errorf("Complete = %+v", out)
			}
			r := srv.requests()[before]
			if r.apiVersion != tc.wantVersion {
				t.Errorf("api-version = %q, want %q", r.apiVersion, tc.wantVersion)
			}
			if r.authHeader != "" {
				t.Errorf("Authorization header %q sent to Azure; the key goes in api-key", r.authHeader)
			}
			if string(r.body["max_tokens"]) != "256" || string(r.body["temperature"]) != "0.7" || r.body["max_completion_tokens"] != nil {
				t.Errorf("body has max_tokens %s, temperature %s, max_completion_tokens %s; want 256, 0.7, none",
					r.body["max_tokens"], r.body["temperature"], r.body["max_completion_tokens"])
			}
		})
	}
}

// Azure lists no deployments: Models and the pool's health checks make no
// request, and the context length is the configured one.
func TestAzureAsksNothingButCompletions(t *testing.T) {
	srv := azureServer(t, func(w http.ResponseWriter, r *http.Request) { t.Errorf("unexpected request %s", r.URL.Path) })
	c := newAzureClient(t, srv.URL, func(c *Config) { c.ContextLength = 128000 })
	models, err := c.Models(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(models) != 1 || models[0].ID != azureDeployment || models[0].MaxModelLen != 128000 {
		t.Errorf("Models = %+v, want the deployment with the configured context", models)
	}
	if _, err := c.Tokenize(context.Background(), azureDeployment, "text"); err == nil {
		t.Error("Tokenize on Azure succeeded, want an error")
	}
	noModel := newAzureClient(t, srv.URL, func(c *Config) { c.Model = "" })
	if _, err := noModel.Models(context.Background()); err == nil || !strings.Contains(err.Error(), "MEMAGENT_MODEL") {
		t.Errorf("Models without a deployment: %v, want an error naming MEMAGENT_MODEL", err)
	}

	p, err := NewPool(PoolConfig{API: APIAzure, Endpoints: []EndpointConfig{{BaseURL: secret.Endpoint(srv.URL), APIKey: azureKey}},
		Model: azureDeployment, ContextLength: 64000, HealthInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.checkAll(context.Background())
	if n := p.MaxModelLen(); n != 64000 {
		t.Errorf("pool MaxModelLen after a health check = %d, want the configured 64000", n)
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("the client and the pool's health check sent %d requests to Azure, want none", n)
	}
}

func TestAzureErrors(t *testing.T) {
	srv := azureServer(t, func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		// The prompt says which error to send.
		_ = json.NewDecoder(r.Body).Decode(&body)
		switch prompt := body.Messages[0].Content; {
		case strings.Contains(prompt, "rate"):
			w.Header().Set("Retry-After", "7")
			w.Header().Set("Retry-After-Ms", "6500")
			writeJSON(w, http.StatusTooManyRequests, `{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 7 seconds."}}`)
		case strings.Contains(prompt, "filter"):
			writeJSON(w, http.StatusBadRequest, `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":true,"severity":"high"}}}}}`)
		case strings.Contains(prompt, "long"):
			writeJSON(w, http.StatusBadRequest, `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9120 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`)
		case strings.Contains(prompt, "busy"):
			writeJSON(w, http.StatusInternalServerError, `{"error":{"code":"InternalServerError","message":"The server had an error while processing your request. Sorry about that!"}}`)
		default:
			writeJSON(w, http.StatusOK, completionBody("ok", ""))
		}
	})
	for _, tc := range []struct {
		name       string
		mod        func(*Config)
		prompt     string
		kind       ErrorKind
		status     int
		retryAfter time.Duration
		msg        string
	}{
		{"wrong key", func(c *Config) { c.APIKey = "wrong-key-0123456789" }, "q", KindAuth, 401, 0, "invalid subscription key"},
		{"unknown deployment", func(c *Config) { c.Model = "gpt-4o-missing" }, "q", KindModelNotFound, 404, 0, "AZURE_OPENAI_ENDPOINT"},
		{"rate limited, retry-after-ms wins", nil, "rate", KindRateLimited, 429, 6500 * time.Millisecond, "exceeded token rate limit"},
		{"content filter", nil, "filter", KindBadRequest, 400, 0, "content management policy"},
		{"context too long", nil, "long", KindPromptTooLong, 400, 0, "maximum context length"},
		{"server error", nil, "busy", KindServer, 500, 0, "had an error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newAzureClient(t, srv.URL, tc.mod)
			_, err := c.Complete(context.Background(), Request{Prompt: tc.prompt})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Complete: %v, want an *Error", err)
			}
			if e.Kind != tc.kind || e.StatusCode != tc.status || e.RetryAfter != tc.retryAfter || !strings.Contains(e.Message, tc.msg) {
				t.Errorf("error %+v, want kind %s, status %d, retry after %s, a message containing %q", e, tc.kind, tc.status, tc.retryAfter, tc.msg)
			}
			if strings.Contains(e.Error(), azureKey) {
				t.Errorf("error %q contains the API key", e)
			}
		})
	}
}

func TestAzureEndpointNamingADeploymentIsRefused(t *testing.T) {
	_, err := New(Config{API: APIAzure, BaseURL: "https://res.openai.azure.com/openai/deployments/gpt-4o", Model: "gpt-4o"})
	if err == nil || !strings.Contains(err.Error(), "MEMAGENT_MODEL") {
		t.Fatalf("New: %v, want an error saying the deployment goes in MEMAGENT_MODEL", err)
	}
	if _, err := ParseAzureEndpoints("https://res.openai.azure.com/openai/deployments/x", "k", 0); err == nil || !strings.Contains(err.Error(), "AZURE_OPENAI_ENDPOINT") {
		t.Errorf("ParseAzureEndpoints: %v, want an error naming AZURE_OPENAI_ENDPOINT", err)
	}
	if _, err := ParseAzureEndpoints("", "k", 0); err == nil || !strings.Contains(err.Error(), "AZURE_OPENAI_ENDPOINT") {
		t.Errorf("ParseAzureEndpoints(\"\"): %v, want an error naming AZURE_OPENAI_ENDPOINT", err)
	}
	if _, err := ParseAPI("bedrock"); err == nil {
		t.Error("ParseAPI(bedrock) succeeded")
	}
}

// openAIServer speaks OpenAI's own dialect for model gpt-4o and the
// reasoning models, with its error bodies for a wrong key (401), a rate
// limit (429 with retry-after) and an exhausted quota (429, not
// retryable).
func openAIServer(t *testing.T, content func(model string) string) *dialectServer {
	return newDialectServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-test-secret-key-0123456789" {
			writeJSON(w, http.StatusUnauthorized, `{"error":{"message":"Incorrect API key provided: sk-wrong**********6789. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)
			return
		}
		switch r.URL.Path {
		case "/v1/models":
			writeJSON(w, http.StatusOK, `{"object":"list","data":[{"id":"gpt-4o","object":"model","created":1,"owned_by":"system"},{"id":"o3-mini","object":"model","created":1,"owned_by":"system"}]}`)
			return
		case "/v1/chat/completions":
		default:
			writeJSON(w, http.StatusNotFound, `{"error":{"message":"Invalid URL (GET `+r.URL.Path+`)","type":"invalid_request_error","param":null,"code":null}}`)
			return
		}
		var body struct {
			Model    string `json:"model"`
			Messages []struct{ Content string }
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		switch prompt := body.Messages[0].Content; prompt {
		case "rate":
			w.Header().Set("Retry-After", "2")
			writeJSON(w, http.StatusTooManyRequests, `{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used 29500, Requested 1200. Please try again in 2s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`)
		case "quota":
			writeJSON(w, http.StatusTooManyRequests, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`)
		case "unsupported":
			writeJSON(w, http.StatusBadRequest, `{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}`)
		default:
			writeJSON(w, http.StatusOK, content(body.Model))
		}
	})
}

func TestOpenAIRequestShapeByModel(t *testing.T) {
	srv := openAIServer(t, func(string) string { return completionBody("memory", "") })
	for _, tc := range []struct {
		model, family string
		reasoning     bool
	}{
		{"gpt-4o", "", false},
		{"gpt-4.1-mini", "", false},
		{"o3-mini", "", true},
		{"o1", "", true},
		{"o4-mini-2025-04-16", "", true},
		{"gpt-5", "", true},
		{"gpt-5-nano", "", true},
		{"openai/gpt-5", "", true},
		{"qa-prod", "o3-mini", true},  // a deployment name with its family configured
		{"o3-custom", "gpt-4o", true}, // go-openai insists on the name
		{"qa-dev", "gpt-4o", false},
	} {
		t.Run(tc.model, func(t *testing.T) {
			c := newTestClient(t, srv.URL, func(c *Config) { c.Model, c.ModelFamily = tc.model, tc.family })
			before := len(srv.requests())
			if _, err := c.Complete(context.Background(), Request{Prompt: "p", MaxTokens: 1024, Temperature: 0.7, TopP: 0.95}); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			b := srv.requests()[before].body
			if tc.reasoning {
				if string(b["max_completion_tokens"]) != "1024" || b["max_tokens"] != nil || b["temperature"] != nil || b["top_p"] != nil {
					t.Errorf("body %v: want max_completion_tokens 1024 and no max_tokens, temperature or top_p", keys(b))
				}
				return
			}
			if string(b["max_tokens"]) != "1024" || b["max_completion_tokens"] != nil || string(b["top_p"]) != "0.95" {
				t.Errorf("body %v: want max_tokens 1024, top_p 0.95 and no max_completion_tokens", keys(b))
			}
		})
	}
}

func keys(m map[string]json.RawMessage) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if k != "messages" {
			out[k] = string(v)
		}
	}
	return out
}

func TestOpenAIErrors(t *testing.T) {
	srv := openAIServer(t, func(string) string { return completionBody("ok", "") })
	for _, tc := range []struct {
		name, prompt, key string
		kind              ErrorKind
		status            int
		retryAfter        time.Duration
		retryable         bool
		msg               string
	}{
		{"wrong key", "q", "sk-wrong-0123456789", KindAuth, 401, 0, false, "Incorrect API key"},
		{"rate limit with retry-after", "rate", "", KindRateLimited, 429, 2 * time.Second, true, "Rate limit reached"},
		{"quota exhausted", "quota", "", KindAuth, 429, 0, false, "exceeded your current quota"},
		{"unsupported parameter", "unsupported", "", KindBadRequest, 400, 0, false, "max_completion_tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestClient(t, srv.URL, func(c *Config) {
				c.Model = "gpt-4o"
				if tc.key != "" {
					c.APIKey = secret.Value(tc.key)
				}
			})
			_, err := c.Complete(context.Background(), Request{Prompt: tc.prompt})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Complete: %v, want an *Error", err)
			}
			if e.Kind != tc.kind || e.StatusCode != tc.status || e.RetryAfter != tc.retryAfter || e.Retryable() != tc.retryable || !strings.Contains(e.Message, tc.msg) {
				t.Errorf("error %+v (retryable %v), want kind %s, status %d, retry after %s, retryable %v, a message containing %q",
					e, e.Retryable(), tc.kind, tc.status, tc.retryAfter, tc.retryable, tc.msg)
			}
		})
	}
}

// A configured context length stands in for the one a server does not
// report (OpenAI's /v1/models reports none) and caps a larger one.
func TestConfiguredContextLength(t *testing.T) {
	openai := openAIServer(t, func(string) string { return "" })
	vllm := newDialectServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, `{"object":"list","data":[{"id":"m","max_model_len":32768}]}`)
	})
	for _, tc := range []struct {
		name       string
		url        string
		configured int
		want       int
	}{
		{"openai, none configured", openai.URL, 0, 0},
		{"openai, configured", openai.URL, 128000, 128000},
		{"vllm, none configured", vllm.URL, 0, 32768},
		{"vllm, configured smaller", vllm.URL, 16384, 16384},
		{"vllm, configured larger", vllm.URL, 65536, 32768},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestClient(t, tc.url, func(c *Config) { c.ContextLength = tc.configured })
			models, err := c.Models(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(models) == 0 || models[0].MaxModelLen != tc.want {
				t.Errorf("Models = %+v, want the first with max_model_len %d", models, tc.want)
			}
		})
	}
}

// Reasoning never becomes memory: a <think> block in the content is cut,
// and a separate reasoning_content field is never read.
func TestReasoningKeptOutOfText(t *testing.T) {
	for _, tc := range []struct {
		name, content, extra, want string
	}{
		{"think block", "<think>\nThe chunk mentions the vault twice.\n</think>\n\nMemory: the vault code is 7391.", "", "Memory: the vault code is 7391."},
		{"closing tag only", "The template opened the thought.</think>Memory: X", "", "Memory: X"},
		{"unclosed think", "  <think>\nStill thinking when the budget ran out", "", ""},
		{"reasoning_content field", "Memory: Y", `,"reasoning_content":"a long private thought"`, "Memory: Y"},
		{"no reasoning", "Memory: <b>bold</b> stays", "", "Memory: <b>bold</b> stays"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := openAIServer(t, func(string) string { return completionBody(tc.content, tc.extra) })
			c := newTestClient(t, srv.URL, nil)
			out, err := c.Complete(context.Background(), Request{Prompt: "p"})
			if err != nil {
				t.Fatal(err)
			}
			if out.Text != tc.want {
				t.Errorf("Text = %q, want %q", out.Text, tc.want)
			}
		})
	}
}

// A request go-openai refuses before sending is a bad request, not a
// connection failure that Temporal would retry for ever.
func TestClientSideRefusalIsBadRequest(t *testing.T) {
	c := newTestClient(t, "http://127.0.0.1:1", nil)
	e := c.classify(context.Background(), fmt.Errorf("wrap: %w", errors.Join(errors.New("x"), openaiSamplingErr)), &exchange{}, "")
	if e.Kind != KindBadRequest || e.Retryable() {
		t.Errorf("classify = %+v, want a non-retryable bad request", e)
	}
}

var openaiSamplingErr = clientSideErrors[4]

// TestAzureDeploymentStaysInItsPath: a request naming a deployment that
// would walk the request (and its api-key header) to another path of the
// Azure host, or cut its api-version off, is refused before any request;
// a name with characters a path segment escapes stays one segment.
func TestAzureDeploymentStaysInItsPath(t *testing.T) {
	srv := azureServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, completionBody("ok", ""))
	})
	c := newAzureClient(t, srv.URL, nil)
	for _, name := range []string{
		"qa-prod/../../../v1/attacker-chosen/path?x=",
		"qa-prod#", "qa-prod?api-version=x", "..", "qa%2Fprod", `qa\prod`, "qa prod", "qa\x00prod",
		strings.Repeat("d", MaxModelNameBytes+1),
	} {
		before := len(srv.requests())
		_, err := c.Complete(context.Background(), Request{Prompt: "p", MaxTokens: 8, Model: name})
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindBadRequest {
			t.Errorf("deployment %q: error %v, want a bad request", name, err)
		}
		if n := len(srv.requests()) - before; n != 0 {
			t.Errorf("deployment %q: %d requests sent", name, n)
		}
	}
	before := len(srv.requests())
	_, _ = c.Complete(context.Background(), Request{Prompt: "p", MaxTokens: 8, Model: "gpt-4o:mini;x"})
	if reqs := srv.requests()[before:]; len(reqs) != 1 || reqs[0].path != "/openai/deployments/gpt-4o:mini%3Bx/chat/completions" && reqs[0].path != "/openai/deployments/gpt-4o:mini;x/chat/completions" || reqs[0].apiVersion == "" {
		t.Errorf("requests = %+v, want one to the escaped deployment's own path with its api-version", reqs)
	}
}
