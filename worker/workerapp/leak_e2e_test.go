package workerapp_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/codec"
	"github.com/memagent/memagent/internal/dev/devenv"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/pluginkit"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/telemetry"
	"github.com/memagent/memagent/internal/tokenizer"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
)

// Markers that must never leave the process in plaintext: the API key, and
// an answer planted in the document that the simulator's memory keeps
// (the planted fact shares the question's words) and returns as the answer.
const (
	leakKeyMarker    = "sk-LEAK-E2E-KEY-MARKER-5510"
	leakMemoryMarker = "QZMEMLEAK4417"
	leakToken        = "leak-e2e-codec-token"
)

// TestNothingLeaks runs DocumentQA with payload encryption on, through
// transient model faults and one failed ask, and checks that neither the
// key, the question nor the memory marker appears in the logs (Info and
// above) of worker and client, in any span, in /metrics, in any error
// string, or anywhere in the raw history read without the codec. As a
// control, a run without the codec does show the memory marker to the same
// scan.
func TestNothingLeaks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded Temporal server")
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_TRACES_SAMPLER", "OTEL_SDK_DISABLED",
		"MEMAGENT_CODEC_KEYS", "MEMAGENT_CODEC_KEYS_FILE", "MEMAGENT_CODEC_TOKEN"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("OPENAI_API_KEY", leakKeyMarker)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	var logs lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))

	rec := tracetest.NewSpanRecorder()
	tel, err := telemetry.Setup(ctx, telemetry.Options{ServiceName: "memagent-leak-e2e", Logger: logger, SpanProcessors: []sdktrace.SpanProcessor{rec}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tel.Shutdown(context.Background()) })

	d, err := devenv.Start(ctx, devenv.Options{FreePorts: true, Simulator: true, DisableUI: true, Logger: quiet})
	if err != nil {
		t.Fatalf("StartDev: %v", err)
	}
	t.Cleanup(func() { d.Close() })

	// The codec keys come through the environment, as in production.
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MEMAGENT_CODEC_KEYS", "leak-k1:"+base64.StdEncoding.EncodeToString(raw))
	t.Setenv("MEMAGENT_CODEC_TOKEN", leakToken)
	base, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(base.CodecKeys) != 1 || strings.Contains(fmt.Sprintf("%v %+v %#v", base, base, base), base64.StdEncoding.EncodeToString(raw)) {
		t.Fatalf("config: %d codec keys, or the key formats in plaintext", len(base.CodecKeys))
	}
	plainBase := base
	plainBase.CodecKeys = nil

	// A model pool that fails some calls with 500s: Temporal retries them,
	// and their errors go through logs, spans and history.
	tok, err := tokenizer.New(tokenizer.Qwen)
	if err != nil {
		t.Fatal(err)
	}
	sim := simulator.New(simulator.Options{Tokenizer: tok, Faults: simulator.Faults{ServerError: 0.3, Seed: 11}})
	simURL := serve(t, sim)

	cfg := base.AtDevStack(d.Addresses())
	cfg.ModelURLs = []string{simURL + "/v1"}
	cfg.ModelAPIKey = leakKeyMarker // the simulator accepts any key
	cfg.TaskQueue = "leak-e2e"
	cfg.HTTPAddr = ""

	doc := strings.Replace(docgen.Needle(tok, 12_000, 0.5, 7), docgen.Answer, leakMemoryMarker, 1)
	if !strings.Contains(doc, leakMemoryMarker) {
		t.Fatal("the marker is not in the document")
	}
	store, err := pluginkit.NewStore(ctx, cfg.Options)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.EnsureBucket(ctx, cfg.Bucket, true); err != nil {
		t.Fatal(err)
	}
	docLoc := s3store.Location{Bucket: cfg.Bucket, Key: "leak/doc.txt"}
	if err := store.Put(ctx, docLoc, []byte(doc), "text/plain"); err != nil {
		t.Fatal(err)
	}

	// The worker and the starter, as worker/main.go and starter ask wire them.
	wk, err := workerapp.Start(ctx, cfg, workerapp.Options{Logger: logger})
	if err != nil {
		t.Fatalf("start worker: %v", err)
	}
	t.Cleanup(wk.Stop)
	starter, err := workerapp.Dial(ctx, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(starter.Close)

	opts := api.ModelOptions{ChunkTokens: 2000}
	in := api.DocumentQAInput{Reuse: api.ReuseNone, Document: docLoc.String(), Question: docgen.Question, Options: opts, ChunksPerRun: 2}
	start := func(c client.Client, queue, id string, in api.DocumentQAInput) client.WorkflowRun {
		t.Helper()
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: id, TaskQueue: queue,
			// What starter ask sets without a codec: the SDK encodes the
			// summary with the client's data converter, so it is checked
			// here like every other payload.
			StaticSummary:         "Q: " + in.Question,
			Memo:                  map[string]any{"model_options": in.Options.WithDefaults()},
			TypedSearchAttributes: api.StartSearchAttributes(in),
		}, api.DocumentQAName, in)
		if err != nil {
			t.Fatalf("ExecuteWorkflow: %v", err)
		}
		return run
	}
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	run := start(starter, cfg.TaskQueue, "leak-e2e-"+suffix, in)
	firstRunID := run.GetRunID() // Get follows the run's continuations
	var res api.DocumentQAResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("run: %v", err)
	}
	// With the codec the result decodes: the test can see the marker.
	if res.Answer != leakMemoryMarker || !strings.Contains(res.FinalMemory, leakMemoryMarker) || res.Runs < 2 {
		t.Fatalf("answer %q, memory %.80q over %d runs; want %q, a memory holding it, and a continue-as-new", res.Answer, res.FinalMemory, res.Runs, leakMemoryMarker)
	}
	if st := sim.Stats(); st.Faults[simulator.FaultServerError] == 0 {
		t.Fatalf("the simulator injected no faults (%v): the error paths were not exercised", st.Faults)
	}

	// A failed ask: the document is missing.
	var errs []string
	missing := in
	missing.Document = s3store.Location{Bucket: cfg.Bucket, Key: "leak/missing.txt"}.String()
	err = start(starter, cfg.TaskQueue, "leak-e2e-missing-"+suffix, missing).Get(ctx, nil)
	if err == nil {
		t.Fatal("the run on a missing document succeeded")
	}
	errs = append(errs, err.Error())
	for e := errors.Unwrap(err); e != nil; e = errors.Unwrap(e) {
		errs = append(errs, e.Error())
	}

	// The codec server on the worker's HTTP endpoint decodes for the token
	// holder only.
	codecServer, err := workerapp.CodecServer(cfg)
	if err != nil || codecServer == nil {
		t.Fatalf("CodecServer = %v, %v", codecServer, err)
	}
	h := workerapp.Handler(tel.Prometheus, new(workerapp.Probe), workerapp.WithCodecServer(codecServer))

	plainCfg := cfg
	plainCfg.CodecKeys = nil
	plain, err := workerapp.Dial(ctx, plainCfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plain.Close)
	scan := scanHistory(ctx, t, plain, run.GetID(), firstRunID)
	if scan.runs != res.Runs {
		t.Errorf("scanned %d runs, the result says %d", scan.runs, res.Runs)
	}
	if scan.encrypted == 0 {
		t.Error("no payload in the raw history is encrypted")
	}
	for _, p := range scan.plain {
		t.Errorf("payload at %s is not encrypted (encoding %q)", p.path, p.encoding)
	}
	if len(scan.failures) == 0 {
		t.Error("no failure in the raw history: the faults' errors were not recorded")
	}
	// The missing document's run: its failure is encrypted too.
	missingScan := scanHistory(ctx, t, plain, "leak-e2e-missing-"+suffix, "")
	for _, p := range missingScan.plain {
		t.Errorf("failed run: payload at %s is not encrypted (encoding %q)", p.path, p.encoding)
	}
	for _, f := range append(scan.failures, missingScan.failures...) {
		if f.GetMessage() != "Encoded failure" || string(f.GetEncodedAttributes().GetMetadata()[converter.MetadataEncoding]) != codec.EncodingEncrypted {
			t.Errorf("failure %q is not encoded (encoded attributes %v)", f.GetMessage(), f.GetEncodedAttributes().GetMetadata())
		}
	}
	decoded := decodeVia(t, h, scan.firstEncrypted)
	if !strings.Contains(decoded, "Halvorsen") {
		t.Errorf("the codec server's decoding of the workflow input = %.200q, want the question", decoded)
	}

	// Everything that left the process, in one list.
	wk.Worker.Stop()
	_, metrics := get(t, h, "/metrics")
	outputs := map[string]string{
		"logs":          logs.String(),
		"metrics":       metrics,
		"errors":        strings.Join(errs, "\n"),
		"raw history":   string(scan.bytes),
		"failed run":    string(missingScan.bytes),
		"search attrs":  scan.searchAttrs,
		"codec summary": summaryOf(ctx, t, plain, run.GetID()),
	}
	for _, s := range rec.Ended() {
		outputs["span "+s.Name()] = strings.Join(spanTexts(s), "\n")
	}
	if !strings.Contains(outputs["logs"], "level=WARN") && !strings.Contains(outputs["logs"], "level=ERROR") {
		t.Error("no warning or error was logged: the fault paths reached no log")
	}
	for where, text := range outputs {
		for _, secret := range []string{leakKeyMarker, leakMemoryMarker, docgen.Question, "Halvorsen observatory"} {
			if strings.Contains(text, secret) {
				i := strings.Index(text, secret)
				t.Errorf("%s carries %q: …%q…", where, secret, text[max(0, i-120):min(len(text), i+len(secret)+40)])
			}
		}
	}

	// Control: the same scan of a run without the codec finds the memory
	// marker, so the scan above could have found it.
	ctl := plainBase.AtDevStack(d.Addresses())
	ctl.TaskQueue = "leak-e2e-control"
	ctl.HTTPAddr = ""
	ctlActs, ctlPool, err := pluginkit.NewActivities(ctx, workerapp.PluginOptions(ctl, workerapp.Options{Logger: quiet}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ctlPool.Close)
	ctlWorker := workerapp.NewWorker(plain, ctl, ctlActs, ctlPool.Capacity(), workerapp.Options{})
	if err := ctlWorker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ctlWorker.Stop)
	ctlIn := in
	ctlIn.ChunksPerRun = 0
	ctlRun := start(plain, ctl.TaskQueue, "leak-e2e-control-"+suffix, ctlIn)
	ctlRunID := ctlRun.GetRunID()
	if err := ctlRun.Get(ctx, nil); err != nil {
		t.Fatalf("control run: %v", err)
	}
	ctlScan := scanHistory(ctx, t, plain, ctlRun.GetID(), ctlRunID)
	if !bytes.Contains(ctlScan.bytes, []byte(leakMemoryMarker)) || ctlScan.encrypted != 0 {
		t.Errorf("control: the raw history of a run without the codec holds the marker = %v, %d encrypted payloads; want true, 0",
			bytes.Contains(ctlScan.bytes, []byte(leakMemoryMarker)), ctlScan.encrypted)
	}
}

// serve serves h on a loopback port until the test ends and returns its URL.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String()
}

// lockedBuffer is a bytes.Buffer safe for the worker's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// historyScan is what scanHistory found in a chain of runs.
type historyScan struct {
	runs           int
	bytes          []byte // every event, marshalled
	encrypted      int
	firstEncrypted *commonpb.Payload
	plain          []plainPayload // outside search attributes and headers
	failures       []*failurepb.Failure
	searchAttrs    string
}

type plainPayload struct{ path, encoding string }

// scanHistory reads the raw history of the run and of every run it
// continued as, with c (a client without the codec), and classifies every
// payload in it.
func scanHistory(ctx context.Context, t *testing.T, c client.Client, id, runID string) historyScan {
	t.Helper()
	var s historyScan
	for {
		s.runs++
		next := ""
		it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatalf("history of %s/%s: %v", id, runID, err)
			}
			b, err := proto.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			s.bytes = append(s.bytes, b...)
			s.walk(ev.ProtoReflect(), ev.GetEventType().String())
			if can := ev.GetWorkflowExecutionContinuedAsNewEventAttributes(); can != nil {
				next = can.GetNewExecutionRunId()
			}
		}
		if next == "" || runID == "" {
			return s
		}
		runID = next
	}
}

// walk visits every message under m, recording payloads and failures.
func (s *historyScan) walk(m protoreflect.Message, path string) {
	switch v := m.Interface().(type) {
	case *commonpb.Payload:
		enc := string(v.GetMetadata()[converter.MetadataEncoding])
		switch {
		case strings.Contains(path, "search_attributes"):
			s.searchAttrs += path + "=" + string(v.GetData()) + "\n"
		case strings.Contains(path, "header"):
			// Tracing context, written in plaintext by the interceptor.
		case enc == codec.EncodingEncrypted:
			s.encrypted++
			if s.firstEncrypted == nil {
				s.firstEncrypted = v
			}
		default:
			s.plain = append(s.plain, plainPayload{path, enc})
		}
		return
	}
	if f, ok := m.Interface().(*failurepb.Failure); ok {
		s.failures = append(s.failures, f)
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		p := path + "." + string(fd.Name())
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := 0; i < v.List().Len(); i++ {
				s.walk(v.List().Get(i).Message(), p)
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				s.walk(mv.Message(), p+"["+k.String()+"]")
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
			s.walk(v.Message(), p)
		}
		return true
	})
}

// summaryOf is the run's summary as a client without the codec sees it.
func summaryOf(ctx context.Context, t *testing.T, c client.Client, id string) string {
	t.Helper()
	desc, err := c.DescribeWorkflow(ctx, id, "")
	if err != nil {
		t.Fatalf("describe %s: %v", id, err)
	}
	s, err := desc.GetStaticSummary()
	if err != nil {
		return "undecodable: " + err.Error()
	}
	return s
}

// decodeVia decodes p through the codec server mounted on h, as the
// Temporal UI does, checking that it refuses a request without the token.
func decodeVia(t *testing.T, h http.Handler, p *commonpb.Payload) string {
	t.Helper()
	if p == nil {
		t.Error("no encrypted payload to decode")
		return ""
	}
	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: []*commonpb.Payload{p}})
	if err != nil {
		t.Fatal(err)
	}
	post := func(token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, workerapp.CodecPath+"/decode", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", config.DevUIURL)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rr := httptest.NewRecorder()
		h.ServeHTTP(rr, req)
		return rr
	}
	if rr := post(""); rr.Code != http.StatusUnauthorized {
		t.Errorf("codec server without the token: status %d, want 401", rr.Code)
	}
	rr := post(leakToken)
	if rr.Code != http.StatusOK || rr.Header().Get("Access-Control-Allow-Origin") != config.DevUIURL {
		t.Fatalf("codec server: status %d, CORS %q: %s", rr.Code, rr.Header().Get("Access-Control-Allow-Origin"), rr.Body)
	}
	var out commonpb.Payloads
	b, _ := io.ReadAll(rr.Body)
	if err := protojson.Unmarshal(b, &out); err != nil || len(out.Payloads) != 1 {
		t.Fatalf("codec server answer %s: %v", b, err)
	}
	return string(out.Payloads[0].GetData())
}
