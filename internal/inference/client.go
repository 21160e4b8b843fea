package inference

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// DefaultRequestTimeout bounds one HTTP request to the model server when
// Config.RequestTimeout is zero. A memory update on a busy GPU can take
// minutes; a request that takes longer is treated as lost.
const DefaultRequestTimeout = 10 * time.Minute

// maxModelsBody caps how much of a /models response is read.
const maxModelsBody = 8 << 20

// Config says which server and model to use. The zero value is not valid:
// BaseURL is required. Model may be empty when every Request names one.
type Config struct {
	// BaseURL is the server's OpenAI base URL including the API version
	// path, exactly as OPENAI_BASE_URL is conventionally set, for example
	// "http://gpu-1:8000/v1". Requests go to BaseURL+"/chat/completions" and
	// BaseURL+"/models"; nothing is appended or guessed.
	BaseURL string
	// APIKey is sent as a bearer token when non-empty. vLLM and SGLang need
	// one only when started with --api-key.
	APIKey string
	// Model is the served model name sent with a request that names none.
	Model string
	// RequestTimeout bounds one HTTP request, from dialling to reading the
	// whole response. Zero means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// HTTPClient is the client to send requests with; nil means a new one.
	// It is copied, not modified: the copy's transport is wrapped to record
	// response headers, and its Timeout is set to RequestTimeout unless it
	// already has one.
	HTTPClient *http.Client
}

// Client sends requests to one OpenAI-compatible server for one model. It is
// safe for concurrent use.
type Client struct {
	baseURL string
	apiKey  string
	model   string
	http    *http.Client
	api     *openai.Client
}

// New checks cfg and returns a client. It makes no request.
func New(cfg Config) (*Client, error) {
	base := strings.TrimRight(strings.TrimSpace(cfg.BaseURL), "/")
	u, err := url.Parse(base)
	if err != nil || base == "" {
		return nil, fmt.Errorf("inference: base URL %q is not a URL: set it to the server's OpenAI base URL, e.g. http://host:8000/v1", cfg.BaseURL)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("inference: base URL %q must be an http or https URL with a host, e.g. http://host:8000/v1", cfg.BaseURL)
	}
	if cfg.RequestTimeout < 0 {
		return nil, fmt.Errorf("inference: request timeout %s is negative", cfg.RequestTimeout)
	}
	timeout := cfg.RequestTimeout
	if timeout == 0 {
		timeout = DefaultRequestTimeout
	}

	var hc http.Client
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient
	}
	transport := hc.Transport
	if transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		// Many memory updates run at once against one endpoint; the
		// default of two idle connections per host would make most of
		// them dial afresh.
		t.MaxIdleConnsPerHost = 64
		transport = t
	}
	hc.Transport = &recordingTransport{base: transport}
	if hc.Timeout == 0 {
		hc.Timeout = timeout
	}

	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = base
	oc.HTTPClient = &hc

	return &Client{
		baseURL: base,
		apiKey:  cfg.APIKey,
		model:   cfg.Model,
		http:    &hc,
		api:     openai.NewClientWithConfig(oc),
	}, nil
}

// Model returns the model name sent with every completion request.
func (c *Client) Model() string { return c.model }

// Request is one completion: the prompt goes out as a single user message
// with no system message, which is the layout the MemAgent models were
// trained on.
type Request struct {
	// Model overrides the client's model for this request; empty uses it.
	Model string
	// Prompt is the whole rendered prompt.
	Prompt string
	// MaxTokens caps the completion; zero leaves it to the server (vLLM
	// then allows whatever the context has left).
	MaxTokens int
	// Temperature zero means greedy decoding and is sent as the smallest
	// positive float32, because go-openai omits a zero temperature and the
	// server would then use its default (usually 1).
	Temperature float32
	// TopP zero leaves nucleus sampling to the server's default.
	TopP float32
	// Kind labels the call in metrics and spans, e.g. "update" or "final";
	// it is not sent.
	Kind string
}

func (r Request) validate() error {
	switch {
	case r.MaxTokens < 0:
		return &Error{Kind: KindBadRequest, Message: fmt.Sprintf("max_tokens must not be negative, got %d", r.MaxTokens)}
	case r.Temperature < 0 || math.IsNaN(float64(r.Temperature)):
		return &Error{Kind: KindBadRequest, Message: fmt.Sprintf("temperature must be zero or positive, got %g", r.Temperature)}
	case r.TopP < 0 || r.TopP > 1 || math.IsNaN(float64(r.TopP)):
		return &Error{Kind: KindBadRequest, Message: fmt.Sprintf("top_p must be in [0, 1], got %g", r.TopP)}
	}
	return nil
}

// Completion is the server's answer to one Request.
type Completion struct {
	// Text is the content of the first choice.
	Text string
	// Model is the model name the server reports.
	Model string
	// FinishReason is "stop", or "length" when MaxTokens cut the text short.
	FinishReason string
	// PromptTokens and CompletionTokens are the server's usage counts.
	PromptTokens, CompletionTokens int
	// CachedTokens is the part of the prompt served from the prefix cache,
	// when the server reports prompt_tokens_details; otherwise zero.
	CachedTokens int
	// Latency is the wall time of the HTTP exchange.
	Latency time.Duration
}

// Complete sends req and waits for the whole completion. Every error is an
// [*Error].
func (c *Client) Complete(ctx context.Context, req Request) (Completion, error) {
	if err := req.validate(); err != nil {
		return Completion{}, err
	}
	model := cmp.Or(req.Model, c.model)
	if model == "" {
		return Completion{}, &Error{Kind: KindBadRequest, Message: "no model named: set MEMAGENT_MODEL to a name the server lists at /v1/models"}
	}
	temperature := req.Temperature
	if temperature == 0 {
		temperature = math.SmallestNonzeroFloat32
	}
	creq := openai.ChatCompletionRequest{
		Model: model,
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleUser, Content: req.Prompt},
		},
		MaxTokens:   req.MaxTokens,
		Temperature: temperature,
		TopP:        req.TopP,
	}

	ex := &exchange{}
	start := time.Now()
	resp, err := c.api.CreateChatCompletion(withExchange(ctx, ex), creq)
	latency := time.Since(start)
	if err != nil {
		return Completion{}, c.classify(ctx, err, ex, req.Prompt)
	}
	if len(resp.Choices) == 0 {
		return Completion{}, &Error{Kind: KindServer, StatusCode: ex.statusCode(), Message: "response has no choices"}
	}
	choice := resp.Choices[0]
	out := Completion{
		Text:             choice.Message.Content,
		Model:            resp.Model,
		FinishReason:     string(choice.FinishReason),
		PromptTokens:     resp.Usage.PromptTokens,
		CompletionTokens: resp.Usage.CompletionTokens,
		Latency:          latency,
	}
	if d := resp.Usage.PromptTokensDetails; d != nil {
		out.CachedTokens = d.CachedTokens
	}
	return out, nil
}

// ModelInfo describes one served model.
type ModelInfo struct {
	// ID is the name to put in Config.Model.
	ID string `json:"id"`
	// MaxModelLen is the context length in tokens as vLLM reports it, or
	// zero when the server does not say.
	MaxModelLen int `json:"max_model_len"`
}

// Models lists the models the server serves (GET BaseURL/models). Every
// error is an [*Error].
func (c *Client) Models(ctx context.Context) ([]ModelInfo, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.baseURL+"/models", nil)
	if err != nil {
		return nil, &Error{Kind: KindBadRequest, Message: c.sanitize("build request: "+err.Error(), ""), Err: err}
	}
	req.Header.Set("Accept", "application/json")
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.classify(ctx, err, &exchange{}, "")
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxModelsBody))
	if err != nil {
		return nil, c.classify(ctx, err, &exchange{}, "")
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, c.statusError(resp.StatusCode, messageFromBody(body), resp.Header.Get("Retry-After"), "")
	}
	var list struct {
		Data []ModelInfo `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, &Error{Kind: KindServer, StatusCode: resp.StatusCode, Message: c.sanitize("decode model list: "+err.Error(), ""), Err: err}
	}
	return list.Data, nil
}
