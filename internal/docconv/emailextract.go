package docconv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/memagent/memagent/internal/memagent"
)

// errExtracted ends a walk of a message once the attachment asked for
// is written.
var errExtracted = errors.New("email: attachment extracted")

// extraction is the attachment ExtractAttachment looks for, and where
// its bytes go.
type extraction struct {
	path string
	w    io.Writer
}

// ExtractAttachment writes to w the decoded bytes of the attachment of
// message number (from 1, as citations name it) of the email or mailbox
// in file whose path is apath (memagent.EmailAttachment.Path: "lease.pdf",
// "fwd.eml › lease.pdf"), the first of that path: what the review desk
// renders a cited attachment's page from. It walks that message only,
// under the converter's email limits, converting nothing; a message or
// attachment the mailbox lacks is an *Error.
func (c *Converter) ExtractAttachment(ctx context.Context, format, file string, number int, apath string, w io.Writer) error {
	if format != FormatEmail && format != FormatMbox {
		return badf("is not an email or a mailbox")
	}
	limits := c.Limits.withDefaults()
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	msgs, err := splitMbox(ctx, f, format == FormatMbox, int64(limits.MaxMessages))
	if err != nil {
		return err
	}
	if number < 1 || number > len(msgs) {
		return badf("has no message %d (it has %d)", number, len(msgs))
	}
	m := msgs[number-1]
	if m.end-m.start > limits.MaxMessageBytes {
		return messageOver(fmt.Sprintf("has %d bytes", m.end-m.start), limits.MaxMessageBytes, "bytes", KnobMaxMessageBytes)
	}
	tmp, err := os.MkdirTemp("", "memagent-email-*")
	if err != nil {
		return fmt.Errorf("email: %w", err)
	}
	defer os.RemoveAll(tmp)
	e := &emailConv{c: c, ctx: ctx, t: newTextWriter(io.Discard, limits.MaxTextBytes), limits: limits,
		index: &memagent.EmailIndex{}, tmp: tmp, extract: &extraction{path: apath, w: w}}
	e.msg = &memagent.EmailMessage{Number: number}
	switch err := e.message(m, f, nil); {
	case errors.Is(err, errExtracted):
		return nil
	case err != nil:
		return err
	}
	return badf("message %d has no attachment %q", number, apath)
}
