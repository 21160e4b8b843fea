package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/secret"
	"github.com/memagent/memagent/internal/tokenizer"
)

const (
	azureTestKey        = "azure-e2e-key-5f1c0a"
	azureTestDeployment = "memagent-qa"
	azureTestVersion    = "2025-01-01-preview"
)

// azureFront speaks Azure OpenAI's dialect in front of the simulator: a
// completion must come to /openai/deployments/<deployment>/chat/completions
// with the api-version and the api-key header, or it gets Azure's error
// body; anything else is a path Azure does not serve. It records every
// request it sees.
type azureFront struct {
	sim *simulator.Server

	mu       sync.Mutex
	requests []string // method, path and query, and whether the key matched
}

func (a *azureFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	keyOK := r.Header.Get("api-key") == azureTestKey && r.Header.Get("Authorization") == ""
	a.mu.Lock()
	a.requests = append(a.requests, fmt.Sprintf("%s %s key=%v", r.Method, r.URL.RequestURI(), keyOK))
	a.mu.Unlock()
	fail := func(status int, code, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": msg}})
		w.Write(b)
	}
	switch {
	case !keyOK:
		fail(http.StatusUnauthorized, "401", "Access denied due to invalid subscription key or wrong API endpoint.")
	case r.URL.Query().Get("api-version") != azureTestVersion:
		fail(http.StatusNotFound, "404", "Resource not found")
	case r.Method != http.MethodPost || r.URL.Path != "/openai/deployments/"+azureTestDeployment+"/chat/completions":
		fail(http.StatusNotFound, "DeploymentNotFound", "The API deployment for this resource does not exist.")
	default:
		r.URL.Path, r.URL.RawQuery = "/v1/chat/completions", ""
		a.sim.ServeHTTP(w, r)
	}
}

func (a *azureFront) seen() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.requests...)
}

// TestDevWorkerAnswersThroughAzure runs `devstack` (what `worker --dev` runs) with the Azure
// OpenAI variables set and a local server speaking Azure's dialect (the
// simulator's answers behind Azure's paths, key header and api-version):
// the dev stack starts without the simulator, and a question is answered
// end to end through the Azure pool, every call at the deployment's path.
func TestDevWorkerAnswersThroughAzure(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded stack")
	}
	tok, err := tokenizer.New(tokenizer.Qwen)
	if err != nil {
		t.Fatal(err)
	}
	front := &azureFront{sim: simulator.New(simulator.Options{Model: azureTestDeployment, Tokenizer: tok})}
	srv := httptest.NewServer(front)
	defer srv.Close()

	for k, v := range map[string]string{
		"MEMAGENT_MODEL_API": "azure", "AZURE_OPENAI_ENDPOINT": srv.URL, "AZURE_OPENAI_API_KEY": azureTestKey,
		"OPENAI_API_VERSION": azureTestVersion, "MEMAGENT_MODEL": azureTestDeployment, "MEMAGENT_MODEL_CONTEXT": "32768",
		"MEMAGENT_LOG_LEVEL": "warn", "MEMAGENT_TASK_QUEUE": "azure-e2e",
		// Nothing from the surroundings may point the worker elsewhere.
		"OPENAI_BASE_URL": "", "OPENAI_API_KEY": "", "TEMPORAL_ADDRESS": "", "TEMPORAL_NAMESPACE": "",
		"AWS_ENDPOINT_URL_S3": "", "AWS_ENDPOINT_URL": "", "AWS_ACCESS_KEY_ID": "", "AWS_PROFILE": "", "MEMAGENT_BUCKET": "",
		"MEMAGENT_CODEC_KEYS": "", "MEMAGENT_CODEC_KEYS_FILE": "", "OTEL_EXPORTER_OTLP_ENDPOINT": "",
	} {
		t.Setenv(k, v)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	workerCtx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(workerCtx, []string{"--in-memory", "--free-ports", "--http-addr", ""}, stdout, stderr)
	}()
	for !strings.Contains(stdout.String(), "worker polling task queue") {
		select {
		case err := <-done:
			t.Fatalf("devstack ended before polling: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
		case <-ctx.Done():
			t.Fatalf("devstack did not start polling\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
		case <-time.After(50 * time.Millisecond):
		}
	}
	banner := stdout.String()
	if strings.Contains(banner, "inference simulator") || !strings.Contains(banner, `Azure OpenAI deployment "`+azureTestDeployment+`"`) {
		t.Errorf("the banner does not name the Azure deployment as the model:\n%s", banner)
	}
	if strings.Contains(banner+stderr.String(), azureTestKey) {
		t.Errorf("the worker printed the Azure key:\n%s\n%s", banner, stderr)
	}
	exports := bannerExports(t, banner)

	store, err := s3store.New(ctx, s3store.Config{Endpoint: secret.Endpoint(exports["AWS_ENDPOINT_URL_S3"]), Region: exports["AWS_REGION"],
		AccessKeyID: exports["AWS_ACCESS_KEY_ID"], SecretAccessKey: secret.Value(exports["AWS_SECRET_ACCESS_KEY"])})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := range 300 {
		if i == 170 {
			b.WriteString("The vault code is 7391-ALPHA. ")
		}
		fmt.Fprintf(&b, "Paragraph %d tells of river boats and the harvest weather in the valley. ", i)
	}
	doc := s3store.Location{Bucket: exports["MEMAGENT_BUCKET"], Key: "docs/azure-e2e.txt"}
	if err := store.Put(ctx, doc, []byte(b.String()), "text/plain"); err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(client.Options{HostPort: exports["TEMPORAL_ADDRESS"], Namespace: exports["TEMPORAL_NAMESPACE"]})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wf, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "azure-e2e", TaskQueue: "azure-e2e"},
		api.DocumentQAName, api.DocumentQAInput{Reuse: api.ReuseNone, Document: doc.String(), Question: "What is the vault code?",
			Options: api.ModelOptions{ChunkTokens: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	var res api.DocumentQAResult
	if err := wf.Get(ctx, &res); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr)
	}
	calls := front.sim.Calls()
	t.Logf("answer %q from %d chunks, %d calls through Azure's dialect, model %q", res.Answer, res.Chunks, len(calls), res.Model)
	if res.Answer != "7391-ALPHA" {
		t.Errorf("answer %q, want 7391-ALPHA", res.Answer)
	}
	if res.Chunks < 3 || len(calls) != res.Chunks+1 || res.Usage.Calls != len(calls) {
		t.Errorf("%d chunks, %d calls served, usage %d calls: want 3+ chunks and one call per chunk plus the answer", res.Chunks, len(calls), res.Usage.Calls)
	}
	want := fmt.Sprintf("POST /openai/deployments/%s/chat/completions?api-version=%s key=true", azureTestDeployment, azureTestVersion)
	for _, r := range front.seen() {
		if r != want {
			t.Errorf("the Azure server saw %q; every request should be %q", r, want)
		}
	}

	stopWorker()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("devstack: %v", err)
		}
	case <-time.After(time.Minute):
		t.Error("devstack did not stop within a minute of its context ending")
	}
}

// bannerExports reads the NAME=value pairs of the banner's export lines
// (the dev stack's values need no shell quoting).
func bannerExports(t *testing.T, banner string) map[string]string {
	t.Helper()
	out := map[string]string{}
	pair := regexp.MustCompile(`([A-Z0-9_]+)=(\S+)`)
	for _, line := range strings.Split(banner, "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "export ") {
			for _, m := range pair.FindAllStringSubmatch(l, -1) {
				out[m[1]] = m[2]
			}
		}
	}
	for _, k := range []string{"TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "MEMAGENT_BUCKET"} {
		if out[k] == "" {
			t.Fatalf("the banner exports no %s:\n%s", k, banner)
		}
	}
	return out
}

// syncBuffer collects the command's output while it runs.
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
