package activities

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/testdeps"
)

// TestEmailMessageOfAConvertedMailbox: after a mailbox of Debian's Python
// test suite's sample messages (which nobody here wrote) is converted,
// EmailMessage finds each message in the conversion's email index, its
// headers as the message's own say and its attachments in order; a
// number the mailbox lacks, and a mailbox changed since its conversion,
// are nil; and a mailbox outside the worker's read prefixes is refused
// as memagent.Forbidden, as OCRWords refuses a document. EmailAttachment
// writes an attachment's decoded bytes, bounded, under the same check.
func TestEmailMessageOfAConvertedMailbox(t *testing.T) {
	dir := filepath.Dir(testdeps.Manual(t, "libpython3.11-testsuite", "usr/lib/python3.11/test/test_email/data/msg_01.txt"))
	var mbox bytes.Buffer
	var second []byte
	for _, name := range []string{"msg_01.txt", "msg_04.txt", "msg_13.txt"} {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.HasPrefix(raw, []byte("From ")) {
			_, raw, _ = bytes.Cut(raw, []byte("\n"))
		}
		if name == "msg_04.txt" {
			second = raw
		}
		mbox.WriteString("From sender@example.org Tue Sep 11 00:05:05 2001\n")
		mbox.Write(raw)
		mbox.WriteString("\n")
	}
	const uri = "s3://docs/matter.mbox"
	f := newFixture(t, nil)
	putObject(t, f.store.Store, uri, mbox.Bytes())
	ctx := context.Background()

	if m, err := f.acts.EmailMessage(ctx, uri, 2); err != nil || m != nil {
		t.Fatalf("before a conversion: %+v, %v; want none", m, err)
	}
	var conv actwire.ConvertOutput
	if err := f.exec(t, ConvertDocumentName, actwire.ConvertInput{Document: uri}, &conv); err != nil {
		t.Fatal(err)
	}
	m, err := f.acts.EmailMessage(ctx, uri, 2)
	if err != nil || m == nil {
		t.Fatalf("message 2: %+v, %v", m, err)
	}
	h, err := mail.ReadMessage(bytes.NewReader(second))
	if err != nil {
		t.Fatal(err)
	}
	if m.Number != 2 || m.From != "barry@python.org (Barry A. Warsaw)" || m.From != h.Header.Get("From") || m.Subject != h.Header.Get("Subject") ||
		m.Date != h.Header.Get("Date") || m.To != h.Header.Get("To") || !strings.HasPrefix(m.Label, "msg 2 ") {
		t.Errorf("message 2: %+v; its header says From %q, Subject %q", m, h.Header.Get("From"), h.Header.Get("Subject"))
	}
	if a := m.Attachments; len(a) != 2 || a[0].Name != "msg.txt" || a[1].Name != "msg.txt" || a[0].FirstSpan == 0 {
		t.Errorf("message 2's attachments %+v, want two msg.txt read", a)
	}
	if m, err := f.acts.EmailMessage(ctx, uri, 3); err != nil || m == nil || len(m.Attachments) != 1 || m.Attachments[0].Name != "dingusfish.gif" || m.Attachments[0].Error == "" {
		t.Errorf("message 3: %+v, %v; want its GIF listed, not read", m, err)
	}
	if m, err := f.acts.EmailMessage(ctx, uri, 9); err != nil || m != nil {
		t.Errorf("message 9 of 3: %+v, %v; want none", m, err)
	}

	// An attachment, as its decoded bytes, bounded.
	var gif bytes.Buffer
	if err := f.acts.EmailAttachment(ctx, uri, 3, "dingusfish.gif", 1<<20, &gif); err != nil || !bytes.HasPrefix(gif.Bytes(), []byte("GIF8")) {
		t.Errorf("dingusfish.gif of message 3: %d bytes %q…, %v; want the GIF", gif.Len(), gif.Bytes()[:min(gif.Len(), 6)], err)
	}
	if err := f.acts.EmailAttachment(ctx, uri, 3, "dingusfish.gif", 100, io.Discard); err == nil || !strings.Contains(err.Error(), "over 100 bytes") {
		t.Errorf("dingusfish.gif over 100 bytes: %v, want refused", err)
	}
	if err := f.acts.EmailAttachment(ctx, uri, 1, "dingusfish.gif", 1<<20, io.Discard); err == nil || !strings.Contains(err.Error(), "no attachment") {
		t.Errorf("an attachment message 1 lacks: %v", err)
	}

	f.acts.ReadPrefixes = []string{"s3://elsewhere/"}
	var appErr *temporal.ApplicationError
	if m, err := f.acts.EmailMessage(ctx, uri, 2); m != nil || !errors.As(err, &appErr) || appErr.Type() != api.ErrForbidden {
		t.Errorf("a mailbox outside the read prefixes: %+v, %v; want %s", m, err, api.ErrForbidden)
	}
	if err := f.acts.EmailAttachment(ctx, uri, 3, "dingusfish.gif", 1<<20, io.Discard); !errors.As(err, &appErr) || appErr.Type() != api.ErrForbidden {
		t.Errorf("an attachment of a mailbox outside the read prefixes: %v; want %s", err, api.ErrForbidden)
	}
	f.acts.ReadPrefixes = []string{"s3://"}

	// A new version of the mailbox: its conversion is not yet kept.
	putObject(t, f.store.Store, uri, append(mbox.Bytes(), "From x@example.org Tue Sep 11 00:05:05 2001\nSubject: later\n\nlater\n"...))
	if m, err := f.acts.EmailMessage(ctx, uri, 2); err != nil || m != nil {
		t.Errorf("the mailbox changed since its conversion: %+v, %v; want none", m, err)
	}
}

// TestAttachmentsOfOneName: a message whose two attachments are both
// named scan.pdf, each a PDF whose second page is a 300-DPI scan with a
// fact of its own, is converted (the scans read by OCR). Each attachment
// is extracted by its place in the index as the bytes attached there,
// and by its name alone is refused as one of two; the words OCR read on
// each one's scanned page are found under that attachment's digest (the
// second's fact among the second's words, not the first's), none under
// another digest or page; a digest that is not one is memagent.BadInput
// and a mailbox outside the read prefixes memagent.Forbidden.
func TestAttachmentsOfOneName(t *testing.T) {
	pdftoppm := testdeps.Command(t, "pdftoppm", "apt-get install poppler-utils")
	testdeps.Command(t, "tesseract", "apt-get install tesseract-ocr tesseract-ocr-eng")
	facts := []string{"The access code is 7391-ALPHA.", "The vault opens with 5528-OMEGA."}
	var scans [][]byte
	for i, fact := range facts {
		scan, err := docconvtest.ScannedCopy(pdftoppm, docconvtest.PDF(docconvtest.PDFOptions{Pages: 2, FactPage: 2, Fact: fact, Seed: uint64(30 + i)}), 2)
		if err != nil {
			t.Fatal(err)
		}
		scans = append(scans, scan)
	}
	part := func(data []byte) string {
		return "--b\nContent-Type: application/pdf; name=\"scan.pdf\"\nContent-Disposition: attachment; filename=\"scan.pdf\"\nContent-Transfer-Encoding: base64\n\n" +
			base64.StdEncoding.EncodeToString(data) + "\n"
	}
	mbox := "From alice@example.org Tue May  3 10:00:00 2022\nFrom: Alice <alice@example.org>\nTo: Bob <bob@example.org>\nSubject: Scans\n" +
		"MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"b\"\n\n--b\nContent-Type: text/plain\n\nTwo scans.\n" + part(scans[0]) + part(scans[1]) + "--b--\n"
	const uri = "s3://docs/scans.mbox"
	f := newFixture(t, nil)
	putObject(t, f.store.Store, uri, []byte(mbox))
	ctx := context.Background()
	var conv actwire.ConvertOutput
	if err := f.exec(t, ConvertDocumentName, actwire.ConvertInput{Document: uri}, &conv); err != nil {
		t.Fatal(err)
	}
	if conv.OCRPages != 2 {
		t.Fatalf("conversion %+v, want the two scanned pages read", conv)
	}
	m, err := f.acts.EmailMessage(ctx, uri, 1)
	if err != nil || m == nil || len(m.Attachments) != 2 || m.Attachments[0].Path != "scan.pdf" || m.Attachments[1].Path != "scan.pdf" {
		t.Fatalf("message 1: %+v, %v; want two scan.pdf", m, err)
	}
	for i, scan := range scans {
		var b bytes.Buffer
		if err := f.acts.EmailAttachmentAt(ctx, uri, 1, i+1, "scan.pdf", 1<<20, &b); err != nil || !bytes.Equal(b.Bytes(), scan) {
			t.Errorf("attachment %d: %d bytes, %v; want the %d bytes of scan %d", i+1, b.Len(), err, len(scan), i+1)
		}
	}
	if err := f.acts.EmailAttachment(ctx, uri, 1, "scan.pdf", 1<<20, io.Discard); err == nil || !strings.Contains(err.Error(), "more than one") {
		t.Errorf("scan.pdf by its name: %v, want refused as one of two", err)
	}
	for i, scan := range scans {
		sum := sha256.Sum256(scan)
		readings, err := f.acts.AttachmentOCRWords(ctx, uri, hex.EncodeToString(sum[:]), 2)
		if err != nil || len(readings) != 1 {
			t.Fatalf("scan %d's page 2: %d readings, %v; want one", i+1, len(readings), err)
		}
		chars := docconv.OCRChars(readings[0])
		if _, err := docconv.FindText(chars, facts[i]); err != nil {
			t.Errorf("scan %d's fact among its page 2's OCR words: %v", i+1, err)
		}
		if _, err := docconv.FindText(chars, facts[1-i]); err == nil {
			t.Errorf("scan %d's page 2 holds the other scan's fact", i+1)
		}
		if r, err := f.acts.AttachmentOCRWords(ctx, uri, hex.EncodeToString(sum[:]), 1); err != nil || len(r) != 0 {
			t.Errorf("scan %d's page 1 (a text page): %d readings, %v; want none", i+1, len(r), err)
		}
	}
	other := sha256.Sum256([]byte("another attachment"))
	if r, err := f.acts.AttachmentOCRWords(ctx, uri, hex.EncodeToString(other[:]), 2); err != nil || len(r) != 0 {
		t.Errorf("an attachment the mailbox lacks: %d readings, %v; want none", len(r), err)
	}
	var appErr *temporal.ApplicationError
	if _, err := f.acts.AttachmentOCRWords(ctx, uri, "../scan", 2); !errors.As(err, &appErr) || appErr.Type() != api.ErrBadInput {
		t.Errorf("a digest that is not one: %v, want %s", err, api.ErrBadInput)
	}
	f.acts.ReadPrefixes = []string{"s3://elsewhere/"}
	sum := sha256.Sum256(scans[1])
	if r, err := f.acts.AttachmentOCRWords(ctx, uri, hex.EncodeToString(sum[:]), 2); r != nil || !errors.As(err, &appErr) || appErr.Type() != api.ErrForbidden {
		t.Errorf("a mailbox outside the read prefixes: %d readings, %v; want %s", len(r), err, api.ErrForbidden)
	}
	if err := f.acts.EmailAttachmentAt(ctx, uri, 1, 2, "scan.pdf", 1<<20, io.Discard); !errors.As(err, &appErr) || appErr.Type() != api.ErrForbidden {
		t.Errorf("an attachment of a mailbox outside the read prefixes: %v; want %s", err, api.ErrForbidden)
	}
}
