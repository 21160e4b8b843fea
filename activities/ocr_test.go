package activities

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/docconv"
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
	// The page's reading keeps its words' boxes, for the desk: the fact
	// is found among them, on the page.
	readings, err := f.acts.OCRWords(ctx, scanURI, 2)
	if err != nil || len(readings) != 1 {
		t.Fatalf("OCRWords of page 2: %d readings, %v; want one", len(readings), err)
	}
	boxes, err := docconv.FindText(docconv.OCRChars(readings[0]), "The access code is 7391-ALPHA.")
	if err != nil || len(boxes) == 0 || len(boxes) > 2 {
		t.Errorf("the fact among page 2's OCR words: %v %v, want a box for each of its lines", boxes, err)
	}
	for _, b := range boxes {
		if b.Left < 0 || b.Top < 0 || b.Right > 1 || b.Bottom > 1 || b.Right <= b.Left || b.Bottom <= b.Top {
			t.Errorf("box %+v is not a box on the page", b)
		}
	}
	if r, err := f.acts.OCRWords(ctx, scanURI, 1); err != nil || len(r) != 0 {
		t.Errorf("OCRWords of page 1 (a text page): %d readings, %v; want none", len(r), err)
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
		{"mbox", "", "", "ocr-auto-eng/"},
		{"email", "force", "", "ocr-force-eng/"},
		{"email", "off", "", ""},
	} {
		if got := ocrVariant(tc.format, ocrOptions(tc.mode, tc.langs)); got != tc.want {
			t.Errorf("ocrVariant(%s, %q, %q) = %q, want %q", tc.format, tc.mode, tc.langs, got, tc.want)
		}
	}
}

// TestConvertOCRLimits: a document with more pages to read by OCR than
// Limits.OCRMaxPages is memagent.BadInput naming MEMAGENT_OCR_MAX_PAGES,
// before any page is read; one whose OCR budget runs out converts with
// the pages not read listed (ocr_not_read) and marked in the text, and is
// not reused: the next conversion reads them.
func TestConvertOCRLimits(t *testing.T) {
	testdeps.Command(t, "tesseract", "apt-get install tesseract-ocr tesseract-ocr-eng")
	ctx := context.Background()
	pdf := docconvtest.PDF(docconvtest.PDFOptions{Pages: 3, FactPage: 2, Fact: "The access code is 7391-ALPHA.", Seed: 8})
	in := actwire.ConvertInput{Document: scanURI, OCR: api.OCRForce}

	f := newFixture(t, nil)
	f.acts.Limits.OCRMaxPages = 2
	if err := f.store.Store.Put(ctx, mustLoc(t, scanURI), pdf, "application/pdf"); err != nil {
		t.Fatal(err)
	}
	var out actwire.ConvertOutput
	err := f.exec(t, ConvertDocumentName, in, &out)
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != api.ErrBadInput || !appErr.NonRetryable() ||
		!strings.Contains(appErr.Message(), "over the converter's limit of 2 pages read by OCR per document") || !strings.Contains(appErr.Message(), "MEMAGENT_OCR_MAX_PAGES") {
		t.Errorf("3 pages to read, a limit of 2: %v, want memagent.BadInput naming the limit and MEMAGENT_OCR_MAX_PAGES", err)
	}
	if keys, _ := f.store.Store.List(ctx, "memagent", ocrPagesArea, 0); len(keys) != 0 {
		t.Errorf("%d pages read before the refusal", len(keys))
	}

	g := newFixture(t, nil)
	g.acts.Limits.OCRBudget = time.Millisecond
	if err := g.store.Store.Put(ctx, mustLoc(t, scanURI), pdf, "application/pdf"); err != nil {
		t.Fatal(err)
	}
	if err := g.exec(t, ConvertDocumentName, in, &out); err != nil {
		t.Fatal(err)
	}
	text := g.read(t, out.Document)
	if !slices.Equal(out.OCRNotRead, []int{1, 2, 3}) || !slices.Equal(out.OCRCheckPages, []int{1, 2, 3}) ||
		!strings.Contains(text, "[page 2 (a scan) was not read: the document's OCR budget ran out]") {
		t.Fatalf("budget of 1 ms: not read %v, check %v, text %q; want the 3 pages not read and marked", out.OCRNotRead, out.OCRCheckPages, text)
	}
	g.acts.documents.Limits.OCRBudget = 0
	var again actwire.ConvertOutput
	if err := g.exec(t, ConvertDocumentName, in, &again); err != nil {
		t.Fatal(err)
	}
	if again.Reused || len(again.OCRNotRead) != 0 || !strings.Contains(g.read(t, again.Document), "7391-ALPHA") {
		t.Errorf("the next conversion = %+v, want the pages read, not the marked conversion reused", again)
	}
}
