package inference

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/memagent/memagent/internal/secret"
)

// printings are the ways a value reaches a log or a terminal: every verb
// and slog's text and JSON handlers.
func printings(v any) map[string]string {
	out := map[string]string{}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%d", "%x"} {
		out[verb] = fmt.Sprintf(verb, v)
	}
	var text, js bytes.Buffer
	slog.New(slog.NewTextHandler(&text, nil)).Info("m", "v", v)
	slog.New(slog.NewJSONHandler(&js, nil)).Info("m", "v", v)
	out["slog text"], out["slog json"] = text.String(), js.String()
	return out
}

func assertPrintsNo(t *testing.T, what string, v any, secrets []string, visible []string) {
	t.Helper()
	for how, s := range printings(v) {
		for _, sec := range secrets {
			if strings.Contains(s, sec) {
				t.Errorf("%s with %s prints %q: %s", what, how, sec, s)
			}
		}
		if how == "%d" || how == "%x" {
			continue
		}
		for _, want := range visible {
			if !strings.Contains(s, want) {
				t.Errorf("%s with %s lacks %q, which is no secret: %s", what, how, want, s)
			}
		}
	}
}

func TestInferenceTypesPrintNoSecret(t *testing.T) {
	const (
		key     = "sk-live-SECRET1"
		baseURL = "https://tokenuser-SECRET2:pw-SECRET3@gpu-1.example:8000/v1?api-key=SECRET4"
	)
	secrets := []string{"SECRET"}
	visible := []string{"gpu-1.example:8000", "[redacted]"}
	cfg := Config{BaseURL: baseURL, APIKey: key, Model: "qwen"}
	ep := EndpointConfig{BaseURL: baseURL, APIKey: key, MaxInFlight: 3}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		v    any
	}{
		{"Config", cfg}, {"*Config", &cfg}, {"EndpointConfig", ep}, {"[]EndpointConfig", []EndpointConfig{ep}},
		{"*Client", c}, {"struct holding a Config", struct{ Model Config }{cfg}},
	} {
		assertPrintsNo(t, tc.name, tc.v, secrets, visible)
	}
	if got := fmt.Sprintf("%#v", cfg); !strings.HasPrefix(got, "inference.Config{") {
		t.Errorf("%%#v = %.40s..., want it to name inference.Config", got)
	}
}

// A model URL's user info never becomes a metric label, a log line or an
// error.
func TestModelURLUserInfoStaysOutOfLabelsAndLogs(t *testing.T) {
	f := newFakeServer(t, "a", false)
	withUser := strings.Replace(f.url(), "http://", "http://tokenuser-SECRET1:pw-SECRET2@", 1)
	reader := sdkmetric.NewManualReader()
	var logs bytes.Buffer
	p := newTestPool(t, 4, func(c *PoolConfig) {
		c.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}, withUser)
	if _, err := p.Complete(context.Background(), Request{Prompt: "p", Kind: "update"}); err != nil {
		t.Fatal(err)
	}
	capacity := collect(t, reader, metricCapacity)
	if len(capacity) == 0 {
		t.Fatalf("no %s data points", metricCapacity)
	}
	for label := range capacity {
		if strings.Contains(label, "SECRET") || strings.Contains(label, "tokenuser") {
			t.Errorf("metric label %q holds the URL's user info", label)
		}
	}
	for _, st := range p.Stats() {
		if strings.Contains(st.URL, "SECRET") {
			t.Errorf("pool stats URL %q holds the URL's user info", st.URL)
		}
	}
	if strings.Contains(logs.String(), "SECRET") {
		t.Errorf("pool logs hold the URL's user info: %s", logs.String())
	}
	for _, bad := range []string{"http://tokenuser-SECRET1@[::1", "ftp://u:pw-SECRET2@host/v1"} {
		if _, err := ParseEndpoints(bad, "", 0); err == nil || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("ParseEndpoints(%q) = %v, want an error without the user info", bad, err)
		}
		if _, err := New(Config{BaseURL: secret.Endpoint(bad)}); err == nil || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("New(%q) = %v, want an error without the user info", bad, err)
		}
		if _, err := ParseAzureEndpoints(bad, "", 0); err == nil || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("ParseAzureEndpoints(%q) = %v, want an error without the user info", bad, err)
		}
	}
}
