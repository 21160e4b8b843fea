package api_test

import (
	"os"
	"os/exec"
	"slices"
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
		"./plugin": {"go.temporal.io/server/", "github.com/memagent/memagent/internal/dev/", "github.com/memagent/memagent/worker/"},
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

// TestInternalImportsNothingAbove keeps internal/ a floor of libraries:
// no package under internal/ imports a package of a top-level folder above
// it, which is every folder but api and memclient (the contract, which
// libraries may speak) and internal itself. Wiring that needs the
// activities, the workflows or the plugin lives with them or above them
// (plugin, worker/...), never in internal/.
func TestInternalImportsNothingAbove(t *testing.T) {
	const mod = "github.com/memagent/memagent/"
	entries, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	var above []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && !slices.Contains([]string{"api", "memclient", "internal"}, e.Name()) {
			above = append(above, e.Name())
		}
	}
	if !slices.Contains(above, "workflows") || !slices.Contains(above, "plugin") {
		t.Fatalf("folders above internal/ = %v, want workflows and plugin among them: run from api/", above)
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "../internal/...").Output()
	if err != nil {
		t.Fatalf("go list ./internal/...: %v", err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		n++
		for _, imp := range f[1:] {
			rest, ok := strings.CutPrefix(imp, mod)
			if !ok {
				continue
			}
			top, _, _ := strings.Cut(rest, "/")
			if slices.Contains(above, top) {
				t.Errorf("%s imports %s, which is above internal/: move the wiring out of internal/, or what it needs below it", f[0], imp)
			}
		}
	}
	if n < 20 {
		t.Errorf("go list ./internal/... listed %d packages, want all of them", n)
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
