package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/dev/devenv"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/tokenizer"
	"github.com/memagent/memagent/plugin"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
)

// The end-to-end tests run the real embedded Temporal server, the real S3
// server and the simulator over loopback HTTP, with one stack per test
// binary, and drive them through the CLI's own run function.

var (
	devOnce sync.Once
	dev     *devenv.Env
	devErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if dev != nil {
		dev.Close()
	}
	os.Exit(code)
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// stack returns the shared dev stack and points this test's environment at
// it, with its own task queue so tests do not share workers.
func stack(t *testing.T) *devenv.Env {
	t.Helper()
	devOnce.Do(func() {
		dev, devErr = devenv.Start(context.Background(), devenv.Options{
			FreePorts: true, Simulator: true, DisableUI: true,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		})
	})
	if devErr != nil {
		t.Fatalf("start dev stack: %v", devErr)
	}
	for k, v := range map[string]string{
		"TEMPORAL_ADDRESS":      dev.Stack.TemporalAddress,
		"TEMPORAL_NAMESPACE":    dev.Stack.Namespace,
		"AWS_ENDPOINT_URL_S3":   dev.Stack.S3Endpoint,
		"AWS_ACCESS_KEY_ID":     dev.Stack.S3AccessKey,
		"AWS_SECRET_ACCESS_KEY": dev.Stack.S3SecretKey,
		"AWS_REGION":            dev.Stack.Region,
		"MEMAGENT_BUCKET":       dev.Stack.Bucket,
		"OPENAI_BASE_URL":       dev.SimulatorURL,
		"MEMAGENT_TASK_QUEUE":   "e2e-" + strings.ReplaceAll(t.Name(), "/", "-"),
		"MEMAGENT_LOG_LEVEL":    "error",
		// The tests' notify_url receivers are on loopback.
		"MEMAGENT_NOTIFY_ALLOW_NETS": "127.0.0.0/8,::1/128",
	} {
		t.Setenv(k, v)
	}
	return dev
}

// startWorker runs an in-process worker on the test's task queue.
func startWorker(t *testing.T) {
	t.Helper()
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	run, err := workerapp.Start(context.Background(), cfg, workerapp.Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("start worker: %v", err)
	}
	t.Cleanup(run.Stop)
}

// testStore is the configuration stack(t) put in the environment and an
// S3 client of the stack's store.
func testStore(t *testing.T) (config.Config, *s3store.Store) {
	t.Helper()
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	store, err := plugin.NewStore(context.Background(), cfg.Options)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, store
}

// writeDoc writes a generated document with the demo's planted fact.
func writeDoc(t *testing.T, tokens int) (string, string) {
	t.Helper()
	tok, err := tokenizer.New(tokenizer.Qwen)
	if err != nil {
		t.Fatal(err)
	}
	doc := docgen.Needle(tok, tokens, 0.5, 11)
	path := filepath.Join(t.TempDir(), "doc.txt")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, doc
}

// chunkHashes returns the SHA-256 of every chunk the planner cuts from doc.
func chunkHashes(t *testing.T, doc string, chunkTokens int) []string {
	t.Helper()
	tok, _ := tokenizer.New(tokenizer.Qwen)
	idx, err := memagent.PlanChunks(strings.NewReader(doc), tok, chunkTokens)
	if err != nil {
		t.Fatal(err)
	}
	hashes := make([]string, len(idx.Chunks))
	for i, c := range idx.Chunks {
		h := sha256.Sum256([]byte(doc[c.Start:c.End]))
		hashes[i] = hex.EncodeToString(h[:])
	}
	return hashes
}

type askJSON struct {
	Answer      string `json:"answer"`
	AnswerFound bool   `json:"answer_found"`
	WorkflowID  string `json:"workflow_id"`
	Document    string `json:"document"`
	Chunks      int    `json:"chunks"`
	Tokens      int64  `json:"tokens"`
	ResultURI   string `json:"result_uri"`
	TracePrefix string `json:"trace_prefix"`
	Scores      *struct {
		ExactMatch bool `json:"exact_match"`
	} `json:"scores"`
}

func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := run(ctx, args, &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

func TestAskEndToEnd(t *testing.T) {
	d := stack(t)
	startWorker(t)
	path, doc := writeDoc(t, 30_000)
	want := chunkHashes(t, doc, 2000)
	d.Simulator.Reset()

	out, stderr, err := runCLI(t, "ask", "--doc", path, "--question", demoQuestion, "--answer", demoAnswer, "--chunk-tokens", "2000", "--json")
	if err != nil {
		t.Fatalf("ask: %v\nstderr: %s", err, stderr)
	}
	var res askJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("ask --json printed %q: %v", out, err)
	}
	if res.Answer != demoAnswer || !res.AnswerFound || res.Scores == nil || !res.Scores.ExactMatch {
		t.Errorf("answer = %q (found %v, scores %+v), want %q", res.Answer, res.AnswerFound, res.Scores, demoAnswer)
	}
	if res.Chunks != len(want) || res.WorkflowID == "" {
		t.Errorf("chunks = %d, workflow_id = %q; want %d chunks and an id", res.Chunks, res.WorkflowID, len(want))
	}

	// Every chunk was sent exactly once, in order, and each call carried
	// the memory the previous call returned.
	calls := d.Simulator.Calls()
	if len(calls) != len(want)+1 {
		t.Fatalf("simulator calls = %d, want %d updates + 1 final", len(calls), len(want))
	}
	memory := memagent.InitialMemory
	for i, c := range calls[:len(want)] {
		if c.Kind != simulator.KindUpdate || c.ChunkSHA256 != want[i] {
			t.Errorf("call %d: kind %s chunk %.12s, want update of chunk %d (%.12s)", i, c.Kind, c.ChunkSHA256, i, want[i])
		}
		if c.MemoryIn != memory {
			t.Errorf("call %d received a memory other than the one call %d returned", i, i-1)
		}
		memory = c.Output
	}
	if last := calls[len(calls)-1]; last.Kind != simulator.KindFinal || last.MemoryIn != memory {
		t.Errorf("final call: kind %s, memory matches last update: %v", last.Kind, last.MemoryIn == memory)
	}

	// The result and one trace per chunk are in S3.
	_, store := testStore(t)
	loc, err := s3store.ParseURI(res.ResultURI)
	if err != nil {
		t.Fatal(err)
	}
	data, err := store.ReadAll(context.Background(), loc)
	if err != nil || !bytes.Contains(data, []byte(demoAnswer)) {
		t.Errorf("result object %s: %v, contains answer: %v", res.ResultURI, err, bytes.Contains(data, []byte(demoAnswer)))
	}
	tp, _ := s3store.ParseURI(res.TracePrefix + "x")
	keys, err := store.List(context.Background(), tp.Bucket, strings.TrimSuffix(tp.Key, "x"), 0)
	if err != nil || len(keys) != len(want) {
		t.Errorf("traces under %s: %d (%v), want %d", res.TracePrefix, len(keys), err, len(want))
	}

	// Asking the same thing again joins the finished run: no new model calls.
	d.Simulator.Reset()
	out2, _, err := runCLI(t, "ask", "--doc", path, "--question", demoQuestion, "--answer", demoAnswer, "--chunk-tokens", "2000", "--json")
	if err != nil {
		t.Fatalf("second ask: %v", err)
	}
	var res2 askJSON
	if err := json.Unmarshal([]byte(out2), &res2); err != nil {
		t.Fatal(err)
	}
	if res2.WorkflowID != res.WorkflowID || res2.Answer != demoAnswer {
		t.Errorf("second ask: id %s answer %q, want the first run %s", res2.WorkflowID, res2.Answer, res.WorkflowID)
	}
	if n := len(d.Simulator.Calls()); n != 0 {
		t.Errorf("second ask made %d model calls, want 0", n)
	}

	// status reads progress through the query.
	st, _, err := runCLI(t, "status", res.WorkflowID)
	if err != nil || !strings.Contains(st, "stage:  done") || !strings.Contains(st, fmt.Sprintf("chunks: %d/%d", len(want), len(want))) {
		t.Errorf("status: %v\n%s", err, st)
	}
}

func TestAskRejectsBadInputBeforeStarting(t *testing.T) {
	d := stack(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.txt", "The sky is blue.")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing file", []string{"--doc", filepath.Join(dir, "nope.txt"), "--question", "q"}, "does not exist: check the path"},
		{"empty file", []string{"--doc", write("empty.txt", ""), "--question", "q"}, "has no text"},
		{"whitespace only", []string{"--doc", write("ws.txt", " \n\t\n"), "--question", "q"}, "has no text"},
		{"not utf-8", []string{"--doc", write("bin.txt", "abc\xff\xfe"), "--question", "q"}, "not UTF-8 text: invalid byte at offset 3"},
		{"bad utf-8 policy", []string{"--doc", good, "--question", "q", "--invalid-utf8", "ignore"}, `invalid_utf8 "ignore" must be`},
		{"empty folder", []string{"--doc", t.TempDir(), "--question", "q"}, "is a folder with no files in it"},
		{"folder of a bad document", []string{"--doc", dir, "--question", "q"}, "not UTF-8 text: invalid byte at offset 3"},
		{"empty question", []string{"--doc", good, "--question", "  "}, "question is empty"},
		{"no document", []string{"--question", "q"}, "no document"},
		{"question too long", []string{"--doc", good, "--question", strings.Repeat("why ", 5000)}, "over the limit of 16384"},
		{"zero chunk tokens", []string{"--doc", good, "--question", "q", "--chunk-tokens", "0"}, "chunk_tokens (0) must be positive"},
		{"missing s3 object", []string{"--doc", "s3://memagent/missing/doc.txt", "--question", "q"}, "does not exist"},
		{"bad s3 uri", []string{"--doc", "s3://bucket-only", "--question", "q"}, "names no object"},
		{"unknown model", []string{"--doc", good, "--question", "q", "--model", "no-such-model"}, `model "no-such-model" is not served`},
		{"over the model context", []string{"--doc", good, "--question", "q", "--chunk-tokens", "40000"}, "exceed the model's context (32768): lower options.chunk_tokens (--chunk-tokens) to at most"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d.Simulator.Reset()
			_, _, err := runCLI(t, append([]string{"ask"}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ask %v: error %v, want it to contain %q", tt.args, err, tt.want)
			}
			if code := exitCode(err); code != ExitBadInput {
				t.Errorf("ask %v: exit %d, want %d (bad input)", tt.args, code, ExitBadInput)
			}
			if n := len(d.Simulator.Calls()); n != 0 {
				t.Errorf("%d model calls before the error, want 0", n)
			}
		})
	}
}

// TestAskReplacesInvalidUTF8 asks about a document with invalid bytes under
// the "replace" policy: the run completes on the cleaned copy.
func TestAskReplacesInvalidUTF8(t *testing.T) {
	stack(t)
	startWorker(t)
	path := filepath.Join(t.TempDir(), "latin1.txt")
	body := "Na\xefve text from an old system.\n\n" + docgen.Fact + "\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := runCLI(t, "ask", "--doc", path, "--question", demoQuestion, "--invalid-utf8", "replace", "--json")
	if err != nil {
		t.Fatalf("ask --invalid-utf8 replace: %v\n%s", err, stderr)
	}
	var res askJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Answer != demoAnswer || !strings.Contains(res.Document, "utf8-replaced") {
		t.Errorf("answer %q over %s, want %q over the cleaned copy", res.Answer, res.Document, demoAnswer)
	}
}
