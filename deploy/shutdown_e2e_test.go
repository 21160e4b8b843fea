package deploy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/devenv"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/pluginkit"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/tokenizer"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
)

var (
	workerOnce sync.Once
	workerBin  string
	workerErr  error
)

// workerBinary builds ./worker, the binary the image runs as /worker.
func workerBinary(t *testing.T) string {
	return built(t, &workerOnce, &workerBin, &workerErr, "..", "./worker", "worker")
}

// countingSim wraps the simulator to count completion requests as they
// arrive: the simulator records a call only once it is answered, and not
// at all when its client goes away first.
type countingSim struct {
	*simulator.Server
	arrived atomic.Int64
}

func (c *countingSim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions") {
		c.arrived.Add(1)
	}
	c.Server.ServeHTTP(w, r)
}

// lockedBuffer collects a process's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

var httpAddrLine = regexp.MustCompile(`metrics and health on http://(\S+) `)

// workerProcess is the worker binary running as a container would run it.
type workerProcess struct {
	cmd     *exec.Cmd
	out     *lockedBuffer
	httpURL string
	exited  chan struct{}
	exitErr error
}

func startWorkerProcess(t *testing.T, env map[string]string) *workerProcess {
	t.Helper()
	cmd := exec.Command(workerBinary(t))
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out := &lockedBuffer{}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = io.MultiWriter(out, pw), out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &workerProcess{cmd: cmd, out: out, exited: make(chan struct{})}
	go func() {
		w.exitErr = cmd.Wait()
		pw.Close()
		close(w.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-w.exited:
		default:
			_ = cmd.Process.Kill()
			<-w.exited
		}
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := httpAddrLine.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case a := <-addr:
		w.httpURL = "http://" + a
	case <-w.exited:
		t.Fatalf("worker exited at start: %v\n%s", w.exitErr, out)
	case <-time.After(time.Minute):
		t.Fatalf("worker served no HTTP endpoint within a minute\n%s", out)
	}
	w.waitFor(t, "ready", time.Minute, func() bool { return w.status("/readyz") == http.StatusOK })
	return w
}

// done reports whether the process has exited.
func (w *workerProcess) done() bool {
	select {
	case <-w.exited:
		return true
	default:
		return false
	}
}

// status is the HTTP status of path on the worker's endpoint, 0 when it
// does not answer.
func (w *workerProcess) status(path string) int {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(w.httpURL + path)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func (w *workerProcess) waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not %s within %v\nworker output:\n%s", what, timeout, w.out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWorkerGracefulShutdown sends SIGTERM to the worker binary, as
// Kubernetes or Docker stops a container, while a model call is in flight.
// The worker must stop polling at once (no new model call starts), report
// itself not ready, let the call finish within MEMAGENT_STOP_TIMEOUT and
// exit 0; a call still running at the stop timeout is cancelled and handed
// back to Temporal, and another worker finishes the run.
func TestWorkerGracefulShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the worker binary against the embedded stack")
	}
	workerBinary(t) // first: the build does not then compete with the stack, nor count against its deadline
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
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

	// A run over a few chunks; numbered filler makes every chunk distinct.
	var b strings.Builder
	for i := range 360 {
		if i == 300 {
			b.WriteString("The courier's password is MARIGOLD-88. ")
		}
		fmt.Fprintf(&b, "Entry %d notes the tide tables and the lighthouse keeper. ", i)
	}
	const chunkTokens = 1500

	baseEnv := map[string]string{
		"TEMPORAL_ADDRESS": d.Stack.TemporalAddress, "TEMPORAL_NAMESPACE": d.Stack.Namespace,
		"AWS_ENDPOINT_URL_S3": d.Stack.S3Endpoint, "AWS_ACCESS_KEY_ID": d.Stack.S3AccessKey,
		"AWS_SECRET_ACCESS_KEY": d.Stack.S3SecretKey, "AWS_REGION": d.Stack.Region, "MEMAGENT_BUCKET": d.Stack.Bucket,
		"MEMAGENT_HTTP_ADDR": "127.0.0.1:0", "MEMAGENT_LOG_LEVEL": "info",
		"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none", "MEMAGENT_CODEC_KEYS": "", "MEMAGENT_CODEC_KEYS_FILE": "",
	}
	cfg := config.Default()
	cfg.TemporalAddress, cfg.TemporalNamespace = d.Stack.TemporalAddress, d.Stack.Namespace
	cfg.S3Endpoint, cfg.S3AccessKeyID, cfg.S3SecretAccessKey, cfg.S3Region, cfg.Bucket = d.Stack.S3Endpoint, d.Stack.S3AccessKey, d.Stack.S3SecretKey, d.Stack.Region, d.Stack.Bucket
	store, err := pluginkit.NewStore(ctx, cfg.Options)
	if err != nil {
		t.Fatal(err)
	}
	doc := s3store.Location{Bucket: d.Stack.Bucket, Key: "shutdown/doc.txt"}
	if err := store.Put(ctx, doc, []byte(b.String()), "text/plain"); err != nil {
		t.Fatal(err)
	}
	c, err := workerapp.Dial(ctx, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	tests := []struct {
		name        string
		latency     time.Duration // of every model call
		stopTimeout time.Duration
		// cutOff: the call in flight outlives the stop timeout, so it is
		// cancelled and asked again by the next worker.
		cutOff bool
	}{
		{"in-flight call finishes", 2 * time.Second, 30 * time.Second, false},
		{"call cut off at the stop timeout", 3 * time.Second, 500 * time.Millisecond, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := &countingSim{Server: simulator.New(simulator.Options{Tokenizer: tok, Latency: tt.latency})}
			srv := httptest.NewServer(sim)
			defer srv.Close()
			queue := fmt.Sprintf("shutdown-%d", i)
			env := map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "MEMAGENT_TASK_QUEUE": queue, "MEMAGENT_STOP_TIMEOUT": tt.stopTimeout.String()}
			for k, v := range baseEnv {
				env[k] = v
			}
			w := startWorkerProcess(t, env)

			run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: queue, TaskQueue: queue}, api.DocumentQAName, api.DocumentQAInput{
				// Every chunk read: no checkpoint of an earlier test run is used.
				Reuse:    api.ReuseNone,
				Document: doc.String(), Question: "What is the courier's password?",
				Options:                 api.ModelOptions{ChunkTokens: chunkTokens},
				HeartbeatTimeoutSeconds: 2,
			})
			if err != nil {
				t.Fatal(err)
			}
			// SIGTERM just after the second model call arrives.
			w.waitFor(t, "at the second model call", time.Minute, func() bool { return sim.arrived.Load() >= 2 && sim.Stats().Open == 1 })
			atTerm := sim.arrived.Load()
			termAt := time.Now()
			if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			// Not ready from the signal on, while the call finishes.
			sawNotReady := false
			for !sawNotReady && !w.done() {
				sawNotReady = w.status("/readyz") == http.StatusServiceUnavailable
				time.Sleep(10 * time.Millisecond)
			}
			select {
			case <-w.exited:
			case <-time.After(tt.stopTimeout + tt.latency + 15*time.Second):
				t.Fatalf("worker still running %v after SIGTERM\n%s", time.Since(termAt), w.out)
			}
			took := time.Since(termAt)
			if w.exitErr != nil {
				t.Errorf("worker exited with %v after SIGTERM, want 0\n%s", w.exitErr, w.out)
			}
			if !strings.Contains(w.out.String(), "worker stopped") {
				t.Errorf("no 'worker stopped' line in the worker's output\n%s", w.out)
			}
			if tt.latency > 500*time.Millisecond && !sawNotReady {
				t.Errorf("/readyz never answered 503 between SIGTERM and exit (%v)", took)
			}
			if got := sim.arrived.Load(); got != atTerm {
				t.Errorf("%d model calls started after SIGTERM, want none: the worker must stop polling at once", got-atTerm)
			}
			answered := sim.Stats().Requests[simulator.OutcomeOK]
			if tt.cutOff {
				if took > tt.stopTimeout+3*time.Second || took >= tt.latency {
					t.Errorf("worker took %v to exit with a %v stop timeout and a %v call in flight: it did not cut the call off", took, tt.stopTimeout, tt.latency)
				}
				if answered != int(atTerm)-1 {
					t.Errorf("%d of %d calls answered before exit, want all but the one cut off", answered, atTerm)
				}
			} else if answered != int(atTerm) {
				t.Errorf("%d of %d calls answered before exit: the in-flight call was not let finish", answered, atTerm)
			}
			t.Logf("SIGTERM during call %d: exit after %v (stop timeout %v, call latency %v)", atTerm, took.Round(10*time.Millisecond), tt.stopTimeout, tt.latency)

			// Another worker finishes the run; only a cut-off call is asked again.
			w2 := startWorkerProcess(t, env)
			var res api.DocumentQAResult
			if err := run.Get(ctx, &res); err != nil {
				t.Fatalf("run after the restart: %v\nworker output:\n%s", err, w2.out)
			}
			if res.Answer != "MARIGOLD-88" {
				t.Errorf("answer %q, want MARIGOLD-88", res.Answer)
			}
			calls := int(sim.arrived.Load())
			want := res.Chunks + 1 // updates and the final answer
			if tt.cutOff {
				want++
			}
			if calls != want {
				t.Errorf("%d model calls for %d chunks, want %d (repeats: only a call cut off at the stop timeout)", calls, res.Chunks, want)
			}
			_ = w2.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-w2.exited:
			case <-time.After(30 * time.Second):
				t.Errorf("idle worker still running 30s after SIGTERM")
			}
		})
	}
}
