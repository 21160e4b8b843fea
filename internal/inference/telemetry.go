package inference

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Telemetry of the pool. Spans and metrics carry names, numbers and
// classes, never prompt or completion text: a prompt holds the document and
// the question, a completion the memory.

// instrumentationName is the tracer's and meter's scope.
const instrumentationName = "github.com/memagent/memagent/internal/inference"

// The pool's metrics. Prometheus shows them with dots as underscores, plus
// _total for counters and _seconds for durations.
const (
	metricTokens   = "memagent.model.tokens"        // counter {token}: model, kind, type=input|output
	metricDuration = "memagent.model.duration"      // histogram s: model, kind, outcome=ok|error
	metricErrors   = "memagent.model.errors"        // counter: model, kind, error_kind
	metricWait     = "memagent.model.wait.duration" // histogram s: model
	metricInFlight = "memagent.model.in_flight"     // gauge: endpoint
	metricCapacity = "memagent.model.capacity"      // gauge: endpoint (its MaxInFlight)
	metricReserve  = "memagent.model.reserve"       // gauge: endpoint (urgent calls allowed beyond its cap)
	metricEjected  = "memagent.model.ejected"       // gauge 0|1: endpoint
	metricWaiting  = "memagent.model.waiting"       // gauge: callers waiting for a slot
	metricEvicted  = "memagent.model.evictions"     // counter: model, kind
)

// durationBuckets cover a cached one-token answer to the default request
// timeout of ten minutes.
var durationBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320, 600}

// waitBuckets cover no wait at all to a long queue behind a busy pool.
var waitBuckets = []float64{0.001, 0.01, 0.1, 0.5, 1, 5, 15, 60, 300}

// poolTelemetry holds the pool's tracer and instruments; with nil providers
// every one is a no-op.
type poolTelemetry struct {
	tracer   trace.Tracer
	tracing  bool // a TracerProvider was given: wrap the transport
	tp       trace.TracerProvider
	mp       metric.MeterProvider
	tokens   metric.Int64Counter
	duration metric.Float64Histogram
	errors   metric.Int64Counter
	wait     metric.Float64Histogram
	evicts   metric.Int64Counter
	gauges   metric.Registration // guarded by Pool.mu
	azure    bool                // spans name Azure OpenAI as the provider
}

func newPoolTelemetry(tp trace.TracerProvider, mp metric.MeterProvider) (*poolTelemetry, error) {
	t := &poolTelemetry{tracing: tp != nil, tp: tp, mp: mp}
	if t.tp == nil {
		t.tp = tracenoop.NewTracerProvider()
	}
	if t.mp == nil {
		t.mp = metricnoop.NewMeterProvider()
	}
	t.tracer = t.tp.Tracer(instrumentationName)
	m := t.mp.Meter(instrumentationName)
	var errs []error
	var err error
	t.tokens, err = m.Int64Counter(metricTokens, metric.WithUnit("{token}"),
		metric.WithDescription("Tokens the model servers reported, by model, call kind and type (input = prompt, output = completion)."))
	errs = append(errs, err)
	t.duration, err = m.Float64Histogram(metricDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of one completion request to a model server, by model, call kind and outcome."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	errs = append(errs, err)
	t.errors, err = m.Int64Counter(metricErrors, metric.WithUnit("{error}"),
		metric.WithDescription("Failed completions by model, call kind and error kind (bad_request, auth, rate_limited, server, timeout, connection, ...)."))
	errs = append(errs, err)
	t.wait, err = m.Float64Histogram(metricWait, metric.WithUnit("s"),
		metric.WithDescription("Time a completion waited for a free model server slot."),
		metric.WithExplicitBucketBoundaries(waitBuckets...))
	errs = append(errs, err)
	t.evicts, err = m.Int64Counter(metricEvicted, metric.WithUnit("{request}"),
		metric.WithDescription("Completions stopped at a model server for a more urgent one and sent again (MEMAGENT_MODEL_PRIORITY_EVICT), by model and call kind: each threw away the GPU time it had had."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("inference: metrics: %w", err)
	}
	return t, nil
}

// evicted counts a call stopped for a more urgent one, and marks its span.
func (t *poolTelemetry) evicted(ctx context.Context, span trace.Span, model, kind string) {
	t.evicts.Add(ctx, 1, metric.WithAttributes(labels(model, kind)...))
	span.AddEvent("memagent.model.evicted")
}

// observe registers the gauges read from the pool's state at collection
// time; Pool.Close unregisters them.
func (t *poolTelemetry) observe(p *Pool) error {
	m := t.mp.Meter(instrumentationName)
	inFlight, err1 := m.Int64ObservableGauge(metricInFlight, metric.WithUnit("{request}"),
		metric.WithDescription("Completions outstanding at each model endpoint, urgent calls on its reserve included."))
	capacity, err2 := m.Int64ObservableGauge(metricCapacity, metric.WithUnit("{request}"),
		metric.WithDescription("Cap of completions outstanding at each model endpoint (MEMAGENT_MAX_IN_FLIGHT)."))
	ejected, err3 := m.Int64ObservableGauge(metricEjected,
		metric.WithDescription("1 while a model endpoint is out of rotation after failures, else 0."))
	waiting, err4 := m.Int64ObservableGauge(metricWaiting, metric.WithUnit("{request}"),
		metric.WithDescription("Completions waiting for a free slot because every endpoint in rotation is full."))
	reserve, err5 := m.Int64ObservableGauge(metricReserve, metric.WithUnit("{request}"),
		metric.WithDescription("Urgent completions each model endpoint may have outstanding beyond its cap, for its server to preempt less urgent ones for (MEMAGENT_MODEL_PRIORITY_RESERVE); 0 for a server without priority."))
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return fmt.Errorf("inference: metrics: %w", err)
	}
	attrs := make([]metric.ObserveOption, len(p.endpoints))
	for i, ep := range p.endpoints {
		attrs[i] = metric.WithAttributes(attribute.String("endpoint", ep.url))
	}
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		now := p.now()
		for i, ep := range p.endpoints {
			o.ObserveInt64(inFlight, int64(ep.inFlight), attrs[i])
			o.ObserveInt64(capacity, int64(ep.maxInFlight), attrs[i])
			o.ObserveInt64(reserve, int64(ep.reserve), attrs[i])
			var out int64
			if ep.ejected(now) {
				out = 1
			}
			o.ObserveInt64(ejected, out, attrs[i])
		}
		o.ObserveInt64(waiting, int64(p.waiters.Len()))
		return nil
	}, inFlight, capacity, reserve, ejected, waiting)
	if err != nil {
		return fmt.Errorf("inference: metrics: %w", err)
	}
	t.gauges = reg
	return nil
}

// transport wraps base so that each request made under a span gets an HTTP
// client span and carries the trace context to the server (vLLM can
// continue the trace). Requests made outside any span (health checks, the
// start-up probes) are not traced: they would each be a trace of their own.
func (t *poolTelemetry) transport(base http.RoundTripper) http.RoundTripper {
	if !t.tracing {
		return base
	}
	return otelhttp.NewTransport(base,
		otelhttp.WithTracerProvider(t.tp),
		// Trace context only: baggage is not for a third-party server.
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithMeterProvider(t.mp),
		otelhttp.WithFilter(func(r *http.Request) bool { return trace.SpanContextFromContext(r.Context()).IsValid() }),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method + " " + r.URL.Path }),
	)
}

// startChat starts the span of one completion, named and attributed as
// the OpenTelemetry GenAI conventions say for a chat call.
func (t *poolTelemetry) startChat(ctx context.Context, req Request, model string) (context.Context, trace.Span) {
	name := "chat"
	if model != "" {
		name += " " + model
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameChat,
		semconv.GenAIProviderNameOpenAI,
		attribute.String("gen_ai.system", "openai"), // the older name, still read by many backends
	}
	if t.azure {
		attrs[1], attrs[2] = semconv.GenAIProviderNameAzureAIOpenAI, attribute.String("gen_ai.system", "az.ai.openai")
	}
	if model != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(model))
	}
	if req.MaxTokens > 0 {
		attrs = append(attrs, semconv.GenAIRequestMaxTokens(req.MaxTokens))
	}
	attrs = append(attrs, semconv.GenAIRequestTemperature(decimal(req.Temperature)))
	if req.TopP > 0 {
		attrs = append(attrs, semconv.GenAIRequestTopP(decimal(req.TopP)))
	}
	if req.Kind != "" {
		attrs = append(attrs, attribute.String("memagent.call.kind", req.Kind))
	}
	return t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// decimal widens a float32 the way it was written: 0.7, not
// 0.699999988079071.
func decimal(f float32) float64 {
	v, err := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64)
	if err != nil {
		return float64(f)
	}
	return v
}

// endpointAttrs names the server a completion went to.
func endpointAttrs(base string) []attribute.KeyValue {
	u, err := url.Parse(base)
	if err != nil {
		return nil
	}
	attrs := []attribute.KeyValue{semconv.ServerAddress(u.Hostname())}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if n, err := strconv.Atoi(port); err == nil {
		attrs = append(attrs, semconv.ServerPort(n))
	}
	return attrs
}

// labels are the metric attributes common to one call.
func labels(model, kind string) []attribute.KeyValue {
	a := []attribute.KeyValue{attribute.String("model", model)}
	if kind != "" {
		a = append(a, attribute.String("kind", kind))
	}
	return a
}

// waited records how long a call waited for a slot.
func (t *poolTelemetry) waited(ctx context.Context, model string, d time.Duration) {
	t.wait.Record(ctx, d.Seconds(), metric.WithAttributes(attribute.String("model", model)))
}

// called records one request to an endpoint: its duration and, when it
// succeeded, its token usage.
func (t *poolTelemetry) called(ctx context.Context, model, kind string, d time.Duration, out Completion, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	l := labels(model, kind)
	t.duration.Record(ctx, d.Seconds(), metric.WithAttributes(append(l, attribute.String("outcome", outcome))...))
	if err != nil {
		return
	}
	t.tokens.Add(ctx, int64(out.PromptTokens), metric.WithAttributes(append(l, attribute.String("type", "input"))...))
	t.tokens.Add(ctx, int64(out.CompletionTokens), metric.WithAttributes(append(l, attribute.String("type", "output"))...))
}

// finish ends a completion's span with its outcome and counts a failure.
// Only the error's class and status go into the span: a server's message
// can quote the request.
func (t *poolTelemetry) finish(ctx context.Context, span trace.Span, model, kind string, out Completion, err error) {
	defer span.End()
	if err != nil {
		kindOf := KindServer
		status := 0
		var e *Error
		if errors.As(err, &e) {
			kindOf, status = e.Kind, e.StatusCode
		}
		t.errors.Add(ctx, 1, metric.WithAttributes(append(labels(model, kind), attribute.String("error_kind", string(kindOf)))...))
		desc := string(kindOf)
		if status != 0 {
			desc += fmt.Sprintf(" (HTTP %d)", status)
			span.SetAttributes(semconv.HTTPResponseStatusCode(status))
		}
		span.SetAttributes(semconv.ErrorTypeKey.String(string(kindOf)))
		span.SetStatus(codes.Error, desc)
		return
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIUsageInputTokens(out.PromptTokens),
		semconv.GenAIUsageOutputTokens(out.CompletionTokens),
	}
	if out.Model != "" {
		attrs = append(attrs, semconv.GenAIResponseModel(out.Model))
	}
	if out.FinishReason != "" {
		attrs = append(attrs, semconv.GenAIResponseFinishReasons(out.FinishReason))
	}
	if out.CachedTokens > 0 {
		attrs = append(attrs, semconv.GenAIUsageCacheReadInputTokens(out.CachedTokens))
	}
	span.SetAttributes(attrs...)
}
