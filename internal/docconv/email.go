package docconv

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/textproto"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/transform"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/sniff"
)

// Email formats Detect names: one RFC 5322 message (.eml) and a mailbox
// of them (mbox: each message after a "From " line).
const (
	FormatEmail = sniff.FormatEmail
	FormatMbox  = sniff.FormatMbox
)

// Bounds of an email's structure, per message unless said otherwise; a
// message over one is skipped and reported (EmailMessage.Skipped), the
// mailbox's other messages read. A mailbox of more than MaxMessages
// messages is refused whole.
const (
	DefaultMaxMessages     = 100_000
	DefaultMaxMessageBytes = 256 << 20
	DefaultMaxParts        = 1_000
	DefaultMaxMIMEDepth    = 16
	DefaultMaxPartBytes    = 64 << 20
	DefaultMaxHeaderBytes  = 256 << 10

	// maxLabelSubject bounds the subject quoted in a message's label.
	maxLabelSubject = 60
	// maxAttachmentName bounds an attachment's name.
	maxAttachmentName = 100
)

// Worker environment variables that set the email limits (Limits'
// MaxMessages, MaxMessageBytes, MaxParts, MaxMIMEDepth, MaxPartBytes,
// MaxHeaderBytes), named by the errors of a message over one.
const (
	KnobMaxMessages     = "MEMAGENT_EMAIL_MAX_MESSAGES"
	KnobMaxMessageBytes = "MEMAGENT_EMAIL_MAX_MESSAGE_MB"
	KnobMaxParts        = "MEMAGENT_EMAIL_MAX_PARTS"
	KnobMaxMIMEDepth    = "MEMAGENT_EMAIL_MAX_DEPTH"
	KnobMaxPartBytes    = "MEMAGENT_EMAIL_MAX_PART_MB"
	KnobMaxHeaderBytes  = "MEMAGENT_EMAIL_MAX_HEADER_KB"
)

// messageOver is the Error of a message over one of the limits, set by
// knob: the message is skipped and reported, the mailbox's other
// messages read.
func messageOver(what string, limit int64, unit, knob string) error {
	return badf("%s, over the converter's limit of %d %s (%s on the worker)", what, limit, unit, knob)
}

// isFromLine reports an mbox separator line (sniff.IsFromLine).
func isFromLine(line []byte) bool { return sniff.IsFromLine(line) }

// mboxMessage is one message's raw bytes [start, end) in the file, after
// its "From " line.
type mboxMessage struct {
	start, end int64
	mboxrd     bool // lines ">From " are escaped (an mbox, not an .eml)
}

// splitMbox finds the messages of a mailbox (or the one of an .eml): a
// line "From …" after a blank line (or at the start) opens the next. The
// Content-Length a message may claim (mboxcl) is not believed. More than
// max messages fail as *Error.
func splitMbox(ctx context.Context, f *os.File, mbox bool, max int64) ([]mboxMessage, error) {
	if !mbox {
		info, err := f.Stat()
		if err != nil {
			return nil, err
		}
		return []mboxMessage{{start: 0, end: info.Size()}}, nil
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, 1<<62), 64<<10)
	var msgs []mboxMessage
	var off int64
	blank, lineStart := true, true
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		line, err := r.ReadSlice('\n')
		n := int64(len(line))
		if lineStart && blank && isFromLine(bytes.TrimRight(line, "\n")) && (err == nil || errors.Is(err, io.EOF)) {
			if len(msgs) > 0 {
				msgs[len(msgs)-1].end = off
			}
			if int64(len(msgs)) >= max {
				return nil, badf("is a mailbox of more than %d messages, over the converter's limit of %d messages: split it (by year, by folder) and ask of the parts as one corpus, or raise %s on the worker", max, max, KnobMaxMessages)
			}
			msgs = append(msgs, mboxMessage{start: off + n, end: -1, mboxrd: true})
		}
		off += n
		full := errors.Is(err, bufio.ErrBufferFull)
		if !full {
			blank = lineStart && len(bytes.TrimRight(line, "\r\n")) == 0
		} else {
			blank = false
		}
		lineStart = !full
		if err != nil && !full {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
	}
	if len(msgs) > 0 {
		msgs[len(msgs)-1].end = off
	}
	return msgs, nil
}

// unescapeFrom reads an mbox message with its escaped lines (">From ",
// ">>From " in mboxrd) unescaped by one '>'.
type unescapeFrom struct {
	r         *bufio.Reader
	pending   []byte
	lineStart bool
}

func newUnescapeFrom(r io.Reader) *unescapeFrom {
	return &unescapeFrom{r: bufio.NewReaderSize(r, 32<<10), lineStart: true}
}

func (u *unescapeFrom) Read(p []byte) (int, error) {
	for len(u.pending) == 0 {
		line, err := u.r.ReadSlice('\n')
		if u.lineStart && len(line) > 1 && line[0] == '>' {
			if t := bytes.TrimLeft(line, ">"); bytes.HasPrefix(t, []byte("From ")) {
				line = line[1:]
			}
		}
		u.lineStart = !errors.Is(err, bufio.ErrBufferFull)
		u.pending = append(u.pending[:0], line...)
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			if len(u.pending) == 0 {
				return 0, err
			}
			break
		}
	}
	n := copy(p, u.pending)
	u.pending = u.pending[n:]
	return n, nil
}

// readHeader reads a header block (up to its blank line) of at most max
// bytes and parses it, leniently: an mbox's "From " line is dropped, and a
// line that is neither a field nor a continuation is dropped before the
// first field and, after one, starts the body (a header without its blank
// line). It returns the header and the body's reader. Over max, it fails
// as *Error.
func readHeader(r *bufio.Reader, max int64) (textproto.MIMEHeader, io.Reader, error) {
	var buf bytes.Buffer
	var body io.Reader = r
	var long []byte // a line longer than r's buffer, so far
	for {
		line, err := r.ReadSlice('\n')
		if int64(buf.Len()+len(long)+len(line)) > max {
			return nil, nil, messageOver(fmt.Sprintf("has a header of more than %d bytes", max), max, "bytes", KnobMaxHeaderBytes)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, line...)
			continue
		}
		if long != nil {
			line = append(long, line...)
			long = nil
		}
		t := bytes.TrimRight(line, "\r\n")
		if len(t) == 0 {
			break
		}
		name, _, field := bytes.Cut(t, []byte(":"))
		field = field && len(name) > 0 && !bytes.ContainsAny(name, " \t")
		switch {
		case bytes.HasPrefix(bytes.TrimLeft(t, ">"), []byte("From ")):
			// An mbox's envelope line, where a mailer left it.
		case (t[0] == ' ' || t[0] == '\t') && buf.Len() > 0:
			// A continuation: unfolded onto its field.
			buf.WriteByte(' ')
			buf.Write(bytes.TrimLeft(t, " \t"))
		case field:
			if buf.Len() > 0 {
				buf.WriteString("\r\n")
			}
			buf.Write(t)
		case buf.Len() > 0:
			// The body, after a header that lacks its blank line.
			body = io.MultiReader(bytes.NewReader(append([]byte(nil), line...)), r)
		}
		if body != io.Reader(r) {
			break
		}
		if err != nil {
			break
		}
	}
	h := textproto.MIMEHeader{}
	for _, field := range bytes.Split(buf.Bytes(), []byte("\r\n")) {
		name, value, ok := bytes.Cut(field, []byte(":"))
		if !ok {
			continue
		}
		// Lenient as mail readers are: any name without white space.
		key := textproto.CanonicalMIMEHeaderKey(string(name))
		h[key] = append(h[key], string(bytes.TrimSpace(value)))
	}
	return h, body, nil
}

// wordDecoder decodes RFC 2047 words in any charset x/text knows.
var wordDecoder = &mime.WordDecoder{CharsetReader: func(cs string, r io.Reader) (io.Reader, error) {
	enc, err := charsetEncoding(cs)
	if err != nil {
		return nil, err
	}
	return transform.NewReader(r, enc.NewDecoder()), nil
}}

// charsetEncoding is the encoding a MIME charset names.
func charsetEncoding(cs string) (encoding.Encoding, error) {
	cs = strings.ToLower(strings.Trim(strings.TrimSpace(cs), `"`))
	switch cs {
	case "", "us-ascii", "ascii", "utf-8", "utf8", "unknown-8bit", "x-unknown":
		return encoding.Nop, nil
	}
	return htmlindex.Get(cs)
}

// headerText is a header field's value with its RFC 2047 words decoded,
// its lines unfolded and its white space folded, as valid UTF-8.
func headerText(h textproto.MIMEHeader, name string) string {
	vs := h.Values(name)
	if len(vs) == 0 {
		return ""
	}
	v := strings.Join(vs, ", ")
	if d, err := wordDecoder.DecodeHeader(v); err == nil {
		v = d
	}
	if !utf8.ValidString(v) {
		// 8-bit headers without encoded words: Latin-1 is the usual
		// sender's guess.
		if enc, err := charsetEncoding("windows-1252"); err == nil {
			if d, err := enc.NewDecoder().String(v); err == nil {
				v = d
			}
		}
	}
	return strings.Join(strings.Fields(strings.ToValidUTF8(v, "\uFFFD")), " ")
}

// messageIDs are the <…> ids of a References or In-Reply-To field.
func messageIDs(v string) []string {
	var ids []string
	for {
		i := strings.IndexByte(v, '<')
		if i < 0 {
			return ids
		}
		j := strings.IndexByte(v[i:], '>')
		if j < 0 {
			return ids
		}
		if id := strings.TrimSpace(v[i+1 : i+j]); id != "" && len(ids) < 1000 {
			ids = append(ids, id)
		}
		v = v[i+j+1:]
	}
}

// messageLabel is how citations name message number n: `msg 12 "Re:
// Lease"` (the subject cut to maxLabelSubject runes, its double quotes
// made single).
func messageLabel(n int, subject string) string {
	if subject == "" {
		return fmt.Sprintf("msg %d", n)
	}
	return fmt.Sprintf("msg %d %q", n, quoteLabel(subject))
}

func quoteLabel(s string) string {
	s = strings.ReplaceAll(s, `"`, "'")
	if utf8.RuneCountInString(s) > maxLabelSubject {
		r := []rune(s)
		s = strings.TrimSpace(string(r[:maxLabelSubject])) + "…"
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
}

// emailConv converts one mailbox: its text, its spans and its index.
type emailConv struct {
	c      *Converter
	ctx    context.Context
	t      *textWriter
	opts   Options
	limits Limits // with its defaults
	index  *memagent.EmailIndex
	ocr    []memagent.OCRPage
	span   int // the last span's number
	tmp    string
	// per message
	parts int64
	msg   *memagent.EmailMessage
	// scan reads the top message's body text for threading by quoted
	// text (nil elsewhere: attachments, forwarded messages); prints are
	// the messages' prints, by index.
	scan   *quoteScan
	prints []msgPrint
	// extract, when set, is the one attachment ExtractAttachment wants:
	// the others are skipped, nothing is converted.
	extract *extraction
}

// begin opens the next span, labeled.
func (e *emailConv) begin(label string) {
	e.span++
	e.t.begin(e.span, label)
}

// convertEmail converts an .eml or a mailbox: each message (in mailbox
// order) as a header block of its fields and its body, then its
// attachments each converted as the document it is, a span each (a span
// per page or section of a PDF, DOCX or HTML one), labeled with its
// family: `msg 12 "Re: Lease" › lease.pdf p. 4`.
//
// A first pass finds the messages, checks each against the limits
// without converting anything and hashes it; a second converts those that
// pass and are not duplicates of an earlier one. What a message
// contributes to the text depends on it and the messages before it only.
func (c *Converter) convertEmail(ctx context.Context, format, file string, w io.Writer, opts Options, limits Limits) (*Result, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	msgs, err := splitMbox(ctx, f, format == FormatMbox, int64(limits.MaxMessages))
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "memagent-email-*")
	if err != nil {
		return nil, fmt.Errorf("email: %w", err)
	}
	defer os.RemoveAll(tmp)
	e := &emailConv{c: c, ctx: ctx, t: newTextWriter(w, limits.MaxTextBytes), opts: opts, limits: limits,
		index: &memagent.EmailIndex{}, tmp: tmp}
	seen := map[[32]byte]int{}
	e.prints = make([]msgPrint, len(msgs))
	for i, m := range msgs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		opts.Progress(int64(i), int64(len(msgs)))
		em := memagent.EmailMessage{Number: i + 1}
		e.msg = &em
		// Pass 1: the header, the structure against the limits, the hash.
		sum, err := e.check(m, f)
		var bad *Error
		switch {
		case errors.As(err, &bad):
			em.Skipped = bad.Msg
		case err != nil:
			return nil, err
		}
		em.Label = messageLabel(em.Number, em.Subject)
		if em.Skipped == "" {
			em.Hash = hex.EncodeToString(sum[:16])
			if first, ok := seen[sum]; ok {
				em.DuplicateOf = first
			} else {
				seen[sum] = em.Number
			}
		}
		switch {
		case em.Skipped != "":
			e.index.Skipped++
			e.begin(em.Label)
			if err := e.t.paragraph(fmt.Sprintf("--- %s ---", em.Label)); err != nil {
				return nil, err
			}
			if err := e.t.paragraph(fmt.Sprintf("[message %d not read: it %s]", em.Number, em.Skipped)); err != nil {
				return nil, err
			}
		case em.DuplicateOf > 0:
			e.index.Duplicates++
			e.begin(em.Label)
			if err := e.t.paragraph(fmt.Sprintf("--- %s ---", em.Label)); err != nil {
				return nil, err
			}
			if err := e.t.paragraph(fmt.Sprintf("[message %d is a duplicate of message %d, read there]", em.Number, em.DuplicateOf)); err != nil {
				return nil, err
			}
		default:
			first := e.span + 1
			scan := &quoteScan{}
			err := e.message(m, f, scan)
			e.prints[i] = scan.print()
			if err != nil {
				if !errors.As(err, &bad) || e.t.over {
					return nil, err
				}
				// Refused part-way (its check passed): the text so far
				// stands, the message is reported, the mailbox goes on.
				em.Skipped = bad.Msg
				e.index.Skipped++
			}
			if e.span >= first {
				em.FirstSpan, em.LastSpan = first, e.span
			}
		}
		e.index.Messages = append(e.index.Messages, em)
	}
	opts.Progress(int64(len(msgs)), int64(len(msgs)))
	if err := e.t.finish(); err != nil {
		return nil, err
	}
	threadMessages(e.index, e.prints)
	res := &Result{Bytes: e.t.n, Map: memagent.PageMap{Format: format, Unit: api.UnitMessage,
		Pages: len(msgs), Spans: e.t.spans, OCR: e.ocr, Email: e.index}}
	if len(msgs) == 0 {
		return nil, badf("is a mailbox with no messages")
	}
	return res, nil
}

// messageReader reads message m's raw bytes, unescaped.
func messageReader(m mboxMessage, f *os.File) io.Reader {
	var r io.Reader = io.NewSectionReader(f, m.start, m.end-m.start)
	if m.mboxrd {
		r = newUnescapeFrom(r)
	}
	return r
}

// check reads message m's header into e.msg and walks its structure
// against the limits, decoding every part and converting nothing; it
// returns the hash that tells a duplicate: the fields a copy in another
// mailbox keeps (not the trace fields its delivery added) and the body.
func (e *emailConv) check(m mboxMessage, f *os.File) ([32]byte, error) {
	var sum [32]byte
	if m.end-m.start > e.limits.MaxMessageBytes {
		return sum, messageOver(fmt.Sprintf("has %d bytes", m.end-m.start), e.limits.MaxMessageBytes, "bytes", KnobMaxMessageBytes)
	}
	br := bufio.NewReaderSize(messageReader(m, f), 32<<10)
	h, br2, err := readHeader(br, e.limits.MaxHeaderBytes)
	if err != nil {
		return sum, err
	}
	em := e.msg
	em.From, em.To, em.Cc = headerText(h, "From"), headerText(h, "To"), headerText(h, "Cc")
	em.Date, em.Subject = headerText(h, "Date"), headerText(h, "Subject")
	if ids := messageIDs(h.Get("Message-Id")); len(ids) > 0 {
		em.MessageID = ids[0]
	}
	if ids := messageIDs(h.Get("In-Reply-To")); len(ids) > 0 {
		em.InReplyTo = ids[0]
	}
	em.References = messageIDs(strings.Join(h.Values("References"), " "))
	hash := sha256.New()
	for _, k := range []string{"From", "To", "Cc", "Date", "Subject", "Message-Id", "In-Reply-To", "References", "Content-Type", "Content-Transfer-Encoding"} {
		fmt.Fprintf(hash, "%s: %q\n", k, h.Values(k))
	}
	e.parts = 0
	body := io.TeeReader(br2, hash)
	err = e.walk(h, body, 0, nil)
	if err == nil {
		_, err = io.Copy(io.Discard, body)
	}
	copy(sum[:], hash.Sum(nil))
	return sum, err
}

// leaf is one part of a message that is not a multipart: its header, its
// decoded body and where it sits.
type leaf struct {
	h     textproto.MIMEHeader
	body  io.Reader
	depth int64
	// body says the part is (a piece of) the message's text, not an
	// attachment.
	isBody bool
}

// walk reads a part with header h and raw body r at nesting depth
// depth, counting parts against the limits, and calls visit for each
// leaf (nil: the leaf's body is decoded and dropped). A multipart's
// preamble and epilogue are not text.
func (e *emailConv) walk(h textproto.MIMEHeader, r io.Reader, depth int64, visit func(leaf) error) error {
	if depth > int64(e.limits.MaxMIMEDepth) {
		return messageOver(fmt.Sprintf("nests parts more than %d deep", e.limits.MaxMIMEDepth), int64(e.limits.MaxMIMEDepth), "levels", KnobMaxMIMEDepth)
	}
	if err := e.countPart(); err != nil {
		return err
	}
	mt, params, _ := mime.ParseMediaType(h.Get("Content-Type"))
	if mt == "" {
		mt = "text/plain"
	}
	if strings.HasPrefix(mt, "multipart/") && params["boundary"] != "" {
		mr := multipart.NewReader(r, params["boundary"])
		// multipart/alternative: one of its texts is read, the first
		// plain text that says anything, else the last HTML, else the
		// first alternative of another kind; the others are checked.
		alternative := mt == "multipart/alternative" && visit != nil
		chosen := false
		var html *leaf
		for {
			if err := e.ctx.Err(); err != nil {
				return err
			}
			p, err := mr.NextRawPart()
			if err != nil {
				// The end, or a damaged or truncated multipart: what was
				// read stands.
				break
			}
			ph := textproto.MIMEHeader(p.Header)
			if mt == "multipart/digest" && ph.Get("Content-Type") == "" {
				ph.Set("Content-Type", "message/rfc822") // RFC 2046 § 5.1.5
			}
			if !alternative {
				if err := e.walk(ph, p, depth+1, visit); err != nil {
					return err
				}
				continue
			}
			if chosen {
				if err := e.walk(ph, p, depth+1, nil); err != nil {
					return err
				}
				continue
			}
			pmt, _, _ := mime.ParseMediaType(ph.Get("Content-Type"))
			if pmt == "" || pmt == "text/plain" || pmt == "text/html" {
				var buf bytes.Buffer
				if err := e.countPart(); err != nil {
					return err
				}
				if err := e.decodeTo(&buf, ph, p); err != nil {
					return err
				}
				l := leaf{h: ph, body: &buf, depth: depth + 1, isBody: true}
				if pmt == "text/html" {
					html = &l
					continue
				}
				if len(bytes.TrimSpace(buf.Bytes())) == 0 {
					continue
				}
				chosen = true
				if err := visit(l); err != nil {
					return err
				}
				continue
			}
			chosen = true
			if err := e.walk(ph, p, depth+1, visit); err != nil {
				return err
			}
		}
		if alternative && !chosen && html != nil {
			return visit(*html)
		}
		return nil
	}
	disp, dparams, _ := mime.ParseMediaType(h.Get("Content-Disposition"))
	named := dparams["filename"] != "" || params["name"] != ""
	isBody := (mt == "text/plain" || mt == "text/html") && disp != "attachment" && !named
	if mt == "message/rfc822" || mt == "message/global" {
		dec := e.decoded(h, r)
		if visit == nil {
			// Check the nested message's structure too.
			nh, nb, err := readHeader(bufio.NewReaderSize(dec, 32<<10), e.limits.MaxHeaderBytes)
			if err != nil {
				return err
			}
			return e.walk(nh, nb, depth+1, nil)
		}
		return visit(leaf{h: h, body: dec, depth: depth})
	}
	if visit == nil {
		_, err := io.Copy(io.Discard, e.limitPart(e.decoded(h, r)))
		return err
	}
	return visit(leaf{h: h, body: e.limitPart(e.decoded(h, r)), depth: depth, isBody: isBody})
}

// countPart counts one more part of the message against its limit.
func (e *emailConv) countPart() error {
	e.parts++
	if max := int64(e.limits.MaxParts); e.parts > max {
		return messageOver(fmt.Sprintf("has more than %d parts", max), max, "parts", KnobMaxParts)
	}
	return nil
}

// decoded is a part's body with its transfer encoding undone.
func (e *emailConv) decoded(h textproto.MIMEHeader, r io.Reader) io.Reader {
	switch strings.ToLower(strings.TrimSpace(h.Get("Content-Transfer-Encoding"))) {
	case "base64":
		return base64.NewDecoder(base64.StdEncoding, &base64Filter{r: r})
	case "quoted-printable":
		return quotedprintable.NewReader(r)
	}
	return r
}

// decodeTo decodes a part's body into buf, within the part limit.
func (e *emailConv) decodeTo(buf *bytes.Buffer, h textproto.MIMEHeader, r io.Reader) error {
	_, err := io.Copy(buf, e.limitPart(e.decoded(h, r)))
	return err
}

// limitPart fails a read past the decoded size limit as *Error.
func (e *emailConv) limitPart(r io.Reader) io.Reader {
	return &limitReader{r: r, left: e.limits.MaxPartBytes, max: e.limits.MaxPartBytes}
}

type limitReader struct {
	r         io.Reader
	left, max int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, messageOver(fmt.Sprintf("has a part of more than %d bytes decoded", l.max), l.max, "bytes", KnobMaxPartBytes)
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return n, messageOver(fmt.Sprintf("has a part of more than %d bytes decoded", l.max), l.max, "bytes", KnobMaxPartBytes)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		// A damaged encoding (bad base64): the part ends where it broke.
		var bad *Error
		if !errors.As(err, &bad) {
			return n, io.EOF
		}
	}
	return n, err
}

// base64Filter drops what is not base64 (white space, stray characters
// some mailers leave) and what follows the padding, as mail readers do.
type base64Filter struct {
	r     io.Reader
	done  bool
	count int64 // base64 characters passed on
}

func (b *base64Filter) Read(p []byte) (int, error) {
	for {
		if b.done {
			return 0, io.EOF
		}
		n, err := b.r.Read(p)
		k := 0
		for _, c := range p[:n] {
			if b.done {
				break
			}
			switch {
			case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '+', c == '/':
				p[k] = c
				k++
			case c == '=':
				p[k] = c
				k++
			}
		}
		// Padding ends the data: "==" or a '=' at a quantum's end.
		if i := bytes.IndexByte(p[:k], '='); i >= 0 {
			b.done = true
			_, _ = io.Copy(io.Discard, b.r)
			k = i
			for (b.count+int64(k))%4 != 0 && k < len(p) {
				p[k] = '='
				k++
			}
		}
		b.count += int64(k)
		if k > 0 || err != nil {
			if errors.Is(err, io.EOF) && k > 0 {
				return k, nil
			}
			return k, err
		}
	}
}
