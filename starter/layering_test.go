package main

import (
	"os/exec"
	"strings"
	"testing"
)

// runsWork are the packages that run memagent's work: a client links none
// of them (issue 50).
var runsWork = []string{
	"github.com/memagent/memagent/workflows",
	"github.com/memagent/memagent/activities",
	"github.com/memagent/memagent/plugin",
	"github.com/memagent/memagent/worker",
	"github.com/memagent/memagent/internal/inference",
	"github.com/memagent/memagent/internal/docconv",
	"github.com/memagent/memagent/internal/s3store",
	"github.com/memagent/memagent/internal/assemble",
}

// clientPackages are what the starter's client commands stand on. The
// starter itself joins them once the review desk and the dev and eval
// commands have left starter/cli.
var clientPackages = []string{
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
