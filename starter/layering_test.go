package main

import (
	"os/exec"
	"strings"
	"testing"
)

// runsWork are the packages that run memagent's work, and the programs
// that are not the client: the review desk (command desk, which reads S3
// and renders pages), the developer's tools (devstack's demo, gen-doc,
// simulator and eval) and the Temporal server. A client links none of
// them (issue 50).
var runsWork = []string{
	"github.com/memagent/memagent/workflows",
	"github.com/memagent/memagent/activities",
	"github.com/memagent/memagent/plugin",
	"github.com/memagent/memagent/worker",
	"github.com/memagent/memagent/internal/inference",
	"github.com/memagent/memagent/internal/docconv",
	"github.com/memagent/memagent/internal/s3store",
	"github.com/memagent/memagent/internal/assemble",
	"github.com/memagent/memagent/internal/pluginkit",
	"github.com/memagent/memagent/internal/desk",
	"github.com/memagent/memagent/internal/dev",
	"github.com/memagent/memagent/desk",
	"github.com/memagent/memagent/devstack",
	"go.temporal.io/server",
	"github.com/klippa-app/go-pdfium",
}

// clientPackages are the starter and what its commands stand on.
var clientPackages = []string{
	"github.com/memagent/memagent/starter",
	"github.com/memagent/memagent/internal/clientconf",
	"github.com/memagent/memagent/internal/s3client",
	"github.com/memagent/memagent/internal/sniff",
	"github.com/memagent/memagent/memclient",
	"github.com/memagent/memagent/rollout",
}

// TestClientPackagesRunNoWork: the packages a client links link no
// package that runs work, so that the starter stays a client.
func TestClientPackagesRunNoWork(t *testing.T) {
	out, err := exec.Command("go", append([]string{"list", "-deps"}, clientPackages...)...).Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < len(clientPackages) {
		t.Fatalf("go list -deps listed %d packages, want at least the %d asked for", len(deps), len(clientPackages))
	}
	for _, dep := range deps {
		for _, w := range runsWork {
			if dep == w || strings.HasPrefix(dep, w+"/") {
				t.Errorf("a client package links %s, which runs work", dep)
			}
		}
	}
}
