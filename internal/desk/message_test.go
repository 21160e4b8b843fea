package desk

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/mail"
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
	"github.com/memagent/memagent/internal/testdeps"
)

// sampleMailbox is a mailbox of three sample messages of Debian's Python
// test suite (libpython3.11-testsuite), which nobody here wrote: a plain
// message, one with two text attachments both named msg.txt (msg_04), and
// one with a small GIF no conversion reads (msg_13); and the raw
// messages.
func sampleMailbox(t *testing.T) ([]byte, [][]byte) {
	t.Helper()
	dir := filepath.Dir(testdeps.Manual(t, "libpython3.11-testsuite", "usr/lib/python3.11/test/test_email/data/msg_01.txt"))
	var mbox bytes.Buffer
	var raws [][]byte
	for _, name := range []string{"msg_01.txt", "msg_04.txt", "msg_13.txt"} {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.HasPrefix(raw, []byte("From ")) {
			_, raw, _ = bytes.Cut(raw, []byte("\n"))
		}
		raws = append(raws, raw)
		mbox.WriteString("From sender@example.org Tue Sep 11 00:05:05 2001\n")
		mbox.Write(raw)
		mbox.WriteString("\n")
	}
	return mbox.Bytes(), raws
}

// keptIndex is the worker's email index of one mailbox as the desk sees
// it (Config.Email), and how often it was asked.
type keptIndex struct {
	index     *memagent.EmailIndex
	file      string // the mailbox
	asked     int
	extracted int
}

func (k *keptIndex) EmailMessage(_ context.Context, _ string, number int) (*memagent.EmailMessage, error) {
	k.asked++
	for _, m := range k.index.Messages {
		if m.Number == number {
			return &m, nil
		}
	}
	return nil, nil
}

func (k *keptIndex) EmailAttachmentAt(ctx context.Context, _ string, number, part int, apath string, _ int64, w io.Writer) error {
	k.extracted++
	return (&docconv.Converter{}).ExtractAttachment(ctx, docconv.FormatMbox, k.file, number, part, apath, w)
}

// readUnder lets the desk read documents under prefix only, as the
// worker's CheckRead does.
type readUnder struct{ prefix string }

func (r readUnder) CheckRead(field, uri string) error {
	if !strings.HasPrefix(uri, r.prefix) {
		return errors.New(field + " " + uri + " is outside what this worker may read")
	}
	return nil
}
func (readUnder) CheckOutputOf(ctx context.Context, field, uri, workflowID string) error { return nil }

// TestMessageOfAFamily: a cell grounded on an attachment of a real
// message shows the message as its converted mailbox indexed it (its
// headers as net/mail reads them, its attachments in order, the cited
// one, of two with one name, marked by the span it is grounded on),
// asked for once then kept; a GIF no conversion reads is listed with why;
// a cell on a message's text marks no attachment; a mailbox the worker
// may not read is not looked up; and a desk without the index says so.
func TestMessageOfAFamily(t *testing.T) {
	data, raws := sampleMailbox(t)
	path := filepath.Join(t.TempDir(), "matter.mbox")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	res, err := (&docconv.Converter{CacheDir: t.TempDir()}).ConvertWith(context.Background(), docconv.FormatMbox, path, &text, docconv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ix := res.Map.Email
	if ix == nil || len(ix.Messages) != 3 || len(ix.Messages[1].Attachments) != 2 || ix.Messages[1].Attachments[1].FirstSpan == 0 {
		t.Fatalf("index %+v, want 3 messages, the second with two attachments read", ix)
	}
	const mbox = "s3://docs/matter.mbox"
	kept := &keptIndex{index: ix, file: path}
	d := &Desk{cfg: Config{Store: oneDoc{data}, Checks: readUnder{"s3://docs/"}, Logger: discard(), Email: kept},
		pages: newRenderer(time.Minute, 1, DefaultPageCacheBytes, discard())}
	t.Cleanup(func() { d.Close() })
	g := &api.SignOffGrid{Subject: api.SignOffSubject{Kind: api.SubjectReview, Source: mbox}}
	spanRow := func(span int) signoff.Row {
		for _, s := range res.Map.Spans {
			if s.Number == span {
				return signoff.Row{Cell: "q1", Document: mbox, Grounding: &api.Grounding{Status: api.GroundingVerbatim,
					Pages: &api.PageRef{Unit: api.UnitMessage, First: span, Last: span, Label: s.Label}}}
			}
		}
		t.Fatalf("no span %d", span)
		return signoff.Row{}
	}
	ctx := context.Background()

	second := ix.Messages[1]
	msg, err := mail.ReadMessage(bytes.NewReader(raws[1]))
	if err != nil {
		t.Fatal(err)
	}
	says := func(k string) string {
		v := strings.Join(msg.Header[k], ", ")
		if dv, err := (&mime.WordDecoder{}).DecodeHeader(v); err == nil {
			v = dv
		}
		return strings.Join(strings.Fields(v), " ")
	}
	for view := 1; view <= 2; view++ {
		v := d.message(ctx, g, spanRow(second.Attachments[1].FirstSpan))
		if v == nil || v.Error != "" || v.Number != 2 || v.Message != second.Label || v.Document != "matter.mbox" {
			t.Fatalf("view %d: %+v, want message 2 of matter.mbox", view, v)
		}
		for _, f := range []struct{ k, got string }{{"From", v.From}, {"To", v.To}, {"Cc", v.Cc}, {"Date", v.Date}, {"Subject", v.Subject}} {
			if want := says(f.k); f.got != want {
				t.Errorf("view %d: %s %q, the message's header says %q", view, f.k, f.got, want)
			}
		}
		if v.From == "" || v.Subject != "a simple multipart" {
			t.Errorf("view %d: From %q, Subject %q; want the message's", view, v.From, v.Subject)
		}
		if a := v.Attachments; len(a) != 2 || a[0].Name != "msg.txt" || a[1].Name != "msg.txt" || a[0].Cited || !a[1].Cited ||
			!a[0].Read || !a[1].Read || a[1].Parts != 1 || a[1].Format != docconv.FormatText || a[1].ContentType != "text/plain" {
			t.Errorf("view %d: attachments %+v, want two msg.txt read, the second cited", view, a)
		}
		if kept.asked != 1 {
			t.Errorf("view %d: the index was asked %d times, want once", view, kept.asked)
		}
	}

	// The GIF: listed, not read, and why.
	third := ix.Messages[2]
	if third.FirstSpan == 0 {
		t.Fatalf("message 3 %+v has no text", third)
	}
	v := d.message(ctx, g, spanRow(third.FirstSpan))
	if v == nil || v.Subject != "Here is your dingus fish" || len(v.Attachments) != 1 {
		t.Fatalf("message 3: %+v", v)
	}
	if a := v.Attachments[0]; a.Name != "dingusfish.gif" || a.Read || a.Cited || !strings.Contains(a.Error, "small image") || a.ContentType != "image/gif" {
		t.Errorf("message 3's attachment %+v, want dingusfish.gif not read (a small image), not cited", a)
	}

	// A row on a PDF's page is in no family: no message.
	if v := d.message(ctx, g, signoff.Row{Cell: "q2", Grounding: &api.Grounding{Status: api.GroundingVerbatim, Pages: &api.PageRef{Unit: api.UnitPage, First: 1, Last: 1}}}); v != nil {
		t.Errorf("a row on a page: %+v, want no message", v)
	}

	// A mailbox outside what the worker may read: not looked up.
	asked := kept.asked
	other := api.SignOffGrid{Subject: api.SignOffSubject{Kind: api.SubjectReview, Source: "s3://private/matter.mbox"}}
	v = d.message(ctx, &other, spanRow(third.FirstSpan))
	if v == nil || !strings.Contains(v.Error, "outside what this worker may read") || v.From != "" || len(v.Attachments) != 0 || kept.asked != asked {
		t.Errorf("a mailbox the worker may not read: %+v (index asked %d more times), want refused, not looked up", v, kept.asked-asked)
	}

	d.cfg.Email = nil
	if v := d.message(ctx, g, spanRow(third.FirstSpan)); v == nil || v.Error == "" || v.From != "" {
		t.Errorf("a desk without the index: %+v, want the label and why no headers", v)
	}
}

// TestPageOfAnAttachment: a cell grounded on a page of a mailbox's PDF
// attachment shows that page, extracted from the mailbox (once, then
// kept) and highlighted from its text layer; the attachment's source
// names the mailbox, whose read check it passes; a cell on the message's
// text has no page.
func TestPageOfAnAttachment(t *testing.T) {
	data, _ := sampleMailbox(t)
	const fact = "The access code is 7391-ALPHA."
	pdf := docconvtest.PDF(docconvtest.PDFOptions{Pages: 3, FactPage: 2, Fact: fact, Seed: 5})
	enc := base64.StdEncoding.EncodeToString(pdf)
	var b strings.Builder
	for len(enc) > 76 {
		b.WriteString(enc[:76] + "\n")
		enc = enc[76:]
	}
	b.WriteString(enc + "\n")
	data = append(data, fmt.Sprintf("From alice@example.org Tue May  3 10:00:00 2022\nFrom: Alice <alice@example.org>\nTo: Bob <bob@example.org>\n"+
		"Subject: Re: Lease\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"b\"\n\n--b\nContent-Type: text/plain\n\nThe lease.\n"+
		"--b\nContent-Type: application/pdf; name=\"lease.pdf\"\nContent-Disposition: attachment; filename=\"lease.pdf\"\nContent-Transfer-Encoding: base64\n\n%s--b--\n", b.String())...)
	path := filepath.Join(t.TempDir(), "matter.mbox")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	res, err := (&docconv.Converter{CacheDir: t.TempDir()}).ConvertWith(context.Background(), docconv.FormatMbox, path, &text, docconv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var cited memagent.PageSpan
	for _, s := range res.Map.Spans {
		if strings.Contains(text.String()[s.Start:s.End], "7391-ALPHA") {
			cited = s
		}
	}
	if cited.Label != `msg 4 "Re: Lease" › lease.pdf p. 2` {
		t.Fatalf("the fact's span %+v, want lease.pdf p. 2 of message 4", cited)
	}
	const mbox = "s3://docs/matter.mbox"
	kept := &keptIndex{index: res.Map.Email, file: path}
	d := testDesk(t, 30*time.Second, 1)
	d.cfg.Store, d.cfg.Checks, d.cfg.Logger, d.cfg.Email = oneDoc{data}, readUnder{"s3://docs/"}, discard(), kept
	d.cfg.MaxDocumentBytes = 1 << 20
	d.docs = map[string][]byte{}
	g := &api.SignOffGrid{Subject: api.SignOffSubject{Kind: api.SubjectReview, Source: mbox}}
	row := signoff.Row{Cell: "q1", Document: mbox, ModelAnswer: "7391-ALPHA", Grounding: &api.Grounding{Status: api.GroundingVerbatim, Quote: fact,
		Pages: &api.PageRef{Unit: api.UnitMessage, First: cited.Number, Last: cited.Number, Label: cited.Label}}}
	if src := d.source(context.Background(), g, row); src != mbox+"#msg=4&part=1&attachment=lease.pdf" {
		t.Errorf("source %q", src)
	}
	for view := 1; view <= 2; view++ {
		p := d.page(context.Background(), g, row, "review-1")
		if p == nil || p.Error != "" || p.Number != 2 || p.Highlight != "quote" || p.From != "text" || p.Cite != cited.Label {
			t.Fatalf("view %d: %+v, want page 2 of lease.pdf with the quote highlighted", view, p)
		}
		if kept.extracted != 1 {
			t.Errorf("view %d: extracted %d times, want once", view, kept.extracted)
		}
	}
	row.Grounding.Pages.Label = `msg 4 "Re: Lease"`
	if p := d.page(context.Background(), g, row, "review-1"); p != nil {
		t.Errorf("a cell on the message's text: page %+v, want none", p)
	}
	// The mailbox outside the read prefixes: its attachment is not read.
	row.Grounding.Pages.Label = cited.Label
	other := &api.SignOffGrid{Subject: api.SignOffSubject{Kind: api.SubjectReview, Source: "s3://private/matter.mbox"}}
	row.Document = "s3://private/matter.mbox"
	if p := d.page(context.Background(), other, row, "review-1"); p == nil || !strings.Contains(p.Error, "outside what this worker may read") || kept.extracted != 1 {
		t.Errorf("a mailbox the worker may not read: %+v (extracted %d times), want refused", p, kept.extracted)
	}
}
