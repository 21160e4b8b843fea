package workerapp_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/dev/devenv"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/pluginkit"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/telemetry"
	"github.com/memagent/memagent/internal/tokenizer"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
)

// apiKeyMarker stands in for a real API key: it must reach no span.
const apiKeyMarker = "sk-TELEMETRY-E2E-KEY-MARKER"

// TestTraceFromStarterToEveryModelCallAndS3Request runs DocumentQA on the
// embedded stack (real Temporal server, real S3 server, the simulator over
// HTTP) with a recording tracer provider installed the way the commands
// install theirs, and checks the shape of the one trace that results, that
// no span carries text, and what /metrics and /readyz say afterwards.
func TestTraceFromStarterToEveryModelCallAndS3Request(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded Temporal server")
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_TRACES_SAMPLER", "OTEL_SDK_DISABLED"} {
		// Unset, not empty: the embedded Temporal server rejects an empty
		// OTEL_TRACES_EXPORTER.
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("OPENAI_API_KEY", apiKeyMarker)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))

	// Before anything is wired: the wiring reads the global providers.
	rec := tracetest.NewSpanRecorder()
	tel, err := telemetry.Setup(ctx, telemetry.Options{ServiceName: "memagent-e2e", Logger: logger, SpanProcessors: []sdktrace.SpanProcessor{rec}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tel.Shutdown(context.Background()) })

	d, err := devenv.Start(ctx, devenv.Options{FreePorts: true, Simulator: true, DisableUI: true, Logger: logger})
	if err != nil {
		t.Fatalf("StartDev: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	base, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	cfg := base.AtDevStack(d.Addresses())
	cfg.ModelAPIKey = apiKeyMarker // the simulator accepts any key; it must still reach no span
	cfg.TaskQueue = "telemetry-e2e"

	// The document goes up outside any span: untraced.
	tok, err := tokenizer.New(tokenizer.Qwen)
	if err != nil {
		t.Fatal(err)
	}
	doc := docgen.Needle(tok, 12_000, 0.5, 7)
	store, err := pluginkit.NewStore(ctx, cfg.Options)
	if err != nil {
		t.Fatal(err)
	}
	docLoc := s3store.Location{Bucket: cfg.Bucket, Key: "telemetry/doc.txt"}
	if err := store.EnsureBucket(ctx, cfg.Bucket, true); err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, docLoc, []byte(doc), "text/plain"); err != nil {
		t.Fatal(err)
	}

	// The worker, as worker/main.go wires it.
	var probe workerapp.Probe
	h := workerapp.Handler(tel.Prometheus, &probe)
	if code, body := get(t, h, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "starting") {
		t.Errorf("/readyz before the worker starts = %d %q, want 503 starting", code, body)
	}
	wk, err := workerapp.Start(ctx, cfg, workerapp.Options{Logger: logger})
	if err != nil {
		t.Fatalf("start worker: %v", err)
	}
	t.Cleanup(wk.Stop)
	probe.Started(wk.Client, wk.Plugin)

	// The starter: its own client, and the root span around the run.
	starterClient, err := workerapp.Dial(ctx, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(starterClient.Close)
	rec.Reset() // only the run's spans from here
	rootCtx, root := tel.TracerProvider.Tracer("test").Start(ctx, "starter ask")
	in := api.DocumentQAInput{
		// Every chunk read: no checkpoint of an earlier test run is used.
		Reuse:    api.ReuseNone,
		Document: docLoc.String(), Question: docgen.Question, GoldAnswers: []string{docgen.Answer},
		Options: api.ModelOptions{ChunkTokens: 2000},
	}
	run, err := starterClient.ExecuteWorkflow(rootCtx, client.StartWorkflowOptions{
		ID: "telemetry-e2e-" + strconv.FormatInt(time.Now().UnixNano(), 36), TaskQueue: cfg.TaskQueue,
	}, api.DocumentQAName, in)
	if err != nil {
		t.Fatalf("ExecuteWorkflow: %v", err)
	}
	var res api.DocumentQAResult
	err = run.Get(rootCtx, &res)
	root.End()
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if res.Answer != docgen.Answer || res.Chunks < 3 {
		t.Fatalf("answer %q over %d chunks, want %q over several", res.Answer, res.Chunks, docgen.Answer)
	}

	// Worker-side spans end on the worker's goroutines: wait for the last.
	var spans []sdktrace.ReadOnlySpan
	deadline := time.Now().Add(30 * time.Second)
	for {
		spans = rec.Ended()
		if countPrefix(spans, "RunWorkflow:") > 0 && countPrefix(spans, "chat ") >= res.Chunks+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for the run's spans; have %v", names(spans))
		}
		time.Sleep(20 * time.Millisecond)
	}

	byID := make(map[trace.SpanID]sdktrace.ReadOnlySpan, len(spans))
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
	}
	rootID := root.SpanContext()
	// underRoot reports whether s descends from the root span through
	// recorded spans, and returns its ancestors' names, nearest first.
	underRoot := func(s sdktrace.ReadOnlySpan) (bool, []string) {
		var path []string
		for p := s.Parent(); p.IsValid(); {
			if p.SpanID() == rootID.SpanID() {
				return s.SpanContext().TraceID() == rootID.TraceID(), path
			}
			ps, ok := byID[p.SpanID()]
			if !ok {
				return false, path
			}
			path = append(path, ps.Name())
			p = ps.Parent()
		}
		return false, path
	}

	var updates, finals, s3Spans int
	for _, s := range spans {
		name := s.Name()
		switch {
		case strings.HasPrefix(name, "chat "):
			ok, path := underRoot(s)
			if !ok {
				t.Errorf("model span %q is not under the root span (ancestors %v)", name, path)
			}
			a := attrs(s)
			switch a["memagent.call.kind"].AsString() {
			case "update":
				updates++
				if len(path) == 0 || path[0] != "RunActivity:"+activities.UpdateMemoryName {
					t.Errorf("update span's ancestors = %v, want RunActivity:%s first", path, activities.UpdateMemoryName)
				}
			case "final":
				finals++
			}
			for _, k := range []string{"gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model", "gen_ai.request.max_tokens",
				"gen_ai.request.temperature", "gen_ai.request.top_p", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
				"gen_ai.response.finish_reasons", "server.address"} {
				if _, ok := a[k]; !ok {
					t.Errorf("model span %q lacks %s", name, k)
				}
			}
			if a["gen_ai.usage.input_tokens"].AsInt64() <= 0 {
				t.Errorf("model span %q: gen_ai.usage.input_tokens = %d", name, a["gen_ai.usage.input_tokens"].AsInt64())
			}
			if name != "chat "+res.Model {
				t.Errorf("model span name %q, want %q", name, "chat "+res.Model)
			}
		case strings.HasPrefix(name, "S3 "):
			s3Spans++
			if ok, path := underRoot(s); !ok {
				t.Errorf("S3 span %q is not under the root span (ancestors %v)", name, path)
			}
		case strings.HasPrefix(name, "POST "):
			if ok, _ := underRoot(s); !ok {
				t.Errorf("model HTTP span %q is not under the root span", name)
			}
		}
	}
	t.Logf("one trace of %d spans: %d chunks, %d update and %d final model calls, %d S3 requests", len(spans), res.Chunks, updates, finals, s3Spans)
	if updates != res.Chunks || finals != 1 {
		t.Errorf("model spans: %d updates and %d finals, want %d updates (one per chunk) and 1 final", updates, finals, res.Chunks)
	}
	// At least: the index, each chunk's range read and trace write, the result.
	if s3Spans < 2*res.Chunks+2 {
		t.Errorf("%d S3 spans, want at least %d", s3Spans, 2*res.Chunks+2)
	}
	for _, want := range []string{"StartWorkflow:" + api.DocumentQAName, "RunWorkflow:" + api.DocumentQAName,
		// One activity before the chunks and one after them (LeanItemChange).
		"RunActivity:" + actwire.PrepareReadingName, "RunActivity:" + actwire.AnswerAndGroundName} {
		if countPrefix(spans, want) == 0 {
			t.Errorf("no span %q", want)
		}
	}

	// Never text: not the document, the question, the answer, the memory or the key.
	fact, question := docgen.Fact, docgen.Question
	for _, s := range spans {
		for _, v := range spanTexts(s) {
			for _, secret := range []string{fact, question, docgen.Answer, apiKeyMarker, res.FinalMemory} {
				if secret != "" && strings.Contains(v, secret) {
					t.Errorf("span %q carries %.40q", s.Name(), secret)
				}
			}
		}
	}

	// Metrics: tokens and model latency reached Prometheus.
	_, body := get(t, h, "/metrics")
	for _, series := range []string{
		`memagent_model_tokens_total{kind="update",model="` + res.Model + `",type="input"}`,
		`memagent_model_tokens_total{kind="final",model="` + res.Model + `",type="output"}`,
		`memagent_model_duration_seconds_count{kind="update",model="` + res.Model + `",outcome="ok"}`,
		`memagent_chunks_processed_total{model="` + res.Model + `"}`,
		`memagent_memory_tokens_count{model="` + res.Model + `"}`,
	} {
		if v, ok := sample(body, series); !ok || v <= 0 {
			t.Errorf("/metrics: %s = %v (present %v), want > 0", series, v, ok)
		}
	}
	if v, ok := sample(body, `memagent_model_duration_seconds_count{kind="update",model="`+res.Model+`",outcome="ok"}`); ok && int(v) != res.Chunks {
		t.Errorf("model duration observations for updates = %v, want %d", v, res.Chunks)
	}
	if !strings.Contains(body, "temporal_") {
		t.Error("/metrics has no Temporal SDK metrics")
	}

	if code, body := get(t, h, "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz with the worker running = %d %q, want 200", code, body)
	}
	if code, _ := get(t, h, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d, want 200", code)
	}
	probe.Stopping()
	if code, body := get(t, h, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "stopping") {
		t.Errorf("/readyz while stopping = %d %q, want 503 stopping", code, body)
	}
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, path, nil))
	b, _ := io.ReadAll(rr.Body)
	return rr.Code, string(b)
}

// sample returns the value of one series in a Prometheus text exposition.
func sample(body, series string) (float64, bool) {
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			v, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
			return v, err == nil
		}
	}
	return 0, false
}

func attrs(s sdktrace.ReadOnlySpan) map[string]attribute.Value {
	m := make(map[string]attribute.Value)
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

// spanTexts is every string a span exports besides ids.
func spanTexts(s sdktrace.ReadOnlySpan) []string {
	out := []string{s.Name(), s.Status().Description}
	for _, kv := range s.Attributes() {
		out = append(out, kv.Value.Emit())
	}
	for _, ev := range s.Events() {
		out = append(out, ev.Name)
		for _, kv := range ev.Attributes {
			out = append(out, kv.Value.Emit())
		}
	}
	for _, kv := range s.Resource().Attributes() {
		out = append(out, kv.Value.Emit())
	}
	return out
}

func countPrefix(spans []sdktrace.ReadOnlySpan, prefix string) int {
	n := 0
	for _, s := range spans {
		if strings.HasPrefix(s.Name(), prefix) {
			n++
		}
	}
	return n
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name()
	}
	return out
}
