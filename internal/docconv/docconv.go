package docconv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/sniff"
)

// Formats Detect tells apart (package sniff's). Only PDF, DOCX and HTML
// are converted; text is indexed as it is; the others are refused with a
// message.
const (
	FormatText  = sniff.FormatText
	FormatPDF   = sniff.FormatPDF
	FormatDOCX  = sniff.FormatDOCX
	FormatHTML  = sniff.FormatHTML
	FormatZip   = sniff.FormatZip
	FormatOLE   = sniff.FormatOLE
	FormatImage = sniff.FormatImage
	// FormatOutlook is an Outlook message (.msg), refused with the way to
	// convert it.
	FormatOutlook = sniff.FormatOutlook
)

// errConvertTimeout is the cause of a conversion's context past
// Limits.Timeout.
var errConvertTimeout = errors.New("conversion timed out")

// SniffBytes is how much of the start of a file Detect wants.
const SniffBytes = sniff.SniffBytes

// Detect names a document's format from its first bytes, as sniff.Detect
// does.
func Detect(head []byte) string { return sniff.Detect(head) }

// Error is a document that cannot be converted, for a reason that a retry
// will not fix. Its message says which and what to do.
type Error struct {
	Msg string
}

func (e *Error) Error() string { return e.Msg }

func badf(format string, args ...any) error { return &Error{Msg: fmt.Sprintf(format, args...)} }

// Unsupported returns the Error for a format that Detect names but this
// package does not convert (sniff.Unsupported's words), or nil for one it
// converts (or text). name is the document's file as the advice names it.
func Unsupported(format, name string) error {
	if msg := sniff.Unsupported(format, name); msg != "" {
		return &Error{Msg: msg}
	}
	return nil
}

// Progress is told, as a conversion goes, how many pages (or, for DOCX
// and HTML, input bytes) are done out of how many.
type Progress func(done, total int64)

// Options are one conversion's settings besides the converter's.
type Options struct {
	// Progress is told the pages (or bytes) read; nil tells nothing.
	Progress Progress
	// OCR says which pages of a PDF OCR reads, in which languages.
	OCR OCROptions
	// OCRCache keeps what OCR read of each page, for a later conversion
	// of the same document (another attempt, another mode) to reuse; nil
	// keeps nothing.
	OCRCache OCRCache
	// OCRProgress is told, once the pages to read by OCR are known, how
	// many of them are done; nil tells nothing.
	OCRProgress func(done, total int)
	// Survey counts the pages OCR would read instead of reading them:
	// unless the cache holds them all, the text has the other pages'
	// alone, Result.OCRPending counts them and Result.OCRCached those of
	// them the cache holds.
	Survey bool
}

// Result is what a conversion made besides the text.
type Result struct {
	Map memagent.PageMap
	// Bytes is the length of the text written.
	Bytes int64
	// Dropped counts the running header, footer and page-number lines
	// left out.
	Dropped int
	// OCRPending counts, in a survey (Options.Survey), the pages OCR
	// would read, which the text lacks; OCRCached those of them the OCR
	// cache holds already.
	OCRPending, OCRCached int
}

// textWriter writes paragraphs separated by blank lines and records the
// byte range of each page or section.
type textWriter struct {
	// over is set once a block was refused for the text limit.
	over  bool
	w     *bufio.Writer
	n     int64
	max   int64
	spans []memagent.PageSpan
	open  bool
}

// newTextWriter writes at most max bytes of text; a document with more
// fails as *Error.
func newTextWriter(w io.Writer, max int64) *textWriter {
	return &textWriter{w: bufio.NewWriterSize(w, 64<<10), max: max}
}

// begin starts page or section number (with its heading, if any); text
// written before the next begin belongs to it.
func (t *textWriter) begin(number int, label string) {
	t.end()
	t.spans = append(t.spans, memagent.PageSpan{Number: number, Label: label, Start: -1})
	t.open = true
}

// end closes the current span; one that got no text is dropped.
func (t *textWriter) end() {
	if !t.open {
		return
	}
	t.open = false
	if s := t.spans[len(t.spans)-1]; s.Start < 0 {
		t.spans = t.spans[:len(t.spans)-1]
	}
}

// paragraph writes one paragraph: one line of text, or a table's rows a
// line each.
func (t *textWriter) paragraph(p string) error {
	return t.block(strings.TrimSpace(strings.ToValidUTF8(p, "\uFFFD")))
}

// preformatted writes a preformatted block (HTML's pre): as paragraph,
// less only its blank lines and white space at its ends, so that its
// first line keeps its indentation.
func (t *textWriter) preformatted(p string) error {
	p = strings.TrimRightFunc(strings.ToValidUTF8(p, "\uFFFD"), unicode.IsSpace)
	for {
		line, rest, ok := strings.Cut(p, "\n")
		if !ok || strings.TrimSpace(line) != "" {
			break
		}
		p = rest
	}
	if strings.TrimSpace(p) == "" {
		return nil
	}
	return t.block(p)
}

// block writes p, not empty, as the next block of text.
func (t *textWriter) block(p string) error {
	if p == "" {
		return nil
	}
	if t.n+int64(len(p))+2 > t.max {
		t.over = true
		return overLimit(fmt.Sprintf("has more than %d bytes of text", t.max), t.max, "bytes", "MEMAGENT_MAX_CONVERTED_MB")
	}
	if t.n > 0 {
		if _, err := t.w.WriteString("\n\n"); err != nil {
			return err
		}
		t.n += 2
	}
	if t.open && t.spans[len(t.spans)-1].Start < 0 {
		t.spans[len(t.spans)-1].Start = t.n
	}
	if _, err := t.w.WriteString(p); err != nil {
		return err
	}
	t.n += int64(len(p))
	if t.open {
		t.spans[len(t.spans)-1].End = t.n
	}
	return nil
}

// finish flushes the text, ending it with a newline.
func (t *textWriter) finish() error {
	t.end()
	if t.n > 0 {
		if _, err := t.w.WriteString("\n"); err != nil {
			return err
		}
		t.n++
	}
	return t.w.Flush()
}

// Convert converts the file at path, of a format Detect named, writing
// UTF-8 text to w. A document that cannot be converted fails as *Error;
// other errors are I/O or context errors.
//
// A conversion stays within c.Limits: over one, it fails as *Error naming
// the limit; past Limits.Timeout, with context.DeadlineExceeded wrapped in
// an *Error that says so.
func (c *Converter) Convert(ctx context.Context, format, path string, w io.Writer, progress Progress) (*Result, error) {
	return c.ConvertWith(ctx, format, path, w, Options{Progress: progress})
}

// ConvertWith is Convert with options: a PDF's scanned pages are read by
// OCR as opts.OCR says (see OCRDecision), on c.OCR; a page OCR must read
// on a converter without an engine fails the conversion as *Error naming
// the package to install.
func (c *Converter) ConvertWith(ctx context.Context, format, path string, w io.Writer, opts Options) (*Result, error) {
	if opts.Progress == nil {
		opts.Progress = func(int64, int64) {}
	}
	if opts.OCRProgress == nil {
		opts.OCRProgress = func(int, int) {}
	}
	if err := CheckOCR(opts.OCR); err != nil {
		return nil, &Error{Msg: "cannot be read: " + err.Error()}
	}
	limits := c.Limits.withDefaults()
	ctx, cancel := withBudget(ctx, limits.Timeout, errConvertTimeout)
	defer cancel()
	var res *Result
	var err error
	switch format {
	case FormatPDF:
		res, err = c.convertPDF(ctx, path, w, opts, limits)
	case FormatZip, FormatDOCX:
		res, err = convertDOCX(ctx, path, w, opts.Progress, limits)
	case FormatHTML:
		res, err = convertHTML(ctx, path, w, opts.Progress, limits)
	case FormatEmail, FormatMbox:
		res, err = c.convertEmail(ctx, format, path, w, opts, limits)
	default:
		if err := Unsupported(format, ""); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("docconv: format %q is not converted", format)
	}
	if err != nil && context.Cause(ctx) == errConvertTimeout {
		return nil, overLimit("took longer to convert than the converter allows", int64(limits.Timeout.Seconds()), "seconds", "MEMAGENT_CONVERT_TIMEOUT")
	}
	if err != nil {
		return nil, err
	}
	if res.Bytes == 0 && res.OCRPending == 0 {
		switch format {
		case FormatPDF:
			if n := len(res.Map.OCR); n > 0 {
				why := ""
				for _, o := range res.Map.OCR {
					if o.Error != "" {
						why = fmt.Sprintf(" (page %d: %s)", o.Page, o.Error)
						break
					}
				}
				return nil, badf("has no text: OCR read no words on the %d pages it read of its %d%s", n, res.Map.Pages, why)
			}
			return nil, badf("has no text on any of its %d pages: none has a text layer or draws an image OCR would read (blank pages, or text drawn as outlines): ask with ocr force (--ocr force) to read every page by OCR", res.Map.Pages)
		default:
			return nil, badf("has no text")
		}
	}
	res.Map.Version = memagent.PageMapVersion
	return res, nil
}
