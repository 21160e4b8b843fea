package workerapp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/worker/workerapp"
)

type fakeTemporal struct{ err error }

func (f fakeTemporal) CheckHealth(context.Context, *client.CheckHealthRequest) (*client.CheckHealthResponse, error) {
	return &client.CheckHealthResponse{}, f.err
}

type fakePool []inference.EndpointStats

func (f fakePool) ModelReady() error { return inference.ReadyOf(f) }

func TestProbe(t *testing.T) {
	ejected := inference.EndpointStats{URL: "http://gpu-1:8000/v1", Ejected: time.Now().Add(time.Minute)}
	inRotation := inference.EndpointStats{URL: "http://gpu-2:8000/v1"}
	tests := []struct {
		name     string
		temporal workerapp.HealthChecker // nil: never started
		pool     fakePool
		stopping bool
		want     string // "" = ready
	}{
		{"starting", nil, nil, false, "worker is starting"},
		{"ready", fakeTemporal{}, fakePool{ejected, inRotation}, false, ""},
		{"temporal down", fakeTemporal{errors.New("connection refused")}, fakePool{inRotation}, false, "temporal health check: connection refused"},
		{"every endpoint ejected", fakeTemporal{}, fakePool{ejected, ejected}, false, "all 2 endpoints are out of rotation"},
		{"stopping", fakeTemporal{}, fakePool{inRotation}, true, "worker is stopping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p workerapp.Probe
			if tt.temporal != nil {
				p.Started(tt.temporal, tt.pool)
			}
			if tt.stopping {
				p.Stopping()
			}
			err := p.Ready(context.Background())
			if tt.want == "" {
				if err != nil {
					t.Errorf("Ready() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Ready() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestServeHTTP(t *testing.T) {
	var p workerapp.Probe
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "memagent_up 1\n") })
	addr, stop, err := workerapp.ServeHTTP("127.0.0.1:0", workerapp.Handler(metrics, &p), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + addr.String() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	tests := []struct {
		path     string
		wantCode int
		wantBody string
	}{
		{"/healthz", 200, "ok"},
		{"/readyz", 503, "not ready: worker is starting"},
		{"/metrics", 200, "memagent_up 1"},
		{"/nope", 404, ""},
	}
	for _, tt := range tests {
		if code, body := get(tt.path); code != tt.wantCode || !strings.Contains(body, tt.wantBody) {
			t.Errorf("GET %s = %d %q, want %d %q", tt.path, code, body, tt.wantCode, tt.wantBody)
		}
	}
	p.Started(fakeTemporal{}, fakePool{{URL: "http://gpu-1:8000/v1"}})
	if code, body := get("/readyz"); code != 200 || body != "ready\n" {
		t.Errorf("GET /readyz after start = %d %q, want 200 ready", code, body)
	}

	// The address is taken while it serves.
	if _, _, err := workerapp.ServeHTTP(addr.String(), http.NotFoundHandler(), nil); err == nil {
		t.Error("ServeHTTP on a busy address: no error")
	}
}
