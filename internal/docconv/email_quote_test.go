package docconv_test

import (
	"bytes"
	"net/mail"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/memagent/memagent/internal/memagent"
)

// threadingFields are the header fields that link a message to others.
var threadingFields = regexp.MustCompile(`(?im)^(In-Reply-To|References|Subject|Thread-Topic|Thread-Index):.*(\r?\n[ \t].*)*\r?\n`)

// TestEmailThreadsByQuotedText reads the ham corpus as one mailbox with
// each message's In-Reply-To, References and Subject removed (and
// Outlook's Thread-Topic and Thread-Index), so that only its quoted text
// can place it in a thread, and holds the parents found that way to what
// the messages' own headers said before they were removed: a parent by
// quote is the parent the headers named, or a message of the same thread
// by the headers (a reply quoting its grandparent's text); and a good
// share of the replies whose parent the mailbox has are found.
func TestEmailThreadsByQuotedText(t *testing.T) {
	files := hamMessages(t)
	var mbox bytes.Buffer
	type said struct {
		id, inReplyTo string
		refs          []string
	}
	says := make([]said, len(files))
	bodies := make([][]byte, len(files))
	for i, f := range files {
		raw := mustRead(t, f)
		if bytes.HasPrefix(raw, []byte("From ")) {
			_, raw, _ = bytes.Cut(raw, []byte("\n"))
		}
		if msg, err := mail.ReadMessage(bytes.NewReader(raw)); err == nil {
			s := said{refs: ids(strings.Join(msg.Header["References"], " "))}
			if id := ids(msg.Header.Get("Message-Id")); len(id) > 0 {
				s.id = id[0]
			}
			if r := ids(msg.Header.Get("In-Reply-To")); len(r) > 0 {
				s.inReplyTo = r[0]
			}
			says[i] = s
		}
		head, body, ok := bytes.Cut(raw, []byte("\n\n"))
		if !ok {
			head, body = raw, nil
		}
		bodies[i] = body
		head = threadingFields.ReplaceAll(append(head, '\n'), nil)
		mbox.WriteString("From unknown@example.org Thu Aug 22 12:00:00 2002\n")
		mbox.Write(head)
		mbox.WriteString("\n")
		mbox.Write(body)
		mbox.WriteString("\n\n")
	}
	path := filepath.Join(t.TempDir(), "stripped.mbox")
	if err := os.WriteFile(path, mbox.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, _, res, err := convertEmailFile(t, converter(t), path)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	ix := res.Map.Email
	if len(ix.Messages) != len(files) {
		t.Fatalf("%d messages, want %d", len(ix.Messages), len(files))
	}

	// The threads and parents the headers said.
	byID := map[string]int{}
	for i, s := range says {
		if _, ok := byID[s.id]; s.id != "" && !ok {
			byID[s.id] = i
		}
	}
	root := make([]int, len(says))
	for i := range root {
		root[i] = i
	}
	find := func(i int) int {
		for root[i] != i {
			i = root[i]
		}
		return i
	}
	want := make([]int, len(says)) // the parent by the headers, from 1
	for i, s := range says {
		for _, id := range append(append([]string(nil), s.refs...), s.inReplyTo) {
			if j, ok := byID[id]; ok && j != i {
				if a, b := find(i), find(j); a != b {
					root[max(a, b)] = min(a, b)
				}
			}
		}
		for k := len(s.refs) - 1; k >= 0 && want[i] == 0; k-- {
			if j, ok := byID[s.refs[k]]; ok && j != i {
				want[i] = j + 1
			}
		}
		if j, ok := byID[s.inReplyTo]; ok && want[i] == 0 && j != i {
			want[i] = j + 1
		}
	}
	// Passages: runs of passageWords words of each body, and how many
	// bodies hold each.
	const passageWords = 8
	passages := func(body []byte) map[string]bool {
		words := strings.FieldsFunc(strings.ToLower(string(body)), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		out := map[string]bool{}
		for k := 0; k+passageWords <= len(words); k++ {
			out[strings.Join(words[k:k+passageWords], " ")] = true
		}
		return out
	}
	holders := map[string]int{}
	bodyPassages := make([]map[string]bool, len(bodies))
	for i, b := range bodies {
		bodyPassages[i] = passages(b)
		for p := range bodyPassages[i] {
			holders[p]++
		}
	}
	// shares says child and parent share a passage few other bodies hold
	// (not a list's footer or a signature): the child quotes the parent.
	shares := func(child, parent int) bool {
		for p := range bodyPassages[child] {
			if bodyPassages[parent][p] && holders[p] <= 3 {
				return true
			}
		}
		return false
	}
	found, exact, sameThread, byText, replies, recalled := 0, 0, 0, 0, 0, 0
	for i, m := range ix.Messages {
		if m.DuplicateOf > 0 {
			continue
		}
		if m.ParentBy != "" && m.ParentBy != memagent.ParentByQuote {
			t.Errorf("message %d: parent %d by %s, with no threading headers or subject", m.Number, m.Parent, m.ParentBy)
		}
		if want[i] > 0 {
			replies++
		}
		if m.ParentBy != memagent.ParentByQuote {
			continue
		}
		found++
		switch {
		case m.Parent >= m.Number:
			t.Errorf("message %d: parent %d, not an earlier message", m.Number, m.Parent)
		case m.Parent == want[i]:
			exact++
			recalled++
		case find(m.Parent-1) == find(i):
			sameThread++
			recalled++
		case want[i] == 0 && shares(i, m.Parent-1):
			// No parent by the headers (a mailer that wrote no
			// In-Reply-To), and the text says it replies to this one.
			byText++
		default:
			t.Logf("message %d: parent %d by quote, its headers said %d (thread %d, not %d)", m.Number, m.Parent, want[i], find(i)+1, find(m.Parent-1)+1)
		}
	}
	t.Logf("%d messages in %v: %d parents by quote, %d the headers' parent, %d of the headers' thread, %d with no parent by the headers and a passage of the parent quoted; %d replies had a parent in the mailbox by the headers, %d found",
		len(files), took, found, exact, sameThread, byText, replies, recalled)
	if good := exact + sameThread + byText; found == 0 || float64(good) < 0.97*float64(found) {
		t.Errorf("%d of %d parents by quote bear out, want 97%% or more", good, found)
	}
	if float64(recalled) < 0.5*float64(replies) {
		t.Errorf("%d of %d replies placed by quote, want half or more", recalled, replies)
	}
}
