package docconv_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	_ "image/gif"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
)

// TestExtractAttachment: the attachments of Python's sample messages are
// extracted as the bytes they are: msg_13's GIF decodes as a 256 × 256
// image, msg_04's two msg.txt are each its text, by their places; by
// name alone, msg_04's msg.txt is refused as two; a message or an
// attachment the email lacks is an *Error.
func TestExtractAttachment(t *testing.T) {
	dir := pythonEmailData(t)
	c := converter(t)
	ctx := context.Background()
	extract := func(name string, number, part int, apath string) ([]byte, error) {
		var b bytes.Buffer
		err := c.ExtractAttachment(ctx, docconv.FormatEmail, filepath.Join(dir, name), number, part, apath, &b)
		return b.Bytes(), err
	}
	for _, part := range []int{0, 1} {
		gif, err := extract("msg_13.txt", 1, part, "dingusfish.gif")
		if err != nil {
			t.Fatal(err)
		}
		if cfg, format, err := image.DecodeConfig(bytes.NewReader(gif)); err != nil || format != "gif" || cfg.Width != 256 || cfg.Height != 256 {
			t.Errorf("dingusfish.gif (place %d): %s %dx%d %v, want a 256x256 GIF", part, format, cfg.Width, cfg.Height, err)
		}
	}
	for _, part := range []int{1, 2} {
		txt, err := extract("msg_04.txt", 1, part, "msg.txt")
		if err != nil || !strings.HasPrefix(string(txt), "a simple kind of mirror\nto reflect upon our own\n") {
			t.Errorf("msg_04's msg.txt at %d: %q %v", part, txt, err)
		}
	}
	var bad *docconv.Error
	if _, err := extract("msg_04.txt", 1, 0, "msg.txt"); !errors.As(err, &bad) || !strings.Contains(err.Error(), "more than one") {
		t.Errorf("msg_04's msg.txt by name: %v, want an *Error saying there are two", err)
	}
	if _, err := extract("msg_13.txt", 2, 1, "dingusfish.gif"); !errors.As(err, &bad) {
		t.Errorf("message 2 of 1: %v, want an *Error", err)
	}
	if _, err := extract("msg_13.txt", 1, 0, "other.pdf"); !errors.As(err, &bad) || !strings.Contains(err.Error(), "no attachment") {
		t.Errorf("an attachment the message lacks: %v, want an *Error", err)
	}
	if _, err := extract("msg_13.txt", 1, 2, "dingusfish.gif"); !errors.As(err, &bad) || !strings.Contains(err.Error(), "no attachment 2") {
		t.Errorf("a place past the message's attachments: %v, want an *Error", err)
	}
}

// TestExtractAttachmentByPlace: in a message whose attachments are
// Python's sample msg_04 sent as a file (fwd.eml, with its own two
// msg.txt) and then two PDFs both named scan.pdf, each attachment the
// conversion's index lists is extracted by its place as the bytes that
// were attached there: the second scan.pdf is the second, not the first
// of its name, and the places after the forwarded file are the index's
// (its attachments counted as the conversion counts them). A place that
// holds another path is refused, as is scan.pdf by its name alone.
func TestExtractAttachmentByPlace(t *testing.T) {
	fwd, err := os.ReadFile(filepath.Join(pythonEmailData(t), "msg_04.txt"))
	if err != nil {
		t.Fatal(err)
	}
	first := docconvtest.PDF(docconvtest.PDFOptions{Pages: 2, FactPage: 1, Fact: "The first scan is of the lease.", Seed: 21})
	second := docconvtest.PDF(docconvtest.PDFOptions{Pages: 2, FactPage: 2, Fact: "The second scan is of the inventory.", Seed: 22})
	msg := "From: Alice <alice@example.org>\nTo: Bob <bob@example.org>\nSubject: Scans\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"outer\"\n\n" +
		"--outer\nContent-Type: text/plain\n\nBoth scans, and Barry's message.\n" +
		attach("outer", "application/octet-stream", "fwd.eml", fwd) +
		attach("outer", "application/pdf", "scan.pdf", first) + attach("outer", "application/pdf", "scan.pdf", second) + "--outer--\n"
	path := mboxOf(t, plainMessage(1, "Hello", "Nothing attached."), msg)
	c := converter(t)
	_, _, res, err := convertEmailFile(t, c, path)
	if err != nil {
		t.Fatal(err)
	}
	at := res.Map.Email.Messages[1].Attachments
	var paths []string
	for _, a := range at {
		paths = append(paths, a.Path)
	}
	if want := "fwd.eml|fwd.eml › msg.txt|fwd.eml › msg.txt|scan.pdf|scan.pdf"; strings.Join(paths, "|") != want {
		t.Fatalf("message 2's attachments %q, want %s", paths, want)
	}
	ctx := context.Background()
	want := map[int][]byte{1: fwd, 2: []byte("a simple kind of mirror\nto reflect upon our own\n"), 3: []byte("a simple kind of mirror\nto reflect upon our own\n"), 4: first, 5: second}
	for part, data := range want {
		var b bytes.Buffer
		if err := c.ExtractAttachment(ctx, docconv.FormatMbox, path, 2, part, at[part-1].Path, &b); err != nil || !bytes.Equal(b.Bytes(), data) {
			t.Errorf("attachment %d (%s): %d bytes, %v; want the %d bytes attached there", part, at[part-1].Path, b.Len(), err, len(data))
		}
	}
	var bad *docconv.Error
	if err := c.ExtractAttachment(ctx, docconv.FormatMbox, path, 2, 4, "fwd.eml › msg.txt", &bytes.Buffer{}); !errors.As(err, &bad) || !strings.Contains(err.Error(), `is "scan.pdf"`) {
		t.Errorf("place 4 as fwd.eml › msg.txt: %v, want refused: it holds scan.pdf", err)
	}
	if err := c.ExtractAttachment(ctx, docconv.FormatMbox, path, 2, 0, "scan.pdf", &bytes.Buffer{}); !errors.As(err, &bad) || !strings.Contains(err.Error(), "more than one") {
		t.Errorf("scan.pdf by its name alone: %v, want refused: there are two", err)
	}
}
