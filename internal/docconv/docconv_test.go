package docconv_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
)

// One converter for the package's tests: PDFium starts once.
var (
	convOnce sync.Once
	conv     *docconv.Converter
)

func converter(t *testing.T) *docconv.Converter {
	t.Helper()
	convOnce.Do(func() { conv = &docconv.Converter{CacheDir: docconv.DefaultCacheDir()} })
	return conv
}

func convert(t *testing.T, data []byte) (string, *docconv.Result, error) {
	t.Helper()
	return convertWith(t, converter(t), data, docconv.Options{})
}

// convertWith converts data on c with opts.
func convertWith(t *testing.T, c *docconv.Converter, data []byte, opts docconv.Options) (string, *docconv.Result, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "doc")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	format := docconv.Detect(data[:min(len(data), docconv.SniffBytes)])
	var out bytes.Buffer
	res, err := c.ConvertWith(context.Background(), format, path, &out, opts)
	return out.String(), res, err
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		name, head, want string
	}{
		{"pdf", "%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", docconv.FormatPDF},
		{"pdf after junk", "\x00\x01junk%PDF-1.4\n", docconv.FormatPDF},
		{"zip", "PK\x03\x04\x14\x00\x06\x00", docconv.FormatZip},
		{"ole", "\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1\x00\x00", docconv.FormatOLE},
		{"html doctype", "\xEF\xBB\xBF  <!DOCTYPE html><html>", docconv.FormatHTML},
		{"html comment first", "<!-- saved -->\n<html lang=en>", docconv.FormatHTML},
		{"xhtml", "<?xml version=\"1.0\"?>\n<html xmlns=\"http://www.w3.org/1999/xhtml\">", docconv.FormatHTML},
		{"text mentioning html", "The <html> tag opens a page.", docconv.FormatText},
		{"text", "Just some text.\n", docconv.FormatText},
		{"latin1 text", "caf\xe9 au lait\n", docconv.FormatText},
		{"png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", docconv.FormatImage},
		{"email", "Return-Path: <a@example.org>\r\nFrom: A <a@example.org>\r\nSubject: Lease\r\n\r\nBody\r\n", docconv.FormatEmail},
		{"email, MIME only", "MIME-Version: 1.0\nContent-Type: text/plain\n\nBody\n", docconv.FormatEmail},
		{"email without its blank line", "From: a@example.org\nSubject: x\nthe body starts here\n", docconv.FormatEmail},
		{"mbox", "From a@example.org Mon Jan  2 15:04:05 2006\nFrom: a@example.org\nSubject: x\n\nBody\n", docconv.FormatMbox},
		{"text that starts with a field", "Subject: the meeting\n\nWe met on Monday.\n", docconv.FormatText},
		{"text of colons", "Note: this is text.\nAnother line with words: more\n", docconv.FormatText},
		{"text that starts From", "From the river we walked on.\nTo: nobody\n", docconv.FormatText},
		{"outlook msg", "\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1\x00_\x00_\x00s\x00u\x00b\x00s\x00t\x00g\x001\x00.\x000\x00_\x00", docconv.FormatOutlook},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := docconv.Detect([]byte(tc.head)); got != tc.want {
				t.Errorf("Detect(%q) = %q, want %q", tc.head, got, tc.want)
			}
		})
	}
}

func TestPDFPagesHeadersAndFact(t *testing.T) {
	o := docconvtest.PDFOptions{Pages: 30, FactPage: 17, Fact: docgen.Fact, Seed: 1}
	text, res, err := convert(t, docconvtest.PDF(o))
	if err != nil {
		t.Fatal(err)
	}
	if res.Map.Unit != api.UnitPage || res.Map.Pages != 30 || len(res.Map.Spans) != 30 {
		t.Fatalf("page map: unit %q, pages %d, spans %d; want page, 30, 30", res.Map.Unit, res.Map.Pages, len(res.Map.Spans))
	}
	if int64(len(text)) != res.Bytes {
		t.Errorf("Bytes = %d, text is %d", res.Bytes, len(text))
	}
	at := strings.Index(text, docgen.Fact)
	if at < 0 {
		t.Fatalf("the fact is not in the text as one sentence; page 17 reads:\n%s", pageText(text, res, 17))
	}
	if ref := res.Map.Ref(int64(at), int64(at+len(docgen.Fact))); ref.String() != "p. 17" {
		t.Errorf("fact cites %q, want p. 17", ref)
	}
	for _, gone := range []string{docconvtest.Header, docconvtest.Footer, "Page 17 of 30", "Page 1 of 30"} {
		if strings.Contains(text, gone) {
			t.Errorf("running header/footer %q left in the text", gone)
		}
	}
	if res.Dropped != 90 {
		t.Errorf("Dropped = %d, want 90 (header, footer, page number on 30 pages)", res.Dropped)
	}
	// Every paragraph comes out whole, in order, one per line block.
	paras := docconvtest.PageParagraphs(o)
	for p, want := range paras[:3] {
		got := strings.Split(pageText(text, res, p+1), "\n\n")
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("page %d:\n got %q\nwant %q", p+1, got, want)
		}
	}
}

func TestPDFTwoColumns(t *testing.T) {
	o := docconvtest.PDFOptions{Pages: 4, FactPage: 2, Fact: docgen.Fact, TwoColumns: true, Seed: 2}
	text, res, err := convert(t, docconvtest.PDF(o))
	if err != nil {
		t.Fatal(err)
	}
	paras := docconvtest.PageParagraphs(o)
	for p := range paras {
		got := strings.Split(pageText(text, res, p+1), "\n\n")
		want := append([]string{docconvtest.ColumnTitle(p + 1)}, paras[p]...)
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("page %d read out of order:\n got %q\nwant %q", p+1, got, want)
		}
	}
}

func TestPDFRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		ocr  string
		want string
	}{
		{"encrypted", docconvtest.PDF(docconvtest.PDFOptions{Pages: 2, Password: "s3cret"}), "", "encrypted PDF that needs a password"},
		{"images only, OCR off", docconvtest.ImagePDF(3), docconv.OCROff, "no text layer on pages 1–3 of its 3 pages (only images: a scan), and OCR is off: ask with ocr auto"},
		{"one scanned page, OCR off", docconvtest.ImagePDF(1), docconv.OCROff, "no text layer on page 1 of its 1 pages"},
		{"images only, no engine", docconvtest.ImagePDF(3), "", "needs OCR (page 1: it is a scan) and this worker has no OCR engine: install Debian's tesseract-ocr"},
		{"OCR forced, no engine", docconvtest.PDF(docconvtest.PDFOptions{Pages: 2}), docconv.OCRForce, "needs OCR (page 1: OCR is forced) and this worker has no OCR engine"},
		{"corrupt", []byte("%PDF-1.4\n1 0 obj << /Type /Catalog >> garbage\n"), "", "not a readable PDF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := convertWith(t, converter(t), tc.data, docconv.Options{OCR: docconv.OCROptions{Mode: tc.ocr}})
			var bad *docconv.Error
			if !errors.As(err, &bad) {
				t.Fatalf("err = %v, want a *docconv.Error", err)
			}
			if !strings.Contains(bad.Msg, tc.want) {
				t.Errorf("message %q does not say %q", bad.Msg, tc.want)
			}
		})
	}
}

func TestDOCXSections(t *testing.T) {
	secs := docconvtest.Sections(5, 3, docgen.Fact, 1)
	text, res, err := convert(t, docconvtest.DOCX("Supply agreement", secs))
	if err != nil {
		t.Fatal(err)
	}
	checkSections(t, text, res, secs)
	if strings.Contains(text, docconvtest.Header) {
		t.Error("the page header part was read into the text")
	}
}

func TestHTMLSections(t *testing.T) {
	secs := docconvtest.Sections(5, 3, docgen.Fact, 1)
	text, res, err := convert(t, docconvtest.HTML("Supply agreement", secs))
	if err != nil {
		t.Fatal(err)
	}
	checkSections(t, text, res, secs)
	for _, gone := range []string{"Contracts", "tracking", "font-family", docconvtest.Footer} {
		if strings.Contains(text, gone) {
			t.Errorf("%q (navigation, script, style or footer) is in the text", gone)
		}
	}
}

func checkSections(t *testing.T, text string, res *docconv.Result, secs []docconvtest.Section) {
	t.Helper()
	if res.Map.Unit != api.UnitSection {
		t.Fatalf("unit %q, want section", res.Map.Unit)
	}
	// Section 1 is the title; the clauses follow.
	if len(res.Map.Spans) != len(secs)+1 {
		t.Fatalf("%d sections, want %d: %+v", len(res.Map.Spans), len(secs)+1, res.Map.Spans)
	}
	at := strings.Index(text, docgen.Fact)
	if at < 0 {
		t.Fatalf("the fact is not in the text:\n%s", text)
	}
	ref := res.Map.Ref(int64(at), int64(at+len(docgen.Fact)))
	if want := "§ " + secs[2].Heading; ref.String() != want {
		t.Errorf("fact cites %q, want %q", ref, want)
	}
	for i, s := range secs {
		span := res.Map.Spans[i+1]
		got := text[span.Start:span.End]
		want := s.Heading + "\n\n" + strings.Join(s.Paragraphs, "\n\n")
		if got != want {
			t.Errorf("section %d:\n got %q\nwant %q", i+2, got, want)
		}
	}
}

func TestNotDOCX(t *testing.T) {
	var buf bytes.Buffer
	zw := newZip(&buf, map[string]string{"xl/workbook.xml": "<workbook/>"})
	_ = zw
	_, _, err := convert(t, buf.Bytes())
	var bad *docconv.Error
	if !errors.As(err, &bad) || !strings.Contains(bad.Msg, "Excel") {
		t.Fatalf("err = %v, want an Error naming Excel", err)
	}
}

func pageText(text string, res *docconv.Result, page int) string {
	for _, s := range res.Map.Spans {
		if s.Number == page {
			return text[s.Start:s.End]
		}
	}
	return ""
}

// TestAdmonitionHeading: a "Tip" heading inside a section opens no
// section; its text is cited with the section around it.
func TestAdmonitionHeading(t *testing.T) {
	page := `<!DOCTYPE html><html><body><h2>5.2 Bash Variables</h2><p>Variables hold strings.</p>
<h3>Tip</h3><p>Quote every expansion of a variable.</p><h2>5.3 Arrays</h2><p>Arrays hold lists.</p></body></html>`
	text, res, err := convert(t, []byte(page))
	if err != nil {
		t.Fatal(err)
	}
	at := strings.Index(text, "Quote every")
	if at < 0 {
		t.Fatalf("tip text missing: %q", text)
	}
	if got, want := res.Map.Ref(int64(at), int64(at+5)).String(), "§ 5.2 Bash Variables"; got != want {
		t.Errorf("tip cited as %q, want %q", got, want)
	}
}
