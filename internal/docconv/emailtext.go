package docconv

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // image.DecodeConfig of attachments
	_ "image/jpeg"
	_ "image/png"
	"io"
	"mime"
	"net/textproto"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-pdf/fpdf"
	"golang.org/x/text/transform"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/memagent"
)

// message writes message m's family: its header block and body, then its
// attachments.
// Its body text is read into scan as it is written.
func (e *emailConv) message(m mboxMessage, f *os.File, scan *quoteScan) error {
	h, body, err := readHeader(bufio.NewReaderSize(messageReader(m, f), 32<<10), e.limits.MaxHeaderBytes)
	if err != nil {
		return err
	}
	e.parts = 0
	return e.family(h, body, e.msg.Label, "", 0, scan)
}

// family writes one message (the top one, or one forwarded inside it)
// under label: its fields, its text, and its attachments each under
// `label › name`. path is the attachments' names above it. scan, when
// not nil, reads the message's body text (not its attachments').
func (e *emailConv) family(h textproto.MIMEHeader, body io.Reader, label, parent string, depth int64, scan *quoteScan) error {
	e.begin(label)
	var head strings.Builder
	fmt.Fprintf(&head, "--- %s ---", label)
	for _, k := range []string{"From", "To", "Cc", "Date", "Subject"} {
		if v := headerText(h, k); v != "" {
			fmt.Fprintf(&head, "\n%s: %s", k, cutRunes(v, 2000))
		}
	}
	if err := e.t.block(head.String()); err != nil {
		return err
	}
	inBody := true
	return e.walk(h, body, depth, func(l leaf) error {
		if l.isBody {
			if !inBody {
				e.begin(label)
				inBody = true
			}
			e.scan = scan
			defer func() { e.scan = nil }()
			return e.bodyText(l)
		}
		inBody = false
		return e.attachment(l, label, parent)
	})
}

// attachment converts one member of a family as the document it is.
func (e *emailConv) attachment(l leaf, label, parent string) error {
	name := attachmentName(l.h, len(e.msg.Attachments)+1)
	at := memagent.EmailAttachment{Name: name, Path: name}
	if parent != "" {
		at.Path = parent + " › " + name
	}
	at.ContentType, _, _ = mime.ParseMediaType(l.h.Get("Content-Type"))
	alabel := label + " › " + name
	first := e.span + 1
	// Listed before its own members (a forwarded message's attachments).
	idx := len(e.msg.Attachments)
	e.msg.Attachments = append(e.msg.Attachments, at)
	err := e.convertAttachment(l, alabel, at.Path, idx+1, &at)
	var bad *Error
	if errors.As(err, &bad) {
		at.Error = bad.Msg
		if e.span < first {
			e.begin(alabel)
			if werr := e.t.block(fmt.Sprintf("--- %s ---\n[attachment not read: it %s]", alabel, bad.Msg)); werr != nil {
				return werr
			}
		}
		err = nil
		if e.t.over {
			err = bad
		}
	}
	if e.span >= first {
		at.FirstSpan, at.LastSpan = first, e.span
	}
	e.msg.Attachments[idx] = at
	return err
}

// convertAttachment converts attachment place (from 1) of the message, l,
// labeled alabel, at path apath; at is its index entry.
func (e *emailConv) convertAttachment(l leaf, alabel, apath string, place int, at *memagent.EmailAttachment) error {
	mt, params, _ := mime.ParseMediaType(l.h.Get("Content-Type"))
	switch mt {
	case "application/pgp-signature", "application/pkcs7-signature", "application/x-pkcs7-signature":
		_, _ = io.Copy(io.Discard, l.body)
		return badf("is the message's digital signature, not a document")
	}
	if mt == "message/rfc822" || mt == "message/global" {
		at.Format = FormatEmail
		nh, nb, err := readHeader(bufio.NewReaderSize(l.body, 32<<10), e.limits.MaxHeaderBytes)
		if err != nil {
			return err
		}
		return e.family(nh, nb, alabel, apath, l.depth+1, nil)
	}
	if x := e.extract; x != nil {
		return e.extractAttachment(x, l, alabel, apath, place, at)
	}
	// Spool the decoded part: PDF and DOCX need random access.
	tf, err := os.CreateTemp(e.tmp, "part-*")
	if err != nil {
		return fmt.Errorf("email: %w", err)
	}
	defer os.Remove(tf.Name())
	defer tf.Close()
	sum := sha256.New()
	if _, err := io.Copy(io.MultiWriter(tf, sum), l.body); err != nil {
		return err
	}
	head := make([]byte, SniffBytes)
	n, _ := tf.ReadAt(head, 0)
	head = head[:n]
	if n == 0 {
		return badf("is empty")
	}
	format := Detect(head)
	if format == FormatMbox {
		return badf("is a mailbox: ask about it as a document of its own")
	}
	if format == FormatEmail {
		at.Format = FormatEmail
		if _, err := tf.Seek(0, io.SeekStart); err != nil {
			return err
		}
		nh, nb, err := readHeader(bufio.NewReaderSize(tf, 32<<10), e.limits.MaxHeaderBytes)
		if err != nil {
			return err
		}
		return e.family(nh, nb, alabel, apath, l.depth+1, nil)
	}
	at.Format = format
	switch format {
	case FormatText:
		if !strings.HasPrefix(mt, "text/") && (bytes.IndexByte(head, 0) >= 0 || (!utf8.Valid(head[:max(0, len(head)-4)]) && params["charset"] == "")) {
			at.Format = ""
			return badf("is binary (%s), not a document memagent reads", orDefault(mt, "no content type"))
		}
		if _, err := tf.Seek(0, io.SeekStart); err != nil {
			return err
		}
		e.begin(alabel)
		if err := e.t.paragraph(fmt.Sprintf("--- %s ---", alabel)); err != nil {
			return err
		}
		return e.text(tf, params["charset"])
	case FormatPDF, FormatZip, FormatDOCX, FormatHTML:
		// A zip is what its converter finds it to be (a DOCX), and the
		// index says so.
		converted, err := e.subConvert(format, tf.Name(), alabel, hex.EncodeToString(sum.Sum(nil)), true)
		if converted != "" {
			at.Format = converted
		}
		return err
	case FormatImage:
		// A scan or a photo of a page: read by OCR, as the page of a PDF
		// that draws it.
		pdf, err := e.imagePDF(tf)
		if errors.Is(err, errImageFormat) {
			break
		}
		if err != nil {
			return err
		}
		defer os.Remove(pdf)
		_, err = e.subConvert(FormatPDF, pdf, alabel, hex.EncodeToString(sum.Sum(nil)), false)
		return err
	}
	if err := Unsupported(format, at.Name); err != nil {
		return err
	}
	return badf("is not a document memagent reads (%s)", orDefault(mt, format))
}

// extractAttachment is convertAttachment for ExtractAttachment: the
// attachment at x's place is written to x.w and the walk stops; another
// is skipped, except one the conversion reads as a forwarded message (an
// .eml sent as a file, which Detect finds), whose own attachments are
// walked as the conversion walks them, so that the places after it are
// the index's.
func (e *emailConv) extractAttachment(x *extraction, l leaf, alabel, apath string, place int, at *memagent.EmailAttachment) error {
	if place == x.part {
		x.found, x.got = true, apath
		if apath == x.path {
			_, x.err = io.Copy(x.w, l.body)
		}
		return errExtracted
	}
	br := bufio.NewReaderSize(l.body, max(32<<10, SniffBytes))
	head, _ := br.Peek(SniffBytes)
	if len(head) > 0 && Detect(head) == FormatEmail {
		at.Format = FormatEmail
		nh, nb, err := readHeader(br, e.limits.MaxHeaderBytes)
		if err != nil {
			return err
		}
		return e.family(nh, nb, alabel, apath, l.depth+1, nil)
	}
	_, err := io.Copy(io.Discard, br)
	return err
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// subConvert converts an attachment with the converter of its format and
// writes its text, a span per page or section labeled `alabel p. 4`,
// `alabel § Terms`; the pages OCR read are recorded under those spans'
// numbers. It returns the format the converter read the attachment as.
func (e *emailConv) subConvert(format, file, alabel, sum string, pages bool) (string, error) {
	out, err := os.CreateTemp(e.tmp, "text-*")
	if err != nil {
		return "", fmt.Errorf("email: %w", err)
	}
	defer os.Remove(out.Name())
	defer out.Close()
	var cache OCRCache
	if e.opts.OCRCache != nil {
		cache = attachmentCache{c: e.opts.OCRCache, sum: sum}
	}
	sub, err := e.c.ConvertWith(e.ctx, format, file, out, Options{OCR: e.opts.OCR, OCRCache: cache})
	if err != nil {
		return "", err
	}
	spanOf := map[int]int{}
	pos := int64(0)
	headed := false
	emit := func(label string, start, end int64) error {
		if end-start <= 2 {
			return nil // the blank line between two pages
		}
		e.begin(label)
		if !headed {
			// The attachment's header line, once, in its first span.
			headed = true
			if err := e.t.paragraph(fmt.Sprintf("--- %s ---", alabel)); err != nil {
				return err
			}
		}
		return e.copyText(out, start, end)
	}
	for _, s := range sub.Map.Spans {
		if s.Start > pos {
			if err := emit(alabel, pos, s.Start); err != nil {
				return "", err
			}
		}
		ref := api.PageRef{Unit: sub.Map.Unit, First: s.Number, Last: s.Number, Label: s.Label, FirstLabel: s.PageLabel, LastLabel: s.PageLabel}
		label := alabel
		if pages {
			label += " " + ref.String()
		}
		if err := emit(label, s.Start, s.End); err != nil {
			return "", err
		}
		spanOf[s.Number] = e.span
		pos = s.End
	}
	if pos < sub.Bytes {
		if err := emit(alabel, pos, sub.Bytes); err != nil {
			return "", err
		}
	}
	for _, o := range sub.Map.OCR {
		if n, ok := spanOf[o.Page]; ok {
			o.Page = n
			e.ocr = append(e.ocr, o)
		}
	}
	return sub.Map.Format, nil
}

// minImagePixels is the smallest image attachment read by OCR: a third
// of a page's width at 300 DPI, squared, about.
const minImagePixels = 200_000

// errImageFormat is an image that imagePDF does not put in a PDF.
var errImageFormat = errors.New("image format not put in a PDF")

// imagePDF writes a PDF of one page that draws the image in f (PNG, JPEG
// or GIF) at 300 DPI, for OCR to read; other image formats fail with
// errImageFormat, an image over the pixel limit as *Error.
func (e *emailConv) imagePDF(f *os.File) (_ string, err error) {
	defer func() {
		// fpdf decodes the image itself: a damaged one must cost this
		// attachment, not the worker.
		if r := recover(); r != nil {
			err = badf("is an image that cannot be read (%v)", r)
		}
	}()
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	cfg, kind, err := image.DecodeConfig(bufio.NewReader(f))
	if err != nil {
		return "", errImageFormat
	}
	types := map[string]string{"png": "PNG", "jpeg": "JPG", "gif": "GIF"}
	if types[kind] == "" {
		return "", errImageFormat
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px < minImagePixels {
		// Signatures' logos and icons: OCR would cost a page each for
		// nothing a review reads.
		return "", badf("is a small image (%dx%d pixels: a logo or an icon), not read", cfg.Width, cfg.Height)
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > e.limits.MaxImagePixels {
		return "", badf("is an image of %d pixels, over the converter's limit of %d pixels", px, e.limits.MaxImagePixels)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	w, h := float64(cfg.Width)*72/300, float64(cfg.Height)*72/300
	pdf := fpdf.NewCustom(&fpdf.InitType{UnitStr: "pt", Size: fpdf.SizeType{Wd: w, Ht: h}})
	pdf.SetAutoPageBreak(false, 0)
	pdf.SetMargins(0, 0, 0)
	opt := fpdf.ImageOptions{ImageType: types[kind]}
	pdf.RegisterImageOptionsReader("image", opt, bufio.NewReader(f))
	pdf.AddPage()
	pdf.ImageOptions("image", 0, 0, w, h, false, opt, 0, "")
	out, err := os.CreateTemp(e.tmp, "image-*.pdf")
	if err != nil {
		return "", fmt.Errorf("email: %w", err)
	}
	defer out.Close()
	if err := pdf.Output(out); err != nil {
		os.Remove(out.Name())
		return "", badf("is an image that cannot be read (%v)", err)
	}
	return out.Name(), out.Close()
}

// attachmentCache keeps an attachment's OCR in the mailbox's cache under
// keys of its own (AttachmentOCRKey): pages are numbered per attachment,
// and two attachments' page 1 must not meet.
type attachmentCache struct {
	c   OCRCache
	sum string
}

func (a attachmentCache) Load(ctx context.Context, key string, page int) (*OCRResult, bool) {
	return a.c.Load(ctx, AttachmentOCRKey(key, a.sum), page)
}

func (a attachmentCache) Store(ctx context.Context, key string, page int, r *OCRResult) {
	a.c.Store(ctx, AttachmentOCRKey(key, a.sum), page, r)
}

// AttachmentOCRKey is the key, in a mailbox's OCR cache, of the pages of
// one of its attachments read under key (OCRKey): sum is the SHA-256, in
// hex, of the attachment's decoded bytes (what ExtractAttachment writes).
func AttachmentOCRKey(key, sum string) string {
	return key + "/attachment-" + sum
}

// copyText writes the text [start, end) of a converted attachment as
// blocks, cut at its paragraph breaks into pieces of at most
// maxParagraphBytes.
func (e *emailConv) copyText(f *os.File, start, end int64) error {
	buf := make([]byte, 0, maxParagraphBytes)
	r := bufio.NewReaderSize(io.NewSectionReader(f, start, end-start), 64<<10)
	for {
		piece := make([]byte, maxParagraphBytes-len(buf))
		n, err := io.ReadFull(r, piece)
		buf = append(buf, piece[:n]...)
		last := err != nil
		cut := len(buf)
		if !last {
			if i := bytes.LastIndex(buf, []byte("\n\n")); i > 0 {
				cut = i
			} else {
				for cut > 0 && !utf8.RuneStart(buf[cut-1]) {
					cut--
				}
				if cut > 0 {
					cut--
				}
			}
		}
		if err := e.t.block(strings.TrimSpace(strings.ToValidUTF8(string(buf[:cut]), "\uFFFD"))); err != nil {
			return err
		}
		buf = append(buf[:0], bytes.TrimLeft(buf[cut:], "\n")...)
		if last {
			if len(buf) > 0 {
				return e.t.block(strings.TrimSpace(string(buf)))
			}
			return nil
		}
	}
}

// bodyText writes a piece of a message's text: plain text as its
// paragraphs, HTML converted as an HTML document is.
func (e *emailConv) bodyText(l leaf) error {
	mt, params, _ := mime.ParseMediaType(l.h.Get("Content-Type"))
	if mt != "text/html" {
		return e.text(l.body, params["charset"])
	}
	tf, err := os.CreateTemp(e.tmp, "body-*.html")
	if err != nil {
		return fmt.Errorf("email: %w", err)
	}
	defer os.Remove(tf.Name())
	defer tf.Close()
	// Decoded to UTF-8 and marked so, first: the page's own meta
	// charset, which may disagree with the part's, then counts for
	// nothing.
	tf.WriteString(`<meta charset="utf-8">`)
	if _, err := io.Copy(tf, decodeCharset(l.body, params["charset"])); err != nil {
		return err
	}
	out, err := os.CreateTemp(e.tmp, "text-*")
	if err != nil {
		return fmt.Errorf("email: %w", err)
	}
	defer os.Remove(filepath.Clean(out.Name()))
	defer out.Close()
	res, err := convertHTML(e.ctx, tf.Name(), out, func(int64, int64) {}, e.limits)
	if err == nil && res.Bytes == 0 {
		return nil
	}
	if err != nil {
		var bad *Error
		if errors.As(err, &bad) {
			return e.t.paragraph("[the message's HTML text not read: it " + bad.Msg + "]")
		}
		return err
	}
	if e.scan != nil {
		if err := scanLines(io.NewSectionReader(out, 0, res.Bytes), e.scan); err != nil {
			return err
		}
	}
	return e.copyText(out, 0, res.Bytes)
}

// decodeCharset reads r as UTF-8, from charset cs (UTF-8 when cs is
// empty or unknown; bytes not valid in it read as U+FFFD).
func decodeCharset(r io.Reader, cs string) io.Reader {
	enc, err := charsetEncoding(cs)
	if err != nil || enc == nil {
		return r
	}
	return transform.NewReader(r, enc.NewDecoder())
}

// text writes plain text in charset cs as paragraphs (runs of lines
// between blank lines), each line as it is, less trailing white space: a
// message's quoted lines ("> …") and signature keep their shape.
func (e *emailConv) text(r io.Reader, cs string) error {
	br := bufio.NewReaderSize(decodeCharset(r, cs), 32<<10)
	var para strings.Builder
	lineStart := true
	flush := func() error {
		s := strings.ToValidUTF8(para.String(), "\uFFFD")
		para.Reset()
		return e.t.preformatted(s)
	}
	for {
		if err := e.ctx.Err(); err != nil {
			return err
		}
		line, err := br.ReadSlice('\n')
		full := errors.Is(err, bufio.ErrBufferFull)
		s := string(line)
		if !full {
			s = strings.TrimRightFunc(s, unicode.IsSpace)
		}
		if e.scan != nil && lineStart {
			e.scan.line(strings.ToValidUTF8(s, "\uFFFD"))
		}
		lineStart = !full
		if !full && s == "" && para.Len() > 0 {
			if ferr := flush(); ferr != nil {
				return ferr
			}
		} else if s != "" {
			para.WriteString(s)
			if !full {
				para.WriteByte('\n')
			}
			if para.Len() >= maxParagraphBytes {
				if ferr := flush(); ferr != nil {
					return ferr
				}
			}
		}
		if err != nil && !full {
			var bad *Error
			if errors.As(err, &bad) {
				return err
			}
			break
		}
	}
	return flush()
}

// attachmentName is a part's file name (Content-Disposition's filename,
// else Content-Type's name, RFC 2047 and 2231 decoded), as a base name
// without control characters; a part without one is named by its type
// and its place among the message's attachments: "part 3.pdf".
func attachmentName(h textproto.MIMEHeader, n int) string {
	mt, params, _ := mime.ParseMediaType(h.Get("Content-Type"))
	_, dparams, _ := mime.ParseMediaType(h.Get("Content-Disposition"))
	name := dparams["filename"]
	if name == "" {
		name = params["name"]
	}
	if d, err := wordDecoder.DecodeHeader(name); err == nil {
		name = d
	}
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(name, "\uFFFD"))
	name = path.Base(strings.ReplaceAll(name, `\`, "/"))
	if name == "." || name == "/" || strings.TrimSpace(name) == "" {
		ext := ""
		if exts, _ := mime.ExtensionsByType(mt); len(exts) > 0 {
			ext = exts[0]
		}
		switch mt {
		case "message/rfc822":
			ext = ".eml"
		case "text/plain":
			ext = ".txt"
		case "application/pdf":
			ext = ".pdf"
		}
		name = fmt.Sprintf("part %d%s", n, ext)
	}
	return cutRunes(name, maxAttachmentName)
}

// cutRunes cuts s to at most n runes, marking a cut with "…".
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
