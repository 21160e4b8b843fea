package inference

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// telemetryPool is a pool over f whose spans and metrics the test reads.
func telemetryPool(t *testing.T, f *fakeServer) (*Pool, *tracetest.SpanRecorder, *sdkmetric.ManualReader, *sdktrace.TracerProvider) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	p := newTestPool(t, 4, func(c *PoolConfig) { c.TracerProvider, c.MeterProvider = tp, mp }, f.url())
	return p, rec, reader, tp
}

func spanAttrs(s sdktrace.ReadOnlySpan) map[string]attribute.Value {
	m := make(map[string]attribute.Value)
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

// assertNoText fails if any attribute or event of any span contains one of
// the secrets.
func assertNoText(t *testing.T, spans []sdktrace.ReadOnlySpan, secrets ...string) {
	t.Helper()
	for _, s := range spans {
		texts := []string{s.Name(), s.Status().Description}
		for _, kv := range s.Attributes() {
			texts = append(texts, kv.Value.Emit())
		}
		for _, ev := range s.Events() {
			texts = append(texts, ev.Name)
			for _, kv := range ev.Attributes {
				texts = append(texts, kv.Value.Emit())
			}
		}
		for _, text := range texts {
			for _, secret := range secrets {
				if strings.Contains(text, secret) {
					t.Errorf("span %q carries %q", s.Name(), secret)
				}
			}
		}
	}
}

// collect returns the data points of one metric, keyed by their attributes.
func collect(t *testing.T, r *sdkmetric.ManualReader, name string) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]float64)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[p.Attributes.Encoded(attribute.DefaultEncoder())] = float64(p.Value)
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					out[p.Attributes.Encoded(attribute.DefaultEncoder())] = float64(p.Value)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[p.Attributes.Encoded(attribute.DefaultEncoder())] = float64(p.Count)
				}
			default:
				t.Fatalf("metric %s has data %T", name, m.Data)
			}
		}
	}
	return out
}

func TestPoolTracesCompletionWithoutText(t *testing.T) {
	const prompt, completion = "PROMPT-TEXT-MARKER the vault code is 4417", "COMPLETION-TEXT-MARKER"
	f := newFakeServer(t, completion, false)
	p, rec, _, tp := telemetryPool(t, f)

	ctx, parent := tp.Tracer("test").Start(context.Background(), "activity")
	out, err := p.Complete(ctx, Request{Prompt: prompt, MaxTokens: 100, Temperature: 0.5, TopP: 0.95, Kind: "update"})
	parent.End()
	if err != nil || out.Text != completion {
		t.Fatalf("Complete = %q, %v", out.Text, err)
	}

	spans := rec.Ended()
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byName[s.Name()] = s
	}
	chat, ok := byName["chat m"]
	if !ok {
		t.Fatalf("no span \"chat m\" among %d spans", len(spans))
	}
	if chat.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("chat span's parent = %s, want the caller's span", chat.Parent().SpanID())
	}
	httpSpan, ok := byName["POST /v1/chat/completions"]
	if !ok || httpSpan.Parent().SpanID() != chat.SpanContext().SpanID() {
		t.Errorf("HTTP span under the chat span: found %v", ok)
	}
	a := spanAttrs(chat)
	want := map[string]any{
		"gen_ai.operation.name":      "chat",
		"gen_ai.provider.name":       "openai",
		"gen_ai.system":              "openai",
		"gen_ai.request.model":       "m",
		"gen_ai.request.max_tokens":  int64(100),
		"gen_ai.request.temperature": 0.5,
		"gen_ai.usage.input_tokens":  int64(10),
		"gen_ai.usage.output_tokens": int64(2),
		"gen_ai.response.model":      "m",
		"server.address":             "127.0.0.1",
		"memagent.call.kind":         "update",
	}
	for k, v := range want {
		if got, ok := a[k]; !ok || got.AsInterface() != v {
			t.Errorf("%s = %v, want %v", k, got.AsInterface(), v)
		}
	}
	if got := a["gen_ai.request.top_p"].AsFloat64(); got != 0.95 {
		t.Errorf("gen_ai.request.top_p = %v, want 0.95", got)
	}
	if got := a["gen_ai.response.finish_reasons"].AsStringSlice(); len(got) != 1 || got[0] != "stop" {
		t.Errorf("gen_ai.response.finish_reasons = %v, want [stop]", got)
	}
	if _, ok := a["server.port"]; !ok {
		t.Error("no server.port")
	}
	if _, ok := a["error.type"]; ok {
		t.Error("error.type on a success")
	}
	assertNoText(t, spans, "PROMPT-TEXT-MARKER", "4417", completion, "sk-pool-test")
}

func TestPoolTracesFailure(t *testing.T) {
	f := newFakeServer(t, "a", false)
	f.set(func(f *fakeServer) { f.status = 429 })
	p, rec, reader, tp := telemetryPool(t, f)

	ctx, span := tp.Tracer("test").Start(context.Background(), "activity")
	_, err := p.Complete(ctx, Request{Prompt: "PROMPT-TEXT-MARKER", Kind: "final"})
	span.End()
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindRateLimited {
		t.Fatalf("Complete: %v, want a rate_limited *Error", err)
	}

	var chat sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "chat m" {
			chat = s
		}
	}
	if chat == nil {
		t.Fatal("no chat span")
	}
	if chat.Status().Code != codes.Error || chat.Status().Description != "rate_limited (HTTP 429)" {
		t.Errorf("status = %v %q, want Error \"rate_limited (HTTP 429)\"", chat.Status().Code, chat.Status().Description)
	}
	if got := spanAttrs(chat)["error.type"].AsString(); got != "rate_limited" {
		t.Errorf("error.type = %q, want rate_limited", got)
	}
	assertNoText(t, rec.Ended(), "PROMPT-TEXT-MARKER", "a says 429", "sk-pool-test")

	errs := collect(t, reader, metricErrors)
	if got := errs["error_kind=rate_limited,kind=final,model=m"]; got != 1 {
		t.Errorf("%s = %v, want 1 rate_limited error", metricErrors, errs)
	}
	if got := collect(t, reader, metricDuration)["kind=final,model=m,outcome=error"]; got != 1 {
		t.Errorf("%s error observations = %v, want 1", metricDuration, got)
	}
}

func TestPoolMetrics(t *testing.T) {
	f := newFakeServer(t, "a", false)
	p, rec, reader, _ := telemetryPool(t, f)
	for range 3 {
		if _, err := p.Complete(context.Background(), Request{Prompt: "p", Kind: "update"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Complete(context.Background(), Request{Prompt: "p", Kind: "final"}); err != nil {
		t.Fatal(err)
	}
	tokens := collect(t, reader, metricTokens)
	want := map[string]float64{
		"kind=update,model=m,type=input": 30, "kind=update,model=m,type=output": 6,
		"kind=final,model=m,type=input": 10, "kind=final,model=m,type=output": 2,
	}
	for k, v := range want {
		if tokens[k] != v {
			t.Errorf("%s{%s} = %v, want %v", metricTokens, k, tokens[k], v)
		}
	}
	if got := collect(t, reader, metricDuration)["kind=update,model=m,outcome=ok"]; got != 3 {
		t.Errorf("%s ok observations = %v, want 3", metricDuration, got)
	}
	if got := collect(t, reader, metricWait)["model=m"]; got != 4 {
		t.Errorf("%s observations = %v, want 4", metricWait, got)
	}
	ep := "endpoint=" + f.url()
	if got, ok := collect(t, reader, metricInFlight)[ep]; !ok || got != 0 {
		t.Errorf("%s{%s} = %v (present %v), want 0", metricInFlight, ep, got, ok)
	}
	if got := collect(t, reader, metricCapacity)[ep]; got != 4 {
		t.Errorf("%s{%s} = %v, want 4", metricCapacity, ep, got)
	}

	// Requests made outside any span (health checks, start-up probes)
	// leave no spans behind.
	before := len(rec.Ended())
	if _, err := p.Models(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.checkAll(context.Background())
	if n := len(rec.Ended()) - before; n != 0 {
		t.Errorf("%d spans from requests made outside any span, want 0", n)
	}

	// Close unregisters the gauges.
	p.Close()
	if got := collect(t, reader, metricInFlight); len(got) != 0 {
		t.Errorf("%s after Close = %v, want nothing", metricInFlight, got)
	}
}

// TestMetricLabelsAreBounded: requests naming models the pool does not
// serve (a caller's choice, as long as it likes) count under "other", so
// the label set stays what the pool serves whatever callers send; an
// endpoint URL's user info never reaches a label.
func TestMetricLabelsAreBounded(t *testing.T) {
	f := newFakeServer(t, "a", false)
	p, _, reader, _ := telemetryPool(t, f)
	if _, err := p.Models(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		name := strings.Repeat("x", 1000) + fmt.Sprint(i)
		_, _ = p.Complete(context.Background(), Request{Prompt: "p", Kind: "update", Model: name})
	}
	if _, err := p.Complete(context.Background(), Request{Prompt: "p", Kind: "update", Model: "m"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{metricDuration, metricWait} {
		got := collect(t, reader, name)
		for k := range got {
			if !strings.Contains(k, "model=m") && !strings.Contains(k, "model="+OtherModel) {
				t.Errorf("%s has a series %q", name, k)
			}
		}
		if len(got) > 4 {
			t.Errorf("%s has %d series after 50 model names, want a handful", name, len(got))
		}
	}
	if p.MetricModel("m") != "m" || p.MetricModel("not-served") != OtherModel {
		t.Errorf("MetricModel: m → %q, not-served → %q", p.MetricModel("m"), p.MetricModel("not-served"))
	}
	if got := redactURL("http://user:s3cret@vllm:8000/v1"); strings.Contains(got, "s3cret") {
		t.Errorf("endpoint label %q keeps the password", got)
	}
}
