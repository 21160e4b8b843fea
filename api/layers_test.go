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
		"./client": {"github.com/memagent/memagent/activities", "github.com/memagent/memagent/workflows",
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
// it, which is every folder but api and client (the contract, which
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
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && !slices.Contains([]string{"api", "client", "internal"}, e.Name()) {
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

// TestStarterLinksServerOnlyForTheDevStack: the CLI leaves the schedule
// spec to the server it talks to (no copy of the server's parser), so of
// the project's packages in `go list -deps ./starter` only the embedded
// dev stack behind `starter demo` imports go.temporal.io/server. That stack
// brings the whole server, scheduler included; once `demo` moves out of
// the CLI, the check below becomes TestLayers' "no go.temporal.io/server/".
func TestStarterLinksServerOnlyForTheDevStack(t *testing.T) {
	const devStack = "github.com/memagent/memagent/internal/dev/devstack"
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "../starter").Output()
	if err != nil {
		t.Fatalf("go list -deps ./starter: %v", err)
	}
	seen := false
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "github.com/memagent/memagent/") {
			continue
		}
		for _, imp := range f[1:] {
			if !strings.HasPrefix(imp, "go.temporal.io/server/") {
				continue
			}
			if f[0] == devStack {
				seen = true
				continue
			}
			t.Errorf("%s imports %s: only %s may link the Temporal server into the starter", f[0], imp, devStack)
		}
	}
	if !seen {
		// The rule above has nothing left to allow: tighten it.
		t.Errorf("%s no longer links the Temporal server into the starter: add \"go.temporal.io/server/\" to TestLayers' rules for ./starter", devStack)
	}
}
