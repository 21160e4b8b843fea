package docconv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"io"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/klippa-app/go-pdfium"
	"github.com/klippa-app/go-pdfium/references"
	"github.com/klippa-app/go-pdfium/requests"
)

// A page seen, for the review desk: a PDF page rendered as an image, and
// where on it a piece of text stands, from PDFium's character boxes.

// Box is a rectangle on a page as fractions of the page's width and height,
// from its top-left corner.
type Box struct {
	Left   float64 `json:"left"`
	Top    float64 `json:"top"`
	Right  float64 `json:"right"`
	Bottom float64 `json:"bottom"`
}

// CharBox is one character of a page's text layer and its box.
type CharBox struct {
	Char rune `json:"char"`
	Box  Box  `json:"box"`
}

// PageImage is a rendered page.
type PageImage struct {
	PNG           []byte
	Width, Height int
}

// MaxRenderDPI bounds RenderPage's resolution.
const MaxRenderDPI = 200

// withPage opens the PDF r (size bytes) in a PDFium instance and hands fn
// the instance and the document, checking page (from 1) is one of it.
func (c *Converter) withPage(ctx context.Context, r io.ReadSeeker, size int64, page int, fn func(inst pdfium.Pdfium, doc references.FPDF_DOCUMENT) error) error {
	return c.withInstance(ctx, func(inst pdfium.Pdfium) error {
		doc, err := inst.OpenDocument(&requests.OpenDocument{FileReader: r, FileReaderSize: size})
		if err != nil {
			return badf("is not a PDF PDFium can open: %v", err)
		}
		defer inst.FPDF_CloseDocument(&requests.FPDF_CloseDocument{Document: doc.Document})
		count, err := inst.FPDF_GetPageCount(&requests.FPDF_GetPageCount{Document: doc.Document})
		if err != nil {
			return badf("has a broken page tree")
		}
		if page < 1 || page > count.PageCount {
			return badf("has %d pages: there is no page %d", count.PageCount, page)
		}
		return fn(inst, doc.Document)
	})
}

// RenderPage renders page (from 1) of the PDF at dpi (at most
// MaxRenderDPI) as a PNG.
func (c *Converter) RenderPage(ctx context.Context, r io.ReadSeeker, size int64, page, dpi int) (*PageImage, error) {
	dpi = min(max(dpi, 36), MaxRenderDPI)
	var out *PageImage
	err := c.withPage(ctx, r, size, page, func(inst pdfium.Pdfium, doc references.FPDF_DOCUMENT) error {
		res, err := inst.RenderPageInDPI(&requests.RenderPageInDPI{
			Page: requests.Page{ByIndex: &requests.PageByIndex{Document: doc, Index: page - 1}}, DPI: dpi,
		})
		if err != nil {
			return fmt.Errorf("render page %d: %w", page, err)
		}
		defer res.Cleanup()
		var buf bytes.Buffer
		if err := png.Encode(&buf, res.Result.RenderedImage); err != nil {
			return err
		}
		out = &PageImage{PNG: buf.Bytes(), Width: res.Result.Width, Height: res.Result.Height}
		return nil
	})
	return out, err
}

// CharBoxes returns the characters of page's text layer (from 1) with
// their boxes, in PDFium's text order: FPDFText_GetCharBox for each.
func (c *Converter) CharBoxes(ctx context.Context, r io.ReadSeeker, size int64, page int) ([]CharBox, error) {
	var out []CharBox
	err := c.withPage(ctx, r, size, page, func(inst pdfium.Pdfium, doc references.FPDF_DOCUMENT) error {
		p, err := inst.FPDF_LoadPage(&requests.FPDF_LoadPage{Document: doc, Index: page - 1})
		if err != nil {
			return fmt.Errorf("load page %d: %w", page, err)
		}
		defer inst.FPDF_ClosePage(&requests.FPDF_ClosePage{Page: p.Page})
		w, err := inst.FPDF_GetPageWidthF(&requests.FPDF_GetPageWidthF{Page: requests.Page{ByReference: &p.Page}})
		if err != nil {
			return err
		}
		h, err := inst.FPDF_GetPageHeightF(&requests.FPDF_GetPageHeightF{Page: requests.Page{ByReference: &p.Page}})
		if err != nil {
			return err
		}
		if w.PageWidth <= 0 || h.PageHeight <= 0 {
			return badf("page %d has no size", page)
		}
		tp, err := inst.FPDFText_LoadPage(&requests.FPDFText_LoadPage{Page: requests.Page{ByReference: &p.Page}})
		if err != nil {
			return fmt.Errorf("text of page %d: %w", page, err)
		}
		defer inst.FPDFText_ClosePage(&requests.FPDFText_ClosePage{TextPage: tp.TextPage})
		n, err := inst.FPDFText_CountChars(&requests.FPDFText_CountChars{TextPage: tp.TextPage})
		if err != nil {
			return err
		}
		pw, ph := float64(w.PageWidth), float64(h.PageHeight)
		out = make([]CharBox, 0, n.Count)
		for i := 0; i < n.Count; i++ {
			u, err := inst.FPDFText_GetUnicode(&requests.FPDFText_GetUnicode{TextPage: tp.TextPage, Index: i})
			if err != nil {
				return err
			}
			b, err := inst.FPDFText_GetCharBox(&requests.FPDFText_GetCharBox{TextPage: tp.TextPage, Index: i})
			if err != nil {
				// Generated characters (a line's end) have no box.
				out = append(out, CharBox{Char: rune(u.Unicode)})
				continue
			}
			out = append(out, CharBox{Char: rune(u.Unicode), Box: Box{
				Left: b.Left / pw, Right: b.Right / pw, Top: 1 - b.Top/ph, Bottom: 1 - b.Bottom/ph,
			}})
		}
		return nil
	})
	return out, err
}

// OCRChars are the characters of words OCR read on a page (WordBoxes), as
// FindText reads a page: each word's characters share its box evenly, a
// space between words and a line break between lines (so that a word
// hyphenated at a line's end is found whole).
func OCRChars(words []WordBox) []CharBox {
	var out []CharBox
	for i, w := range words {
		if i > 0 {
			sep := ' '
			if w.Line != words[i-1].Line {
				sep = '\n'
			}
			out = append(out, CharBox{Char: sep})
		}
		n := utf8.RuneCountInString(w.Text)
		if n == 0 {
			continue
		}
		step := (w.Box.Right - w.Box.Left) / float64(n)
		k := 0
		for _, r := range w.Text {
			b := w.Box
			b.Left = w.Box.Left + float64(k)*step
			b.Right = b.Left + step
			out = append(out, CharBox{Char: r, Box: b})
			k++
		}
	}
	return out
}

// ErrTextNotOnPage is FindText's error when the text is not on the page.
var ErrTextNotOnPage = errors.New("the text is not on the page")

// FindText returns the boxes that cover text where it stands among chars
// (CharBoxes of one page), one box a line: the first place whose
// characters read as text once both are folded (case, whitespace, a word
// hyphenated at a line's end, ligatures and quotes compared by their
// letters). It returns ErrTextNotOnPage when it is not there.
func FindText(chars []CharBox, text string) ([]Box, error) {
	folded, at := foldChars(chars)
	want := foldText(text)
	if len(want) == 0 {
		return nil, ErrTextNotOnPage
	}
	start := indexRunes(folded, want)
	if start < 0 {
		return nil, ErrTextNotOnPage
	}
	boxes := lineBoxes(chars, at[start:start+len(want)])
	if len(boxes) == 0 {
		return nil, ErrTextNotOnPage
	}
	return boxes, nil
}

// foldChars folds a page's characters as FindText compares them: runs of
// white space one space, a word broken by a hyphen at a line's end joined
// (as the converted text joins it), a bar between spaces (a table's cells
// apart, as the converted text sets them: " | ") left out, each character
// by foldRune. at is the index in chars of each folded rune
// (-1 for a space).
func foldChars(chars []CharBox) (folded []rune, at []int) {
	space := true
	for i, c := range chars {
		r := c.Char
		switch {
		case unicode.IsSpace(r) || r == 0 || r == 0xfffe:
			if !space {
				folded, at = append(folded, ' '), append(at, -1)
			}
			space = true
			continue
		case r == 2:
			// PDFium's mark for a hyphen that breaks a word at a line's
			// end (TeX's): the word's parts join, as in the converted
			// text, whether or not a line break follows.
			space = true
			continue
		case r == '|' && space && (i+1 == len(chars) || unicode.IsSpace(chars[i+1].Char)):
			// A bar between spaces is read as the space of a table's
			// cells apart (" | " in the converted text), on the page as
			// in the text.
			continue
		case r == '-' || r == 0x2010 || r == 0x00ad:
			// A hyphen before a line's end joins the word's parts as
			// the converted text does (joinLine): the line's end is no
			// space, and the hyphen goes unless a part is not lower
			// case ("FILE-based", "1-Jan").
			if j := nextNonSpace(chars, i+1); j > i+1 && hasLineBreak(chars[i+1:j]) {
				space = true
				if i > 0 && j < len(chars) && unicode.IsLower(chars[i-1].Char) && unicode.IsLower(chars[j].Char) {
					continue
				}
				folded, at = append(folded, '-'), append(at, i)
				continue
			}
		}
		for _, f := range foldRune(r) {
			folded, at = append(folded, f), append(at, i)
		}
		space = false
	}
	return folded, at
}

// foldText folds text as foldChars folds a page, less trailing spaces.
func foldText(text string) []rune {
	var want []rune
	space := true
	for i, r := range text {
		if r == 2 {
			// PDFium's line-end hyphen mark, joined as on the page.
			space = true
			continue
		}
		if r == '|' && space && (i+1 == len(text) || unicode.IsSpace(rune(text[i+1]))) {
			continue
		}
		if unicode.IsSpace(r) {
			if !space {
				want = append(want, ' ')
			}
			space = true
			continue
		}
		want = append(want, foldRune(r)...)
		space = false
	}
	for len(want) > 0 && want[len(want)-1] == ' ' {
		want = want[:len(want)-1]
	}
	return want
}

// lineBoxes are the boxes of the characters of chars at indexes at (-1
// for none), merged a box a line; characters without a box are left out.
func lineBoxes(chars []CharBox, at []int) []Box {
	var boxes []Box
	for k, i := range at {
		if i < 0 || (k > 0 && at[k-1] == i) {
			continue
		}
		b := chars[i].Box
		if b.Right <= b.Left || b.Bottom <= b.Top {
			continue
		}
		if n := len(boxes); n > 0 && sameLine(boxes[n-1], b) {
			last := &boxes[n-1]
			last.Left, last.Right = min(last.Left, b.Left), max(last.Right, b.Right)
			last.Top, last.Bottom = min(last.Top, b.Top), max(last.Bottom, b.Bottom)
			continue
		}
		boxes = append(boxes, b)
	}
	return boxes
}

// sameLine reports whether b continues the line of box a: they overlap
// vertically by half the smaller one's height, and b does not start far
// left of a's end.
func sameLine(a, b Box) bool {
	overlap := min(a.Bottom, b.Bottom) - max(a.Top, b.Top)
	h := min(a.Bottom-a.Top, b.Bottom-b.Top)
	return overlap > h/2 && b.Left > a.Left-0.01
}

func nextNonSpace(chars []CharBox, i int) int {
	for i < len(chars) && (unicode.IsSpace(chars[i].Char) || chars[i].Char == 0 || chars[i].Char == 0xfffe) {
		i++
	}
	return i
}

func hasLineBreak(chars []CharBox) bool {
	for _, c := range chars {
		if c.Char == '\n' || c.Char == '\r' || c.Char == 0xfffe {
			return true
		}
	}
	return false
}

// foldRune is r as FindText compares it: lower case, ligatures as their
// letters, typographic quotes and dashes as ASCII.
func foldRune(r rune) []rune {
	switch r {
	case 0xfb00:
		return []rune("ff")
	case 0xfb01:
		return []rune("fi")
	case 0xfb02:
		return []rune("fl")
	case 0xfb03:
		return []rune("ffi")
	case 0xfb04:
		return []rune("ffl")
	case 0x2018, 0x2019, 0x201b, 0x2032:
		return []rune{'\''}
	case 0x201c, 0x201d, 0x201f, 0x2033:
		return []rune{'"'}
	case 0x2010, 0x2011, 0x2012, 0x2013, 0x2014, 0x2212:
		return []rune{'-'}
	}
	return []rune{unicode.ToLower(r)}
}

// indexRunes is the index of the first sub in s, or -1.
func indexRunes(s, sub []rune) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if slices.Equal(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}
