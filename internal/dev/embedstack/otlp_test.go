package embedstack_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/dev/embedstack"
)

// TestServerSpansFollowTheOTLPProtocol: with OTEL_EXPORTER_OTLP_PROTOCOL
// http/protobuf, the embedded Temporal server's own spans go to the OTLP
// HTTP endpoint as protobuf over HTTP, as memagent's do. (Its built-in
// exporter spoke gRPC to that port whatever the protocol said, and warned
// every few seconds.)
func TestServerSpansFollowTheOTLPProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded stack")
	}
	var posts atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/traces" && r.Header.Get("Content-Type") == "application/x-protobuf" {
			posts.Add(1)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer receiver.Close()
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "200")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := embedstack.Start(ctx, embedstack.Options{
		TemporalPort: embedstack.FreePort, UIPort: embedstack.FreePort, S3Port: embedstack.FreePort,
		DisableUI: true, Logger: testLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	deadline := time.Now().Add(30 * time.Second)
	for posts.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the server sent no spans over OTLP/HTTP in 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
