package docconv_test

import (
	"context"
	"os"
	"testing"

	"github.com/memagent/memagent/internal/docconv"
)

// TestConvertFile converts one file named by MEMAGENT_CONVERT_FILE and
// writes its text to MEMAGENT_CONVERT_OUT: the way to look at what the
// converter makes of a real document (docs/DOCUMENTS.md measures running
// headers this way). Without the variables it does nothing.
func TestConvertFile(t *testing.T) {
	in, out := os.Getenv("MEMAGENT_CONVERT_FILE"), os.Getenv("MEMAGENT_CONVERT_OUT")
	if in == "" || out == "" {
		t.Skip("set MEMAGENT_CONVERT_FILE and MEMAGENT_CONVERT_OUT to convert a file")
	}
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := converter(t).Convert(context.Background(), docconv.Detect(data[:min(len(data), docconv.SniffBytes)]), in, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d pages, %d bytes, %d edge lines dropped", in, res.Map.Pages, res.Bytes, res.Dropped)
}
