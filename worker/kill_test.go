package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
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

// subprocessEnv makes the test binary act as the worker command, so the
// test can SIGKILL a real, separate worker process.
const subprocessEnv = "MEMAGENT_TEST_WORKER_PROCESS"

// subprocessArgsEnv holds the worker process's arguments, space-separated.
const subprocessArgsEnv = "MEMAGENT_TEST_WORKER_ARGS"

func TestMain(m *testing.M) {
	if os.Getenv(subprocessEnv) == "1" {
		os.Args = append(os.Args[:1], strings.Fields(os.Getenv(subprocessArgsEnv))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// syncBuffer collects a subprocess's output for the test log.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestWorkerSIGKILLResumes kills the worker process with SIGKILL at random
// points of a run and restarts it: the run finishes with the clean run's
// answer, and no completed chunk is asked of the model again.
func TestWorkerSIGKILLResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
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
	sim := simulator.New(simulator.Options{Tokenizer: tok, Latency: 150 * time.Millisecond})
	simSrv := httptest.NewServer(sim)
	defer simSrv.Close()

	env := map[string]string{
		"TEMPORAL_ADDRESS": d.Stack.TemporalAddress, "TEMPORAL_NAMESPACE": d.Stack.Namespace,
		"AWS_ENDPOINT_URL_S3": d.Stack.S3Endpoint, "AWS_ACCESS_KEY_ID": d.Stack.S3AccessKey,
		"AWS_SECRET_ACCESS_KEY": d.Stack.S3SecretKey, "AWS_REGION": d.Stack.Region,
		"MEMAGENT_BUCKET": d.Stack.Bucket, "OPENAI_BASE_URL": simSrv.URL + "/v1",
		"MEMAGENT_TASK_QUEUE": "kill-test", "MEMAGENT_LOG_LEVEL": "warn",
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	store, err := pluginkit.NewStore(ctx, cfg.Options)
	if err != nil {
		t.Fatal(err)
	}
	// Numbered filler makes every chunk's text, and so its hash, distinct.
	var b strings.Builder
	for i := range 2400 {
		if i == 1200 {
			b.WriteString("The vault combination is 4417-ORCHID. ")
		}
		fmt.Fprintf(&b, "Note %d is about river boats and harvest weather. ", i)
	}
	doc := b.String()
	docLoc := s3store.Location{Bucket: d.Stack.Bucket, Key: "kill/doc.txt"}
	if err := store.Put(ctx, docLoc, []byte(doc), "text/plain"); err != nil {
		t.Fatal(err)
	}
	c, err := workerapp.Dial(ctx, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	in := api.DocumentQAInput{
		// Every chunk read: no checkpoint of an earlier test run is used.
		Reuse:    api.ReuseNone,
		Document: docLoc.String(), Question: "What is the vault combination?",
		Options:                 api.ModelOptions{ChunkTokens: 400},
		HeartbeatTimeoutSeconds: 2,
		ChunksPerRun:            15,
	}

	startWorkerProcess := func() (*exec.Cmd, *syncBuffer) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), subprocessEnv+"=1")
		out := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, out
	}
	progress := func(id string) api.Progress {
		var p api.Progress
		v, err := c.QueryWorkflow(ctx, id, "", api.ProgressQuery)
		if err == nil {
			_ = v.Get(&p)
		}
		return p
	}

	// The clean run.
	w, out := startWorkerProcess()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "clean", TaskQueue: "kill-test"}, api.DocumentQAName, in)
	if err != nil {
		t.Fatal(err)
	}
	var clean api.DocumentQAResult
	if err := run.Get(ctx, &clean); err != nil {
		t.Fatalf("clean run: %v\nworker output:\n%s", err, out)
	}
	chunks := clean.Chunks
	if clean.Answer != "4417-ORCHID" || chunks < 20 {
		t.Fatalf("clean run: answer %q over %d chunks, want 4417-ORCHID over 20+", clean.Answer, chunks)
	}
	sim.Reset()

	// The killed run.
	run, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "killed", TaskQueue: "kill-test"}, api.DocumentQAName, in)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const kills = 3
	for k := 0; k < kills; k++ {
		target := (k+1)*chunks/(kills+1) + rng.IntN(3) - 1
		for deadline := time.Now().Add(time.Minute); progress("killed").ChunksDone < target; {
			if time.Now().After(deadline) {
				t.Fatalf("kill %d: no progress to chunk %d within a minute (at %d)\nworker output:\n%s", k, target, progress("killed").ChunksDone, out)
			}
			time.Sleep(20 * time.Millisecond)
		}
		at := progress("killed").ChunksDone
		if err := w.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = w.Wait()
		t.Logf("kill %d: SIGKILL at chunk %d/%d", k+1, at, chunks)
		w, out = startWorkerProcess()
	}
	var killed api.DocumentQAResult
	if err := run.Get(ctx, &killed); err != nil {
		t.Fatalf("killed run: %v\nworker output:\n%s", err, out)
	}
	_ = w.Process.Kill()
	_ = w.Wait()

	if killed.Answer != clean.Answer || killed.FinalMemory != clean.FinalMemory {
		t.Errorf("killed run: answer %q, want the clean run's %q (memories equal: %v)", killed.Answer, clean.Answer, killed.FinalMemory == clean.FinalMemory)
	}
	perChunk := map[string]int{}
	updates := 0
	for _, call := range sim.Calls() {
		if call.Kind == simulator.KindUpdate {
			perChunk[call.ChunkSHA256]++
			updates++
		}
	}
	if len(perChunk) != chunks {
		t.Errorf("distinct chunks asked = %d, want %d", len(perChunk), chunks)
	}
	if extra := updates - chunks; extra < 0 || extra > kills {
		t.Errorf("update calls = %d for %d chunks: %d repeats, want at most %d (one in-flight call per kill)", updates, chunks, extra, kills)
	}
	t.Logf("%d chunks, %d update calls after %d kills, answer %q, %d runs", chunks, updates, kills, killed.Answer, killed.Runs)
}
