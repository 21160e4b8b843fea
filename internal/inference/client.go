package inference

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/secret"
)

// DefaultRequestTimeout bounds one HTTP request to the model server when
// Config.RequestTimeout is zero. A memory update on a busy GPU can take
// minutes; a request that takes longer is treated as lost.
const DefaultRequestTimeout = 10 * time.Minute

// maxModelsBody caps how much of a /models response is read.
const maxModelsBody = 8 << 20

// Config says which server and model to use. The zero value is not valid:
// BaseURL is required. Model may be empty when every Request names one
// (not with Azure, whose Models needs it).
type Config struct {
	// API is the server's dialect; "" means APIOpenAI.
	API API
	// BaseURL is, for APIOpenAI, the server's OpenAI base URL including the
	// API version path, exactly as OPENAI_BASE_URL is conventionally set,
	// for example "http://gpu-1:8000/v1": requests go to
	// BaseURL+"/chat/completions" and BaseURL+"/models"; nothing is
	// appended or guessed. For APIAzure it is the resource's endpoint
	// (AZURE_OPENAI_ENDPOINT), e.g. "https://NAME.openai.azure.com".
	BaseURL secret.Endpoint
	// APIKey is sent as a bearer token (APIOpenAI) or in the api-key
	// header (APIAzure) when non-empty. vLLM and SGLang need one only when
	// started with --api-key.
	APIKey secret.Value
	// APIVersion is Azure's api-version query parameter; "" means
	// DefaultAzureAPIVersion. Unused for APIOpenAI.
	APIVersion string
	// Model is the served model name (the deployment name on Azure) sent
	// with a request that names none.
	Model string
	// ModelFamily names the OpenAI model behind Model when Model does not
	// say, as an Azure deployment name need not (e.g. "o3-mini" behind a
	// deployment "qa-prod"). It decides the request's shape: the
	// reasoning models (o1, o3, o4, gpt-5) get max_completion_tokens and no
	// temperature or top_p. Empty means Model's own name; a Model whose
	// name reads as a reasoning model's is always sent as one.
	ModelFamily string
	// ContextLength is the model's context in tokens as configured
	// (MEMAGENT_MODEL_CONTEXT). Models reports it for every model when
	// the server reports none, and the smaller of the two when both do.
	// Azure reports none, so there it is the only source. Zero means
	// unknown.
	ContextLength int
	// RequestTimeout bounds one HTTP request, from dialling to reading the
	// whole response. Zero means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// Priority is how the server is told each request's priority (the
	// pool's Priority in the request's context, see WithPriority); ""
	// means PriorityOff.
	Priority ServerPriority
	// HTTPClient is the client to send requests with; nil means a new one.
	// It is copied, not modified: the copy's transport is wrapped to record
	// response headers, and its Timeout is set to RequestTimeout unless it
	// already has one.
	HTTPClient *http.Client
}

// Client sends requests to one OpenAI-compatible server for one model. It is
// safe for concurrent use.
type Client struct {
	dialect    API
	baseURL    string
	apiKey     string
	model      string
	family     string
	contextLen int
	priority   ServerPriority
	http       *http.Client
	api        *openai.Client
}

// New checks cfg and returns a client. It makes no request.
func New(cfg Config) (*Client, error) {
	dialect, err := ParseAPI(string(cfg.API))
	if err != nil {
		return nil, err
	}
	base := strings.TrimRight(strings.TrimSpace(string(cfg.BaseURL)), "/")
	if dialect == APIAzure {
		if base, err = normalizeAzureEndpoint(string(cfg.BaseURL)); err != nil {
			return nil, fmt.Errorf("inference: %w", err)
		}
	} else {
		u, err := url.Parse(base)
		if err != nil || base == "" {
			return nil, fmt.Errorf("inference: base URL %q is not a URL: set it to the server's OpenAI base URL, e.g. http://host:8000/v1", redactURL(string(cfg.BaseURL)))
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("inference: base URL %q must be an http or https URL with a host, e.g. http://host:8000/v1", redactURL(string(cfg.BaseURL)))
		}
	}
	priority, err := ParseServerPriority(string(cfg.Priority))
	if err != nil {
		return nil, fmt.Errorf("inference: %w", err)
	}
	if dialect == APIAzure && priority != PriorityOff {
		return nil, fmt.Errorf("inference: Azure OpenAI takes no priority field: set the model server priority to off")
	}
	if cfg.ContextLength < 0 {
		return nil, fmt.Errorf("inference: context length %d is negative: use 0 when unknown", cfg.ContextLength)
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

	oc := openai.DefaultConfig(string(cfg.APIKey))
	oc.BaseURL = base
	if dialect == APIAzure {
		oc = openai.DefaultAzureConfig(string(cfg.APIKey), base)
		oc.APIVersion = cmp.Or(strings.TrimSpace(cfg.APIVersion), DefaultAzureAPIVersion)
		// The deployment is named as configured (go-openai's default
		// mapper would drop dots and colons from some names), escaped as
		// one path segment: it goes into the request's path, next to the
		// api-key header, and checkDeployment has refused the names that
		// could leave the segment.
		oc.AzureModelMapperFunc = url.PathEscape
	}
	oc.HTTPClient = &hc

	return &Client{
		dialect:    dialect,
		baseURL:    base,
		apiKey:     string(cfg.APIKey),
		model:      cfg.Model,
		family:     cfg.ModelFamily,
		contextLen: cfg.ContextLength,
		priority:   priority,
		http:       &hc,
		api:        openai.NewClientWithConfig(oc),
	}, nil
}

// API returns the client's dialect.
func (c *Client) API() API { return c.dialect }

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
	//
	// OpenAI's reasoning models (o1, o3, o4, gpt-5; see
	// Config.ModelFamily) accept only their default sampling: for them
	// Temperature and TopP are not sent, and MaxTokens goes out as
	// max_completion_tokens.
	TopP float32
	// Kind labels the call in metrics and spans, e.g. "update" or "final";
	// it is not sent.
	Kind string
}

// MaxModelNameBytes bounds a model (or deployment) name.
const MaxModelNameBytes = api.MaxModelNameBytes

// CheckModelName reports a model name no server could serve: over
// MaxModelNameBytes, or with a control character.
func CheckModelName(name string) error { return api.CheckModelName(name) }

// checkDeployment refuses an Azure deployment name that could name another
// path than its own deployment's (a '/', "..", a backslash or '%') or cut the
// request's query short ('?', '#'), or has white space: Azure's own names
// are letters, digits, '-', '_' and '.'.
func checkDeployment(name string) error {
	if strings.ContainsAny(name, "/?#\\% \t") || strings.Contains(name, "..") || name == "." {
		return fmt.Errorf("Azure deployment name %q may not contain '/', '?', '#', '%%', '\\', white space or \"..\": name the deployment as Azure lists it", name)
	}
	return nil
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
	// Text is the content of the first choice, less any reasoning the
	// model put in it (a <think>...</think> block): reasoning never
	// becomes memory or an answer.
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
		if c.dialect == APIAzure {
			return Completion{}, &Error{Kind: KindBadRequest, Message: "no deployment named: set MEMAGENT_MODEL to the Azure OpenAI deployment's name"}
		}
		return Completion{}, &Error{Kind: KindBadRequest, Message: "no model named: set MEMAGENT_MODEL to a name the server lists at /v1/models"}
	}
	if err := CheckModelName(model); err != nil {
		return Completion{}, &Error{Kind: KindBadRequest, Message: err.Error()}
	}
	if c.dialect == APIAzure {
		if err := checkDeployment(model); err != nil {
			return Completion{}, &Error{Kind: KindBadRequest, Message: err.Error()}
		}
	}
	creq := openai.ChatCompletionRequest{
		Model: model,
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleUser, Content: req.Prompt},
		},
	}
	if reasoningFamily(model, c.family) {
		// Zero temperature and top_p are omitted from the request.
		creq.MaxCompletionTokens = req.MaxTokens
	} else {
		temperature := req.Temperature
		if temperature == 0 {
			temperature = math.SmallestNonzeroFloat32
		}
		creq.MaxTokens, creq.Temperature, creq.TopP = req.MaxTokens, temperature, req.TopP
	}

	ex := &exchange{}
	if v, ok := c.priority.Value(priorityFrom(ctx).Level); ok {
		ex.member = priorityMember(v)
	}
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
		Text:             stripReasoning(choice.Message.Content),
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

// Models lists the models the server serves (GET BaseURL/models), with
// the configured context length applied (see Config.ContextLength). On
// Azure, which lists no deployments, it makes no request and returns the
// configured deployment with the configured context length. Every error
// is an [*Error].
func (c *Client) Models(ctx context.Context) ([]ModelInfo, error) {
	if c.dialect == APIAzure {
		if c.model == "" {
			return nil, &Error{Kind: KindBadRequest, Message: "no deployment named: set MEMAGENT_MODEL to the Azure OpenAI deployment's name"}
		}
		return []ModelInfo{{ID: c.model, MaxModelLen: c.contextLen}}, nil
	}
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
		return nil, c.statusError(resp.StatusCode, messageFromBody(body), retryAfterValue(resp.Header), "")
	}
	var list struct {
		Data []ModelInfo `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, &Error{Kind: KindServer, StatusCode: resp.StatusCode, Message: c.sanitize("decode model list: "+err.Error(), ""), Err: err}
	}
	if c.contextLen > 0 {
		for i := range list.Data {
			if n := list.Data[i].MaxModelLen; n == 0 || c.contextLen < n {
				list.Data[i].MaxModelLen = c.contextLen
			}
		}
	}
	return list.Data, nil
}

// Format prints what the client talks to, never its key: its fields are
// unexported, so fmt would otherwise print them all, the key among them.
func (c *Client) Format(f fmt.State, _ rune) {
	if c == nil {
		fmt.Fprint(f, "<nil>")
		return
	}
	fmt.Fprintf(f, "inference.Client{API:%s BaseURL:%s Model:%q APIKey:%s}", c.dialect, secret.URL(c.baseURL), c.model, secret.String(c.apiKey))
}

// LogValue is the client as Format prints it.
func (c *Client) LogValue() slog.Value { return slog.StringValue(fmt.Sprint(c)) }
