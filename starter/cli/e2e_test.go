package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/starter/cli/clitest"
)

// The end-to-end tests run the real embedded Temporal server, the real S3
// server and the simulator over loopback HTTP, with one stack per test
// binary, and drive them through the CLI's own run function (clitest).
// Those that need only the CLI's exported surface live in the packages
// under e2e/, each a test binary of its own, so that no binary runs near
// go test's ten-minute default on two cores; those here use the
// package's own types.

func TestMain(m *testing.M) {
	clitest.Main(m, func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		return run(ctx, args, stdout, stderr)
	}, exitCode)
}

type askJSON = clitest.AskJSON

var (
	stack         = clitest.Stack
	startWorker   = clitest.StartWorker
	testStore     = clitest.Store
	testLogger    = clitest.Logger
	dialTest      = clitest.Dial
	writeDoc      = clitest.WriteDoc
	putDoc        = clitest.PutDoc
	chunkHashes   = clitest.ChunkHashes
	runCLI        = clitest.RunCLI
	runBatchCLI   = clitest.RunBatch
	writeFile     = clitest.WriteFile
	writeManifest = clitest.WriteManifest
	fillerText    = clitest.FillerText
	readJSON      = clitest.ReadJSON
	readResults   = clitest.ReadResults
	eventually    = clitest.Eventually
	docTokens     = clitest.DocTokens
)

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
	// An unknown model and a prompt over the model's context are refused
	// by the worker (PrepareDocument), before any model call.
	startWorker(t)
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
