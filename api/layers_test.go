package api_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayers keeps the dependency rules of the README's package table: the
// contract links no implementation, a client links only the contract, and
// the production worker and the plugin link no Temporal server.
func TestLayers(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("go is not on PATH: %v", err)
	}
	forbidden := map[string][]string{
		"./api": {"github.com/memagent/memagent/activities", "github.com/memagent/memagent/workflows",
			"github.com/memagent/memagent/internal/", "go.temporal.io/server/", "github.com/sashabaranov/go-openai",
			"github.com/aws/aws-sdk-go-v2/"},
		"./memclient": {"github.com/memagent/memagent/activities", "github.com/memagent/memagent/workflows",
			"github.com/memagent/memagent/internal/docconv", "github.com/memagent/memagent/internal/inference",
			"github.com/memagent/memagent/internal/tokenizer", "github.com/klippa-app/go-pdfium", "github.com/tetratelabs/wazero",
			"github.com/pkoukk/tiktoken-go", "github.com/sashabaranov/go-openai", "go.temporal.io/server/"},
		"./plugin": {"go.temporal.io/server/", "github.com/memagent/memagent/internal/dev/"},
		"./worker": {"go.temporal.io/server/", "github.com/memagent/memagent/internal/dev/"},
	}
	for pkg, bad := range forbidden {
		out, err := exec.Command("go", "list", "-deps", "../"+strings.TrimPrefix(pkg, "./")).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		allowed := map[string]bool{"github.com/memagent/memagent/internal/contract": pkg == "./api"}
		for _, d := range deps {
			for _, b := range bad {
				if (d == b || strings.HasPrefix(d, strings.TrimSuffix(b, "/")+"/") || (strings.HasSuffix(b, "/") && strings.HasPrefix(d, b))) && !allowed[d] {
					t.Errorf("%s links %s", pkg, d)
				}
			}
		}
		t.Logf("%s: %d packages", pkg, len(deps))
	}
}

// TestStarterLinksNoServer: the CLI leaves the schedule spec to the server
// it talks to (no copy of the server's parser), and its demo, which embeds
// the dev stack, is `devstack demo`; so neither the starter nor its command
// package links go.temporal.io/server, and the devstack command, which
// gives the demo its stack, does.
func TestStarterLinksNoServer(t *testing.T) {
	deps := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", "../"+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps ./%s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	for _, pkg := range []string{"starter", "starter/cli"} {
		for _, d := range deps(pkg) {
			if strings.HasPrefix(d, "go.temporal.io/server/") || strings.HasPrefix(d, "github.com/memagent/memagent/internal/dev/devenv") || strings.HasPrefix(d, "github.com/memagent/memagent/internal/dev/embedstack") {
				t.Errorf("./%s links %s: the dev stack belongs to ./devstack (devstack demo)", pkg, d)
			}
		}
	}
	server := 0
	for _, d := range deps("devstack") {
		if strings.HasPrefix(d, "go.temporal.io/server/") {
			server++
		}
	}
	if server == 0 {
		// The check above would pass for a demo that runs on nothing.
		t.Error("./devstack links no go.temporal.io/server package: the demo's embedded stack is gone")
	}
}
