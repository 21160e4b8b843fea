package desk

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/signoff"
)

// oneDoc is a store of one PDF.
type oneDoc struct{ data []byte }

func (s oneDoc) Head(context.Context, s3store.Location) (s3store.ObjectInfo, error) {
	return s3store.ObjectInfo{ETag: `"v1"`, Size: int64(len(s.data))}, nil
}
func (s oneDoc) ReadAll(context.Context, s3store.Location) ([]byte, error) { return s.data, nil }

// readAnything lets the desk read every document.
type readAnything struct{}

func (readAnything) CheckRead(field, uri string) error { return nil }
func (readAnything) CheckOutputOf(ctx context.Context, field, uri, workflowID string) error {
	return nil
}

// keptOCR is the worker's OCR cache as the desk sees it: the readings of
// each page, and how often it was asked.
type keptOCR struct {
	pages       map[int][][]docconv.WordBox
	attachments map[string]map[int][][]docconv.WordBox
	asked       int
}

func (k *keptOCR) OCRWords(_ context.Context, _ string, page int) ([][]docconv.WordBox, error) {
	k.asked++
	return k.pages[page], nil
}

// AttachmentOCRWords is the readings of page of the attachment whose
// bytes' SHA-256 is sum, kept as OCR read each attachment's pages.
func (k *keptOCR) AttachmentOCRWords(_ context.Context, _, sum string, page int) ([][]docconv.WordBox, error) {
	k.asked++
	return k.attachments[sum][page], nil
}

// TestPageOnScan: a cited page without a text layer (a scan) is
// highlighted from the words OCR read on it, found among the readings
// kept (the first reading without the quote passed over), and the words
// are asked for once, then kept with the rendered pages; a scan whose
// reading has no word boxes says so, and a desk without OCR readings
// says only that the quote is not on the text layer.
func TestPageOnScan(t *testing.T) {
	const src = "s3://docs/scan.pdf"
	d := testDesk(t, 30*time.Second, 1)
	d.cfg.Store, d.cfg.Checks, d.cfg.Logger = oneDoc{docconvtest.ImagePDF(2)}, readAnything{}, discard()
	d.cfg.MaxDocumentBytes = 1 << 20
	d.docs = map[string][]byte{}
	word := func(text string, line int, left, top float64) docconv.WordBox {
		return docconv.WordBox{Text: text, Line: line, Box: docconv.Box{Left: left, Top: top, Right: left + 0.08, Bottom: top + 0.02}}
	}
	quote := []docconv.WordBox{
		word("Other", 0, 0.1, 0.1), word("words.", 0, 0.2, 0.1),
		word("The", 1, 0.1, 0.8), word("access", 1, 0.2, 0.8), word("code", 1, 0.3, 0.8),
		word("is", 2, 0.1, 0.85), word("7391-ALPHA.", 2, 0.2, 0.85),
	}
	ocr := &keptOCR{pages: map[int][][]docconv.WordBox{
		1: {{word("Elsewhere.", 0, 0.1, 0.1)}, quote},
	}}
	d.cfg.OCR = ocr
	g := &api.SignOffGrid{Subject: api.SignOffSubject{Kind: api.SubjectReview, Source: src}}
	row := func(page int) signoff.Row {
		return signoff.Row{Cell: "q1", ModelAnswer: "7391-ALPHA", Grounding: &api.Grounding{
			Status: api.GroundingVerbatim, Quote: "The access code is 7391-ALPHA.",
			Pages: &api.PageRef{Unit: api.UnitPage, First: page, Last: page},
		}}
	}
	ctx := context.Background()

	for view := 1; view <= 2; view++ {
		p := d.page(ctx, g, row(1), "review-1")
		if p.Error != "" || p.Highlight != "quote" || p.From != "ocr" || p.OCR != "words" || len(p.QuoteBoxes) != 2 || len(p.AnswerBoxes) != 1 {
			t.Fatalf("view %d: %+v, want the quote (two lines) and the answer highlighted from OCR's words", view, p)
		}
		if b := p.QuoteBoxes[0]; fmt.Sprintf("%.4f %.4f %.4f %.4f", b.Left, b.Top, b.Right, b.Bottom) != "0.1000 0.8000 0.3800 0.8200" {
			t.Errorf("view %d: the quote's first line is boxed %+v, want 0.1,0.8–0.38,0.82", view, b)
		}
		if ocr.asked != 1 {
			t.Errorf("view %d: the OCR readings were asked for %d times, want once", view, ocr.asked)
		}
	}

	if p := d.page(ctx, g, row(2), "review-1"); p.Highlight != "" || p.OCR != "none" || len(p.QuoteBoxes) != 0 {
		t.Errorf("page 2, read without word boxes: %+v, want no highlight and ocr none", p)
	}
	d.cfg.OCR = nil
	if p := d.page(ctx, g, row(2), "review-1"); p.Highlight != "" || p.OCR != "" {
		t.Errorf("page 2 on a desk without OCR readings: %+v, want no highlight and ocr unsaid", p)
	}
}
