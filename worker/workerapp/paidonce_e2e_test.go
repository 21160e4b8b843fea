package workerapp_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
)

// writeFaults forwards S3 requests and fails the first failures writes of
// every object whose key matches, with 503: what an S3 outage after a
// model call looks like to the activity that made it.
type writeFaults struct {
	next     http.Handler
	match    func(path string) bool
	failures int

	mu       sync.Mutex
	seen     map[string]int
	injected int
}

func (f *writeFaults) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPut && f.match(r.URL.Path) {
		f.mu.Lock()
		f.seen[r.URL.Path]++
		fail := f.seen[r.URL.Path] <= f.failures
		if fail {
			f.injected++
		}
		f.mu.Unlock()
		if fail {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `<Error><Code>ServiceUnavailable</Code><Message>injected</Message></Error>`)
			return
		}
	}
	f.next.ServeHTTP(w, r)
}

// A model call that completed is not paid for again when what follows it
// fails: every chunk's trace write fails for a whole activity attempt (the
// S3 client's own retries included), Temporal retries the activity, and
// the retry reuses the kept completion. The model serves exactly one call
// per chunk plus the answer, and the result's usage counts exactly those.
func TestModelCallPaidOnceThroughS3WriteFailures(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded stack")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d, store, logger := startDev(ctx, t)
	target, _ := url.Parse(d.Stack.S3Endpoint)
	faults := &writeFaults{next: httputil.NewSingleHostReverseProxy(target), failures: 1, seen: map[string]int{},
		match: func(p string) bool { return strings.Contains(p, "/chunks/") || strings.HasSuffix(p, "/result.json") }}
	proxy := httptest.NewServer(faults)
	defer proxy.Close()

	cfg := config.Default().AtDevStack(d.Addresses())
	cfg.HTTPAddr, cfg.LogLevel = "", slog.LevelError
	cfg.S3Endpoint = proxy.URL
	w, err := workerapp.Start(ctx, cfg, workerapp.Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	var b strings.Builder
	for i := range 60 {
		fmt.Fprintf(&b, "Paragraph %d tells of river boats and the harvest weather in the valley. ", i)
	}
	b.WriteString("The vault code is 7391-ALPHA. ")
	doc := s3store.Location{Bucket: d.Stack.Bucket, Key: "docs/paid-once.txt"}
	if err := store.Put(ctx, doc, []byte(b.String()), "text/plain"); err != nil {
		t.Fatal(err)
	}

	c, err := client.Dial(client.Options{HostPort: d.Stack.TemporalAddress, Namespace: d.Stack.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d.Simulator.Reset()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "paid-once", TaskQueue: api.DefaultTaskQueue},
		api.DocumentQAName, api.DocumentQAInput{Reuse: api.ReuseNone, Document: doc.String(), Question: "What is the vault code?",
			Options: api.ModelOptions{ChunkTokens: 200}})
	if err != nil {
		t.Fatal(err)
	}
	var res api.DocumentQAResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	served := len(d.Simulator.Calls())
	t.Logf("%d chunks, %d S3 writes failed, model served %d calls, usage.calls %d, repeated %d, answer %q",
		res.Chunks, faults.injected, served, res.Usage.Calls, res.Usage.RepeatedCalls, res.Answer)
	if faults.injected < res.Chunks+1 {
		t.Fatalf("only %d writes failed: the test did not fail every trace and the result", faults.injected)
	}
	if served != res.Chunks+1 {
		t.Errorf("the model served %d calls for %d chunks and the answer, want %d", served, res.Chunks, res.Chunks+1)
	}
	if res.Usage.Calls != served || res.Usage.RepeatedCalls != 0 {
		t.Errorf("usage says %d calls (%d repeated), the model served %d", res.Usage.Calls, res.Usage.RepeatedCalls, served)
	}
}
