package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/tokenizer"
)

// TestEmbedInAnotherModule builds testdata/embed, a service in a module of
// its own (example.com/embed, with a replace to this repository), offline
// from the module cache and its committed go.sum, and runs it against the
// shared dev stack with an empty environment: it configures the plugin in
// code from its flags, runs its own workflow next to memagent's on one
// worker, uploads a document with its own S3 client and asks DocumentQA
// about it. It proves that the public packages are enough to embed
// memagent, without internal/ and without environment variables.
func TestEmbedInAnotherModule(t *testing.T) {
	st := sharedStack(t)
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	dir := t.TempDir()
	bin := filepath.Join(dir, "embed")
	build := exec.CommandContext(ctx, goCmd, "build", "-o", bin, ".")
	build.Dir = filepath.Join("testdata", "embed")
	// Only what locates the toolchain and its caches: the nested module
	// must build from its own go.mod and go.sum, offline.
	build.Env = []string{"GOFLAGS=-mod=readonly -buildvcs=false", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local"}
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "GOROOT", "GOPATH", "GOCACHE", "GOMODCACHE", "GOENV"} {
		if v, ok := os.LookupEnv(k); ok {
			build.Env = append(build.Env, k+"="+v)
		}
	}
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build in testdata/embed: %v\n%s", err, out)
	}

	tok, err := tokenizer.New(tokenizer.Qwen)
	if err != nil {
		t.Fatal(err)
	}
	docFile := filepath.Join(dir, "doc.txt")
	if err := os.WriteFile(docFile, []byte(docgen.Needle(tok, 6_000, 0.3, 11)), 0o600); err != nil {
		t.Fatal(err)
	}
	s := st.dev.Stack
	run := exec.CommandContext(ctx, bin,
		"-temporal", s.TemporalAddress, "-namespace", s.Namespace, "-task-queue", "embed-e2e",
		"-s3-endpoint", s.S3Endpoint, "-region", s.Region, "-s3-key-id", s.S3AccessKey, "-s3-secret", s.S3SecretKey,
		"-bucket", s.Bucket, "-model-url", st.dev.SimulatorURL,
		"-doc", docFile, "-question", docgen.Question)
	run.Env = []string{} // nothing: no MEMAGENT_*, OPENAI_*, AWS_* or TEMPORAL_*
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Run(); err != nil {
		t.Fatalf("embed: %v\n%s", err, stderr.String())
	}
	var res struct {
		Greeting, Answer, Document string
		Chunks                     int
		WorkflowID                 string `json:"workflow_id"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("embed printed %q: %v", stdout.String(), err)
	}
	if res.Greeting != "hello, memagent" {
		t.Errorf("the service's own workflow answered %q, want %q", res.Greeting, "hello, memagent")
	}
	if res.Answer != docgen.Answer || res.Chunks < 2 || !strings.HasPrefix(res.WorkflowID, "memagent-qa-") {
		t.Errorf("DocumentQA from the embedding service = %+v, want answer %q over several chunks", res, docgen.Answer)
	}
}
