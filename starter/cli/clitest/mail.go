package clitest

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/memagent/memagent/internal/testdeps"
)

// HamMessages is the paths of the messages of SpamAssassin's ham corpus
// as Debian's golang-github-gatherstars-com-jwz-dev ships it (mail nobody
// here wrote), sorted by name; the test fails with fewer than n.
func HamMessages(t testing.TB, n int) []string {
	t.Helper()
	one := testdeps.Manual(t, "golang-github-gatherstars-com-jwz-dev",
		"usr/share/gocode/src/github.com/gatherstars-com/jwz/test/testdata/ham/0002.b3120c4bcbf3101e661161ee7efcb8bf.eml")
	files, err := filepath.Glob(filepath.Join(filepath.Dir(one), "*.eml"))
	if err != nil || len(files) < n {
		t.Fatalf("%d ham messages, want %d (%v)", len(files), n, err)
	}
	sort.Strings(files)
	return files
}

// AppendMessages appends the messages in files to mbox, each after a
// From_ line where it has none.
func AppendMessages(t testing.TB, mbox *bytes.Buffer, files []string) {
	t.Helper()
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(raw, []byte("From ")) {
			mbox.WriteString("From unknown@example.org Thu Aug 22 12:00:00 2002\n")
		}
		mbox.Write(raw)
		mbox.WriteString("\n")
	}
}

// Attachment is a part of a multipart/mixed body whose boundary is "b":
// data as the attachment name of type ctype, in base64 lines of 76.
func Attachment(ctype, name string, data []byte) string {
	enc := base64.StdEncoding.EncodeToString(data)
	var b strings.Builder
	fmt.Fprintf(&b, "--b\nContent-Type: %s; name=\"%s\"\nContent-Disposition: attachment; filename=\"%s\"\nContent-Transfer-Encoding: base64\n\n", ctype, name, name)
	for len(enc) > 76 {
		b.WriteString(enc[:76] + "\n")
		enc = enc[76:]
	}
	return b.String() + enc + "\n"
}
