package activities

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/testdeps"
)

const scanURI = "s3://docs/scan.pdf"

// scannedPDF is a three-page PDF whose second page, the fact's, is a 300
// DPI scan of itself (pdftoppm), without a text layer.
func scannedPDF(t *testing.T) []byte {
	t.Helper()
	pdftoppm := testdeps.Command(t, "pdftoppm", "apt-get install poppler-utils")
	testdeps.Command(t, "tesseract", "apt-get install tesseract-ocr tesseract-ocr-eng")
	pdf := docconvtest.PDF(docconvtest.PDFOptions{Pages: 3, FactPage: 2, Fact: "The access code is 7391-ALPHA.", Seed: 8})
	scan, err := docconvtest.ScannedCopy(pdftoppm, pdf, 2)
	if err != nil {
		t.Fatal(err)
	}
	return scan
}

// TestConvertScannedPage: a survey counts the scanned page without
// reading it, apart from conversions; the conversion reads it by OCR,
// records it in the page map and keeps the page's reading; a survey then
// finds the conversion; OCR forced reuses the page read in auto mode; OCR
// off converts apart, without the page's text; and a worker without OCR
// refuses the document as memagent.BadInput naming the package.
func TestConvertScannedPage(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	if err := f.store.Store.Put(ctx, mustLoc(t, scanURI), scannedPDF(t), "application/pdf"); err != nil {
		t.Fatal(err)
	}
	if s := f.acts.OCR(ctx); s.Err != nil || !strings.HasPrefix(s.Engine, "tesseract ") || s.Workers < 1 {
		t.Fatalf("OCR status %+v, want Tesseract", s)
	}

	var survey actwire.ConvertOutput
	if err := f.exec(t, ConvertDocumentName, actwire.ConvertInput{Document: scanURI, Survey: true}, &survey); err != nil {
		t.Fatal(err)
	}
	if survey.OCRPages != 1 || survey.OCRPending != 1 || survey.OCRSecondsExpected <= 0 || !strings.Contains(survey.Document, "/ocr-auto-eng/survey/") {
		t.Fatalf("survey = %+v, want one page pending, its text under survey/", survey)
	}
	if text := f.read(t, survey.Document); strings.Contains(text, "7391-ALPHA") {
		t.Error("the survey read the scanned page")
	}

	var conv actwire.ConvertOutput
	if err := f.exec(t, ConvertDocumentName, actwire.ConvertInput{Document: scanURI}, &conv); err != nil {
		t.Fatal(err)
	}
	if conv.OCRPages != 1 || conv.OCRPending != 0 || conv.Reused || conv.Document == survey.Document {
		t.Fatalf("conversion = %+v, want the scanned page read", conv)
	}
	if text := f.read(t, conv.Document); !strings.Contains(text, "7391-ALPHA") {
		t.Errorf("the scanned page's fact is not in the text:\n%s", text)
	}
	var d actwire.ConvertedDocument
	if err := json.Unmarshal([]byte(f.read(t, conv.PageMapURI)), &d); err != nil {
		t.Fatal(err)
	}
	if o := d.PageMap.OCR; len(o) != 1 || o[0].Page != 2 || o[0].Reason != "no_text_layer" || o[0].DPI != 300 || o[0].Words == 0 || o[0].Confidence < 0.8 || !strings.HasPrefix(o[0].Engine, "tesseract ") || o[0].Languages != "eng" {
		t.Errorf("page map OCR %+v, want page 2 read at 300 DPI", o)
	}
	keys, err := f.store.Store.List(ctx, "memagent", ocrPagesArea, 0)
	if err != nil || len(keys) != 1 {
		t.Errorf("pages kept under %s: %v %v, want one", ocrPagesArea, keys, err)
	}

	survey = actwire.ConvertOutput{}
	if err := f.exec(t, ConvertDocumentName, actwire.ConvertInput{Document: scanURI, Survey: true}, &survey); err != nil {
		t.Fatal(err)
	}
	if !survey.Reused || survey.Document != conv.Document || survey.OCRPages != 1 || survey.OCRPending != 0 {
		t.Errorf("survey after the conversion = %+v, want the conversion", survey)
	}

	var forced actwire.ConvertOutput
	if err := f.exec(t, ConvertDocumentName, actwire.ConvertInput{Document: scanURI, OCR: api.OCRForce}, &forced); err != nil {
		t.Fatal(err)
	}
	d = actwire.ConvertedDocument{}
	if err := json.Unmarshal([]byte(f.read(t, forced.PageMapURI)), &d); err != nil {
		t.Fatal(err)
	}
	if o := d.PageMap.OCR; forced.OCRPages != 3 || len(o) != 3 || !o[1].Reused || o[0].Reused || o[0].Reason != "forced" {
		t.Errorf("forced: %d OCR pages, records %+v; want 3, page 2 reused", forced.OCRPages, o)
	}

	var off actwire.ConvertOutput
	if err := f.exec(t, ConvertDocumentName, actwire.ConvertInput{Document: scanURI, OCR: api.OCROff}, &off); err != nil {
		t.Fatal(err)
	}
	if off.OCRPages != 0 || off.Document == conv.Document || strings.Contains(f.read(t, off.Document), "7391-ALPHA") {
		t.Errorf("off = %+v, want a conversion apart without the scan's text", off)
	}

	g := newFixture(t, nil)
	g.acts.OCRCommand = OCRNone
	if err := g.store.Store.Put(ctx, mustLoc(t, scanURI), scannedPDF(t), "application/pdf"); err != nil {
		t.Fatal(err)
	}
	err = g.exec(t, ConvertDocumentName, actwire.ConvertInput{Document: scanURI}, &conv)
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != api.ErrBadInput || !strings.Contains(appErr.Message(), "needs OCR (page 2: it is a scan) and this worker has no OCR engine: install Debian's tesseract-ocr") {
		t.Errorf("without OCR: %v, want memagent.BadInput naming tesseract-ocr", err)
	}
	if s := g.acts.OCR(ctx); s.Err == nil {
		t.Error("OCRCommand none: the worker says it has OCR")
	}
}

func (f *fixture) read(t *testing.T, uri string) string {
	t.Helper()
	data, err := f.store.ReadAll(context.Background(), mustLoc(t, uri))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestOCRVariant(t *testing.T) {
	for _, tc := range []struct {
		format, mode, langs, want string
	}{
		{"pdf", "", "", "ocr-auto-eng/"},
		{"pdf", "force", "eng+deu", "ocr-force-eng+deu/"},
		{"pdf", "auto", "script/Latin", "ocr-auto-script-Latin/"},
		{"pdf", "off", "deu", ""},
		{"docx", "force", "", ""},
		{"html", "", "", ""},
	} {
		if got := ocrVariant(tc.format, ocrOptions(tc.mode, tc.langs)); got != tc.want {
			t.Errorf("ocrVariant(%s, %q, %q) = %q, want %q", tc.format, tc.mode, tc.langs, got, tc.want)
		}
	}
}
