package docconv_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-pdf/fpdf"

	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/testdeps"
)

// TestImageRefusalAdvice: a page of a Debian manual saved as a PNG, a JPEG
// or a TIFF is refused with the advice to wrap it in a PDF with img2pdf,
// the command naming the file; and the advice holds: the PDF img2pdf
// makes of it is read by OCR in the default mode, pdftotext's words of
// the original page coming back.
func TestImageRefusalAdvice(t *testing.T) {
	pdftoppm := testdeps.Command(t, "pdftoppm", "apt-get install poppler-utils")
	pdftotext := testdeps.Command(t, "pdftotext", "apt-get install poppler-utils")
	img2pdf := testdeps.Command(t, "img2pdf", "apt-get install img2pdf")
	gnuplot := testdeps.Manual(t, "gnuplot-doc", "usr/share/doc/gnuplot/gnuplot.pdf")
	const page = "40"
	dir := t.TempDir()
	images := map[string]string{}
	for _, kind := range []string{"png", "jpeg", "tiff"} {
		base := filepath.Join(dir, "gnuplot p40 "+kind)
		if out, err := exec.Command(pdftoppm, "-r", "300", "-gray", "-"+kind, "-singlefile", "-f", page, "-l", page, gnuplot, base).CombinedOutput(); err != nil {
			t.Fatalf("pdftoppm -%s: %v\n%s", kind, err, out)
		}
		matches, _ := filepath.Glob(base + ".*")
		if len(matches) != 1 {
			t.Fatalf("pdftoppm -%s wrote %q, want one file", kind, matches)
		}
		images[kind] = matches[0]
	}
	for kind, img := range images {
		t.Run(kind, func(t *testing.T) {
			head, err := os.ReadFile(img)
			if err != nil {
				t.Fatal(err)
			}
			format := docconv.Detect(head[:min(len(head), docconv.SniffBytes)])
			if format != docconv.FormatImage {
				t.Fatalf("Detect = %q, want %q", format, docconv.FormatImage)
			}
			name := filepath.Base(img)
			pdfName := strings.TrimSuffix(name, filepath.Ext(name)) + ".pdf"
			err = docconv.Unsupported(format, name)
			want := "is an image, which memagent does not read as it is: wrap it in a PDF (img2pdf '" + name + "' -o '" + pdfName +
				"') and ask about the PDF; memagent reads its page by OCR (--ocr auto, the default)"
			if err == nil || err.Error() != want {
				t.Errorf("Unsupported(%q, %q):\n got %v\nwant %s", format, name, err, want)
			}
			if strings.Contains(err.Error(), "ocrmypdf") {
				t.Errorf("the advice names ocrmypdf, a tool memagent does not need: %v", err)
			}
		})
	}

	// The advice, followed: img2pdf's PDF of the PNG, in the default mode.
	c := ocrConverter(t)
	wrapped := filepath.Join(dir, "page.pdf")
	if out, err := exec.Command(img2pdf, images["png"], "-o", wrapped).CombinedOutput(); err != nil {
		t.Fatalf("img2pdf: %v\n%s", err, out)
	}
	text, res, err := convertFile(t, c, wrapped, docconv.Options{})
	if err != nil {
		t.Fatalf("the PDF img2pdf made: %v", err)
	}
	if len(res.Map.OCR) != 1 || res.Map.OCR[0].Reason != memagent.OCRNoTextLayer {
		t.Fatalf("OCR records %+v, want the one page read for having no text layer", res.Map.OCR)
	}
	ref, err := exec.Command(pdftotext, "-enc", "UTF-8", "-f", page, "-l", page, gnuplot, "-").Output()
	if err != nil {
		t.Fatal(err)
	}
	if acc := docconvtest.WordAccuracy(docconvtest.WordsOf(string(ref)), docconvtest.WordsOf(text)); acc < 0.95 {
		t.Errorf("OCR read %.3f of pdftotext's words of the page, want at least 0.95", acc)
	}
}

// TestUnsupportedNames: the img2pdf command of the advice is one a shell
// runs as written, whatever the file's name.
func TestUnsupportedNames(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"page.png", "img2pdf page.png -o page.pdf"},
		{"", "img2pdf scan.png -o scan.pdf"},
		{"it's here.jpg", `img2pdf 'it'\''s here.jpg' -o 'it'\''s here.pdf'`},
		{"scan", "img2pdf scan -o scan.pdf"},
	} {
		err := docconv.Unsupported(docconv.FormatImage, tc.name)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Unsupported(image, %q) = %v, want it to say %s", tc.name, err, tc.want)
		}
	}
	if err := docconv.Unsupported(docconv.FormatPDF, "a.pdf"); err != nil {
		t.Errorf("Unsupported(pdf) = %v, want nil", err)
	}
}

// TestPDFWithoutTextOrImages: a PDF whose pages draw only vector shapes
// (blank pages, or text drawn as outlines) has nothing auto mode reads:
// it is refused with the advice to force OCR, which memagent does
// itself, not to run another tool first.
func TestPDFWithoutTextOrImages(t *testing.T) {
	pdf := fpdf.New("P", "pt", "Letter", "")
	for range 2 {
		pdf.AddPage()
		pdf.Rect(72, 72, 200, 12, "F") // a line of "text" as a filled outline
		pdf.Circle(300, 400, 50, "D")
	}
	var buf bytes.Buffer
	if err := pdf.Output(&buf); err != nil {
		t.Fatal(err)
	}
	_, _, err := convertWith(t, converter(t), buf.Bytes(), docconv.Options{})
	var bad *docconv.Error
	if !errors.As(err, &bad) {
		t.Fatalf("err = %v, want a *docconv.Error", err)
	}
	want := "has no text on any of its 2 pages: none has a text layer or draws an image OCR would read (blank pages, or text drawn as outlines): ask with ocr force (--ocr force) to read every page by OCR"
	if bad.Msg != want {
		t.Errorf("message:\n got %s\nwant %s", bad.Msg, want)
	}
}
