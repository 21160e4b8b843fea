package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCheckLocalEmail: a local .eml or mbox is uploaded as the email it
// is, for the worker to convert, not checked as UTF-8 text: its parts
// carry their own charsets (a Latin-1 body here, as 8-bit mailers send).
func TestCheckLocalEmail(t *testing.T) {
	dir := t.TempDir()
	msg := "From: Ren\xe9 <rene@example.org>\nTo: bob@example.org\nSubject: Bail\nMIME-Version: 1.0\nContent-Type: text/plain; charset=iso-8859-1\nContent-Transfer-Encoding: 8bit\n\nLe loyer est d\xfb le premier du mois.\n"
	for _, c := range []struct{ name, data, want string }{
		{"bail.eml", msg, "message/rfc822"},
		{"inbox.mbox", "From rene@example.org Mon Jan  2 15:04:05 2006\n" + msg + "\n", "application/mbox"},
	} {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, []byte(c.data), 0o600); err != nil {
			t.Fatal(err)
		}
		ld, err := checkLocalDocument(path, false)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if ld.contentType != c.want {
			t.Errorf("%s: uploaded as %q, want %q", c.name, ld.contentType, c.want)
		}
	}
}
