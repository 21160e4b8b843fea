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
		"./client": {"github.com/memagent/memagent/activities", "github.com/memagent/memagent/workflows",
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
