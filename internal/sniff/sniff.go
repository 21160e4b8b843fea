// Package sniff names a document's format from its first bytes, and says
// why a format memagent does not read is refused: the one check the
// starter makes on a local file before it uploads it, and the first step
// of internal/docconv's conversion on the worker, which calls it. It is
// dependency-free and must stay so (no conversion, no I/O).
package sniff

import (
	"bytes"
	"fmt"
	"net/http"
	"path"
	"strings"
)

// Formats Detect tells apart. Only PDF, DOCX and HTML are converted; text
// is indexed as it is; the others are refused with a message.
const (
	FormatText  = "text"
	FormatPDF   = "pdf"
	FormatDOCX  = "docx"
	FormatHTML  = "html"
	FormatZip   = "zip"
	FormatOLE   = "ole"
	FormatImage = "image"
	// FormatOutlook is an Outlook message (.msg): an OLE compound file
	// of MAPI property streams, which no maintained Go library reads; it
	// is refused with the way to convert it.
	FormatOutlook = "msg"
	// FormatEmail is one RFC 5322 message (.eml), FormatMbox a mailbox of
	// them (mbox: each message after a "From " line).
	FormatEmail = "email"
	FormatMbox  = "mbox"
)

// utf16le is s (ASCII) as UTF-16LE, as OLE directory entries name streams.
func utf16le(s string) []byte {
	b := make([]byte, 0, 2*len(s))
	for i := 0; i < len(s); i++ {
		b = append(b, s[i], 0)
	}
	return b
}

// SniffBytes is how much of the start of a file Detect wants.
const SniffBytes = 8 << 10

// Detect names a document's format from its first bytes (up to
// SniffBytes), by content, not name: "%PDF-" anywhere in the first KiB
// (as PDF readers accept), a zip (a DOCX is told from other zips only once
// it is opened: FormatZip), HTML markup at the start, an OLE compound file
// (a legacy .doc, or an Outlook message), a mailbox (a "From " line, then
// a message's header), an email (a header of RFC 5322 fields: From,
// Received, Message-ID…), an image, or else text (which must then be
// UTF-8).
func Detect(head []byte) string {
	if i := bytes.Index(head[:min(len(head), 1024)], []byte("%PDF-")); i >= 0 {
		return FormatPDF
	}
	if bytes.HasPrefix(head, []byte("PK\x03\x04")) {
		return FormatZip
	}
	if bytes.HasPrefix(head, []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}) {
		if bytes.Contains(head, utf16le("__substg1.0_")) || bytes.Contains(head, utf16le("__properties_version1.0")) {
			return FormatOutlook
		}
		return FormatOLE
	}
	if looksLikeMbox(head) {
		return FormatMbox
	}
	if looksLikeEmail(head) {
		return FormatEmail
	}
	if isHTML(head) {
		return FormatHTML
	}
	if strings.HasPrefix(http.DetectContentType(head), "image/") ||
		bytes.HasPrefix(head, []byte("II*\x00")) || bytes.HasPrefix(head, []byte("MM\x00*")) { // TIFF, which http does not sniff
		return FormatImage
	}
	// Anything else goes to the UTF-8 check, which says where a bad byte
	// is (or replaces bad bytes, when asked to).
	return FormatText
}

// isHTML reports a document that starts, after a byte order mark, white
// space and comments, with an HTML doctype or one of the tags that open an
// HTML page. XML and XHTML prologs count when html follows.
func isHTML(head []byte) bool {
	s := bytes.TrimPrefix(head, []byte("\xEF\xBB\xBF"))
	for {
		s = bytes.TrimLeft(s, " \t\r\n\f")
		if bytes.HasPrefix(s, []byte("<!--")) {
			end := bytes.Index(s, []byte("-->"))
			if end < 0 {
				return false
			}
			s = s[end+3:]
			continue
		}
		if bytes.HasPrefix(s, []byte("<?xml")) {
			end := bytes.Index(s, []byte("?>"))
			if end < 0 {
				return false
			}
			s = s[end+2:]
			continue
		}
		break
	}
	lower := bytes.ToLower(s[:min(len(s), 32)])
	for _, p := range []string{"<!doctype html", "<html", "<head", "<body", "<title", "<meta", "<h1", "<p>", "<div", "<article"} {
		if bytes.HasPrefix(lower, []byte(p)) {
			rest := lower[len(p):]
			return len(p) > 0 && (p[len(p)-1] == '>' || len(rest) == 0 || rest[0] == '>' || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\n' || rest[0] == '\r' || rest[0] == '/')
		}
	}
	return false
}

// Unsupported says why a format Detect names is not read, or "" for one
// that is (PDF, DOCX, HTML, text). name is
// the document's file as the advice names it (a local path, an object
// key's last element); "" stands for a generic one.
//
// An image is refused with the advice to wrap it in a PDF with img2pdf:
// the PDF's page then draws the image and has no text layer, which OCR
// reads in its default mode (OCRAuto, OCRDecision's OCRNoTextLayer).
func Unsupported(format, name string) string {
	if format == FormatOLE && strings.EqualFold(path.Ext(name), ".msg") {
		format = FormatOutlook
	}
	switch format {
	case FormatOutlook:
		if name == "" || name == "." || name == "/" || !strings.EqualFold(path.Ext(name), ".msg") {
			name = "message.msg"
		}
		eml := strings.TrimSuffix(name, path.Ext(name)) + ".eml"
		return fmt.Sprintf("is an Outlook message (.msg), which memagent does not read: convert it to .eml (msgconvert %s, from Debian's libemail-outlook-message-perl, writes %s; or drag it from Outlook into Thunderbird and save it as .eml) and ask about the .eml",
			shellWord(name), shellWord(eml))
	case FormatOLE:
		return fmt.Sprintf("is a legacy Office file (.doc, .xls or .ppt): save it as .docx or PDF and ask again")
	case FormatImage:
		if name == "" || name == "." || name == "/" {
			name = "scan.png"
		}
		pdf := strings.TrimSuffix(name, path.Ext(name)) + ".pdf"
		return fmt.Sprintf("is an image, which memagent does not read as it is: wrap it in a PDF (img2pdf %s -o %s) and ask about the PDF; memagent reads its page by OCR (--ocr auto, the default)",
			shellWord(name), shellWord(pdf))
	}
	return ""
}

// shellWord is s as one word of a POSIX shell command line.
func shellWord(s string) string {
	if strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:@%+=,-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// looksLikeMbox reports a mailbox: a "From " line (the mbox separator)
// first, then a message's header.
func looksLikeMbox(head []byte) bool {
	if !bytes.HasPrefix(head, []byte("From ")) {
		return false
	}
	line, rest, ok := bytes.Cut(head, []byte("\n"))
	if !ok || !IsFromLine(line) {
		return false
	}
	return looksLikeEmail(rest)
}

// IsFromLine reports an mbox separator line: "From " then a sender and a
// date, which has a year (a digit).
func IsFromLine(line []byte) bool {
	line = bytes.TrimRight(line, "\r")
	if !bytes.HasPrefix(line, []byte("From ")) || len(line) > 1000 {
		return false
	}
	f := bytes.Fields(line[5:])
	return len(f) >= 2 && bytes.ContainsAny(line, "0123456789")
}

// emailFields are header fields a message has and a text seldom starts
// with; a header block needs two of them, one an originator or trace
// field, to be taken for a message.
var emailFields = map[string]bool{
	"from": true, "to": true, "cc": true, "date": true, "subject": true, "message-id": true,
	"received": true, "return-path": true, "mime-version": true, "content-type": true,
	"reply-to": true, "sender": true, "in-reply-to": true, "references": true, "delivered-to": true,
	"x-mailer": true, "content-transfer-encoding": true,
}

// looksLikeEmail reports an RFC 5322 message: its first lines, up to a
// blank line, a line that is not a field or the end of head, are header
// fields or their continuations, and among them are two of emailFields,
// one of them From, Received, Return-Path, Message-ID or MIME-Version.
func looksLikeEmail(head []byte) bool {
	seen, origin, lines := 0, false, 0
	for len(head) > 0 {
		line, rest, ok := bytes.Cut(head, []byte("\n"))
		if !ok && len(rest) == 0 && len(head) >= SniffBytes-1024 {
			break // a line cut by the sniff window
		}
		head = rest
		line = bytes.TrimRight(line, "\r")
		if len(line) == 0 {
			break
		}
		lines++
		if line[0] == ' ' || line[0] == '\t' {
			if lines == 1 {
				return false
			}
			continue
		}
		name, _, ok := bytes.Cut(line, []byte(":"))
		if !ok || len(name) == 0 || bytes.ContainsAny(name, " \t") {
			// A body that follows its header without the blank line
			// (as some mailers write).
			break
		}
		n := strings.ToLower(string(name))
		if emailFields[n] {
			seen++
			origin = origin || n == "from" || n == "received" || n == "return-path" || n == "message-id" || n == "mime-version"
		}
	}
	return seen >= 2 && origin
}
