package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// TemporalMeterName is the instrumentation scope of the Temporal SDK's
// metrics (go.temporal.io/sdk/contrib/opentelemetry's default). Its timers
// are histograms in seconds without bucket advice, so Setup gives them
// buckets in seconds.
const TemporalMeterName = "temporal-sdk-go"

// Options configures Setup. The zero value is valid.
type Options struct {
	// ServiceName is service.name unless OTEL_SERVICE_NAME or
	// OTEL_RESOURCE_ATTRIBUTES sets one; default "memagent".
	ServiceName string
	// Logger receives the exporters' errors (at warn) and one line saying
	// where telemetry goes; nil means slog.Default().
	Logger *slog.Logger
	// SpanProcessors are added to the tracer provider, which then records
	// spans even without an OTLP endpoint. Tests pass a
	// tracetest.SpanRecorder here.
	SpanProcessors []sdktrace.SpanProcessor
	// MetricReaders are added to the meter provider next to Prometheus.
	// Tests pass an sdkmetric.ManualReader here.
	MetricReaders []sdkmetric.Reader
}

// Telemetry is the providers of one process. Setup installs them as the
// OpenTelemetry globals as well.
type Telemetry struct {
	// TracerProvider records spans and sends them to OTLP, or is a no-op
	// when no exporter or span processor is configured.
	TracerProvider trace.TracerProvider
	// MeterProvider feeds Prometheus and, when configured, OTLP.
	MeterProvider metric.MeterProvider
	// Prometheus serves every metric in the Prometheus text format, with
	// the Go runtime's and the process's own.
	Prometheus http.Handler
	// Traces and Metrics say where each signal goes, for a log line:
	// "off", "otlp (grpc)", "prometheus, otlp (http/protobuf)".
	Traces, Metrics string

	shutdown []func(context.Context) error
}

// Setup builds the providers from the OTEL_* environment and installs them,
// with the W3C trace-context and baggage propagator, as the OpenTelemetry
// globals. It makes no network request: exporters connect lazily and
// export in the background. Call Shutdown before the process exits to
// flush what is buffered.
//
// Traces are exported over OTLP when OTEL_TRACES_EXPORTER is "otlp", or
// when it is unset and OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set; "none" turns them off. Metrics
// follow the same rule with METRICS in the names, and always feed
// Prometheus. OTEL_EXPORTER_OTLP[_TRACES|_METRICS]_PROTOCOL is "grpc" or
// "http/protobuf" (the default). OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER[_ARG] and the exporters'
// own variables (headers, timeout, certificates) work as the specification
// says. OTEL_SDK_DISABLED=true makes both providers no-ops.
func Setup(ctx context.Context, opts Options) (*Telemetry, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	t := &Telemetry{Traces: "off", Metrics: "prometheus"}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	t.Prometheus = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})

	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("opentelemetry", "err", err)
	}))

	if disabled, _ := strconv.ParseBool(os.Getenv("OTEL_SDK_DISABLED")); disabled {
		t.TracerProvider, t.MeterProvider = tracenoop.NewTracerProvider(), metricnoop.NewMeterProvider()
		t.Metrics = "off"
		otel.SetTracerProvider(t.TracerProvider)
		otel.SetMeterProvider(t.MeterProvider)
		return t, nil
	}

	res, err := newResource(ctx, opts.ServiceName)
	if err != nil {
		return nil, err
	}

	spanExp, traceDesc, err := newSpanExporter(ctx)
	if err != nil {
		return nil, err
	}
	if spanExp != nil || len(opts.SpanProcessors) > 0 {
		tpOpts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
		if spanExp != nil {
			tpOpts = append(tpOpts, sdktrace.WithBatcher(spanExp))
			t.Traces = traceDesc
		}
		for _, sp := range opts.SpanProcessors {
			tpOpts = append(tpOpts, sdktrace.WithSpanProcessor(sp))
		}
		tp := sdktrace.NewTracerProvider(tpOpts...)
		t.TracerProvider = tp
		t.shutdown = append(t.shutdown, tp.Shutdown)
	} else {
		t.TracerProvider = tracenoop.NewTracerProvider()
	}

	// Without scope labels: series stay as plain as PromQL users expect,
	// and the names are prefixed by their owners anyway.
	promExp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		t.Shutdown(ctx)
		return nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
	}
	mpOpts := []sdkmetric.Option{
		sdkmetric.WithResource(res),
		sdkmetric.WithReader(promExp),
		sdkmetric.WithView(sdkmetric.NewView(
			sdkmetric.Instrument{Kind: sdkmetric.InstrumentKindHistogram, Scope: instrumentation.Scope{Name: TemporalMeterName}},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: SecondsBuckets}},
		)),
	}
	metricExp, metricDesc, err := newMetricExporter(ctx)
	if err != nil {
		t.Shutdown(ctx)
		return nil, err
	}
	if metricExp != nil {
		mpOpts = append(mpOpts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metricExp)))
		t.Metrics += ", " + metricDesc
	}
	for _, r := range opts.MetricReaders {
		mpOpts = append(mpOpts, sdkmetric.WithReader(r))
	}
	mp := sdkmetric.NewMeterProvider(mpOpts...)
	t.MeterProvider = mp
	t.shutdown = append(t.shutdown, mp.Shutdown)

	otel.SetTracerProvider(t.TracerProvider)
	otel.SetMeterProvider(t.MeterProvider)
	return t, nil
}

// SecondsBuckets are histogram bounds for durations in seconds, from a
// millisecond to ten minutes (the default model request timeout).
var SecondsBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// Shutdown flushes and stops the exporters, giving up when ctx ends. It is
// safe to call more than once and on a nil Telemetry.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	for i := len(t.shutdown) - 1; i >= 0; i-- {
		if err := t.shutdown[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	t.shutdown = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("telemetry: shutdown: %w", err)
	}
	return nil
}

// newResource describes the process: service.name (opts, then the
// environment), the SDK and the host.
func newResource(ctx context.Context, service string) (*resource.Resource, error) {
	if service == "" {
		service = "memagent"
	}
	// Later detectors win, so the environment overrides the default name.
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(service)),
		resource.WithTelemetrySDK(),
		resource.WithHost(),
		resource.WithProcessPID(),
		resource.WithFromEnv(),
	)
	if err != nil && res == nil {
		return nil, fmt.Errorf("telemetry: resource: %w (check OTEL_RESOURCE_ATTRIBUTES)", err)
	}
	// A partial resource (e.g. one malformed OTEL_RESOURCE_ATTRIBUTES
	// entry) is still worth using; the error goes to the error handler.
	if err != nil {
		otel.Handle(err)
	}
	return res, nil
}

// envFor returns OTEL_EXPORTER_OTLP_<SIGNAL>_<name>, else
// OTEL_EXPORTER_OTLP_<name>.
func envFor(signal, name string) string {
	if v := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_" + signal + "_" + name)); v != "" {
		return v
	}
	return strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_" + name))
}

// otlpWanted applies OTEL_<SIGNAL>_EXPORTER: unset means "otlp when an
// endpoint is configured".
func otlpWanted(signal string) (bool, error) {
	name := "OTEL_" + signal + "_EXPORTER"
	v := strings.ToLower(strings.TrimSpace(os.Getenv(name)))
	switch v {
	case "":
		return envFor(signal, "ENDPOINT") != "", nil
	case "otlp":
		return true, nil
	case "none":
		return false, nil
	case "prometheus":
		if signal == "METRICS" {
			return false, nil // Prometheus is always served
		}
	}
	return false, fmt.Errorf("telemetry: %s=%q is not supported: use otlp or none", name, v)
}

// protocol returns the OTLP protocol of a signal, by the specification's
// default http/protobuf.
func protocol(signal string) (string, error) {
	switch p := envFor(signal, "PROTOCOL"); p {
	case "", "http/protobuf":
		return "http/protobuf", nil
	case "grpc":
		return p, nil
	default:
		return "", fmt.Errorf("telemetry: OTEL_EXPORTER_OTLP_PROTOCOL=%q is not supported: use grpc or http/protobuf", p)
	}
}

// describe names where a signal goes, without credentials.
func describe(signal, proto string) string {
	ep := envFor(signal, "ENDPOINT")
	if ep == "" {
		return "otlp (" + proto + ", default endpoint)"
	}
	if u, err := url.Parse(ep); err == nil {
		ep = u.Redacted()
	}
	return "otlp (" + proto + ", " + ep + ")"
}

// UnstartedSpanExporter is the OTLP trace exporter the OTEL_* environment
// asks for (OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL
// grpc or http/protobuf, the endpoint), not yet started, or nil when the
// environment asks for none. The embedded Temporal server takes it in
// place of its own, which speaks only gRPC whatever the protocol says.
func UnstartedSpanExporter() (sdktrace.SpanExporter, error) {
	ok, err := otlpWanted("TRACES")
	if err != nil || !ok {
		return nil, err
	}
	proto, err := protocol("TRACES")
	if err != nil {
		return nil, err
	}
	if proto == "grpc" {
		return otlptracegrpc.NewUnstarted(), nil
	}
	return otlptrace.NewUnstarted(otlptracehttp.NewClient()), nil
}

func newSpanExporter(ctx context.Context) (sdktrace.SpanExporter, string, error) {
	ok, err := otlpWanted("TRACES")
	if err != nil || !ok {
		return nil, "", err
	}
	proto, err := protocol("TRACES")
	if err != nil {
		return nil, "", err
	}
	var exp sdktrace.SpanExporter
	if proto == "grpc" {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, "", fmt.Errorf("telemetry: OTLP trace exporter: %w (check OTEL_EXPORTER_OTLP_ENDPOINT)", err)
	}
	return exp, describe("TRACES", proto), nil
}

func newMetricExporter(ctx context.Context) (sdkmetric.Exporter, string, error) {
	ok, err := otlpWanted("METRICS")
	if err != nil || !ok {
		return nil, "", err
	}
	proto, err := protocol("METRICS")
	if err != nil {
		return nil, "", err
	}
	var exp sdkmetric.Exporter
	if proto == "grpc" {
		exp, err = otlpmetricgrpc.New(ctx)
	} else {
		exp, err = otlpmetrichttp.New(ctx)
	}
	if err != nil {
		return nil, "", fmt.Errorf("telemetry: OTLP metric exporter: %w (check OTEL_EXPORTER_OTLP_ENDPOINT)", err)
	}
	return exp, describe("METRICS", proto), nil
}
