package docconv_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/docconv"
)

// mboxOf writes messages as an mbox (each after a "From " line, its
// lines "From " escaped as mboxrd does) and returns its path.
func mboxOf(t *testing.T, messages ...string) string {
	t.Helper()
	var b bytes.Buffer
	for i, m := range messages {
		fmt.Fprintf(&b, "From sender%d@example.org Mon Jan  2 15:04:05 2006\n", i+1)
		for _, line := range strings.SplitAfter(m, "\n") {
			if strings.HasPrefix(strings.TrimLeft(line, ">"), "From ") {
				b.WriteByte('>')
			}
			b.WriteString(line)
		}
		if !strings.HasSuffix(m, "\n") {
			b.WriteByte('\n')
		}
		b.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "inbox.mbox")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func plainMessage(n int, subject, body string) string {
	return fmt.Sprintf("From: Alice <alice@example.org>\nTo: Bob <bob@example.org>\nDate: Mon, 2 Jan 2006 15:0%d:05 -0700\nSubject: %s\nMessage-ID: <m%d@example.org>\n\n%s\n", n%10, subject, n, body)
}

// nestedMultipart is a message whose parts nest depth multiparts deep.
func nestedMultipart(depth int) string {
	var b strings.Builder
	b.WriteString("From: x@example.org\nSubject: nested\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"b0\"\n\n")
	for i := 0; i < depth; i++ {
		fmt.Fprintf(&b, "--b%d\nContent-Type: multipart/mixed; boundary=\"b%d\"\n\n", i, i+1)
	}
	fmt.Fprintf(&b, "--b%d\nContent-Type: text/plain\n\ndeep inside\n", depth)
	for i := depth; i >= 0; i-- {
		fmt.Fprintf(&b, "--b%d--\n", i)
	}
	return b.String()
}

// nestedForwards is a message forwarding a message forwarding … depth
// deep.
func nestedForwards(depth int) string {
	m := "From: z@example.org\nSubject: innermost\n\nthe innermost text\n"
	for i := 0; i < depth; i++ {
		m = fmt.Sprintf("From: y%d@example.org\nSubject: Fwd %d\nMIME-Version: 1.0\nContent-Type: message/rfc822\n\n%s", i, i, m)
	}
	return m
}

// manyParts is a message of n empty-ish parts: a MIME bomb of delimiters.
func manyParts(n int) string {
	var b strings.Builder
	b.WriteString("From: x@example.org\nSubject: parts\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"p\"\n\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "--p\nContent-Type: text/plain\n\n%d\n", i)
	}
	b.WriteString("--p--\n")
	return b.String()
}

// TestEmailHostileMailbox reads a mailbox of hostile messages between two
// good ones: 10,000 parts, multiparts nested 100 deep, forwards nested
// 100 deep, a MIME bomb of 200,000 delimiters in 1.4 MB, a part that
// claims 2 GB (Content-Length, a size parameter) and one that decodes to
// more than the part limit, and a header of 1 MiB. Each hostile message
// is skipped and reported with the limit it broke, the good ones are
// read, and the conversion stays small in time and memory. A mailbox of
// more messages than its limit is refused whole, naming the knob.
func TestEmailHostileMailbox(t *testing.T) {
	big := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("attack "), 300_000)) // 2.1 MB decoded
	var wrapped strings.Builder
	for len(big) > 76 {
		wrapped.WriteString(big[:76] + "\n")
		big = big[76:]
	}
	wrapped.WriteString(big + "\n")
	cases := []struct {
		name, msg, skipped, knob string
	}{
		{"10,000 parts", manyParts(10_000), "has more than 1000 parts", docconv.KnobMaxParts},
		{"multiparts 100 deep", nestedMultipart(100), "nests parts more than 16 deep", docconv.KnobMaxMIMEDepth},
		{"forwards 100 deep", nestedForwards(100), "nests parts more than 16 deep", docconv.KnobMaxMIMEDepth},
		{"MIME bomb", "From: x@example.org\nSubject: bomb\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"q\"\n\n" +
			strings.Repeat("--q\n\n\n", 200_000) + "--q--\n", "has more than 1000 parts", docconv.KnobMaxParts},
		{"claims 2 GB", "From: x@example.org\nSubject: claims\nContent-Length: 2147483648\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"c\"\n\n" +
			"--c\nContent-Type: text/plain\n\nthe claim is false\n--c\nContent-Type: application/octet-stream; name=\"huge.bin\"\nContent-Disposition: attachment; filename=\"huge.bin\"; size=2147483648\nContent-Transfer-Encoding: base64\n\nAAAA\n--c--\n", "", ""},
		{"decodes past the part limit", "From: x@example.org\nSubject: big part\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"d\"\n\n" +
			"--d\nContent-Type: text/plain; name=\"big.txt\"\nContent-Transfer-Encoding: base64\n\n" + wrapped.String() + "--d--\n", "has a part of more than 1048576 bytes decoded", docconv.KnobMaxPartBytes},
		{"header of 1 MiB", "From: x@example.org\nSubject: header\nX-Junk: " + strings.Repeat("j", 1<<20) + "\n\nbody\n", "has a header of more than 262144 bytes", docconv.KnobMaxHeaderBytes},
	}
	msgs := []string{plainMessage(1, "first", "The first message is read.")}
	for _, c := range cases {
		msgs = append(msgs, c.msg)
	}
	msgs = append(msgs, plainMessage(9, "last", "The last message is read too."))
	path := mboxOf(t, msgs...)

	c := &docconv.Converter{Limits: docconv.Limits{MaxPartBytes: 1 << 20}}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	format, text, res, err := convertEmailFile(t, c, path)
	took := time.Since(start)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("%s: %v", format, err)
	}
	t.Logf("%d messages in %v; heap in use %d MiB after", len(msgs), took, after.HeapInuse>>20)
	if format != docconv.FormatMbox {
		t.Fatalf("format %q, want mbox", format)
	}
	ix := res.Map.Email
	if len(ix.Messages) != len(msgs) {
		t.Fatalf("%d messages, want %d", len(ix.Messages), len(msgs))
	}
	for _, w := range []string{"The first message is read.", "The last message is read too.", "the claim is false"} {
		if !strings.Contains(text, w) {
			t.Errorf("the text lacks %q", w)
		}
	}
	for i, c := range cases {
		m := ix.Messages[i+1]
		if !strings.Contains(m.Skipped, c.skipped) || (c.skipped == "") != (m.Skipped == "") {
			t.Errorf("%s: skipped %q, want %q", c.name, m.Skipped, c.skipped)
		}
		if c.skipped != "" && !strings.Contains(text, fmt.Sprintf("[message %d not read: it %s", m.Number, c.skipped)) {
			t.Errorf("%s: the text does not report it skipped", c.name)
		}
		if c.knob != "" && !strings.HasSuffix(m.Skipped, "("+c.knob+" on the worker)") {
			t.Errorf("%s: skipped %q, want it to name %s", c.name, m.Skipped, c.knob)
		}
	}
	if claims := ix.Messages[5]; len(claims.Attachments) != 1 || !strings.Contains(claims.Attachments[0].Error, "is binary") {
		t.Errorf("claims 2 GB: attachments %+v, want huge.bin listed as binary, not read", claims.Attachments)
	}
	if ix.Skipped != 6 {
		t.Errorf("%d skipped, want 6", ix.Skipped)
	}
	if took > 20*time.Second {
		t.Errorf("took %v", took)
	}
	if after.HeapInuse > before.HeapInuse+64<<20 {
		t.Errorf("heap in use grew from %d to %d MiB", before.HeapInuse>>20, after.HeapInuse>>20)
	}

	// More messages than the mailbox limit: refused whole.
	c = &docconv.Converter{Limits: docconv.Limits{MaxMessages: 3}}
	_, _, _, err = convertEmailFile(t, c, mboxOf(t, msgs[0], msgs[0], msgs[0], msgs[0]))
	if err == nil || !strings.Contains(err.Error(), "is a mailbox of more than 3 messages, over the converter's limit of 3 messages: split it") ||
		!strings.Contains(err.Error(), "or raise "+docconv.KnobMaxMessages+" on the worker") {
		t.Errorf("4 messages over a limit of 3: %v", err)
	}
}
