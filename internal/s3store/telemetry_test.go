package s3store

import (
	"bytes"
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rclone/gofakes3"
	"github.com/rclone/gofakes3/s3mem"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/memagent/memagent/internal/secret"
)

// TestTracedStoreOverTLS runs a traced store against an HTTPS server whose
// certificate only AWS_CA_BUNDLE vouches for: the telemetry wrapper must
// keep the SDK's CA bundle handling, and must name spans after operations
// without carrying object contents.
func TestTracedStoreOverTLS(t *testing.T) {
	const contents = "OBJECT-CONTENTS-MARKER the vault code is 4417"
	faker := gofakes3.New(s3mem.New(), gofakes3.WithV4Auth(map[string]string{"test-key": "test-secret"}))
	var traceparents []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		traceparents = append(traceparents, r.Header.Get("traceparent"))
		faker.Server().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CA_BUNDLE", bundle)

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	s, err := New(context.Background(), Config{
		Endpoint: secret.Endpoint(srv.URL), Region: "us-east-1", AccessKeyID: "test-key", SecretAccessKey: "test-secret",
		TracerProvider: tp,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Outside any span: works, and is not traced.
	if err := s.EnsureBucket(context.Background(), "bkt", true); err != nil {
		t.Fatalf("EnsureBucket over TLS with AWS_CA_BUNDLE: %v", err)
	}
	if n := len(rec.Ended()); n != 0 {
		t.Errorf("%d spans for requests made outside any span, want 0", n)
	}

	ctx, parent := tp.Tracer("test").Start(context.Background(), "activity")
	loc := Location{Bucket: "bkt", Key: "docs/a.txt"}
	if err := s.Put(ctx, loc, []byte(contents), "text/plain"); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadRange(ctx, loc, 0, 14, "")
	if err != nil || !bytes.Equal(got, []byte(contents[:14])) {
		t.Fatalf("ReadRange = %q, %v", got, err)
	}
	if _, err := s.Head(ctx, Location{Bucket: "bkt", Key: "missing"}); err == nil {
		t.Fatal("Head of a missing object: no error")
	}
	parent.End()

	var names []string
	for _, sp := range rec.Ended() {
		if sp.Name() == "activity" {
			continue
		}
		names = append(names, sp.Name())
		if sp.Parent().SpanID() != parent.SpanContext().SpanID() || sp.SpanContext().TraceID() != parent.SpanContext().TraceID() {
			t.Errorf("span %q is not a child of the caller's span", sp.Name())
		}
		for _, kv := range sp.Attributes() {
			if strings.Contains(kv.Value.Emit(), "OBJECT-CONTENTS-MARKER") || strings.Contains(kv.Value.Emit(), "test-secret") {
				t.Errorf("span %q attribute %s carries object contents or the secret", sp.Name(), kv.Key)
			}
		}
	}
	if want := "S3 PutObject,S3 GetObject,S3 HeadObject"; strings.Join(names, ",") != want {
		t.Errorf("spans = %v, want %s", names, want)
	}
	if last := traceparents[len(traceparents)-1]; !strings.Contains(last, parent.SpanContext().TraceID().String()) {
		t.Errorf("traceparent sent = %q, want the caller's trace id", last)
	}
}
