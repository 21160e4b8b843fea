package activities

import (
	"context"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/s3store"
)

const pdfURI = "s3://docs/contract.pdf"

func TestConvertDocumentPDFOnceThenReused(t *testing.T) {
	f := newFixture(t, nil)
	pdf := docconvtest.PDF(docconvtest.PDFOptions{Pages: 20, FactPage: 17, Fact: docgen.Fact, Seed: 5})
	if err := f.store.Store.Put(context.Background(), s3store.Location{Bucket: "docs", Key: "contract.pdf"}, pdf, "application/pdf"); err != nil {
		t.Fatal(err)
	}
	var first, second actwire.ConvertOutput
	if err := f.exec(t, ConvertDocumentName, actwire.ConvertInput{Document: pdfURI}, &first); err != nil {
		t.Fatal(err)
	}
	if first.Format != "pdf" || first.Source != pdfURI || first.Pages != 20 || first.Unit != "page" || first.Reused {
		t.Fatalf("first conversion = %+v", first)
	}
	if !strings.HasPrefix(first.Document, "s3://memagent/converted/"+ConverterVersion+"/") {
		t.Errorf("text at %s, want under the worker's converted/ prefix", first.Document)
	}
	if err := f.exec(t, ConvertDocumentName, actwire.ConvertInput{Document: pdfURI}, &second); err != nil {
		t.Fatal(err)
	}
	if !second.Reused || second.Document != first.Document || second.PageMapURI != first.PageMapURI {
		t.Errorf("second conversion = %+v, want the first reused", second)
	}

	// PrepareDocument indexes the text with its page map, and the update
	// of the chunk holding the fact cites page 17.
	var prep actwire.PrepareOutput
	if err := f.exec(t, PrepareDocumentName, actwire.PrepareInput{Document: first.Document, Question: docgen.Question,
		Options: api.ModelOptions{ChunkTokens: 500}, Converted: &first}, &prep); err != nil {
		t.Fatal(err)
	}
	if prep.Source != pdfURI || prep.Format != "pdf" || prep.Pages != 20 {
		t.Errorf("prepare = %+v, want the source, format and pages", prep)
	}
	idx, err := f.acts.loadIndex(context.Background(), mustLoc(t, prep.IndexURI))
	if err != nil || idx.PageMap == nil || len(idx.PageMap.Spans) != 20 {
		t.Fatalf("index page map: %v %+v", err, idx)
	}
	text, err := f.store.ReadAll(context.Background(), mustLoc(t, first.Document))
	if err != nil {
		t.Fatal(err)
	}
	at := int64(strings.Index(string(text), docgen.Fact))
	for i, ch := range idx.Chunks {
		if ch.Start <= at && at < ch.End {
			var out actwire.UpdateOutput
			if err := f.exec(t, UpdateMemoryName, actwire.UpdateInput{Document: prep.Document, ETag: prep.ETag, IndexURI: prep.IndexURI,
				Chunk: i, Chunks: len(idx.Chunks), Question: docgen.Question, Memory: "No previous memory",
				TracePrefix: tracePrefix}, &out); err != nil {
				t.Fatal(err)
			}
			if out.Pages == nil || out.Pages.First > 17 || out.Pages.Last < 17 {
				t.Errorf("chunk %d pages %v, want a range holding 17", i, out.Pages)
			}
		}
	}
}

func TestConvertDocumentLeavesTextAlone(t *testing.T) {
	f := newFixture(t, []byte("Plain text.\n"))
	var out actwire.ConvertOutput
	if err := f.exec(t, ConvertDocumentName, actwire.ConvertInput{Document: testDocURI}, &out); err != nil {
		t.Fatal(err)
	}
	if out.Document != testDocURI || out.Format != "text" || out.Source != "" {
		t.Errorf("text document: %+v, want it indexed as it is", out)
	}
	for loc, n := range f.store.puts {
		t.Errorf("text document: %d writes of %s, want none", n, loc)
	}
}

func TestConvertDocumentRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		ocr  string // the request's options.ocr, or OCRNone for a worker without OCR
		want string
	}{
		{"encrypted", docconvtest.PDF(docconvtest.PDFOptions{Pages: 1, Password: "x"}), "", "is an encrypted PDF that needs a password"},
		{"scanned, OCR off", docconvtest.ImagePDF(2), api.OCROff, "has no text layer on pages 1–2"},
		{"scanned, no OCR on the worker", docconvtest.ImagePDF(2), OCRNone, "needs OCR (page 1: it is a scan) and this worker has no OCR engine: install Debian's tesseract-ocr"},
		{"unknown OCR mode", docconvtest.ImagePDF(2), "always", `ocr "always" is not auto, force or off`},
		{"legacy doc", []byte("\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1rest"), "", "legacy Office file"},
		{"an image", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), "", "is an image, which memagent does not read as it is: wrap it in a PDF (img2pdf doc.txt -o doc.pdf) and ask about the PDF; memagent reads its page by OCR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.data)
			in := actwire.ConvertInput{Document: testDocURI, OCR: tc.ocr}
			if tc.ocr == OCRNone {
				f.acts.OCRCommand, in.OCR = OCRNone, ""
			}
			err := f.exec(t, ConvertDocumentName, in, &actwire.ConvertOutput{})
			appErr := appError(t, err)
			if appErr.Type() != api.ErrBadInput || !appErr.NonRetryable() || !strings.Contains(appErr.Message(), tc.want) {
				t.Errorf("error %s %q, want a non-retryable %s saying %q", appErr.Type(), appErr.Message(), api.ErrBadInput, tc.want)
			}
			if !strings.Contains(appErr.Message(), testDocURI) && tc.ocr != "always" {
				t.Errorf("message %q does not name the document", appErr.Message())
			}
		})
	}
}

// TestCloseStopsPDFium: Close stops the PDF runtime a conversion started,
// is safe to call twice and on activities that converted nothing, and a
// conversion after it fails instead of starting the runtime again.
func TestCloseStopsPDFium(t *testing.T) {
	if err := (&Activities{}).Close(); err != nil {
		t.Errorf("Close of unused activities: %v", err)
	}
	f := newFixture(t, nil)
	pdf := docconvtest.PDF(docconvtest.PDFOptions{Pages: 2, FactPage: 1, Fact: docgen.Fact, Seed: 5})
	if err := f.store.Store.Put(context.Background(), s3store.Location{Bucket: "docs", Key: "contract.pdf"}, pdf, "application/pdf"); err != nil {
		t.Fatal(err)
	}
	var out actwire.ConvertOutput
	if err := f.exec(t, ConvertDocumentName, actwire.ConvertInput{Document: pdfURI}, &out); err != nil {
		t.Fatal(err)
	}
	if err := f.acts.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := f.acts.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := f.store.Store.Put(context.Background(), s3store.Location{Bucket: "docs", Key: "contract.pdf"}, append(pdf, '\n'), "application/pdf"); err != nil {
		t.Fatal(err)
	}
	if err := f.exec(t, ConvertDocumentName, actwire.ConvertInput{Document: pdfURI}, &out); err == nil {
		t.Error("a PDF converted after Close")
	}
}
