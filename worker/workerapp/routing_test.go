package workerapp

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

// TestLogRouting: a versioned worker says whether runs come to it, and
// warns, with the command that fixes it, when no build is current.
func TestLogRouting(t *testing.T) {
	v := func(b string) *worker.WorkerDeploymentVersion {
		return &worker.WorkerDeploymentVersion{DeploymentName: "memagent", BuildID: b}
	}
	for _, tt := range []struct {
		name string
		rc   client.WorkerDeploymentRoutingConfig
		want string
	}{
		{"none current", client.WorkerDeploymentRoutingConfig{},
			"level=WARN msg=\"no build of the worker deployment is current, so no run starts until one is (docs/DEPLOY.md, Upgrading): temporal worker deployment set-current-version --deployment-name memagent --build-id b2\""},
		{"this one", client.WorkerDeploymentRoutingConfig{CurrentVersion: v("b2")}, "level=INFO msg=\"this build is current"},
		{"ramping", client.WorkerDeploymentRoutingConfig{CurrentVersion: v("b1"), RampingVersion: v("b2"), RampingVersionPercentage: 10},
			"level=INFO msg=\"this build is ramping\" deployment=memagent build_id=b2 percentage=10 current_build_id=b1"},
		{"another", client.WorkerDeploymentRoutingConfig{CurrentVersion: v("b1")}, "level=INFO msg=\"another build is current"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			logRouting(tt.rc, "memagent", "b2", slog.New(slog.NewTextHandler(&buf, nil)))
			if !strings.Contains(buf.String(), tt.want) {
				t.Errorf("logged %q, want %q", buf.String(), tt.want)
			}
		})
	}
}
