package telemetry_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/memagent/memagent/internal/telemetry"
)

// otelEnv lists every variable Setup reads, so a test starts from a clean
// environment whatever the machine's.
var otelEnv = []string{
	"OTEL_SDK_DISABLED", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES",
	"OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG",
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
	"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
}

func setEnv(t *testing.T, env map[string]string) {
	t.Helper()
	for _, k := range otelEnv {
		t.Setenv(k, "")
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// shutdown flushes with a short deadline: an unreachable collector must
// not hold the test (or a process) for long.
func shutdown(t *testing.T, tel *telemetry.Telemetry) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_ = tel.Shutdown(ctx) // an unreachable collector is an error; it must not block
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Shutdown took %s with a 500ms deadline", d)
	}
}

func scrape(t *testing.T, tel *telemetry.Telemetry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	tel.Prometheus.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: %d", rec.Code)
	}
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

func TestSetup(t *testing.T) {
	// 127.0.0.1:1 refuses connections: the exporters must neither fail
	// Setup nor block on it.
	const unreachable = "http://127.0.0.1:1"
	tests := []struct {
		name        string
		env         map[string]string
		wantTracing bool
		wantTraces  string // prefix of Telemetry.Traces
		wantMetrics string
	}{
		{"no endpoint", nil, false, "off", "prometheus"},
		{"endpoint, default protocol", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": unreachable},
			true, "otlp (http/protobuf, http://127.0.0.1:1)", "prometheus, otlp (http/protobuf"},
		{"endpoint, grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": unreachable, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			true, "otlp (grpc", "prometheus, otlp (grpc"},
		{"traces endpoint only", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": unreachable + "/v1/traces"},
			true, "otlp (http/protobuf", "prometheus"},
		{"metrics endpoint only", map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": unreachable + "/v1/metrics"},
			false, "off", "prometheus, otlp"},
		{"exporters none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": unreachable, "OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"},
			false, "off", "prometheus"},
		{"sampler off", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": unreachable, "OTEL_TRACES_SAMPLER": "always_off"},
			false, "otlp", "prometheus, otlp"},
		{"sdk disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": unreachable, "OTEL_SDK_DISABLED": "true"},
			false, "off", "off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setEnv(t, tt.env)
			start := time.Now()
			tel, err := telemetry.Setup(context.Background(), telemetry.Options{ServiceName: "memagent-test", Logger: quietLogger()})
			if err != nil {
				t.Fatalf("Setup: %v", err)
			}
			defer shutdown(t, tel)
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("Setup took %s: it must not wait for the collector", d)
			}
			if !strings.HasPrefix(tel.Traces, tt.wantTraces) || !strings.HasPrefix(tel.Metrics, tt.wantMetrics) {
				t.Errorf("Traces, Metrics = %q, %q; want prefixes %q, %q", tel.Traces, tel.Metrics, tt.wantTraces, tt.wantMetrics)
			}
			_, span := tel.TracerProvider.Tracer("test").Start(context.Background(), "op")
			if got := span.IsRecording(); got != tt.wantTracing {
				t.Errorf("span recording = %v, want %v", got, tt.wantTracing)
			}
			span.End()
			if otel.GetTracerProvider() != tel.TracerProvider || otel.GetMeterProvider() != tel.MeterProvider {
				t.Error("Setup did not install its providers as the globals")
			}
			if got := otel.GetTextMapPropagator().Fields(); !contains(got, "traceparent") || !contains(got, "baggage") {
				t.Errorf("global propagator fields = %v, want traceparent and baggage", got)
			}

			// Metrics reach Prometheus whatever the OTLP settings.
			c, err := tel.MeterProvider.Meter("test").Int64Counter("memagent.test.events")
			if err != nil {
				t.Fatal(err)
			}
			c.Add(context.Background(), 3)
			out := scrape(t, tel)
			wantCounter := tt.env["OTEL_SDK_DISABLED"] == ""
			if got := strings.Contains(out, "memagent_test_events_total 3"); got != wantCounter {
				t.Errorf("/metrics has memagent_test_events_total 3: %v, want %v", got, wantCounter)
			}
			if !strings.Contains(out, "go_goroutines") {
				t.Error("/metrics lacks the Go runtime's metrics")
			}
		})
	}
}

func TestSetupRejectsUnsupportedSettings(t *testing.T) {
	tests := []struct {
		name, key, value, want string
	}{
		{"protocol", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", "use grpc or http/protobuf"},
		{"traces exporter", "OTEL_TRACES_EXPORTER", "zipkin", "OTEL_TRACES_EXPORTER=\"zipkin\" is not supported"},
		{"metrics exporter", "OTEL_METRICS_EXPORTER", "console", "OTEL_METRICS_EXPORTER=\"console\" is not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", tt.key: tt.value})
			tel, err := telemetry.Setup(context.Background(), telemetry.Options{Logger: quietLogger()})
			if err == nil {
				shutdown(t, tel)
				t.Fatalf("Setup with %s=%s: no error", tt.key, tt.value)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestSetupWithInMemoryExporters(t *testing.T) {
	setEnv(t, map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "deployment.environment.name=test", "OTEL_SERVICE_NAME": "from-env"})
	rec := tracetest.NewSpanRecorder()
	reader := sdkmetric.NewManualReader()
	tel, err := telemetry.Setup(context.Background(), telemetry.Options{
		ServiceName: "memagent-test", Logger: quietLogger(),
		SpanProcessors: []sdktrace.SpanProcessor{rec}, MetricReaders: []sdkmetric.Reader{reader},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(t, tel)

	// The global propagator carries a span across a process boundary.
	ctx, parent := tel.TracerProvider.Tracer("test").Start(context.Background(), "parent")
	carrier := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, carrier)
	remote := otel.GetTextMapPropagator().Extract(context.Background(), carrier)
	_, child := tel.TracerProvider.Tracer("test").Start(remote, "child")
	child.End()
	parent.End()

	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("recorded %d spans, want 2", len(spans))
	}
	if spans[0].Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("child's parent = %s, want %s", spans[0].Parent().SpanID(), parent.SpanContext().SpanID())
	}
	attrs := map[string]string{}
	for _, kv := range spans[0].Resource().Attributes() {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	if attrs["service.name"] != "from-env" || attrs["deployment.environment.name"] != "test" {
		t.Errorf("resource = %v, want service.name from OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES applied", attrs)
	}

	h, err := tel.MeterProvider.Meter("test").Float64Histogram("memagent.test.duration")
	if err != nil {
		t.Fatal(err)
	}
	h.Record(context.Background(), 0.5)
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	if len(rm.ScopeMetrics) != 1 || rm.ScopeMetrics[0].Metrics[0].Name != "memagent.test.duration" {
		t.Errorf("manual reader collected %+v, want memagent.test.duration", rm.ScopeMetrics)
	}
}

func TestShutdownNil(t *testing.T) {
	var tel *telemetry.Telemetry
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Errorf("nil Shutdown: %v", err)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
