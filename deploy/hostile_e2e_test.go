package deploy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/devenv"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/pluginkit"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/tokenizer"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
)

// hostileInput is one document a hostile caller could hand a worker.
type hostileInput struct {
	name string
	make func() []byte
	// settle is how the run must end: "" for an answer, else the failure
	// type.
	settle string
}

// hostileInputs are docconvtest's hostile documents, each to end as
// memagent.BadInput, and a text of 1 MiB without whitespace, to be read.
func hostileInputs() []hostileInput {
	var out []hostileInput
	for _, h := range docconvtest.HostileInputs() {
		out = append(out, hostileInput{h.Name, h.Make, api.ErrBadInput})
	}
	return append(out, hostileInput{"text: 1 MiB without whitespace", func() []byte { return bytes.Repeat([]byte("a"), 1<<20) }, ""})
}

// TestHostileInputsOnTheWorkerBinary runs the worker binary as a container
// would and hands it each hostile input as a DocumentQA: every run ends
// (failed as memagent.BadInput naming a limit, or answered), the worker's
// peak resident set (VmHWM) stays under the chart's 1 GiB, and the same
// worker then answers a normal question.
func TestHostileInputsOnTheWorkerBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the worker binary against the embedded stack")
	}
	workerBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	d, err := devenv.Start(ctx, devenv.Options{FreePorts: true, DisableUI: true, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	tok, err := tokenizer.New(tokenizer.Qwen)
	if err != nil {
		t.Fatal(err)
	}
	sim := httptest.NewServer(simulator.New(simulator.Options{Tokenizer: tok}))
	defer sim.Close()
	cfg := config.Default()
	cfg.TemporalAddress, cfg.TemporalNamespace = d.Stack.TemporalAddress, d.Stack.Namespace
	cfg.S3Endpoint, cfg.S3AccessKeyID, cfg.S3SecretAccessKey, cfg.S3Region, cfg.Bucket = d.Stack.S3Endpoint, d.Stack.S3AccessKey, d.Stack.S3SecretKey, d.Stack.Region, d.Stack.Bucket
	store, err := pluginkit.NewStore(ctx, cfg.Options)
	if err != nil {
		t.Fatal(err)
	}
	c, err := workerapp.Dial(ctx, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const queue = "hostile"
	w := startWorkerProcess(t, map[string]string{
		"TEMPORAL_ADDRESS": d.Stack.TemporalAddress, "TEMPORAL_NAMESPACE": d.Stack.Namespace,
		"AWS_ENDPOINT_URL_S3": d.Stack.S3Endpoint, "AWS_ACCESS_KEY_ID": d.Stack.S3AccessKey,
		"AWS_SECRET_ACCESS_KEY": d.Stack.S3SecretKey, "AWS_REGION": d.Stack.Region, "MEMAGENT_BUCKET": d.Stack.Bucket,
		"MEMAGENT_HTTP_ADDR": "127.0.0.1:0", "MEMAGENT_LOG_LEVEL": "warn", "MEMAGENT_TASK_QUEUE": queue,
		"OPENAI_BASE_URL":      sim.URL + "/v1",
		"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none", "MEMAGENT_CODEC_KEYS": "", "MEMAGENT_CODEC_KEYS_FILE": "",
	})

	ask := func(t *testing.T, id string, doc []byte, question string) (*api.DocumentQAResult, error) {
		t.Helper()
		loc := s3store.Location{Bucket: d.Stack.Bucket, Key: "hostile/" + id}
		if err := store.Put(ctx, loc, doc, "application/octet-stream"); err != nil {
			t.Fatal(err)
		}
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, api.DocumentQAName,
			api.DocumentQAInput{Reuse: api.ReuseNone, Document: loc.String(), Question: question, HeartbeatTimeoutSeconds: 5})
		if err != nil {
			t.Fatal(err)
		}
		var res api.DocumentQAResult
		err = run.Get(ctx, &res)
		return &res, err
	}
	for i, in := range hostileInputs() {
		t.Run(in.name, func(t *testing.T) {
			doc := in.make()
			began := time.Now()
			_, err := ask(t, fmt.Sprintf("hostile-%d", i), doc, "What does it say?")
			took := time.Since(began)
			var appErr *temporal.ApplicationError
			switch {
			case in.settle == "" && err != nil:
				t.Errorf("run failed: %v", err)
			case in.settle != "" && (!errors.As(err, &appErr) || appErr.Type() != in.settle):
				t.Errorf("run ended with %v, want %s", err, in.settle)
			}
			peak := w.peakRSS(t)
			t.Logf("%d bytes: %v in %v; worker peak so far %.0f MB", len(doc), errMessage(err), took.Round(10*time.Millisecond), float64(peak)/(1<<20))
			if peak >= 1<<30 {
				t.Fatalf("worker peak resident set %.0f MB, over the chart's 1 GiB", float64(peak)/(1<<20))
			}
			if w.done() {
				t.Fatalf("the worker died: %v\n%s", w.exitErr, w.out)
			}
		})
	}
	t.Run("two hostile PDFs at once", func(t *testing.T) {
		errs := make(chan error, 2)
		for i := range 2 {
			go func() {
				_, err := ask(t, fmt.Sprintf("hostile-pdf-%d", i), docconvtest.XObjectBombPDF(64000+i), "What does it say?")
				errs <- err
			}()
		}
		for range 2 {
			var appErr *temporal.ApplicationError
			if err := <-errs; !errors.As(err, &appErr) || appErr.Type() != api.ErrBadInput {
				t.Errorf("run ended with %v, want %s", err, api.ErrBadInput)
			}
		}
		peak := w.peakRSS(t)
		t.Logf("worker peak so far %.0f MB", float64(peak)/(1<<20))
		if peak >= 1<<30 {
			t.Fatalf("worker peak resident set %.0f MB, over the chart's 1 GiB", float64(peak)/(1<<20))
		}
	})
	t.Run("a normal question afterwards", func(t *testing.T) {
		var b strings.Builder
		for i := range 200 {
			if i == 150 {
				b.WriteString("The courier's password is MARIGOLD-88. ")
			}
			fmt.Fprintf(&b, "Entry %d notes the tide tables and the lighthouse keeper. ", i)
		}
		began := time.Now()
		res, err := ask(t, "hostile-after", []byte(b.String()), "What is the courier's password?")
		if err != nil || res.Answer != "MARIGOLD-88" {
			t.Fatalf("answer %q, %v: want MARIGOLD-88", res.Answer, err)
		}
		t.Logf("answered in %v", time.Since(began).Round(10*time.Millisecond))
	})
}

func errMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Type() + ": " + appErr.Message()
	}
	if err != nil {
		return err.Error()
	}
	return "answered"
}

// peakRSS is the worker process's peak resident set, from VmHWM.
func (w *workerProcess) peakRSS(t *testing.T) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", w.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("read the worker's status: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err == nil {
				return kb << 10
			}
		}
	}
	t.Fatal("no VmHWM in the worker's status")
	return 0
}

// TestHostileInputsAreSmall: the generators make what a hostile caller
// would send, a few hundred KB at most (the HTML aside).
func TestHostileInputsAreSmall(t *testing.T) {
	for _, in := range hostileInputs() {
		if n := len(in.make()); n > 2<<20 && !strings.HasPrefix(in.name, "HTML") {
			t.Errorf("%s: %d bytes", in.name, n)
		}
	}
}
