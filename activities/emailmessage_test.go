package activities

import (
	"bytes"
	"context"
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
