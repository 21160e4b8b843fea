package docconv_test

import (
	"bytes"
	"context"
	"io"
	"mime"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/testdeps"
)

// pythonEmailData is the directory of the sample messages Debian's
// Python test suite ships (libpython3.11-testsuite), which nobody here
// wrote: real messages and mailers' edge cases, with MIME, transfer
// encodings, charsets, digests and forwards.
func pythonEmailData(t *testing.T) string {
	t.Helper()
	return filepath.Dir(testdeps.Manual(t, "libpython3.11-testsuite", "usr/lib/python3.11/test/test_email/data/msg_01.txt"))
}

// convertEmailFile converts the file at path as Detect names it.
func convertEmailFile(t *testing.T, c *docconv.Converter, path string) (string, string, *docconv.Result, error) {
	t.Helper()
	return convertEmailFileWith(t, c, path, docconv.Options{})
}

// convertEmailFileWith is convertEmailFile with options.
func convertEmailFileWith(t *testing.T, c *docconv.Converter, path string, opts docconv.Options) (string, string, *docconv.Result, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	head := make([]byte, docconv.SniffBytes)
	n, _ := io.ReadFull(f, head)
	f.Close()
	format := docconv.Detect(head[:n])
	var out bytes.Buffer
	res, err := c.ConvertWith(context.Background(), format, path, &out, opts)
	return format, out.String(), res, err
}

// headerSays is what a message's own header says of field k, as net/mail
// reads it and RFC 2047 decodes it: the reference the index is held to.
func headerSays(h mail.Header, k string) string {
	v := strings.Join(h[textprotoKey(k)], ", ")
	if d, err := (&mime.WordDecoder{}).DecodeHeader(v); err == nil {
		v = d
	}
	return strings.Join(strings.Fields(v), " ")
}

func textprotoKey(k string) string {
	if k == "Message-ID" {
		return "Message-Id"
	}
	return k
}

// spanText is the text of span number n of m.
func spanText(text string, m memagent.PageMap, n int) string {
	for _, s := range m.Spans {
		if s.Number == n {
			return text[s.Start:s.End]
		}
	}
	return ""
}

// TestEmailPythonSamples converts the sample messages of Python's test
// suite and holds each to what its own header says (as net/mail reads
// it): From, To, Subject, Date and Message-ID in the index; every span
// labeled with its message; and, message by message, what the MIME
// structure holds: bodies in quoted-printable, base64 and Latin-1 decoded
// (msg_10), a small GIF attachment not read by OCR (msg_13), a digest's five
// messages each a member of the family (msg_02), a forwarded message
// (msg_46), two text attachments (msg_04), and a header without its
// blank line (msg_35).
func TestEmailPythonSamples(t *testing.T) {
	dir := pythonEmailData(t)
	files, err := filepath.Glob(filepath.Join(dir, "msg_*.txt"))
	if err != nil || len(files) < 40 {
		t.Fatalf("%d sample messages in %s (%v), want 40 or more", len(files), dir, err)
	}
	c := converter(t)
	read := 0
	texts := map[string]string{}
	indexes := map[string]*memagent.EmailIndex{}
	for _, path := range files {
		name := filepath.Base(path)
		format, text, res, err := convertEmailFile(t, c, path)
		if format != docconv.FormatEmail && format != docconv.FormatMbox {
			continue
		}
		read++
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		texts[name], indexes[name] = text, res.Map.Email
		ix := res.Map.Email
		if ix == nil || len(ix.Messages) != 1 {
			t.Errorf("%s: index %+v, want one message", name, ix)
			continue
		}
		m := ix.Messages[0]
		if res.Map.Unit != api.UnitMessage {
			t.Errorf("%s: unit %q, want %q", name, res.Map.Unit, api.UnitMessage)
		}
		for _, s := range res.Map.Spans {
			if !strings.HasPrefix(s.Label, m.Label) {
				t.Errorf("%s: span %d labeled %q, not under its message's label %q", name, s.Number, s.Label, m.Label)
			}
		}
		raw, _ := os.ReadFile(path)
		if format == docconv.FormatMbox {
			_, raw, _ = bytes.Cut(raw, []byte("\n"))
		}
		msg, err := mail.ReadMessage(bytes.NewReader(raw))
		if err != nil {
			continue // a header net/mail refuses (msg_35's): checked below
		}
		for _, f := range []struct{ k, got string }{
			{"From", m.From}, {"To", m.To}, {"Subject", m.Subject}, {"Date", m.Date},
		} {
			if want := headerSays(msg.Header, f.k); f.got != want {
				t.Errorf("%s: %s %q, its header says %q", name, f.k, f.got, want)
			}
		}
		if want := strings.Trim(strings.TrimSpace(msg.Header.Get("Message-Id")), "<>"); m.MessageID != want {
			t.Errorf("%s: Message-ID %q, its header says %q", name, m.MessageID, want)
		}
	}
	if read < 35 {
		t.Errorf("%d of the samples detected as email, want 35 or more", read)
	}

	contains := func(name string, wants ...string) {
		t.Helper()
		for _, w := range wants {
			if !strings.Contains(texts[name], w) {
				t.Errorf("%s: the text lacks %q:\n%s", name, w, texts[name])
			}
		}
	}
	contains("msg_10.txt", "This is a 7bit encoded message.", "¡This is a Quoted Printable encoded message!",
		"This is a Base64 encoded message.", "This has no Content-Transfer-Encoding: header.")
	contains("msg_35.txt", "counter to RFC 2822, there's no separating newline here")
	contains("msg_46.txt", "--- msg 1 \"GroupwiseForwardingTest\" › part 1.eml ---\nFrom: \"Dr. Sender\" <sender@example.net>",
		"Testing email forwarding with Groupwise 1.2.2010")
	if ix := indexes["msg_13.txt"]; ix != nil {
		at := ix.Messages[0].Attachments
		// A small image: a picture, not a page, not read by OCR.
		if len(at) != 1 || at[0].Name != "dingusfish.gif" || at[0].Format != docconv.FormatImage || !strings.Contains(at[0].Error, "is a small image") {
			t.Errorf("msg_13.txt: attachments %+v, want dingusfish.gif a small image, not read", at)
		}
	}
	if ix := indexes["msg_02.txt"]; ix != nil {
		at := ix.Messages[0].Attachments
		if len(at) != 5 {
			t.Fatalf("msg_02.txt (a digest of five messages): attachments %+v", at)
		}
		for i, a := range at {
			if a.Format != docconv.FormatEmail || a.FirstSpan == 0 {
				t.Errorf("msg_02.txt: member %d %+v, want a message with text", i+1, a)
			}
		}
		contains("msg_02.txt", "--- msg 1 \"Ppp digest, Vol 1 #2 - 5 msgs\" › part 3.eml ---\nFrom: barry@digicool.com (Barry A. Warsaw)\nTo: ppp@zzz.org\nDate: Fri, 20 Apr 2001 20:16:25 -0400\nSubject: [Ppp] testing #3")
	}
	if ix := indexes["msg_04.txt"]; ix != nil {
		at := ix.Messages[0].Attachments
		if len(at) != 2 || at[0].Name != "msg.txt" || at[1].Name != "msg.txt" || at[0].Format != docconv.FormatText {
			t.Errorf("msg_04.txt: attachments %+v, want two text attachments msg.txt", at)
		}
	}
}

// TestEmailOutlookRefused: an Outlook .msg (an OLE compound file whose
// streams are MAPI properties) is told from a legacy Office file by its
// stream names, or by its name, and refused with the way to convert it.
func TestEmailOutlookRefused(t *testing.T) {
	head := append([]byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}, make([]byte, 1024)...)
	for _, r := range "__substg1.0_0037001F" {
		head = append(head, byte(r), 0)
	}
	if got := docconv.Detect(head); got != docconv.FormatOutlook {
		t.Fatalf("Detect = %q, want %q", got, docconv.FormatOutlook)
	}
	for _, c := range []struct{ format, name, want string }{
		{docconv.FormatOutlook, "Re Lease.msg", "msgconvert 'Re Lease.msg', from Debian's libemail-outlook-message-perl, writes 'Re Lease.eml'"},
		{docconv.FormatOLE, "lease.MSG", "msgconvert lease.MSG"},
		{docconv.FormatOutlook, "", "msgconvert message.msg"},
	} {
		err := docconv.Unsupported(c.format, c.name)
		if err == nil || !strings.Contains(err.Error(), "is an Outlook message (.msg)") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Unsupported(%q, %q) = %v, want the advice %q", c.format, c.name, err, c.want)
		}
	}
}
