package desk

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/signoff"
)

// attachmentPart is a MIME part (boundary "b") attaching data as name.
func attachmentPart(ctype, name string, data []byte) string {
	enc := base64.StdEncoding.EncodeToString(data)
	var b strings.Builder
	b.WriteString("--b\nContent-Type: " + ctype + "; name=\"" + name + "\"\nContent-Disposition: attachment; filename=\"" + name + "\"\nContent-Transfer-Encoding: base64\n\n")
	for len(enc) > 76 {
		b.WriteString(enc[:76] + "\n")
		enc = enc[76:]
	}
	return b.String() + enc + "\n"
}

// twoOfOneName is sampleMailbox's three real messages, then Alice's
// message 4 whose two attachments are both named scan.pdf: first, then
// second.
func twoOfOneName(t *testing.T, first, second []byte) (path string, data []byte) {
	t.Helper()
	data, _ = sampleMailbox(t)
	data = append(data, ("From alice@example.org Tue May  3 10:00:00 2022\nFrom: Alice <alice@example.org>\nTo: Bob <bob@example.org>\n" +
		"Subject: Scans\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"b\"\n\n--b\nContent-Type: text/plain\n\nBoth scans.\n" +
		attachmentPart("application/pdf", "scan.pdf", first) + attachmentPart("application/pdf", "scan.pdf", second) + "--b--\n")...)
	path = filepath.Join(t.TempDir(), "matter.mbox")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// attachmentDesk is a desk over the mailbox data at s3://docs/matter.mbox
// whose email index is kept.
func attachmentDesk(t *testing.T, data []byte, kept *keptIndex) *Desk {
	t.Helper()
	d := testDesk(t, 30*time.Second, 1)
	d.cfg.Store, d.cfg.Checks, d.cfg.Logger, d.cfg.Email = oneDoc{data}, readUnder{"s3://docs/"}, discard(), kept
	d.cfg.MaxDocumentBytes = 1 << 20
	d.docs = map[string][]byte{}
	return d
}

// TestPageOfTheSecondOfOneName: of two PDF attachments of one message
// both named scan.pdf, a cell grounded on a page of the second shows the
// second's page, with its quote highlighted, and one on the first's the
// first's: the attachment is named by its place in the message, as the
// mailbox's email index lists it, not by its name. Without the index at
// hand the desk says the name is not enough rather than show the first.
func TestPageOfTheSecondOfOneName(t *testing.T) {
	facts := []string{"The first scan holds the lease of the observatory.", "The access code is 7391-ALPHA."}
	first := docconvtest.PDF(docconvtest.PDFOptions{Pages: 3, FactPage: 2, Fact: facts[0], Seed: 41})
	second := docconvtest.PDF(docconvtest.PDFOptions{Pages: 3, FactPage: 2, Fact: facts[1], Seed: 42})
	path, data := twoOfOneName(t, first, second)
	var text bytes.Buffer
	res, err := (&docconv.Converter{CacheDir: t.TempDir()}).ConvertWith(context.Background(), docconv.FormatMbox, path, &text, docconv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const mbox = "s3://docs/matter.mbox"
	kept := &keptIndex{index: res.Map.Email, file: path}
	d := attachmentDesk(t, data, kept)
	g := &api.SignOffGrid{Subject: api.SignOffSubject{Kind: api.SubjectReview, Source: mbox}}
	ctx := context.Background()
	for i, fact := range facts {
		var cited memagent.PageSpan
		for _, s := range res.Map.Spans {
			if strings.Contains(text.String()[s.Start:s.End], fact) {
				cited = s
			}
		}
		if cited.Label != `msg 4 "Scans" › scan.pdf p. 2` {
			t.Fatalf("fact %d's span %+v, want scan.pdf p. 2 of message 4", i+1, cited)
		}
		row := signoff.Row{Cell: "q1", Document: mbox, Grounding: &api.Grounding{Status: api.GroundingVerbatim, Quote: fact,
			Pages: &api.PageRef{Unit: api.UnitMessage, First: cited.Number, Last: cited.Number, Label: cited.Label}}}
		src := d.source(ctx, g, row)
		if want := mbox + "#msg=4&part=" + string(rune('1'+i)) + "&attachment=scan.pdf"; src != want {
			t.Errorf("scan %d: source %q, want %q", i+1, src, want)
		}
		got, _, err := d.document(ctx, src)
		if want := [][]byte{first, second}[i]; err != nil || !bytes.Equal(got, want) {
			t.Errorf("scan %d: the page's PDF is %d bytes (%v), want the %d of the attachment cited", i+1, len(got), err, len(want))
		}
		p := d.page(ctx, g, row, "review-1")
		if p == nil || p.Error != "" || p.Number != 2 || p.Highlight != "quote" || p.From != "text" || p.Cite != cited.Label {
			t.Errorf("scan %d: page %+v, want page 2 of the scan cited with its quote highlighted", i+1, p)
		}
	}

	// No index at hand (the mailbox changed since its conversion): the
	// name alone does not say which scan.pdf.
	kept.index = &memagent.EmailIndex{}
	d = attachmentDesk(t, data, kept)
	var cited memagent.PageSpan
	for _, s := range res.Map.Spans {
		if strings.Contains(text.String()[s.Start:s.End], facts[1]) {
			cited = s
		}
	}
	row := signoff.Row{Cell: "q1", Document: mbox, Grounding: &api.Grounding{Status: api.GroundingVerbatim, Quote: facts[1],
		Pages: &api.PageRef{Unit: api.UnitMessage, First: cited.Number, Last: cited.Number, Label: cited.Label}}}
	if p := d.page(ctx, g, row, "review-1"); p == nil || !strings.Contains(p.Error, `more than one attachment "scan.pdf"`) || p.Highlight != "" {
		t.Errorf("without the index: page %+v, want an error saying two attachments share the name", p)
	}
}

// TestScannedPageOfAnAttachment: a cell grounded on the scanned page of a
// mailbox's PDF attachment (no text layer) is highlighted from the words
// OCR read on that page of that attachment, looked up under the
// attachment's own key (its bytes' digest) and the mailbox, once, then
// kept; the other scan.pdf's readings are not the cited one's.
func TestScannedPageOfAnAttachment(t *testing.T) {
	first, second := docconvtest.ImagePDF(2), docconvtest.ImagePDF(3)
	path, data := twoOfOneName(t, first, second)
	const mbox = "s3://docs/matter.mbox"
	// The index as an OCR conversion keeps it: message 4's text is span
	// 10, the first scan's pages spans 11 and 12, the second's 13 to 15.
	label := `msg 4 "Scans"`
	kept := &keptIndex{file: path, index: &memagent.EmailIndex{Messages: []memagent.EmailMessage{{Number: 4, Label: label, Subject: "Scans",
		FirstSpan: 10, LastSpan: 15, Attachments: []memagent.EmailAttachment{
			{Name: "scan.pdf", Path: "scan.pdf", Format: "pdf", FirstSpan: 11, LastSpan: 12},
			{Name: "scan.pdf", Path: "scan.pdf", Format: "pdf", FirstSpan: 13, LastSpan: 15}}}}}}
	d := attachmentDesk(t, data, kept)
	word := func(text string, line int, left, top float64) docconv.WordBox {
		return docconv.WordBox{Text: text, Line: line, Box: docconv.Box{Left: left, Top: top, Right: left + 0.08, Bottom: top + 0.02}}
	}
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	quote := []docconv.WordBox{word("The", 0, 0.1, 0.5), word("access", 0, 0.2, 0.5), word("code", 0, 0.3, 0.5),
		word("is", 0, 0.4, 0.5), word("7391-ALPHA.", 0, 0.5, 0.5)}
	ocr := &keptOCR{attachments: map[string]map[int][][]docconv.WordBox{
		sum(first):  {2: {{word("Elsewhere.", 0, 0.1, 0.1)}}},
		sum(second): {2: {quote}},
	}}
	d.cfg.OCR = ocr
	g := &api.SignOffGrid{Subject: api.SignOffSubject{Kind: api.SubjectReview, Source: mbox}}
	row := func(span, page int) signoff.Row {
		return signoff.Row{Cell: "q1", Document: mbox, ModelAnswer: "7391-ALPHA", Grounding: &api.Grounding{Status: api.GroundingVerbatim,
			Quote: "The access code is 7391-ALPHA.", Pages: &api.PageRef{Unit: api.UnitMessage, First: span, Last: span,
				Label: label + " › scan.pdf p. " + string(rune('0'+page)) + " (scan, confidence 0.96)"}}}
	}
	ctx := context.Background()
	for view := 1; view <= 2; view++ {
		p := d.page(ctx, g, row(14, 2), "review-1")
		if p == nil || p.Error != "" || p.Number != 2 || p.Highlight != "quote" || p.From != "ocr" || p.OCR != "words" || len(p.QuoteBoxes) != 1 || len(p.AnswerBoxes) != 1 {
			t.Fatalf("view %d: %+v, want page 2 of the second scan.pdf with the quote highlighted from OCR's words", view, p)
		}
		if ocr.asked != 1 {
			t.Errorf("view %d: the OCR readings were asked for %d times, want once", view, ocr.asked)
		}
	}
	// The first scan.pdf's page 2: its own reading, without the quote.
	if p := d.page(ctx, g, row(12, 2), "review-1"); p == nil || p.Error != "" || p.Number != 2 || p.Highlight != "" || p.OCR != "words" {
		t.Errorf("the first scan.pdf's page 2: %+v, want its own reading looked in, no highlight", p)
	}
}
