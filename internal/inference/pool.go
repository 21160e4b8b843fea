package inference

import (
	"cmp"
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/memagent/memagent/internal/secret"
)

// DefaultMaxInFlight is the number of requests the pool keeps outstanding at
// one endpoint when EndpointConfig.MaxInFlight is zero.
//
// It is sized for one vLLM replica serving a 7B–14B MemAgent model on one
// 80 GB GPU. A memory update sends about 6–8k prompt tokens, and such a
// replica's KV cache holds roughly 30–90 sequences of that size, so 64 keeps
// its continuous batch full with a few requests queued behind it, ready to
// start the moment a sequence finishes. It stays well below vLLM's default
// --max-num-seqs (256): requests beyond it wait in the pool, where they can
// still go to whichever replica frees a slot first, instead of in one
// replica's queue while another sits idle. Raise it for larger GPUs or
// tensor-parallel replicas; lower it when requests time out inside the
// server.
const DefaultMaxInFlight = 64

// DefaultHealthInterval is how often the pool checks its endpoints when
// PoolConfig.HealthInterval is zero.
const DefaultHealthInterval = 10 * time.Second

// DefaultEjectFor is how long an endpoint is first taken out of rotation
// after a failure that ejects it, when PoolConfig.EjectFor is zero.
const DefaultEjectFor = 5 * time.Second

const (
	// maxEjectFor caps the doubling of the ejection time on repeated
	// failures (unless EjectFor itself is longer).
	maxEjectFor = time.Minute
	// maxRetryAfterEject caps how long a Retry-After header can keep an
	// endpoint out: ejection is a guess made from one answer, and a broken
	// proxy must not remove a replica for a day.
	maxRetryAfterEject = 5 * time.Minute
	// ejectAfterFailures is how many consecutive failures that do not
	// eject on their own (500s, timeouts, dropped connections) eject an
	// endpoint.
	ejectAfterFailures = 3
	// healthCheckTimeout bounds one endpoint's health check.
	healthCheckTimeout = 5 * time.Second
	// maxHealthBody caps how much of a /health response is read.
	maxHealthBody = 64 << 10
)

// EndpointConfig is one model server.
type EndpointConfig struct {
	// BaseURL is the server's OpenAI base URL, as in Config.BaseURL.
	BaseURL secret.Endpoint
	// APIKey is sent as a bearer token when non-empty.
	APIKey secret.Value
	// MaxInFlight caps the requests outstanding at this endpoint; zero
	// means DefaultMaxInFlight.
	MaxInFlight int
	// Priority is how this server is told a request's priority; "" means
	// PriorityOff. See SetServerPriorities.
	Priority ServerPriority
}

// ParseEndpoints reads OPENAI_BASE_URL as a comma-separated list of base
// URLs, each given apiKey and maxInFlight. Spaces around entries and empty
// entries (such as a trailing comma) are ignored; an entry that is not an
// http or https URL with a host, a URL listed twice, or an empty list is an
// error naming OPENAI_BASE_URL.
func ParseEndpoints(baseURLs, apiKey string, maxInFlight int) ([]EndpointConfig, error) {
	return Endpoints(APIOpenAI, strings.Split(baseURLs, ","), apiKey, maxInFlight)
}

// ParseAzureEndpoints reads AZURE_OPENAI_ENDPOINT as ParseEndpoints reads
// OPENAI_BASE_URL: one Azure OpenAI resource URL or several,
// comma-separated, each holding a deployment of the same name and
// accepting apiKey. Errors name AZURE_OPENAI_ENDPOINT.
func ParseAzureEndpoints(endpoints, apiKey string, maxInFlight int) ([]EndpointConfig, error) {
	return Endpoints(APIAzure, strings.Split(endpoints, ","), apiKey, maxInFlight)
}

// Endpoints is ParseEndpoints, or ParseAzureEndpoints for dialect
// APIAzure, over a list of URLs already split: blank entries are skipped,
// and the rest are checked as those functions check them.
func Endpoints(dialect API, baseURLs []string, apiKey string, maxInFlight int) ([]EndpointConfig, error) {
	if maxInFlight < 0 {
		return nil, fmt.Errorf("inference: max in-flight requests per endpoint is %d: use a positive number, or 0 for the default (%d)", maxInFlight, DefaultMaxInFlight)
	}
	var eps []EndpointConfig
	seen := make(map[string]bool)
	for i, raw := range baseURLs {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		base, err := normalizeBaseURL(raw)
		if dialect == APIAzure {
			if base, err = normalizeAzureEndpoint(raw); err != nil {
				return nil, fmt.Errorf("inference: AZURE_OPENAI_ENDPOINT entry %d: %w", i+1, err)
			}
		} else if err != nil {
			return nil, fmt.Errorf("inference: OPENAI_BASE_URL entry %d (%q) is not an http or https URL with a host: use e.g. http://gpu-1:8000/v1,http://gpu-2:8000/v1", i+1, redactURL(raw))
		}
		if seen[base] {
			return nil, fmt.Errorf("inference: %s lists %s twice: list each server once (raise its in-flight limit to send it more)", endpointsVar(dialect), redactURL(base))
		}
		seen[base] = true
		eps = append(eps, EndpointConfig{BaseURL: secret.Endpoint(base), APIKey: secret.Value(apiKey), MaxInFlight: maxInFlight})
	}
	if len(eps) == 0 {
		if dialect == APIAzure {
			return nil, errors.New("inference: AZURE_OPENAI_ENDPOINT is empty: set it to the Azure OpenAI resource's URL, e.g. https://NAME.openai.azure.com")
		}
		return nil, errors.New("inference: OPENAI_BASE_URL is empty: set it to one or more comma-separated OpenAI base URLs, e.g. http://gpu-1:8000/v1,http://gpu-2:8000/v1")
	}
	return eps, nil
}

// endpointsVar is the environment variable that lists a dialect's
// endpoints, for messages.
func endpointsVar(dialect API) string {
	if dialect == APIAzure {
		return "AZURE_OPENAI_ENDPOINT"
	}
	return "OPENAI_BASE_URL"
}

// normalizeBaseURL trims a base URL and checks that it is an http or https
// URL with a host.
func normalizeBaseURL(raw string) (string, error) {
	base := strings.TrimRight(strings.TrimSpace(raw), "/")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("base URL %q is not an http or https URL with a host", redactURL(raw))
	}
	return base, nil
}

// redactURL hides user info and query values in a URL meant for logs,
// errors and metric labels.
func redactURL(s string) string { return secret.URL(s) }

// PoolConfig describes a pool of model servers that serve the same model.
type PoolConfig struct {
	// Endpoints are the servers; at least one is required.
	Endpoints []EndpointConfig
	// API is the endpoints' dialect; "" means APIOpenAI. On Azure the
	// health checker makes no request (there is nothing to ask but
	// completions): endpoints leave rotation on failed completions only.
	API API
	// APIVersion, ModelFamily and ContextLength are as in Config, for
	// every endpoint.
	APIVersion    string
	ModelFamily   string
	ContextLength int
	// Model is the served model name sent with a request that names none;
	// it may be empty when every Request names one. When set, a health
	// check also fails for an endpoint that does not list it.
	Model string
	// RequestTimeout bounds one request, as Config.RequestTimeout.
	RequestTimeout time.Duration
	// HealthInterval is the time between health checks once Start is
	// called; zero means DefaultHealthInterval and a negative value
	// disables the checker.
	HealthInterval time.Duration
	// EjectFor is how long an endpoint is first ejected after a 429, a
	// 503, a refused connection or repeated failures; zero means
	// DefaultEjectFor. It doubles with each ejection that follows without
	// a success in between, up to a minute (or EjectFor, if longer).
	EjectFor time.Duration
	// HTTPClient is the client every endpoint shares, as Config.HTTPClient;
	// nil means one with a transport sized for the pool.
	HTTPClient *http.Client
	// Logger receives ejections and reinstatements; nil means
	// slog.Default().
	Logger *slog.Logger
	// TracerProvider records a span per completion, "chat <model>" with
	// the OpenTelemetry gen_ai attributes (never the prompt or the
	// completion), and under it the HTTP request's span; the trace context
	// goes to the server in a traceparent header. Nil records nothing.
	TracerProvider trace.TracerProvider
	// MeterProvider receives the pool's metrics: tokens, request
	// durations, errors by kind, slot waits, and per-endpoint in-flight,
	// capacity and ejection gauges. Nil records nothing.
	MeterProvider metric.MeterProvider
	// PriorityHold, when positive, holds back new calls at an endpoint
	// while a call of level PriorityHold or more urgent (a lower
	// Priority.Level) than theirs is outstanding there, or ended less
	// than HoldLinger ago, even when the endpoint has a free slot: the
	// held calls wait in the pool's queue, in its order, and start when
	// the urgent calls are done or at another endpoint free of them. On a
	// vLLM or SGLang server every call that starts has its prompt
	// prefilled within the steps that running calls decode in, so a
	// batch's new calls slow a question's down even when the server
	// orders its queue by priority (BENCHMARKS.md, Questions under load,
	// priority in the server). Calls already started are never stopped,
	// and no call is held back longer than MaxHold. Zero holds nothing
	// back (MEMAGENT_MODEL_PRIORITY_HOLD; ParsePriorityHold).
	PriorityHold int
	// PriorityReserve is how many calls beyond its MaxInFlight an
	// endpoint whose server orders requests by priority (its Priority is
	// PriorityVLLM or PrioritySGLang) may have outstanding, for urgent
	// calls only: those of ReserveLevel or more urgent that are also more
	// urgent than the least urgent call outstanding there, so that the
	// server has a less urgent sequence to preempt for them instead of
	// the call waiting in the pool for one to finish. Less urgent calls
	// start only below MaxInFlight, reserved calls counted, so they never
	// exceed the cap. Zero reserves nothing, PriorityReserveAuto gives
	// each endpoint DefaultPriorityReserve of its cap; endpoints with
	// PriorityOff never get one (MEMAGENT_MODEL_PRIORITY_RESERVE;
	// ParsePriorityReserve).
	PriorityReserve int
	// PriorityEvict, when positive, stops the less urgent calls the hold
	// would have kept back (PriorityHold must be on) that started at an
	// endpoint whose server orders by priority at most this long ago,
	// when an urgent call starts there or waits for a slot: the server
	// frees their sequences when the client goes away, so the urgent
	// call's steps run without their prompts. Each stopped call goes back
	// to the pool's queue and is sent again once the hold lets it, as a
	// new request; it was not completed, so nothing is paid twice, but
	// the GPU time it had is lost, at most this window's. A call is
	// stopped at most once. Zero stops nothing
	// (MEMAGENT_MODEL_PRIORITY_EVICT; ParsePriorityEvict).
	PriorityEvict time.Duration
}

// EndpointStats is a snapshot of one endpoint.
type EndpointStats struct {
	// URL is the endpoint's base URL, with any password hidden.
	URL string
	// InFlight is the number of requests outstanding now.
	InFlight int
	// MaxInFlight is the endpoint's cap.
	MaxInFlight int
	// Reserve is how many urgent calls may be outstanding beyond the cap
	// (PoolConfig.PriorityReserve): InFlight may exceed MaxInFlight by
	// that much, with urgent calls only.
	Reserve int
	// Ejected is when the endpoint's ejection ends, or the zero time when
	// it is in rotation.
	Ejected time.Time
	// Requests counts the completions sent to the endpoint.
	Requests int64
	// Failures counts the completions that failed through the endpoint's
	// fault: 429, 5xx, timeouts and connection failures. Rejected requests
	// (other 4xx) and canceled ones are not failures.
	Failures int64
	// MaxModelLen is the context length the endpoint last reported, or
	// zero.
	MaxModelLen int
	// Evictions counts the calls stopped there for more urgent ones
	// (PoolConfig.PriorityEvict) and sent again.
	Evictions int64
}

// Pool spreads completions over several model servers serving the same
// model. It is safe for concurrent use.
//
// Each request goes to the less loaded of two endpoints picked at random
// (power of two choices on outstanding requests relative to each endpoint's
// cap) among those in rotation with a free slot. No endpoint ever has more
// than its MaxInFlight requests outstanding, save urgent calls on its
// reserve (PoolConfig.PriorityReserve): when every endpoint in rotation
// is full, callers wait for a slot in the order of their Priority, for as
// long as their context allows. With PoolConfig.PriorityHold, a less urgent
// caller also waits while the endpoints with a free slot are running more
// urgent calls; that time counts as a slot wait in the metrics.
//
// An endpoint that answers 429 or 503 or cannot be reached is ejected from
// rotation at once, and one that fails three times running (500s,
// timeouts), after the third, so that the next attempt of the request,
// which Temporal makes, lands elsewhere. The pool itself never retries and
// returns each call's [*Error] unchanged.
//
// When every endpoint is ejected, the pool does not fail and does not wait:
// it sends the request to the endpoint whose ejection ends first. Ejection
// is a guess from recent answers, and a pool that refused all work because
// of it could stay dead longer than its servers; an endpoint that is still
// down answers quickly with an error that Temporal retries with backoff,
// while holding the request inside the activity would only spend the
// activity's own timeout.
type Pool struct {
	dialect        API
	endpoints      []*endpoint
	model          string
	ejectFor       time.Duration
	healthInterval time.Duration
	http           *http.Client
	closeIdle      func() // closes the idle connections of a transport the pool made
	log            *slog.Logger
	tel            *poolTelemetry
	now            func() time.Time
	hold           int           // PoolConfig.PriorityHold
	maxHold        time.Duration // MaxHold; tests shorten it
	evict          time.Duration // PoolConfig.PriorityEvict

	mu        sync.Mutex
	waiters   fairQueue // by priority, fairness key, then oldest first
	timer     *time.Timer
	timerAt   time.Time
	scratch   []*endpoint
	started   bool
	closed    bool
	stopCheck context.CancelFunc
	checkDone chan struct{}
	// served are the model names the endpoints listed (at most
	// maxServedNames): the only ones that label metrics.
	served map[string]bool
	// service sums the time successful calls held a slot, by call kind.
	service map[string]ServiceTime
}

// ServiceTime is what the pool measured of the successful calls of one
// kind (Request.Kind: "update", "final"): how many, and the time they
// held a slot.
type ServiceTime struct {
	Calls int64
	Total time.Duration
}

// Mean is the mean time a call held a slot, or zero before any call.
func (s ServiceTime) Mean() time.Duration {
	if s.Calls == 0 {
		return 0
	}
	return s.Total / time.Duration(s.Calls)
}

// ServiceTimes returns what the pool has measured since it started, by
// call kind: the throughput an estimate of GPU time starts from.
func (p *Pool) ServiceTimes() map[string]ServiceTime {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]ServiceTime, len(p.service))
	for k, v := range p.service {
		out[k] = v
	}
	return out
}

// maxServedNames bounds the model names kept as metric labels.
const maxServedNames = 64

// OtherModel is the metric label of a model the pool does not serve: the
// name a request gave is the caller's choice, and a label value per name
// would let callers grow the metrics without bound.
const OtherModel = "other"

// MetricModel is model's metric label: the model itself when the pool is
// configured with it or an endpoint listed it at /models, else OtherModel.
func (p *Pool) MetricModel(model string) string {
	if model == p.model {
		return model
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.served[model] {
		return model
	}
	return OtherModel
}

// noteServed records the model names an endpoint listed; the caller holds
// p.mu.
func (p *Pool) noteServed(models []ModelInfo) {
	if p.served == nil {
		p.served = make(map[string]bool)
	}
	for _, m := range models {
		if len(p.served) < maxServedNames && len(m.ID) <= 256 {
			p.served[m.ID] = true
		}
	}
}

// ejectCause says why an endpoint is out of rotation.
type ejectCause string

const (
	causeRateLimited ejectCause = "rate_limited" // 429
	causeUnavailable ejectCause = "unavailable"  // 503
	causeUnreachable ejectCause = "unreachable"  // the connection could not be made
	causeFailures    ejectCause = "failures"     // ejectAfterFailures in a row
	causeHealth      ejectCause = "health_check"
)

// endpoint is one server and its state; every field below client is
// guarded by Pool.mu.
type endpoint struct {
	url         string // redacted, for logs and stats
	root        string // base URL without /v1, for /health
	apiKey      string
	maxInFlight int
	reserve     int // PoolConfig.PriorityReserve as it applies here
	client      *Client
	server      []attribute.KeyValue // server.address and server.port, for spans

	inFlight     int
	requests     int64
	failures     int64
	consecutive  int        // failures in a row that do not eject on their own
	level        int        // ejections since the last success
	ejectedAt    time.Time  // start of the latest ejection
	ejectedUntil time.Time  // end of the latest ejection
	cause        ejectCause // of the latest ejection
	maxModelLen  int
	hold         holdState
	ordered      bool                    // its server orders requests by priority
	calls        map[*evictCall]struct{} // outstanding calls eviction may stop
	evictions    int64
}

func (ep *endpoint) ejected(now time.Time) bool { return now.Before(ep.ejectedUntil) }

// waiter is a caller waiting for a slot. The dispatcher takes it off the
// queue and sends it an endpoint whose slot is already counted as its own.
type waiter struct {
	ch    chan *endpoint // buffered: sending never blocks
	prio  Priority
	since time.Time // when it started waiting
	elem  *list.Element
}

// NewPool checks cfg and returns a pool. It makes no request and starts no
// goroutine; call Start to run the health checker.
func NewPool(cfg PoolConfig) (*Pool, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("inference: no model endpoints: set OPENAI_BASE_URL to one or more comma-separated base URLs")
	}
	if cfg.EjectFor < 0 {
		return nil, fmt.Errorf("inference: eject time %s is negative", cfg.EjectFor)
	}
	dialect, err := ParseAPI(string(cfg.API))
	if err != nil {
		return nil, err
	}
	p := &Pool{
		dialect:        dialect,
		model:          cfg.Model,
		ejectFor:       cfg.EjectFor,
		healthInterval: cfg.HealthInterval,
		log:            cfg.Logger,
		now:            time.Now,
		hold:           max(cfg.PriorityHold, 0),
		maxHold:        MaxHold,
		evict:          max(cfg.PriorityEvict, 0),
	}
	if p.ejectFor == 0 {
		p.ejectFor = DefaultEjectFor
	}
	if p.healthInterval == 0 {
		p.healthInterval = DefaultHealthInterval
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	tel, err := newPoolTelemetry(cfg.TracerProvider, cfg.MeterProvider)
	if err != nil {
		return nil, err
	}
	tel.azure = dialect == APIAzure
	p.tel = tel

	eps, capacity, maxCap, err := newEndpoints(dialect, cfg.Endpoints)
	if err != nil {
		return nil, err
	}
	p.endpoints = eps
	p.http, p.closeIdle = sharedHTTPClient(cfg.HTTPClient, capacity, maxCap)
	p.http.Transport = p.tel.transport(p.http.Transport)

	for i, ep := range p.endpoints {
		c, err := New(Config{
			API:            dialect,
			BaseURL:        cfg.Endpoints[i].BaseURL,
			APIKey:         secret.Value(ep.apiKey),
			APIVersion:     cfg.APIVersion,
			Model:          cfg.Model,
			ModelFamily:    cfg.ModelFamily,
			ContextLength:  cfg.ContextLength,
			RequestTimeout: cfg.RequestTimeout,
			Priority:       cfg.Endpoints[i].Priority,
			HTTPClient:     p.http,
		})
		if err != nil {
			return nil, err
		}
		ep.client = c
		ep.reserve = endpointReserve(cfg.PriorityReserve, c.priority, ep.maxInFlight)
		_, ep.ordered = c.priority.Value(ReserveLevel)
	}
	if err := p.tel.observe(p); err != nil {
		return nil, err
	}
	return p, nil
}

// newEndpoints are the pool's endpoints, each URL checked for dialect and
// listed once, with their total capacity and the largest one's.
func newEndpoints(dialect API, cfgs []EndpointConfig) (eps []*endpoint, capacity, maxCap int, err error) {
	seen := make(map[string]bool)
	for i, ec := range cfgs {
		if ec.MaxInFlight < 0 {
			return nil, 0, 0, fmt.Errorf("inference: endpoint %d (%s): max in-flight %d is negative: use 0 for the default (%d)", i+1, redactURL(string(ec.BaseURL)), ec.MaxInFlight, DefaultMaxInFlight)
		}
		base, err := normalizeBaseURL(string(ec.BaseURL))
		if dialect == APIAzure {
			if base, err = normalizeAzureEndpoint(string(ec.BaseURL)); err != nil {
				return nil, 0, 0, fmt.Errorf("inference: endpoint %d: %w", i+1, err)
			}
		} else if err != nil {
			return nil, 0, 0, fmt.Errorf("inference: endpoint %d: %w: set it to the server's OpenAI base URL, e.g. http://host:8000/v1", i+1, err)
		}
		if seen[base] {
			return nil, 0, 0, fmt.Errorf("inference: endpoint %s is listed twice: list each server once", redactURL(base))
		}
		seen[base] = true
		n := ec.MaxInFlight
		if n == 0 {
			n = DefaultMaxInFlight
		}
		capacity += n
		maxCap = max(maxCap, n)
		eps = append(eps, &endpoint{
			url:         redactURL(base),
			root:        strings.TrimSuffix(base, "/v1"),
			apiKey:      string(ec.APIKey),
			maxInFlight: n,
			server:      endpointAttrs(base),
		})
	}
	return eps, capacity, maxCap, nil
}

// sharedHTTPClient is a copy of hc (or a zero client), with, when it has
// no transport, one transport for every endpoint, so that idle connections
// are pooled together and sized for the whole pool; closeIdle closes them,
// or is nil when the transport is the caller's.
func sharedHTTPClient(hc *http.Client, capacity, maxCap int) (c *http.Client, closeIdle func()) {
	c = &http.Client{}
	if hc != nil {
		*c = *hc
	}
	if c.Transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns = capacity
		t.MaxIdleConnsPerHost = maxCap
		c.Transport = t
		closeIdle = t.CloseIdleConnections
	}
	return c, closeIdle
}

// Capacity returns the sum of the endpoints' MaxInFlight: the most requests
// the pool has outstanding at once.
func (p *Pool) Capacity() int {
	n := 0
	for _, ep := range p.endpoints {
		n += ep.maxInFlight
	}
	return n
}

// MaxModelLen returns the smallest context length any endpoint has reported
// for the pool's model (for the first model listed when Model is empty), or
// zero when none has. Health checks and Models refresh it.
func (p *Pool) MaxModelLen() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, ep := range p.endpoints {
		if ep.maxModelLen > 0 && (n == 0 || ep.maxModelLen < n) {
			n = ep.maxModelLen
		}
	}
	return n
}

// Stats returns a snapshot of every endpoint, in configuration order.
func (p *Pool) Stats() []EndpointStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	out := make([]EndpointStats, len(p.endpoints))
	for i, ep := range p.endpoints {
		out[i] = EndpointStats{
			URL:         ep.url,
			InFlight:    ep.inFlight,
			MaxInFlight: ep.maxInFlight,
			Reserve:     ep.reserve,
			Requests:    ep.requests,
			Failures:    ep.failures,
			MaxModelLen: ep.maxModelLen,
			Evictions:   ep.evictions,
		}
		if ep.ejected(now) {
			out[i].Ejected = ep.ejectedUntil
		}
	}
	return out
}

// Complete sends req to one endpoint and waits for the whole completion,
// first waiting for a free slot if every endpoint is busy. It has the
// contract of [Client.Complete]: every error is an [*Error], the endpoint's
// own error unchanged, or a KindCanceled or KindTimeout one when ctx ends
// while waiting for a slot.
//
// Each call is a "chat <model>" span (see PoolConfig.TracerProvider) and
// counts in the pool's metrics.
func (p *Pool) Complete(ctx context.Context, req Request) (Completion, error) {
	model := cmp.Or(req.Model, p.model)
	ctx, span := p.tel.startChat(ctx, req, model)
	label := p.MetricModel(model)
	out, err := p.complete(ctx, span, req, label)
	p.tel.finish(ctx, span, label, req.Kind, out, err)
	return out, err
}

// complete makes the call; model is the model's metric label (MetricModel).
func (p *Pool) complete(ctx context.Context, span trace.Span, req Request, model string) (Completion, error) {
	if err := req.validate(); err != nil {
		return Completion{}, err
	}
	level := priorityFrom(ctx).Level
	for again := false; ; again = true {
		waitStart := time.Now()
		ep, err := p.acquire(ctx)
		p.tel.waited(ctx, model, time.Since(waitStart))
		if err != nil {
			return Completion{}, err
		}
		span.SetAttributes(ep.server...)
		start := p.now()
		callStart := time.Now()
		cctx, c := p.startCall(ctx, ep, level, again)
		out, err := ep.client.Complete(cctx, req)
		if p.endCall(ep, c) && err != nil && ctx.Err() == nil {
			// Stopped for an urgent call before its answer came: the
			// server dropped it unfinished, so it is sent again.
			p.releaseEvicted(ep, level)
			p.tel.evicted(ctx, span, model, req.Kind)
			continue
		}
		if err == nil {
			p.mu.Lock()
			if p.service == nil {
				p.service = map[string]ServiceTime{}
			}
			st := p.service[req.Kind]
			st.Calls++
			st.Total += time.Since(callStart)
			p.service[req.Kind] = st
			p.mu.Unlock()
		}
		p.release(ep, level, start, err)
		p.tel.called(ctx, model, req.Kind, time.Since(callStart), out, err)
		return out, err
	}
}

// acquire returns an endpoint with a slot counted for the caller.
func (p *Pool) acquire(ctx context.Context) (*endpoint, error) {
	if ctx.Err() != nil {
		return nil, p.waitError(ctx)
	}
	prio := priorityFrom(ctx)
	p.mu.Lock()
	if p.waiters.Len() == 0 {
		if ep := p.pickLocked(p.now(), prio.Level, p.hold > 0); ep != nil {
			p.takeLocked(ep, prio.Level)
			p.mu.Unlock()
			return ep, nil
		}
	}
	w := &waiter{ch: make(chan *endpoint, 1), prio: prio, since: p.now()}
	p.waiters.push(w)
	p.dispatchLocked()
	if len(w.ch) == 0 {
		p.evictForWaiterLocked(prio.Level, p.now())
	}
	p.mu.Unlock()

	select {
	case ep := <-w.ch:
		return ep, nil
	case <-ctx.Done():
		p.mu.Lock()
		defer p.mu.Unlock()
		select {
		case ep := <-w.ch:
			// A slot arrived as ctx ended: hand it on.
			ep.inFlight--
			ep.requests--
			ep.hold.inFlight[holdLevel(prio.Level)]--
			p.dispatchLocked()
		default:
			p.waiters.remove(w)
		}
		return nil, p.waitError(ctx)
	}
}

func (p *Pool) waitError(ctx context.Context) *Error {
	err := ctx.Err()
	return &Error{
		Kind:    transportKind(ctx, err),
		Message: fmt.Sprintf("gave up waiting for a free model server slot (%d endpoints, capacity %d, all busy): %v: if this is frequent, add servers to OPENAI_BASE_URL or raise their in-flight limit", len(p.endpoints), p.Capacity(), err),
		Err:     err,
	}
}

func (p *Pool) takeLocked(ep *endpoint, level int) {
	ep.inFlight++
	ep.requests++
	ep.hold.inFlight[holdLevel(level)]++
	p.evictLocked(ep, level, p.now())
}

// pickLocked chooses an endpoint with a free slot for a call of level (one
// below its cap, or its reserve: limitLocked), or returns nil when the
// caller must wait. Among endpoints in rotation it takes the less loaded of
// two picked at random; when every endpoint is ejected, the one whose
// ejection ends first. When holding, it passes over the endpoints where a
// call of level is held back (see PoolConfig.PriorityHold).
func (p *Pool) pickLocked(now time.Time, level int, holding bool) *endpoint {
	cands := p.scratch[:0]
	anyInRotation := false
	for _, ep := range p.endpoints {
		if ep.ejected(now) {
			continue
		}
		anyInRotation = true
		if ep.inFlight < p.limitLocked(ep, level) && !(holding && p.heldLocked(ep, level, now)) {
			cands = append(cands, ep)
		}
	}
	p.scratch = cands[:0]
	switch len(cands) {
	case 0:
		if anyInRotation {
			return nil
		}
		var best *endpoint
		for _, ep := range p.endpoints {
			if ep.inFlight < p.limitLocked(ep, level) && !(holding && p.heldLocked(ep, level, now)) && (best == nil || ep.ejectedUntil.Before(best.ejectedUntil)) {
				best = ep
			}
		}
		return best
	case 1:
		return cands[0]
	}
	i := rand.IntN(len(cands))
	j := rand.IntN(len(cands) - 1)
	if j >= i {
		j++
	}
	a, b := cands[i], cands[j]
	// a is less loaded than b when a.inFlight/a.max < b.inFlight/b.max.
	if b.inFlight*a.maxInFlight < a.inFlight*b.maxInFlight {
		return b
	}
	return a
}

// dispatchLocked hands free slots to waiters, in the queue's order (see
// fairQueue), and when some
// must still wait for an ejection to end, arranges to try again then.
func (p *Pool) dispatchLocked() {
	now := p.now()
	for p.waiters.Len() > 0 {
		// The head decides: every other waiter is of its level or a less
		// urgent one, so if the hold keeps it back, it keeps them back too.
		head := p.waiters.peek(now)
		holding := p.hold > 0 && !p.holdExpiredLocked(head.prio.Level, now)
		ep := p.pickLocked(now, head.prio.Level, holding)
		if ep == nil {
			break
		}
		w := p.waiters.pop(now)
		p.takeLocked(ep, w.prio.Level)
		w.ch <- ep
	}
	if p.waiters.Len() == 0 {
		return
	}
	// Slots also open when an ejection ends, and the hold lets calls
	// through when a linger ends or a waiter reaches its bound, which
	// nothing signals.
	next := p.holdWakeLocked(now)
	for _, ep := range p.endpoints {
		if ep.ejected(now) && ep.inFlight < ep.maxInFlight && (next.IsZero() || ep.ejectedUntil.Before(next)) {
			next = ep.ejectedUntil
		}
	}
	if next.IsZero() || (p.timer != nil && !p.timerAt.After(next)) {
		return
	}
	if p.timer != nil {
		p.timer.Stop()
	}
	p.timerAt = next
	p.timer = time.AfterFunc(next.Sub(now), func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.timer, p.timerAt = nil, time.Time{}
		p.dispatchLocked()
	})
}

// release gives back ep's slot and learns from the call's outcome.
func (p *Pool) release(ep *endpoint, level int, start time.Time, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.recordLocked(ep, start, err)
	ep.inFlight--
	l := holdLevel(level)
	ep.hold.inFlight[l]--
	ep.hold.lastEnd[l] = p.now()
	p.dispatchLocked()
}

// recordLocked updates ep's health from the outcome of a completion sent
// at start.
func (p *Pool) recordLocked(ep *endpoint, start time.Time, err error) {
	now := p.now()
	if err == nil {
		ep.consecutive = 0
		// A request sent before the latest ejection says nothing about
		// whether the endpoint has recovered since.
		if !start.Before(ep.ejectedAt) {
			ep.level = 0
			if ep.ejected(now) {
				ep.ejectedUntil = time.Time{}
				p.log.Info("model endpoint reinstated", "model_url", ep.url, "reason", "request succeeded")
			}
		}
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Kind: KindServer, Message: err.Error()}
	}
	switch {
	case e.Kind == KindCanceled:
		// The caller went away; nothing learned.
	case e.Kind == KindRateLimited:
		ep.failures++
		p.ejectLocked(ep, now, start, causeRateLimited, e)
	case e.StatusCode == http.StatusServiceUnavailable:
		ep.failures++
		p.ejectLocked(ep, now, start, causeUnavailable, e)
	case isDialError(e):
		ep.failures++
		p.ejectLocked(ep, now, start, causeUnreachable, e)
	case e.Kind == KindServer || e.Kind == KindTimeout || e.Kind == KindConnection:
		ep.failures++
		ep.consecutive++
		if ep.consecutive >= ejectAfterFailures {
			p.ejectLocked(ep, now, start, causeFailures, e)
		}
	default:
		// The server answered and rejected the request: the endpoint
		// works, the request is at fault.
	}
}

// isDialError reports whether no connection could be made: refused,
// unreachable, or the host name did not resolve.
func isDialError(e *Error) bool {
	var op *net.OpError
	return e.StatusCode == 0 && errors.As(e.Err, &op) && op.Op == "dial"
}

// ejectLocked takes ep out of rotation after a failure of a request sent at
// start. Failures of requests already in flight when the endpoint was
// ejected, or arriving while it is still ejected, belong to the same
// outage: they extend the ejection only as far as a Retry-After asks, and
// do not double it.
func (p *Pool) ejectLocked(ep *endpoint, now, start time.Time, cause ejectCause, e *Error) {
	ep.consecutive = 0
	retryAfter := min(e.RetryAfter, maxRetryAfterEject)
	if ep.ejected(now) || start.Before(ep.ejectedAt) {
		if until := now.Add(retryAfter); until.After(ep.ejectedUntil) {
			ep.ejectedUntil = until
		}
		return
	}
	ep.level = min(ep.level+1, 16)
	d := p.ejectFor << (ep.level - 1)
	if limit := max(p.ejectFor, maxEjectFor); d > limit || d <= 0 {
		d = limit
	}
	d = max(d, retryAfter)
	ep.ejectedAt, ep.ejectedUntil, ep.cause = now, now.Add(d), cause
	p.log.Warn("model endpoint ejected", "model_url", ep.url, "cause", string(cause), "for", d,
		"error_kind", string(e.Kind), "status", e.StatusCode, "error", e.Message)
}

// Models lists the models served, asking the endpoints in rotation in
// configuration order, then the ejected ones, until one answers. It
// returns the first endpoint's error when none does. Every error is an
// [*Error].
func (p *Pool) Models(ctx context.Context) ([]ModelInfo, error) {
	p.mu.Lock()
	now := p.now()
	order := slices.Clone(p.endpoints)
	slices.SortStableFunc(order, func(a, b *endpoint) int {
		switch ea, eb := a.ejected(now), b.ejected(now); {
		case ea && eb:
			return a.ejectedUntil.Compare(b.ejectedUntil)
		case ea:
			return 1
		case eb:
			return -1
		}
		return 0
	})
	p.mu.Unlock()

	var firstErr error
	for _, ep := range order {
		models, err := ep.client.Models(ctx)
		if err == nil {
			p.mu.Lock()
			ep.maxModelLen = p.modelLen(models)
			p.noteServed(models)
			p.mu.Unlock()
			return models, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}

// modelLen returns the context length reported for the pool's model, or
// for the first model when the pool names none.
func (p *Pool) modelLen(models []ModelInfo) int {
	if p.model == "" {
		if len(models) == 0 {
			return 0
		}
		return models[0].MaxModelLen
	}
	for _, m := range models {
		if m.ID == p.model {
			return m.MaxModelLen
		}
	}
	return 0
}

// Start runs the health checker until ctx ends or Close is called: a check
// of every endpoint at once, then one every HealthInterval. It does nothing
// when HealthInterval is negative, or if called again.
func (p *Pool) Start(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started || p.closed || p.healthInterval < 0 {
		return
	}
	p.started = true
	ctx, p.stopCheck = context.WithCancel(ctx)
	p.checkDone = make(chan struct{})
	go func() {
		defer close(p.checkDone)
		t := time.NewTicker(p.healthInterval)
		defer t.Stop()
		for {
			p.checkAll(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// Close stops the health checker and waits for it to return. Requests in
// flight or waiting for a slot are not interrupted. It is safe to call more
// than once.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	stop, done := p.stopCheck, p.checkDone
	gauges := p.tel.gauges
	p.tel.gauges = nil
	p.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	// Not under p.mu: a collection in progress holds the meter's lock and
	// waits for p.mu in the gauges' callback.
	if gauges != nil {
		_ = gauges.Unregister()
	}
	if p.closeIdle != nil {
		p.closeIdle()
	}
}

// checkAll checks every endpoint concurrently and applies the results.
func (p *Pool) checkAll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, ep := range p.endpoints {
		wg.Go(func() {
			maxLen, err := p.check(ctx, ep)
			if ctx.Err() != nil {
				// Shutting down: a check cut short proves nothing.
				return
			}
			p.applyCheck(ep, maxLen, err)
		})
	}
	wg.Wait()
}

// check asks ep for GET {root}/health and GET {BaseURL}/models and returns
// the model's context length. A 404 from /health means the server has no
// such endpoint (hosted APIs), not that it is unhealthy. On Azure it asks
// nothing and passes.
func (p *Pool) check(ctx context.Context, ep *endpoint) (int, error) {
	if p.dialect == APIAzure {
		// Nothing to ask: the configured context length is all there is.
		return p.modelLen([]ModelInfo{{ID: p.model, MaxModelLen: ep.client.contextLen}}), nil
	}
	ctx, cancel := context.WithTimeout(ctx, healthCheckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep.root+"/health", nil)
	if err != nil {
		return 0, fmt.Errorf("build health request: %w", err)
	}
	if ep.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+ep.apiKey)
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return 0, ep.client.classify(ctx, err, &exchange{}, "")
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxHealthBody))
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound && (resp.StatusCode < 200 || resp.StatusCode > 299) {
		return 0, fmt.Errorf("GET /health: HTTP %d", resp.StatusCode)
	}
	models, err := ep.client.Models(ctx)
	if err != nil {
		return 0, err
	}
	if p.model != "" && !slices.ContainsFunc(models, func(m ModelInfo) bool { return m.ID == p.model }) {
		return 0, fmt.Errorf("model %q is not listed at /models", p.model)
	}
	p.mu.Lock()
	p.noteServed(models)
	p.mu.Unlock()
	return p.modelLen(models), nil
}

// applyCheck ejects an endpoint that failed its check until well after the
// next one, and reinstates one that passed if the checker or an
// unreachable server had ejected it. Ejections for overload (429, 503) or
// repeated failures run their course: a server can answer /health and
// still be unable to take completions.
func (p *Pool) applyCheck(ep *endpoint, maxLen int, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if err != nil {
		was := ep.ejected(now)
		interval := p.healthInterval
		if interval < 0 { // checks run only when a test calls checkAll
			interval = DefaultHealthInterval
		}
		until := now.Add(max(2*interval, p.ejectFor))
		if until.After(ep.ejectedUntil) {
			ep.ejectedUntil = until
		}
		ep.cause = causeHealth
		if !was {
			ep.ejectedAt = now
			p.log.Warn("model endpoint ejected", "model_url", ep.url, "cause", string(causeHealth), "error", err.Error())
		}
		return
	}
	ep.maxModelLen = maxLen
	if ep.ejected(now) && (ep.cause == causeHealth || ep.cause == causeUnreachable) {
		ep.ejectedUntil = time.Time{}
		ep.consecutive = 0
		p.log.Info("model endpoint reinstated", "model_url", ep.url, "reason", "health check passed")
		p.dispatchLocked()
	}
}

// Ready returns nil when the pool can take calls (at least one endpoint is
// in rotation), and otherwise says why.
func (p *Pool) Ready() error { return ReadyOf(p.Stats()) }

// ReadyOf is Ready for a pool whose endpoints report stats.
func ReadyOf(stats []EndpointStats) error {
	for _, s := range stats {
		if s.Ejected.IsZero() {
			return nil
		}
	}
	return fmt.Errorf("model pool: all %d endpoints are out of rotation after failures", len(stats))
}
