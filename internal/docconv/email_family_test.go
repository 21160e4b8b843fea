package docconv_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/testdeps"
)

// attach is a MIME part of an attachment: its content type, file name
// and data, base64 encoded as mailers send them.
func attach(boundary, ctype, name string, data []byte) string {
	enc := base64.StdEncoding.EncodeToString(data)
	var b strings.Builder
	fmt.Fprintf(&b, "--%s\nContent-Type: %s; name=\"%s\"\nContent-Disposition: attachment; filename=\"%s\"\nContent-Transfer-Encoding: base64\n\n", boundary, ctype, name, name)
	for len(enc) > 76 {
		b.WriteString(enc[:76] + "\n")
		enc = enc[76:]
	}
	b.WriteString(enc + "\n")
	return b.String()
}

// TestEmailFamilies converts a message whose attachments are a PDF, a
// DOCX, an HTML page, a text file, a forwarded message with a PDF of its
// own, a PNG of a page and a PDF of a scanned page: each is converted as
// the document it is (the image by OCR, as a PDF's page that draws it),
// in the message's order, each page or section a span labeled with
// its family (`msg 2 "Re: Lease" › lease.pdf p. 4`), the index listing
// the members with their spans; a passage on an attachment's page cites
// it so, through the page map as any citation does, and a scanned page
// says it was read by OCR.
func TestEmailFamilies(t *testing.T) {
	pdftoppm := testdeps.Command(t, "pdftoppm", "apt-get install poppler-utils")
	const (
		leaseFact    = "The tenant shall pay the rent of 4,200 euros on the first of each month."
		termsFact    = "Either party may terminate on ninety days written notice."
		scheduleFact = "The keys are handed over on 3 May at noon."
		scanFact     = "The deposit is held by the landlord bank in Utrecht."
		scan2Fact    = "The garden is kept by the tenant from Rotterdam."
	)
	lease := docconvtest.PDF(docconvtest.PDFOptions{Pages: 4, FactPage: 4, Fact: leaseFact, Seed: 1})
	terms := docconvtest.DOCX("Terms", docconvtest.Sections(3, 2, termsFact, 2))
	notes := docconvtest.HTML("Notes", docconvtest.Sections(2, 0, "", 3))
	schedule := docconvtest.PDF(docconvtest.PDFOptions{Pages: 1, FactPage: 1, Fact: scheduleFact, Seed: 4})
	scan := pagePNG(t, pdftoppm, docconvtest.PDF(docconvtest.PDFOptions{Pages: 1, FactPage: 1, Fact: scanFact, Seed: 5}))
	scan2, err := docconvtest.ScannedCopy(pdftoppm, docconvtest.PDF(docconvtest.PDFOptions{Pages: 1, FactPage: 1, Fact: scan2Fact, Seed: 6}), 1)
	if err != nil {
		t.Fatal(err)
	}
	forwarded := "From: Carol <carol@example.org>\nTo: Alice <alice@example.org>\nSubject: Handover schedule\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"inner\"\n\n" +
		"--inner\nContent-Type: text/plain\n\nThe schedule is attached.\n" + attach("inner", "application/pdf", "schedule.pdf", schedule) + "--inner--\n"
	msg := "From: Alice <alice@example.org>\nTo: Bob <bob@example.org>\nDate: Tue, 3 May 2022 10:00:00 +0200\nSubject: Re: Lease\nMessage-ID: <lease-2@example.org>\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"outer\"\n\n" +
		"--outer\nContent-Type: text/plain; charset=utf-8\n\nBob, the signed lease and its terms are attached.\n" +
		attach("outer", "application/pdf", "lease.pdf", lease) +
		attach("outer", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", "terms.docx", terms) +
		attach("outer", "text/html", "notes.html", notes) +
		attach("outer", "text/plain", "list.txt", []byte("1. Keys\n2. Meter readings\n")) +
		"--outer\nContent-Type: message/rfc822\n\n" + forwarded +
		attach("outer", "image/png", "scan.png", scan) + attach("outer", "application/pdf", "scan2.pdf", scan2) + "--outer--\n"
	path := mboxOf(t, plainMessage(1, "Lease", "Here is the draft."), msg)

	// One OCR cache for the mailbox, as the worker keeps one per object:
	// the two scans' page 1 must not meet in it.
	cache := &memCache{m: map[string]*docconv.OCRResult{}}
	format, text, res, err := convertEmailFileWith(t, ocrConverter(t), path, docconv.Options{OCRCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	if format != docconv.FormatMbox {
		t.Fatalf("format %q", format)
	}
	if !strings.Contains(text, "Rotterdam") {
		t.Errorf("the second scan's page 1 lacks Rotterdam: read from the first's in the cache?")
	}
	m := res.Map.Email.Messages[1]
	const label = `msg 2 "Re: Lease"`
	if m.Label != label || m.From != "Alice <alice@example.org>" || m.Subject != "Re: Lease" || m.MessageID != "lease-2@example.org" {
		t.Errorf("message 2: %+v", m)
	}
	var paths []string
	for _, a := range m.Attachments {
		paths = append(paths, a.Path+" ("+a.Format+")")
		if a.Error != "" || a.FirstSpan == 0 {
			t.Errorf("attachment %s: %+v, want it read", a.Path, a)
		}
	}
	want := "lease.pdf (pdf), terms.docx (docx), notes.html (html), list.txt (text), part 5.eml (email), part 5.eml › schedule.pdf (pdf), scan.png (image), scan2.pdf (pdf)"
	if got := strings.Join(paths, ", "); got != want {
		t.Errorf("the family:\n got %s\nwant %s", got, want)
	}
	// The spans, in the message's order.
	var labels []string
	for _, s := range res.Map.Spans {
		if s.Number >= m.FirstSpan && s.Number <= m.LastSpan {
			labels = append(labels, s.Label)
		}
	}
	for i, w := range []string{label, label + " › lease.pdf p. 1", label + " › lease.pdf p. 2", label + " › lease.pdf p. 3", label + " › lease.pdf p. 4",
		label + " › terms.docx § Terms"} {
		if i >= len(labels) || labels[i] != w {
			t.Errorf("span %d of the family: %q, want %q (all: %q)", i+1, at(labels, i), w, labels)
		}
	}
	for _, w := range []string{label + " › part 5.eml", label + " › part 5.eml › schedule.pdf p. 1", label + " › scan.png", label + " › scan2.pdf p. 1", label + " › list.txt"} {
		if !contains(labels, w) {
			t.Errorf("no span labeled %q in %q", w, labels)
		}
	}
	// Citations of the facts, as the page map gives them.
	cite := func(fact string) *api.PageRef {
		i := strings.Index(text, fact)
		if i < 0 {
			t.Fatalf("the text lacks %q", fact)
		}
		return res.Map.Ref(int64(i), int64(i+len(fact)))
	}
	for _, c := range []struct{ fact, want string }{
		{leaseFact, label + " › lease.pdf p. 4"},
		{termsFact, label + " › terms.docx § Clause 2: Harvest terms"},
		{scheduleFact, label + " › part 5.eml › schedule.pdf p. 1"},
	} {
		ref := cite(c.fact)
		if got := memagent.JoinPageRefs([]*api.PageRef{ref}); got != c.want {
			t.Errorf("%q cited as %q, want %q", c.fact, got, c.want)
		}
	}
	if !strings.Contains(text, "Utrecht") {
		t.Fatalf("the scanned page's text lacks Utrecht")
	}
	i := strings.Index(text, "Utrecht")
	ref := res.Map.Ref(int64(i), int64(i+7))
	if got := ref.String(); !strings.HasPrefix(got, label+" › scan.png (scan, confidence ") {
		t.Errorf("the scanned page cited as %q", got)
	}
	if len(res.Map.OCR) != 2 || res.Map.OCR[0].Page != ref.First {
		t.Errorf("OCR records %+v, want two, the first under span %d", res.Map.OCR, ref.First)
	}
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return ""
}

func contains(s []string, w string) bool {
	for _, x := range s {
		if x == w {
			return true
		}
	}
	return false
}

// pagePNG is the first page of pdf as a PNG at 300 DPI, in gray: a page
// a scanner or a phone sent as an image.
func pagePNG(t *testing.T, pdftoppm string, pdf []byte) []byte {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "src.pdf")
	if err := os.WriteFile(src, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(pdftoppm, "-r", "300", "-gray", "-png", "-singlefile", "-f", "1", "-l", "1", src, filepath.Join(dir, "page")).CombinedOutput(); err != nil {
		t.Fatalf("pdftoppm: %v: %s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "page.png"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
