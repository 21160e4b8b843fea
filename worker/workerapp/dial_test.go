package workerapp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
)

// Dial uses the Temporal TLS settings: a half-configured client
// certificate is refused before any connection, naming the variables.
func TestDialUsesTemporalTLSSettings(t *testing.T) {
	cfg, err := config.FromEnv(func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	cfg.TemporalTLSCert = "/nonexistent/client.pem"
	_, err = workerapp.Dial(context.Background(), cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "TEMPORAL_TLS_CLIENT_KEY_PATH") {
		t.Fatalf("Dial = %v, want an error naming TEMPORAL_TLS_CLIENT_KEY_PATH", err)
	}
}
