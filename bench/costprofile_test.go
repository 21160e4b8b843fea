package main

import (
	"bytes"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stack []string // leaf first
		want  costPart
	}{
		{"gc assist under memagent", []string{"runtime.scanobject", "runtime.gcDrainN", "runtime.gcAssistAlloc1", "runtime.mallocgc", "github.com/memagent/memagent/internal/memagent.Templates.RenderUpdate"}, partGC},
		{"background mark", []string{"runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker.func2", "runtime.gcBgMarkWorker"}, partGC},
		{"grpc gzip", []string{"compress/flate.(*compressor).init", "compress/gzip.(*Writer).Write", "google.golang.org/grpc/encoding/gzip.(*writer).Close", "google.golang.org/grpc.compress"}, partGzip},
		{"heartbeat encode", []string{"encoding/json.Marshal", "go.temporal.io/sdk/converter.(*JSONPayloadConverter).ToPayload", "go.temporal.io/sdk/internal.RecordActivityHeartbeat", "go.temporal.io/sdk/activity.RecordHeartbeat", "github.com/memagent/memagent/activities.(*heartbeat).keep"}, partHeartbeat},
		{"heartbeat send", []string{"google.golang.org/grpc.(*ClientConn).Invoke", "go.temporal.io/sdk/internal.(*temporalInvoker).internalHeartBeat"}, partHeartbeat},
		{"model json", []string{"encoding/json.Marshal", "github.com/sashabaranov/go-openai.(*Client).CreateChatCompletion", "github.com/memagent/memagent/internal/inference.(*Pool).Complete", "github.com/memagent/memagent/activities.(*Activities).updateMemory", "go.temporal.io/sdk/internal.(*activityTaskHandlerImpl).Execute"}, partModel},
		{"render", []string{"strings.(*Builder).WriteString", "github.com/memagent/memagent/internal/memagent.Templates.RenderUpdate", "github.com/memagent/memagent/activities.(*Activities).updateMemory"}, partPrompt},
		{"indexing tokenizer", []string{"github.com/pkoukk/tiktoken-go.(*CoreBPE).encodeNative", "github.com/memagent/memagent/internal/tokenizer.(*BPE).Count", "github.com/memagent/memagent/activities.(*Activities).planDocument", "github.com/memagent/memagent/activities.(*Activities).prepareDocument"}, partIndexing},
		{"checkpoint write", []string{"github.com/aws/aws-sdk-go-v2/service/s3.(*Client).PutObject", "github.com/memagent/memagent/internal/s3store.(*Store).Put", "github.com/memagent/memagent/activities.(*Activities).writeCheckpoint"}, partCheckpoint},
		{"trace write", []string{"github.com/aws/smithy-go/middleware.(*Stack).HandleMiddleware", "github.com/memagent/memagent/internal/s3store.(*Store).Put", "github.com/memagent/memagent/activities.(*Activities).writeUpdate"}, partS3},
		{"workflow task", []string{"google.golang.org/protobuf/proto.Unmarshal", "go.temporal.io/sdk/internal.(*workflowTaskProcessor).processWorkflowTask"}, partWorkflow},
		{"workflow code", []string{"github.com/memagent/memagent/workflows.documentQA", "go.temporal.io/sdk/internal.(*syncWorkflowDefinition).Execute.func1"}, partWorkflow},
		{"poll", []string{"google.golang.org/grpc/internal/transport.(*http2Client).NewStream", "go.temporal.io/sdk/internal.(*workflowTaskPoller).PollTask"}, partPoll},
		{"activity completion", []string{"google.golang.org/grpc.(*ClientConn).Invoke", "go.temporal.io/sdk/internal.(*activityTaskPoller).ProcessTask"}, partActivity},
		{"activity dispatch", []string{"go.temporal.io/sdk/internal.(*activityTaskHandlerImpl).Execute"}, partActivity},
		{"grpc reader", []string{"golang.org/x/net/http2.(*Framer).ReadFrame", "google.golang.org/grpc/internal/transport.(*http2Client).reader"}, partSDK},
		{"http read loop", []string{"bufio.(*Reader).Peek", "net/http.(*persistConn).readLoop"}, partHTTP},
		{"otel", []string{"go.opentelemetry.io/otel/sdk/trace.(*recordingSpan).End", "github.com/memagent/memagent/internal/telemetry.End"}, partTelemetry},
		{"scheduler", []string{"runtime.futex", "runtime.findRunnable", "runtime.schedule"}, partRuntime},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := classify(tc.stack); got != tc.want {
				t.Errorf("classify(%q) = %q, want %q", tc.stack, got.Name, tc.want.Name)
			}
		})
	}
}

// TestAttributeReadsAProfile checks that a profile of this process
// parses and its parts add up to its total.
func TestAttributeReadsAProfile(t *testing.T) {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Skip("a CPU profile is already running:", err)
	}
	deadline := time.Now().Add(300 * time.Millisecond)
	n := 0
	for time.Now().Before(deadline) {
		n += len(make([]byte, 1<<10))
	}
	pprof.StopCPUProfile()
	a, err := attribute(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var sum time.Duration
	for _, d := range a.Parts {
		sum += d
	}
	if a.Total <= 0 || sum != a.Total {
		t.Errorf("total %v, parts sum %v (%d bytes made)", a.Total, sum, n)
	}
}

// The attribution's rows apply the profile's shares to the worker's CPU
// per chunk update, and its orchestration is compared with the bare
// activity's whole worker CPU.
func TestWriteCostAttribution(t *testing.T) {
	ms := time.Millisecond
	r := costResult{
		Batch: costFigures{ChunkUpdates: 100, Worker: 800 * ms, WorkerPeakRSS: 64 << 20},
		Bare:  costFigures{ChunkUpdates: 100, Worker: 200 * ms, WorkerPeakRSS: 32 << 20},
		BatchProfile: costAttribution{Total: 80 * ms, Parts: map[costPart]time.Duration{
			partIndexing: 20 * ms, partModel: 20 * ms, partGzip: 10 * ms, partWorkflow: 20 * ms, partGC: 10 * ms}},
		BareProfile: costAttribution{Total: 20 * ms, Parts: map[costPart]time.Duration{partWorkflow: 15 * ms, partRuntime: 5 * ms}},
	}
	var b strings.Builder
	writeCostAttribution(&b, r)
	out := b.String()
	for _, want := range []string{
		"| **memagent's work** | **4.00 ms (50%)** | **0.00 ms (0%)** |",
		"| gRPC gzip (the SDK's default compression of every request and reply) | 1.00 ms (12%) | 0.00 ms (0%) |",
		"| **orchestration** | **3.00 ms (38%)** | **1.50 ms (75%)** |",
		"| **garbage collection** | **1.00 ms (12%)** | **0.00 ms (0%)** |",
		"peak resident set (VmHWM) at each phase's end: memagent batch 64 MB, bare activity 32 MB.",
		"memagent's orchestration a chunk update, 3.00 ms, is 1.50× the bare activity's whole worker CPU (2.00 ms",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("attribution lacks %q:\n%s", want, out)
		}
	}
	var none strings.Builder
	writeCostAttribution(&none, costResult{Batch: r.Batch, Bare: r.Bare})
	if none.Len() != 0 {
		t.Errorf("without profiles the attribution wrote %q", none.String())
	}
}
