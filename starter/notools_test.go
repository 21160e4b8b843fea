package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStarterLinksNoDeskNorTools: the starter is the client CLI. The
// review desk (command desk, which reads S3 and renders pages) and the
// developer's tools (devstack's demo, gen-doc, simulator and eval) are
// programs of their own, and nothing of theirs is linked in.
func TestStarterLinksNoDeskNorTools(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps ./starter: %v", err)
	}
	const mod = "github.com/memagent/memagent/"
	for _, p := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(p, mod)
		if !ok {
			continue
		}
		for _, banned := range []string{"internal/desk", "internal/dev/", "desk/", "devstack"} {
			if rel == strings.TrimSuffix(banned, "/") || strings.HasPrefix(rel, banned) {
				t.Errorf("the starter links %s", p)
			}
		}
	}
}
