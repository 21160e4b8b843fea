package docconv

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/testdeps"
)

// TestPDFFileReadsContent: the object reader behind repairTJShifts finds
// every page and its content stream in PDFs of both cross-reference
// kinds: pdfTeX's (PDF 1.5: a cross-reference stream with PNG
// predictors, pages in object streams) and a classic table.
func TestPDFFileReadsContent(t *testing.T) {
	for _, m := range []struct {
		name  string
		pdf   func(t *testing.T) []byte
		pages int
	}{
		{"generated TJ page (xref table)", func(*testing.T) []byte { return docconvtest.TJEmptyStringPDF() }, 1},
		{"gnuplot.pdf (xref stream, object streams)", func(t *testing.T) []byte {
			b, err := os.ReadFile(testdeps.Manual(t, "gnuplot-doc", "usr/share/doc/gnuplot/gnuplot.pdf"))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}, 311},
	} {
		t.Run(m.name, func(t *testing.T) {
			b := m.pdf(t)
			f, err := openPDFFile(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			if got := len(f.pageRefs()); got != m.pages {
				t.Fatalf("%d pages, want %d", got, m.pages)
			}
			for i := range m.pages {
				c, err := f.pageContent(i)
				if err != nil {
					t.Fatalf("page %d: %v", i+1, err)
				}
				if !bytes.Contains(c, []byte("BT")) || !bytes.Contains(c, []byte("ET")) {
					t.Fatalf("page %d: no text object in its %d bytes of content", i+1, len(c))
				}
			}
		})
	}
}

// TestTJShifts: the objects after a TJ array that ends in an empty string
// are shifted by the dropped displacement (font size × Tz × Tm × CTM), up
// to the next positioning operator; arrays without an empty string, or
// with nothing after their last string, shift nothing.
func TestTJShifts(t *testing.T) {
	for _, c := range []struct {
		name    string
		content string
		want    []tjShift
		objects int
	}{
		{"gropdf", "BT /F5 12.5 Tf 1 0 0 1 72 220 Tm [(e') -317.96 (in) -317.84 ()] TJ /F8 12.5 Tf [(grolbp_SOURCES) -317.84 ] TJ /F5 12.5 Tf [(will) ] TJ 1 0 0 1 72 204 Tm (next) Tj ET",
			[]tjShift{{obj: 1, dx: 3.973}, {obj: 2, dx: 3.973}}, 4},
		{"adds up, hex, Tz, scaled CTM", "q 2 0 0 2 0 0 cm BT /F1 10 Tf 50 Tz [(a) -100 <>] TJ (b) Tj [(c) -200 () -100] TJ (d) Tj ET Q",
			[]tjShift{{obj: 1, dx: 1}, {obj: 2, dx: 1}, {obj: 3, dx: 4}}, 4},
		{"Td, T*, ' and BT put PDFium right", "BT /F1 10 Tf [(a) -100 ()] TJ 0 0 Td (b) Tj [(a) -100 ()] TJ T* (b) Tj [(a) -100 ()] TJ (b) ' ET BT [(a) -100 ()] TJ ET BT (b) Tj ET",
			nil, 8},
		{"no empty string, or nothing after the last string", "BT /F1 10 Tf [(a) -100] TJ (b) Tj [() -100 (a)] TJ (b) Tj [() -100] TJ () Tj (c) Tj ET",
			nil, 5},
		{"q/Q keeps the text state", "BT /F1 10 Tf q [(a) -100 ()] TJ Q (b) Tj ET", nil, 2},
		{"inline image", "BI /W 1 /H 1 /BPC 8 /CS /G ID \x00()TJ) EI BT /F1 10 Tf [(a) -100 ()] TJ (b) Tj ET", []tjShift{{obj: 1, dx: 1}}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, objects, _ := tjShifts([]byte(c.content))
			if objects != c.objects {
				t.Errorf("%d text objects, want %d", objects, c.objects)
			}
			if len(got) != len(c.want) {
				t.Fatalf("shifts %+v, want %+v", got, c.want)
			}
			for i := range got {
				if got[i].obj != c.want[i].obj || !near(got[i].dx, c.want[i].dx) || !near(got[i].dy, c.want[i].dy) {
					t.Errorf("shift %d: %+v, want %+v", i, got[i], c.want[i])
				}
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 1e-3 && b-a < 1e-3 }

// TestPDFFileGivesUp: on a file it cannot read, the object reader says so
// (and the page keeps PDFium's reading): no panic, no loop, whatever the
// bytes, a stream whose Length names itself included.
func TestPDFFileGivesUp(t *testing.T) {
	pdf := docconvtest.TJEmptyStringPDF()
	selfLength := bytes.Replace(pdf, []byte("4 0 obj\n<< /Length "), []byte("4 0 obj\n<< /Length 4 0 R /L "), 1)
	encrypted := bytes.Replace(pdf, []byte("/Root 1 0 R"), []byte("/Root 1 0 R /Encrypt 9 0 R"), 1)
	for name, b := range map[string][]byte{"self length": selfLength, "encrypted": encrypted, "garbage": []byte("%PDF-1.4\nstartxref\n3\n%%EOF")} {
		f, err := openPDFFile(bytes.NewReader(b), int64(len(b)))
		if err == nil {
			_, err = f.pageContent(0)
		}
		if err == nil {
			t.Errorf("%s: read", name)
		}
	}
	// Every truncation and every byte's corruption of a whole file.
	for n := range len(pdf) {
		for _, b := range [][]byte{pdf[:n], append(append(bytes.Clone(pdf[:n]), 'x'), pdf[n+1:]...)} {
			if f, err := openPDFFile(bytes.NewReader(b), int64(len(b))); err == nil {
				for i := range f.pageRefs() {
					if c, err := f.pageContent(i); err == nil {
						tjShifts(c)
					}
				}
			}
		}
	}
}

// TestVerticalFontLeftAlone: in a vertical font PDFium loses the
// displacement in y, so a page whose lost displacements are in one is not
// repaired; the font is looked up in the resources the page inherits.
func TestVerticalFontLeftAlone(t *testing.T) {
	content := "BT /V1 12 Tf [(a) -333 ()] TJ (b) Tj ET BT /H1 12 Tf (c) Tj ET"
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 /Resources << /Font << /V1 5 0 R /H1 6 0 R >> >> >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content),
		"<< /Type /Font /Subtype /Type0 /BaseFont /X /Encoding /Identity-V >>",
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)

	f, err := openPDFFile(bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.pageContent(0)
	if err != nil {
		t.Fatal(err)
	}
	shifts, _, fonts := tjShifts(c)
	if len(shifts) != 1 || len(fonts) != 1 || fonts[0] != "V1" {
		t.Fatalf("shifts %+v, fonts %q: want one shift, lost in V1", shifts, fonts)
	}
	if !f.verticalFont(0, "V1") || f.verticalFont(0, "H1") || f.verticalFont(0, "none") {
		t.Errorf("vertical: V1 %v, H1 %v, none %v; want true, false, false", f.verticalFont(0, "V1"), f.verticalFont(0, "H1"), f.verticalFont(0, "none"))
	}
}
