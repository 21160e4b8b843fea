// Package clitest is what the starter's end-to-end tests share. The tests
// are spread over several packages (starter/cli and those under
// starter/cli/e2e) so that no test binary runs near go test's ten-minute
// default; each binary starts one dev stack of its own (the real embedded
// Temporal server, the real S3 server and the inference simulator over
// loopback HTTP), gives each test a task queue and a worker of its own, and
// drives the CLI in process through the run function its TestMain hands
// to Main.
package clitest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/devenv"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/pluginkit"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/tokenizer"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
)

// RunFunc runs the CLI with args, as `starter ARGS…` would.
type RunFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) error

var (
	run      RunFunc
	exitCode func(error) int

	devOnce sync.Once
	dev     *devenv.Env
	devErr  error
)

// Main is a test binary's TestMain: it runs the tests with the CLI's run
// function and exit-code mapping, then stops the binary's dev stack.
func Main(m *testing.M, r RunFunc, code func(error) int) {
	run, exitCode = r, code
	rc := m.Run()
	if dev != nil {
		dev.Close()
	}
	os.Exit(rc)
}

// Logger logs to the test at warning level and above.
func Logger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// Stack returns the binary's dev stack, started on first use, and points
// this test's environment at it, with a task queue of its own so tests do
// not share workers.
func Stack(t *testing.T) *devenv.Env {
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

// StartWorker runs an in-process worker on the test's task queue.
func StartWorker(t *testing.T) {
	t.Helper()
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	w, err := workerapp.Start(context.Background(), cfg, workerapp.Options{Logger: Logger(t)})
	if err != nil {
		t.Fatalf("start worker: %v", err)
	}
	t.Cleanup(w.Stop)
}

// Store is the configuration Stack put in the environment and an S3 client
// of the stack's store.
func Store(t *testing.T) (config.Config, *s3store.Store) {
	t.Helper()
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	store, err := pluginkit.NewStore(context.Background(), cfg.Options)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, store
}

// Dial is a Temporal client of the stack, closed when the test ends.
func Dial(t *testing.T) client.Client {
	t.Helper()
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	c, err := workerapp.Dial(context.Background(), cfg, Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// RunCLI runs the CLI with args under a two-minute deadline.
func RunCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	return RunCLIWithin(t, 2*time.Minute, args...)
}

// RunCLIWithin runs the CLI with args under a deadline of d: a command
// that converts a whole real manual on a busy machine takes longer than
// RunCLI allows.
func RunCLIWithin(t *testing.T, d time.Duration, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := run(ctx, args, &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

// BatchJSON is what `starter batch --json` prints.
type BatchJSON struct {
	Result api.BatchQAResult `json:"result"`
	Report api.BatchReport   `json:"report"`
}

// ExitFailed is the exit code of a batch some of whose items failed (the
// CLI's ExitFailed).
const ExitFailed = 1

// RunBatch runs `starter batch ARGS…` with a deadline of its own (a batch
// takes longer than RunCLI allows) and returns what it printed and how
// long it took. A batch with failed items exits 1 after printing its
// result; any other error fails the test.
func RunBatch(t *testing.T, args ...string) (BatchJSON, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	start := time.Now()
	err := run(ctx, append([]string{"batch"}, args...), &stdout, &stderr)
	took := time.Since(start)
	if err != nil && exitCode(err) != ExitFailed {
		t.Fatalf("batch: %v (exit %d)\nstderr: %s", err, exitCode(err), stderr.String())
	}
	var out BatchJSON
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("batch --json printed %q: %v", stdout.String(), err)
	}
	if err != nil && out.Result.Failed == 0 {
		t.Errorf("batch exited %d with no failed item: %v", exitCode(err), err)
	}
	return out, took
}

// WriteDoc writes a generated document with the demo's planted fact and
// returns its path and text.
func WriteDoc(t *testing.T, tokens int) (string, string) {
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

// PutDoc uploads a generated document to the stack's bucket under key and
// returns its URI.
func PutDoc(t *testing.T, key string, tokens int, seed uint64) string {
	t.Helper()
	cfg, store := Store(t)
	tok, _ := tokenizer.New(tokenizer.Qwen)
	loc := s3store.Location{Bucket: cfg.Bucket, Key: key}
	if err := store.Put(context.Background(), loc, []byte(docgen.Needle(tok, tokens, 0.5, seed)), "text/plain"); err != nil {
		t.Fatal(err)
	}
	return loc.String()
}

// DocTokens is the length of a batch test's document i: 2 or 3 chunks of
// 600 tokens.
func DocTokens(i int) int { return 1200 + 600*(i%2) }

// FillerText is a text document of about 120 words a paragraph that does
// not answer docgen.Question.
func FillerText(seed uint64, paragraphs int) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	var b strings.Builder
	for range paragraphs {
		b.WriteString(docconvtest.Paragraph(rng, 120))
		b.WriteString("\n\n")
	}
	return []byte(b.String())
}

// ChunkHashes returns the SHA-256 of every chunk the planner cuts from doc.
func ChunkHashes(t *testing.T, doc string, chunkTokens int) []string {
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

// WriteFile writes data to dir/name and returns the path.
func WriteFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// WriteManifest writes a batch manifest of the given JSON lines.
func WriteManifest(t *testing.T, lines ...string) string {
	t.Helper()
	return WriteFile(t, t.TempDir(), "m.jsonl", []byte(strings.Join(lines, "\n")+"\n"))
}

// ReadJSON decodes the JSON object at uri into v.
func ReadJSON(t *testing.T, store *s3store.Store, uri string, v any) {
	t.Helper()
	if err := json.Unmarshal(read(t, store, uri), v); err != nil {
		t.Fatalf("%s: %v", uri, err)
	}
}

// ReadResults reads a batch's results.jsonl.
func ReadResults(t *testing.T, store *s3store.Store, uri string) []api.BatchItemResult {
	t.Helper()
	var items []api.BatchItemResult
	for _, line := range bytes.Split(bytes.TrimSpace(read(t, store, uri)), []byte{'\n'}) {
		var r api.BatchItemResult
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		items = append(items, r)
	}
	return items
}

func read(t *testing.T, store *s3store.Store, uri string) []byte {
	t.Helper()
	loc, err := s3store.ParseURI(uri)
	if err != nil {
		t.Fatal(err)
	}
	data, err := store.ReadAll(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Eventually polls cond until it holds or 15 seconds pass; visibility is
// written a moment after a run changes.
func Eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 15s; last: %s", what, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// AskJSON is what `starter ask --json` prints, the part the tests read.
type AskJSON struct {
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

// ConvertedJSON is the part of `starter ask --json` these tests read.
type ConvertedJSON struct {
	AskJSON
	Source      string         `json:"source"`
	Format      string         `json:"format"`
	ResultURI   string         `json:"result_uri"`
	AnswerPages string         `json:"answer_pages"`
	Grounding   *api.Grounding `json:"grounding"`
}
