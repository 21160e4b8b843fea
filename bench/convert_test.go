package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/testdeps"
)

// TestPdftotextMeasuredDirectly runs the bench's pdftotext measurement on
// a small PDF: its peak memory is pdftotext's own (tens of MB at most),
// not the bench binary's hundred-odd megabytes.
func TestPdftotextMeasuredDirectly(t *testing.T) {
	tool := testdeps.Command(t, "pdftotext", "apt-get install -y poppler-utils")
	testdeps.File(t, timeCommand, "apt-get install -y time")
	path := filepath.Join(t.TempDir(), "small.pdf")
	if err := os.WriteFile(path, docconvtest.PDF(docconvtest.PDFOptions{Pages: 20, FactPage: 7, Fact: docgen.Fact, Seed: 1}), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := pdftotextRun(context.Background(), tool, path)
	if err != nil {
		t.Fatal(err)
	}
	if r.PeakRSS <= 0 || r.PeakRSS > 64<<20 || r.Bytes == 0 {
		t.Errorf("pdftotext: peak %d bytes, %d bytes of text; want a small positive peak and the text", r.PeakRSS, r.Bytes)
	}
	t.Logf("pdftotext on 20 pages: %.1f MB peak, %v CPU", float64(r.PeakRSS)/(1<<20), r.CPU)
}
