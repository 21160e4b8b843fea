package docconv_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/testdeps"
)

// TestTJEmptyStringShift: a TJ array ending in an empty string after a
// word space (gropdf's justified lines) keeps its space. PDFium drops
// it and draws the rest of the line that much to the left, glued to the
// word before ("ingrolbp_SOURCESwill"); a Td after it puts PDFium right,
// and what it places stays.
func TestTJEmptyStringShift(t *testing.T) {
	text, _, err := convert(t, docconvtest.TJEmptyStringPDF())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"listed in grolbp_SOURCES will", "everynext"} {
		if !strings.Contains(text, want) {
			t.Errorf("the text lacks %q:\n%s", want, text)
		}
	}
}

// TestTJEmptyStringShiftAutomake is the same on a manual nobody here
// wrote: groff's automake.pdf (mom, gropdf), whose page 8 ends a
// justified run with `(in) -317.840 ()] TJ` before grolbp_SOURCES, set
// in another font. pdftotext reads "listed in grolbp_SOURCES"; PDFium
// alone gave "listed ingrolbp_SOURCES", a word the page never shows.
func TestTJEmptyStringShiftAutomake(t *testing.T) {
	gz := testdeps.Manual(t, "groff", "usr/share/doc/groff-base/pdf/automake.pdf.gz")
	path := filepath.Join(t.TempDir(), "automake.pdf")
	f, err := os.Open(gz)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var pdf bytes.Buffer
	if _, err := pdf.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pdf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := converter(t).Convert(context.Background(), docconv.FormatPDF, path, &out, nil); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if want := "the source files listed in grolbp_SOURCES will automatically be included"; !strings.Contains(text, want) {
		t.Errorf("the text lacks %q", want)
	}
	if strings.Contains(text, "ingrolbp") {
		t.Errorf("the text holds %q, a word the page does not show", "ingrolbp")
	}
}
