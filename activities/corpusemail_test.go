package activities

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/testdeps"
)

// hamFiles are the messages of SpamAssassin's ham corpus that Debian's
// JWZ threading library ships: real mailing-list mail nobody here wrote.
func hamFiles(t *testing.T, n int) []string {
	t.Helper()
	one := testdeps.Manual(t, "golang-github-gatherstars-com-jwz-dev",
		"usr/share/gocode/src/github.com/gatherstars-com/jwz/test/testdata/ham/0002.b3120c4bcbf3101e661161ee7efcb8bf.eml")
	files, err := filepath.Glob(filepath.Join(filepath.Dir(one), "*.eml"))
	if err != nil || len(files) < n {
		t.Fatalf("%d ham messages (%v), want %d", len(files), err, n)
	}
	sort.Strings(files)
	return files[:n]
}

// mboxOfFiles is a mailbox of the messages in files, each after a "From "
// line of the given sender and with trace fields before its own (a copy
// delivered to another mailbox adds its Received lines).
func mboxOfFiles(t *testing.T, files []string, sender, trace string) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.HasPrefix(raw, []byte("From ")) {
			_, raw, _ = bytes.Cut(raw, []byte("\n"))
		}
		fmt.Fprintf(&b, "From %s Thu Aug 22 12:00:00 2002\n%s", sender, trace)
		b.Write(raw)
		b.WriteString("\n\n")
	}
	return b.Bytes()
}

// TestCorpusEmailDuplicatesAcrossMailboxes: a corpus of two mailboxes of
// real mail that share ten messages (the second's copies delivered
// anew, with Received fields of their own) reads each shared message
// once, in the first mailbox: the second's copy is cut from the stream,
// its place a line naming the first, its index entry a duplicate in the
// first mailbox, the first's listing it; every span of the second still
// starts where its label says, and a mailbox alone is left as it is.
func TestCorpusEmailDuplicatesAcrossMailboxes(t *testing.T) {
	files := hamFiles(t, 40)
	f := newFixture(t, []byte(makeDoc(2)))
	f.acts.ReadPrefixes = []string{"s3://docs/"}
	putObject(t, f.store.Store, "s3://docs/inbox.mbox", mboxOfFiles(t, files[:30], "alice@example.org", ""))
	putObject(t, f.store.Store, "s3://docs/archive.mbox", mboxOfFiles(t, files[20:40], "archive@example.org",
		"Received: from mx.example.net by archive.example.org; Fri, 23 Aug 2002 09:00:00 +0000\n"))

	var out actwire.ConvertOutput
	if err := f.exec(t, AssembleCorpusName, actwire.CorpusInput{Documents: []string{"s3://docs/inbox.mbox", "s3://docs/archive.mbox"}}, &out); err != nil {
		t.Fatal(err)
	}
	c, err := f.acts.loadCorpus(context.Background(), out.PageMapURI)
	if err != nil {
		t.Fatal(err)
	}
	text := string(getObject(t, f.store.Store, out.Document))
	if int64(len(text)) != out.Bytes {
		t.Fatalf("stream of %d bytes, output says %d", len(text), out.Bytes)
	}
	inbox, archive := c.Map.Documents[0].PageMap.Email, c.Map.Documents[1].PageMap.Email
	if len(inbox.Messages) != 30 || len(archive.Messages) != 20 {
		t.Fatalf("%d and %d messages, want 30 and 20", len(inbox.Messages), len(archive.Messages))
	}
	for k, m := range archive.Messages {
		shared := k < 10
		switch {
		case shared && (m.DuplicateOf != 21+k || m.DuplicateIn != "inbox.mbox"):
			t.Errorf("archive msg %d: duplicate of %d in %q, want %d in inbox.mbox", m.Number, m.DuplicateOf, m.DuplicateIn, 21+k)
		case !shared && (m.DuplicateOf != 0 || m.DuplicateIn != ""):
			t.Errorf("archive msg %d: duplicate of %d in %q, want none", m.Number, m.DuplicateOf, m.DuplicateIn)
		}
		if !shared {
			if strings.Contains(text, fmt.Sprintf("[message %d is a duplicate", m.Number)) {
				t.Errorf("archive msg %d: listed as a duplicate in the stream", m.Number)
			}
			continue
		}
		if o := inbox.Messages[20+k]; len(o.Copies) != 1 || o.Copies[0] != "archive.mbox "+m.Label {
			t.Errorf("inbox msg %d: copies %q, want archive.mbox %s", o.Number, o.Copies, m.Label)
		}
		notice := fmt.Sprintf("[message %d is a duplicate of inbox.mbox %s, read there]", m.Number, inbox.Messages[20+k].Label)
		if got := strings.Count(text, notice); got != 1 {
			t.Errorf("archive msg %d: the notice %q is in the stream %d times, want once", m.Number, notice, got)
		}
	}
	if archive.Duplicates != 10 {
		t.Errorf("archive: %d duplicates, want 10", archive.Duplicates)
	}
	// Each message's family starts with its label, in both mailboxes:
	// the spans after a cut moved with it.
	for d, doc := range c.Map.Documents {
		for _, m := range doc.PageMap.Email.Messages {
			span := spanByNumber(doc.PageMap, m.FirstSpan)
			if span == nil {
				t.Errorf("%s msg %d: no span %d", doc.Name, m.Number, m.FirstSpan)
				continue
			}
			if got := text[span.Start:span.End]; !strings.HasPrefix(got, "--- "+m.Label+" ---") {
				t.Errorf("document %d msg %d: span %d reads %.60q, want its label", d+1, m.Number, m.FirstSpan, got)
			}
			if span.End > doc.End || span.Start < doc.Start {
				t.Errorf("%s msg %d: span [%d, %d) outside the document's [%d, %d)", doc.Name, m.Number, span.Start, span.End, doc.Start, doc.End)
			}
		}
	}
	// Read once: a line of a shared message's own text is in the stream
	// once, in the inbox's range.
	first := c.Map.Documents[0]
	s := spanByNumber(first.PageMap, inbox.Messages[24].FirstSpan)
	body := text[s.Start:s.End]
	lines := strings.Split(body, "\n")
	probe := ""
	for _, l := range lines[1:] {
		if len(l) > 40 && !strings.Contains(l, ":") && probe == "" {
			probe = l
		}
	}
	if probe == "" {
		t.Fatalf("no line to look for in %.200q", body)
	}
	if n := strings.Count(text, probe); n != 1 {
		t.Errorf("%q is in the stream %d times, want once", probe, n)
	}

	// A corpus of one mailbox and a text: nothing is cut.
	var one actwire.ConvertOutput
	if err := f.exec(t, AssembleCorpusName, actwire.CorpusInput{Documents: []string{"s3://docs/archive.mbox", testDocURI}}, &one); err != nil {
		t.Fatal(err)
	}
	c1, err := f.acts.loadCorpus(context.Background(), one.PageMapURI)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range c1.Map.Documents[0].PageMap.Email.Messages {
		if m.DuplicateIn != "" || len(m.Copies) > 0 {
			t.Errorf("archive alone: msg %d a duplicate in %q, copies %q", m.Number, m.DuplicateIn, m.Copies)
		}
	}
}

func spanByNumber(pm *memagent.PageMap, n int) *memagent.PageSpan {
	for i := range pm.Spans {
		if pm.Spans[i].Number == n {
			return &pm.Spans[i]
		}
	}
	return nil
}
