package activities

import (
	"os"
	"strings"
	"testing"
)

// TestConverterVersionDocumented holds docs/DOCUMENTS.md to the path and
// version the worker writes converted text under.
func TestConverterVersionDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/DOCUMENTS.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"s3://BUCKET/converted/" + ConverterVersion + "/<version id>/text.txt", "`" + ConverterVersion + "` names the conversion rules"} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("docs/DOCUMENTS.md lacks %q", want)
		}
	}
}
