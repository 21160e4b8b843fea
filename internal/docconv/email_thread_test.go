package docconv_test

import (
	"bytes"
	"fmt"
	"io"
	"net/mail"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"

	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/testdeps"
)

// hamMessages are the 2,403 messages of SpamAssassin's ham corpus that
// the JWZ threading library's tests ship (golang-github-gatherstars-com-
// jwz-dev): mailing-list mail of 2002 (exmh, ILUG, SpamAssassin's own
// lists, Razor…) with In-Reply-To and References as their mailers wrote
// them.
func hamMessages(t *testing.T) []string {
	t.Helper()
	one := testdeps.Manual(t, "golang-github-gatherstars-com-jwz-dev",
		"usr/share/gocode/src/github.com/gatherstars-com/jwz/test/testdata/ham/0002.b3120c4bcbf3101e661161ee7efcb8bf.eml")
	files, err := filepath.Glob(filepath.Join(filepath.Dir(one), "*.eml"))
	if err != nil || len(files) < 2000 {
		t.Fatalf("%d ham messages (%v), want 2,000 or more", len(files), err)
	}
	sort.Strings(files)
	return files
}

// TestEmailThreadsOnMailingListMail reads the ham corpus as one mailbox
// (its files in name order, each after its own "From " line, as the
// corpus keeps them) with one message appended again as another mailbox
// would hold it (another "From " line, another Received field), and holds
// the index to what each message's own header says, as net/mail reads
// it: every message there with its Message-ID and Subject; a message in
// the thread of every message its In-Reply-To and References name that
// the mailbox has, its parent the last of its References the mailbox has
// (else its In-Reply-To); a message no other replies to inclusive, and
// one replied to without attachments not; the copy a duplicate of the
// original, read once, and every duplicate the same Message-ID and body
// as its original.
func TestEmailThreadsOnMailingListMail(t *testing.T) {
	files := hamMessages(t)
	var mbox bytes.Buffer
	raws := make([][]byte, 0, len(files)+1)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(raw, []byte("From ")) {
			mbox.WriteString("From unknown@example.org Thu Aug 22 12:00:00 2002\n")
		} else {
			_, raw, _ = bytes.Cut(raw, []byte("\n"))
			mbox.WriteString(strings.SplitN(string(mustRead(t, f)), "\n", 2)[0] + "\n")
		}
		raws = append(raws, raw)
		mbox.Write(raw)
		if !bytes.HasSuffix(raw, []byte("\n")) {
			mbox.WriteByte('\n')
		}
		mbox.WriteByte('\n')
	}
	// The copy: message 100 as another mailbox holds it.
	const orig = 100
	cp := append([]byte("Received: from relay.example.org by mx.example.net; Fri, 23 Aug 2002 09:00:00 +0000\n"), raws[orig-1]...)
	mbox.WriteString("From someone@example.org Fri Aug 23 09:00:00 2002\n")
	mbox.Write(cp)
	mbox.WriteString("\n")
	raws = append(raws, cp)
	path := filepath.Join(t.TempDir(), "ham.mbox")
	if err := os.WriteFile(path, mbox.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	format, text, res, err := convertEmailFile(t, converter(t), path)
	if err != nil {
		t.Fatal(err)
	}
	ix := res.Map.Email
	t.Logf("%s of %d messages, %d bytes: %d bytes of text, %d spans, %d threads, %d skipped, %d duplicates in %v",
		format, len(ix.Messages), mbox.Len(), len(text), len(res.Map.Spans), ix.Threads, ix.Skipped, ix.Duplicates, time.Since(start))
	if format != docconv.FormatMbox || len(ix.Messages) != len(raws) {
		t.Fatalf("%s of %d messages, want mbox of %d", format, len(ix.Messages), len(raws))
	}

	// What the headers say.
	type said struct {
		id, subject string
		refs        []string
		inReplyTo   string
		body        []byte
	}
	says := make([]said, len(raws))
	byID := map[string]int{} // id → first message (from 1) with it
	for i, raw := range raws {
		msg, err := mail.ReadMessage(bytes.NewReader(raw))
		if err != nil {
			t.Logf("message %d: net/mail: %v", i+1, err)
			continue
		}
		body, _ := io.ReadAll(msg.Body)
		s := said{body: body, refs: ids(strings.Join(msg.Header["References"], " ")), subject: headerSays(msg.Header, "Subject")}
		if id := ids(msg.Header.Get("Message-Id")); len(id) > 0 {
			s.id = id[0]
		}
		if r := ids(msg.Header.Get("In-Reply-To")); len(r) > 0 {
			s.inReplyTo = r[0]
		}
		says[i] = s
	}
	for i, s := range says {
		if s.id != "" {
			if _, ok := byID[s.id]; !ok {
				byID[s.id] = i + 1
			}
		}
	}
	checked, replies, inclusive, bySubject, byQuote := 0, 0, 0, 0, 0
	children := map[int]int{}
	for i, m := range ix.Messages {
		s := says[i]
		if !utf8.ValidString(s.subject) {
			// 8-bit, unlabeled: Latin-1, as the index reads it.
			s.subject, _ = charmap.Windows1252.NewDecoder().String(s.subject)
		}
		if m.MessageID != s.id || m.Subject != s.subject {
			t.Errorf("message %d: id %q subject %q, its header says %q %q", m.Number, m.MessageID, m.Subject, s.id, s.subject)
		}
		if m.Skipped != "" {
			t.Errorf("message %d skipped: %s", m.Number, m.Skipped)
		}
		if m.DuplicateOf > 0 {
			o := says[m.DuplicateOf-1]
			if o.id != s.id || !bytes.Equal(o.body, s.body) {
				t.Errorf("message %d a duplicate of %d, but their ids (%q, %q) or bodies differ", m.Number, m.DuplicateOf, s.id, o.id)
			}
			continue
		}
		for _, id := range append(append([]string(nil), s.refs...), s.inReplyTo) {
			if j, ok := byID[id]; ok && j != m.Number && ix.Messages[j-1].DuplicateOf == 0 {
				checked++
				if m.Thread != ix.Messages[j-1].Thread {
					t.Errorf("message %d (thread %d) names %s, message %d, of thread %d", m.Number, m.Thread, id, j, ix.Messages[j-1].Thread)
				}
			}
		}
		want := 0
		for k := len(s.refs) - 1; k >= 0 && want == 0; k-- {
			if j, ok := byID[s.refs[k]]; ok && j != m.Number {
				want = j
			}
		}
		if j, ok := byID[s.inReplyTo]; ok && want == 0 && j != m.Number {
			want = j
		}
		if want > 0 {
			replies++
			if m.Parent != want || (m.ParentBy != memagent.ParentByReferences && m.ParentBy != memagent.ParentByInReplyTo) {
				t.Errorf("message %d: parent %d by %s, its header says %d", m.Number, m.Parent, m.ParentBy, want)
			}
		} else if m.ParentBy == memagent.ParentByQuote {
			// By quoted text (TestEmailThreadsByQuotedText holds it to
			// the headers): an earlier message, of its thread.
			byQuote++
			if p := ix.Messages[m.Parent-1]; p.Number >= m.Number || p.Thread != m.Thread {
				t.Errorf("message %d: parent %d by quote", m.Number, p.Number)
			}
		} else if m.Parent > 0 {
			// By subject: a reply's, the parent's the same, earlier.
			p := ix.Messages[m.Parent-1]
			bySubject++
			if m.ParentBy != memagent.ParentBySubject {
				t.Errorf("message %d: parent %d by %q, want by subject", m.Number, p.Number, m.ParentBy)
			}
			if b := subjectBase(m.Subject); !regexp.MustCompile(`(?i)^\s*(\[[^\]]*\]\s*)*(re|fw|fwd|aw)\s*(\[\d+\])?\s*:`).MatchString(m.Subject) ||
				b == "" || b != subjectBase(p.Subject) || p.Number >= m.Number || p.Thread != m.Thread {
				t.Errorf("message %d %q: parent %d %q by subject", m.Number, m.Subject, p.Number, p.Subject)
			}
		}
		if m.Parent > 0 {
			children[m.Parent]++
		}
	}
	for _, m := range ix.Messages {
		if m.Inclusive {
			inclusive++
		}
		switch {
		case m.DuplicateOf > 0 && m.Inclusive:
			t.Errorf("message %d, a duplicate, is inclusive", m.Number)
		case m.DuplicateOf == 0 && children[m.Number] == 0 && !m.Inclusive:
			t.Errorf("message %d has no reply and is not inclusive", m.Number)
		case children[m.Number] > 0 && len(m.Attachments) == 0 && m.Inclusive:
			t.Errorf("message %d has %d replies, no attachment, and is inclusive", m.Number, children[m.Number])
		}
	}
	if cp := ix.Messages[len(raws)-1]; cp.DuplicateOf != orig {
		t.Errorf("the copy of message %d: duplicate of %d", orig, cp.DuplicateOf)
	}
	if !strings.Contains(text, fmt.Sprintf("[message %d is a duplicate of message %d, read there]", len(raws), orig)) {
		t.Errorf("the text does not list the copy as a duplicate")
	}
	t.Logf("%d links between messages checked, %d replies with a parent in the mailbox by their headers, %d by their quoted text and %d by their subjects, %d inclusive of %d",
		checked, replies, byQuote, bySubject, inclusive, len(ix.Messages))
	if checked < 500 || replies < 400 || bySubject < 10 || ix.Threads >= len(raws)-replies+1 || inclusive >= len(raws) {
		t.Errorf("%d links, %d replies, %d threads, %d inclusive: too few to hold the threading to anything", checked, replies, ix.Threads, inclusive)
	}
}

func mustRead(t *testing.T, f string) []byte {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ids are the <…> message ids of a header field, as the test reads them.
func ids(v string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<([^<>]+)>`).FindAllStringSubmatch(v, -1) {
		out = append(out, strings.TrimSpace(m[1]))
	}
	return out
}

// subjectBase is a subject less its reply marks and list tags, lower
// case, as the test reads it.
func subjectBase(s string) string {
	re := regexp.MustCompile(`(?i)^\s*((re|fw|fwd|aw)\s*(\[\d+\])?\s*:|\[[^\]]*\])\s*`)
	for {
		t := re.ReplaceAllString(s, "")
		if t == s {
			return strings.ToLower(strings.Join(strings.Fields(s), " "))
		}
		s = t
	}
}

// TestEmailMailboxGrowsAtItsEnd: the text of a mailbox's first messages
// does not change when messages are appended (threads and inclusiveness
// live in the index, a duplicate is found only among earlier messages),
// so a grown mailbox keeps every earlier byte and span, and a reading
// checkpointed on the old text is good for the new one up to its end.
// 200 messages of the ham corpus, then the same with 10 more.
func TestEmailMailboxGrowsAtItsEnd(t *testing.T) {
	files := hamMessages(t)[:210]
	write := func(n int) string {
		var b bytes.Buffer
		for _, f := range files[:n] {
			raw := mustRead(t, f)
			if !bytes.HasPrefix(raw, []byte("From ")) {
				b.WriteString("From unknown@example.org Thu Aug 22 12:00:00 2002\n")
			}
			b.Write(raw)
			b.WriteString("\n")
		}
		path := filepath.Join(t.TempDir(), "grown.mbox")
		if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	_, oldText, oldRes, err := convertEmailFile(t, converter(t), write(200))
	if err != nil {
		t.Fatal(err)
	}
	_, newText, newRes, err := convertEmailFile(t, converter(t), write(210))
	if err != nil {
		t.Fatal(err)
	}
	if len(oldRes.Map.Email.Messages) != 200 || len(newRes.Map.Email.Messages) != 210 {
		t.Fatalf("%d and %d messages, want 200 and 210", len(oldRes.Map.Email.Messages), len(newRes.Map.Email.Messages))
	}
	old := strings.TrimSuffix(oldText, "\n")
	if !strings.HasPrefix(newText, old) {
		i := 0
		for i < len(old) && old[i] == newText[i] {
			i++
		}
		t.Fatalf("the grown mailbox's text differs from the old one's at byte %d of %d", i, len(old))
	}
	for i, s := range oldRes.Map.Spans {
		if newRes.Map.Spans[i] != s {
			t.Errorf("span %d: %+v, was %+v", i+1, newRes.Map.Spans[i], s)
		}
	}
	t.Logf("%d bytes of text kept of %d, %d spans of %d", len(old), len(newText), len(oldRes.Map.Spans), len(newRes.Map.Spans))
}
