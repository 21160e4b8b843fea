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
// its bytes go: the attachment at place part (from 1) of the message's
// attachments, as the conversion's index lists them, whose path must be
// path. A part of 0 matches none: the walk only lists the attachments.
type extraction struct {
	part int
	path string
	w    io.Writer
	// At the place, found is set, got is the path there and err the
	// error writing its bytes; the walk then stops (errExtracted).
	found bool
	got   string
	err   error
}

// ExtractAttachment writes to w the decoded bytes of attachment part of
// message number (both from 1, as the conversion's index numbers them:
// part is the attachment's place in memagent.EmailMessage.Attachments)
// of the email or mailbox in file, which must have path apath
// (memagent.EmailAttachment.Path: "lease.pdf", "fwd.eml › lease.pdf"):
// what the review desk renders a cited attachment's page from. Two
// attachments of one message may share a name; their places tell them
// apart. An attachment whose place holds another path (the mailbox is
// not the one indexed) is an *Error. A part of 0 names the attachment by
// its path alone: the message's only attachment of that path, and an
// *Error when it has more than one.
//
// It walks that message only, as a conversion walks it (a part read as
// a forwarded message has its own attachments, after it), under the
// converter's email limits, converting nothing; a message or attachment
// the mailbox lacks is an *Error.
func (c *Converter) ExtractAttachment(ctx context.Context, format, file string, number, part int, apath string, w io.Writer) error {
	if format != FormatEmail && format != FormatMbox {
		return badf("is not an email or a mailbox")
	}
	if part < 0 {
		return badf("has no attachment %d of message %d", part, number)
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
	// walk walks the message for x, and returns the attachments it
	// listed on the way.
	walk := func(x *extraction) ([]memagent.EmailAttachment, error) {
		tmp, err := os.MkdirTemp("", "memagent-email-*")
		if err != nil {
			return nil, fmt.Errorf("email: %w", err)
		}
		defer os.RemoveAll(tmp)
		e := &emailConv{c: c, ctx: ctx, t: newTextWriter(io.Discard, limits.MaxTextBytes), limits: limits,
			index: &memagent.EmailIndex{}, tmp: tmp, extract: x}
		e.msg = &memagent.EmailMessage{Number: number}
		err = e.message(m, f, nil)
		return e.msg.Attachments, err
	}
	if part == 0 {
		// By path: the one attachment of that path, found by a walk that
		// extracts nothing.
		at, err := walk(&extraction{w: io.Discard})
		if err != nil {
			return err
		}
		for i, a := range at {
			if a.Path != apath {
				continue
			}
			if part > 0 {
				return badf("message %d has more than one attachment %q: which one is meant takes its place among the message's attachments, as the conversion's index lists them", number, apath)
			}
			part = i + 1
		}
		if part == 0 {
			return badf("message %d has no attachment %q", number, apath)
		}
	}
	x := &extraction{part: part, path: apath, w: w}
	at, err := walk(x)
	switch {
	case x.found && x.got != apath:
		return badf("message %d's attachment %d is %q, not %q: the mailbox is not the one its index was made of", number, part, x.got, apath)
	case x.found:
		return x.err
	case err != nil && !errors.Is(err, errExtracted):
		return err
	case len(at) >= part:
		return badf("message %d's attachment %d (%q) is not one whose bytes are a document (a forwarded message, a signature)", number, part, at[part-1].Path)
	}
	return badf("message %d has no attachment %d %q (it has %d)", number, part, apath, len(at))
}
