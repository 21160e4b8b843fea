package activities

import (
	"fmt"

	"github.com/memagent/memagent/internal/docconv"
)

// emailVariant is the part of an email's or a mailbox's converted prefix
// that names the email limits it was converted under: "" under the
// defaults, else "email-<messages>-<message bytes>-<parts>-<depth>-<part
// bytes>-<header bytes>/". Which messages a conversion skipped depends on
// its limits, so a worker whose limits changed converts a mailbox again
// rather than reusing text that skipped what it would now read (or read
// what it would now refuse).
func (a *Activities) emailVariant(format string) string {
	if format != docconv.FormatEmail && format != docconv.FormatMbox {
		return ""
	}
	l, d := a.Limits.docconv().WithDefaults(), docconv.Limits{}.WithDefaults()
	if l.MaxMessages == d.MaxMessages && l.MaxMessageBytes == d.MaxMessageBytes && l.MaxParts == d.MaxParts &&
		l.MaxMIMEDepth == d.MaxMIMEDepth && l.MaxPartBytes == d.MaxPartBytes && l.MaxHeaderBytes == d.MaxHeaderBytes {
		return ""
	}
	return fmt.Sprintf("email-%d-%d-%d-%d-%d-%d/", l.MaxMessages, l.MaxMessageBytes, l.MaxParts, l.MaxMIMEDepth, l.MaxPartBytes, l.MaxHeaderBytes)
}
