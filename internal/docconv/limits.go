package docconv

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits bound what one conversion may take, whatever the document: its
// text, its longest run of text, its nesting, a PDF page's characters, the
// memory of the PDFium instance that reads it, and its time. A document
// over a limit fails as *Error naming the limit and the knob that raises it
// (the worker's environment variable); the zero value of a field means its
// default. Memory stays bounded by these, never by the document's size:
// the worker's peak for the hostile inputs of deploy's test is in
// BENCHMARKS.md.
type Limits struct {
	// MaxTextBytes bounds the converted text of one document; default
	// DefaultMaxTextBytes (MEMAGENT_MAX_CONVERTED_MB).
	MaxTextBytes int64
	// MaxPageChars bounds the characters of one PDF page; default
	// DefaultMaxPageChars.
	MaxPageChars int
	// PDFMemoryBytes bounds the WebAssembly memory of one PDFium instance;
	// default DefaultPDFMemoryBytes (MEMAGENT_PDF_MEMORY_MB).
	PDFMemoryBytes int64
	// Timeout bounds one conversion; default DefaultConvertTimeout
	// (MEMAGENT_CONVERT_TIMEOUT). Each page read by OCR adds
	// ocrPageBudget divided by the engine's slots to it.
	Timeout time.Duration
	// MaxImagePixels bounds an image on a page read by OCR; default
	// DefaultMaxImagePixels.
	MaxImagePixels int64
	// MaxOCRPages bounds the pages of one document to read by OCR; default
	// DefaultMaxOCRPages (MEMAGENT_OCR_MAX_PAGES). A document with more is
	// refused as *Error before any page is read.
	MaxOCRPages int
	// OCRBudget bounds the time OCR spends on one document; default
	// DefaultOCRBudget (MEMAGENT_OCR_BUDGET). The pages not read when it
	// runs out are recorded as not read (memagent.OCRPage.NotRead) and
	// their place in the text says so; the conversion completes.
	OCRBudget time.Duration

	// An email's or a mailbox's bounds (Format email, mbox): messages in
	// one mailbox (default DefaultMaxMessages, over it the mailbox is
	// refused), and per message its raw bytes, its parts, its nesting of
	// multiparts and forwarded messages, the decoded bytes of one part
	// and the bytes of one header block (defaults DefaultMaxMessageBytes,
	// DefaultMaxParts, DefaultMaxMIMEDepth, DefaultMaxPartBytes,
	// DefaultMaxHeaderBytes): a message over one is skipped and reported,
	// the others read. The worker's environment sets them (KnobMaxMessages
	// and the other Knob constants).
	MaxMessages     int
	MaxMessageBytes int64
	MaxParts        int
	MaxMIMEDepth    int
	MaxPartBytes    int64
	MaxHeaderBytes  int64
}

// Defaults of Limits, and the bounds that have no knob: a paragraph longer
// than maxParagraphBytes is written in pieces of that size (its memory is
// a buffer of that size, whatever the paragraph's length), a run of text
// with no markup longer than maxRunBytes (a DOCX or HTML file of one
// endless text node) and nesting deeper than maxDepth are refused.
//
// A DOCX's styles part (word/styles.xml), read only for which styles are
// headings, is bounded tighter, as it holds no text: a run with no '<'
// longer than maxStylesRunBytes (one endless attribute or text node, or
// one element of millions of attributes, which encoding/xml holds whole
// at ~180 bytes an attribute) and more than maxStyles styles are refused,
// and a style id longer than maxStyleIDBytes (far longer than Word
// writes) is not kept: its paragraphs are not headings.
const (
	DefaultMaxTextBytes   = 64 << 20
	DefaultMaxPageChars   = 200_000
	DefaultPDFMemoryBytes = 64 << 20
	DefaultConvertTimeout = 10 * time.Minute
	DefaultMaxOCRPages    = 500
	DefaultOCRBudget      = 30 * time.Minute

	maxParagraphBytes = 256 << 10
	maxRunBytes       = 16 << 20
	maxDepth          = 256

	maxStylesRunBytes = 64 << 10
	maxStyles         = 10_000
	maxStyleIDBytes   = 1 << 10
)

// WithDefaults is l with its zero fields set to their defaults: the
// limits a Converter applies.
func (l Limits) WithDefaults() Limits { return l.withDefaults() }

// withDefaults fills the zero fields.
func (l Limits) withDefaults() Limits {
	if l.MaxTextBytes <= 0 {
		l.MaxTextBytes = DefaultMaxTextBytes
	}
	if l.MaxPageChars <= 0 {
		l.MaxPageChars = DefaultMaxPageChars
	}
	if l.PDFMemoryBytes <= 0 {
		l.PDFMemoryBytes = DefaultPDFMemoryBytes
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultConvertTimeout
	}
	if l.MaxImagePixels <= 0 {
		l.MaxImagePixels = DefaultMaxImagePixels
	}
	if l.MaxOCRPages <= 0 {
		l.MaxOCRPages = DefaultMaxOCRPages
	}
	if l.OCRBudget <= 0 {
		l.OCRBudget = DefaultOCRBudget
	}
	if l.MaxMessages <= 0 {
		l.MaxMessages = DefaultMaxMessages
	}
	if l.MaxMessageBytes <= 0 {
		l.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if l.MaxParts <= 0 {
		l.MaxParts = DefaultMaxParts
	}
	if l.MaxMIMEDepth <= 0 {
		l.MaxMIMEDepth = DefaultMaxMIMEDepth
	}
	if l.MaxPartBytes <= 0 {
		l.MaxPartBytes = DefaultMaxPartBytes
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	return l
}

// overLimit is the Error of a document over one of the limits.
func overLimit(what string, limit int64, unit, knob string) error {
	raise := "split the document"
	if knob != "" {
		raise = "split the document, or raise " + knob + " on the worker"
	}
	return badf("%s, over the converter's limit of %d %s: %s", what, limit, unit, raise)
}

// overStylesLimit is the Error of a DOCX whose styles part is over a
// limit: a part no document needs so large, for which re-saving, not
// splitting, is the remedy.
func overStylesLimit(what string, limit int64, unit string) error {
	return badf("%s, over the converter's limit of %d %s: open it in Word and save it again", what, limit, unit)
}

// paragraphBuilder collects a paragraph's text with its white space
// folded as strings.Fields and a join would fold it, as it arrives, and
// writes it out in pieces of at most maxParagraphBytes: a paragraph of
// any length costs one buffer.
type paragraphBuilder struct {
	buf     []byte
	space   bool // white space seen since the last character kept
	keepRaw bool // preformatted: keep the text as it is
	out     func(string) error
	err     error
}

func newParagraphBuilder(out func(string) error) *paragraphBuilder {
	return &paragraphBuilder{out: out}
}

// WriteString adds text to the paragraph.
func (p *paragraphBuilder) WriteString(s string) {
	for len(s) > 0 && p.err == nil {
		r, n := utf8.DecodeRuneInString(s)
		chunk := s[:n]
		s = s[n:]
		if !p.keepRaw && unicode.IsSpace(r) {
			p.space = true
			continue
		}
		if p.space && len(p.buf) > 0 && !p.keepRaw {
			p.buf = append(p.buf, ' ')
		}
		p.space = false
		p.buf = append(p.buf, chunk...)
		if len(p.buf) >= maxParagraphBytes {
			p.err = p.out(string(p.buf))
			p.buf = p.buf[:0]
		}
	}
}

// Write adds text to the paragraph.
func (p *paragraphBuilder) Write(b []byte) { p.WriteString(string(b)) }

// Break starts a new line of the paragraph (a table's next row), unless
// it is empty.
func (p *paragraphBuilder) Break() {
	if len(p.buf) > 0 && p.buf[len(p.buf)-1] != '\n' {
		p.buf = append(p.buf, '\n')
	}
	p.space = false
}

// Flush writes out what the paragraph holds and starts the next.
func (p *paragraphBuilder) Flush() error {
	if p.err == nil && len(p.buf) > 0 {
		p.err = p.out(string(p.buf))
	}
	p.buf, p.space = p.buf[:0], false
	err := p.err
	p.err = nil
	return err
}

// String is the paragraph so far (for headings, which are short).
func (p *paragraphBuilder) String() string { return strings.TrimSpace(string(p.buf)) }

// runGuard fails a read once the input has run longer than maxRunBytes
// (or max, if set) without a '<': an XML or HTML parser holds a text node
// whole, and a tag with all its attributes, so one endless text node or
// tag would cost its whole length in memory, or many times it.
type runGuard struct {
	r   io.Reader
	run int
	// max is the longest run allowed (0: maxRunBytes); styles says the
	// input is a DOCX's styles part, for the error.
	max    int
	styles bool
}

func (g *runGuard) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	if i := bytes.LastIndexByte(p[:n], '<'); i >= 0 {
		g.run = n - i - 1
	} else {
		g.run += n
	}
	limit := g.max
	if limit <= 0 {
		limit = maxRunBytes
	}
	switch {
	case g.run <= limit:
	case g.styles:
		return n, overStylesLimit(fmt.Sprintf("has a run of more than %d bytes with no markup in its styles (word/styles.xml)", limit), int64(limit), "bytes")
	default:
		return n, overLimit(fmt.Sprintf("has a run of text of more than %d bytes with no markup", limit), int64(limit), "bytes", "")
	}
	return n, err
}
