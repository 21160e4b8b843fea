package docconv_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	_ "image/gif"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memagent/memagent/internal/docconv"
)

// TestExtractAttachment: the attachments of Python's sample messages are
// extracted as the bytes they are: msg_13's GIF decodes as a 256 × 256
// image, msg_04's first msg.txt is its text; a message or an attachment
// the email lacks is an *Error.
func TestExtractAttachment(t *testing.T) {
	dir := pythonEmailData(t)
	c := converter(t)
	ctx := context.Background()
	extract := func(name string, number int, apath string) ([]byte, error) {
		var b bytes.Buffer
		err := c.ExtractAttachment(ctx, docconv.FormatEmail, filepath.Join(dir, name), number, apath, &b)
		return b.Bytes(), err
	}
	gif, err := extract("msg_13.txt", 1, "dingusfish.gif")
	if err != nil {
		t.Fatal(err)
	}
	if cfg, format, err := image.DecodeConfig(bytes.NewReader(gif)); err != nil || format != "gif" || cfg.Width != 256 || cfg.Height != 256 {
		t.Errorf("dingusfish.gif: %s %dx%d %v, want a 256x256 GIF", format, cfg.Width, cfg.Height, err)
	}
	txt, err := extract("msg_04.txt", 1, "msg.txt")
	if err != nil || !strings.HasPrefix(string(txt), "a simple kind of mirror\nto reflect upon our own\n") {
		t.Errorf("msg_04's msg.txt: %q %v", txt, err)
	}
	var bad *docconv.Error
	if _, err := extract("msg_13.txt", 2, "dingusfish.gif"); !errors.As(err, &bad) {
		t.Errorf("message 2 of 1: %v, want an *Error", err)
	}
	if _, err := extract("msg_13.txt", 1, "other.pdf"); !errors.As(err, &bad) || !strings.Contains(err.Error(), "no attachment") {
		t.Errorf("an attachment the message lacks: %v, want an *Error", err)
	}
}
