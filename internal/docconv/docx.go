package docconv

import (
	"archive/zip"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/contract"
	"github.com/memagent/memagent/internal/memagent"
)

// maxStylesBytes and maxDocumentBytes bound the uncompressed size of
// word/styles.xml and word/document.xml as they stream: a zip bomb stops
// there, refused.
const (
	maxStylesBytes   = 16 << 20
	maxDocumentBytes = 2 << 30
)

const wordNS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"

// convertDOCX writes the body text of a Word document: one paragraph per
// w:p, a list item's (w:numPr) after its marker ("•", "2.", "(b)", as
// word/numbering.xml numbers it), a table a paragraph of rows, a row a
// line of its cells apart by " | " (a cell's paragraphs joined by a
// space), and a new section at every heading (a paragraph outside a
// table whose style is a heading or title, or that has an outline
// level). Page headers and footers live in other parts and are not read;
// nor are comments, footnotes or tracked deletions.
func convertDOCX(ctx context.Context, path string, w io.Writer, progress Progress, limits Limits) (*Result, error) {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return nil, badf("is not a readable DOCX (a damaged zip): open it in Word and save it again")
	}
	defer zr.Close()
	body, styles, numbering, err := docxParts(zr.File)
	if err != nil {
		return nil, err
	}
	headings := map[string]bool{}
	var styleLists map[string]styleList
	if styles != nil {
		if headings, styleLists, err = readStyles(styles); err != nil {
			return nil, err
		}
	}
	rc, err := body.Open()
	if err != nil {
		return nil, badf("is not a readable DOCX (word/document.xml is damaged): open it in Word and save it again")
	}
	defer rc.Close()
	total := int64(body.UncompressedSize64)
	cr := &countingReader{r: &runGuard{r: io.LimitReader(rc, maxDocumentBytes)}}
	dec := xml.NewDecoder(cr)
	tw := newTextWriter(w, limits.MaxTextBytes)
	d := newDOCXBody(newSectionCounter(tw), headings)
	d.styleLists = styleLists
	if numbering != nil {
		d.lists.defs = readNumbering(numbering)
	}
	depth := 0
	lastProgress := int64(0)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, xmlError(err, "word/document.xml")
		}
		switch tok.(type) {
		case xml.StartElement:
			if depth++; depth > maxDepth {
				return nil, overLimit(fmt.Sprintf("nests its XML more than %d elements deep", maxDepth), maxDepth, "levels", "")
			}
		case xml.EndElement:
			depth--
		}
		if cr.n-lastProgress > 1<<20 {
			lastProgress = cr.n
			progress(cr.n, total)
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if err := d.token(tok); err != nil {
			return nil, err
		}
	}
	if err := d.para.Flush(); err != nil {
		return nil, err
	}
	if cr.n >= maxDocumentBytes {
		return nil, badf("has a document body over %d bytes uncompressed: split it", int64(maxDocumentBytes))
	}
	if err := tw.finish(); err != nil {
		return nil, err
	}
	res := &Result{Map: memagent.PageMap{Format: FormatDOCX, Unit: api.UnitSection}}
	res.Map.Pages = len(tw.spans)
	res.Bytes, res.Map.Spans = tw.n, tw.spans
	return res, nil
}

// docxParts finds a Word document's body, styles and list definitions
// (nil if it has none); a zip without a body is refused, naming what it
// is instead.
func docxParts(files []*zip.File) (body, styles, numbering *zip.File, err error) {
	for _, f := range files {
		switch f.Name {
		case "word/document.xml":
			body = f
		case "word/styles.xml":
			styles = f
		case "word/numbering.xml":
			numbering = f
		}
	}
	if body != nil {
		return body, styles, numbering, nil
	}
	switch {
	case hasPrefix(files, "xl/"):
		return nil, nil, nil, badf("is an Excel workbook (.xlsx), not a Word document: export the sheets as text or PDF first")
	case hasPrefix(files, "ppt/"):
		return nil, nil, nil, badf("is a PowerPoint deck (.pptx), not a Word document: export it as PDF first")
	case hasName(files, "content.xml"):
		return nil, nil, nil, badf("is an OpenDocument file (.odt), not a Word document: save it as .docx or PDF first")
	}
	return nil, nil, nil, badf("is a zip archive, not a Word document (.docx): unzip it and ask about the documents inside")
}

// xmlError is the error for a token of part that could not be read: a
// limit's *Error as it is, else the part is not well-formed.
func xmlError(err error, part string) error {
	var convErr *Error
	if errors.As(err, &convErr) {
		return err
	}
	return badf("is not a readable DOCX (%s is not well-formed XML): open it in Word and save it again", part)
}

// docxBody is convertDOCX's state in the body: the paragraph being
// built, whether it is a heading, and whether the decoder is in a
// paragraph, in text, or in deleted text.
type docxBody struct {
	headings map[string]bool
	para     *paragraphBuilder
	lists    listCounter
	// The paragraph's list (numId, "" for none) and level, read from its
	// properties (not from a tracked change's old ones: inChange).
	numID    string
	ilvl     int
	inChange int
	// styleLists are the lists paragraph styles number ("List Number"),
	// and styleList the paragraph's style's, for an item without a
	// w:numPr of its own.
	styleLists map[string]styleList
	styleList  styleList
	// Tables: how deep the decoder is in them, and the cells of the row
	// and the paragraphs of the cell so far.
	tables, cells, cellParas int
	// A heading is its paragraph's first piece; a paragraph longer than a
	// piece goes out in several.
	heading, first bool
	inPara, inText bool
	deleted        int
}

func newDOCXBody(sections *sectionCounter, headings map[string]bool) *docxBody {
	d := &docxBody{headings: headings, first: true}
	d.para = newParagraphBuilder(func(text string) error {
		if d.heading && d.first {
			sections.heading(text)
		}
		d.first = false
		return sections.paragraph(text)
	})
	return d
}

// token handles one token of the body.
func (d *docxBody) token(tok xml.Token) error {
	switch t := tok.(type) {
	case xml.StartElement:
		if t.Name.Space == wordNS {
			return d.start(t)
		}
	case xml.EndElement:
		if t.Name.Space == wordNS {
			return d.end(t.Name.Local)
		}
	case xml.CharData:
		if d.inText && d.inPara && d.deleted == 0 {
			d.para.Write(t)
		}
	}
	return nil
}

// start handles the start of an element of Word's namespace.
func (d *docxBody) start(t xml.StartElement) error {
	switch t.Name.Local {
	case "p":
		if d.tables == 0 {
			if err := d.para.Flush(); err != nil {
				return err
			}
		} else if d.cellParas++; d.cellParas > 1 {
			d.para.WriteString(" ")
		}
		d.inPara, d.heading, d.first = true, false, true
		d.numID, d.ilvl, d.styleList = "", 0, styleList{}
	case "pStyle":
		if d.inChange == 0 {
			d.styleList = d.styleLists[attr(t, "val")]
		}
		if d.headings[attr(t, "val")] && d.tables == 0 && d.inChange == 0 {
			d.heading = true
		}
	case "outlineLvl":
		if n, err := strconv.Atoi(attr(t, "val")); err == nil && n < 9 && d.tables == 0 && d.inChange == 0 {
			d.heading = true
		}
	case "pPrChange":
		d.inChange++
	case "numId":
		if d.inPara && d.inChange == 0 {
			d.numID = attr(t, "val")
		}
	case "ilvl":
		if d.inPara && d.inChange == 0 {
			d.ilvl, _ = strconv.Atoi(attr(t, "val"))
		}
	case "tbl":
		if d.tables == 0 {
			if err := d.para.Flush(); err != nil {
				return err
			}
		}
		d.tables++
	case "tr":
		if d.tables == 1 {
			d.para.Break()
			d.cells = 0
		}
	case "tc":
		switch {
		case d.tables > 1:
			d.para.WriteString(" ")
		case d.cells > 0:
			d.para.WriteString(" | ")
		}
		d.cells++
		d.cellParas = 0
	case "t":
		d.inText = true
	case "del":
		d.deleted++
	case "tab", "br", "cr":
		if d.inPara && d.deleted == 0 {
			d.para.WriteString(" ")
		}
	}
	return nil
}

// end handles the end of an element of Word's namespace.
func (d *docxBody) end(local string) error {
	switch local {
	case "t":
		d.inText = false
	case "del":
		d.deleted--
	case "pPrChange":
		d.inChange--
	case "pPr":
		// A list item's marker, before its text; a heading keeps its
		// text alone, as the section's label.
		if d.inPara && d.inChange == 0 && !d.heading {
			num, ilvl := d.numID, d.ilvl
			if num == "" {
				num, ilvl = d.styleList.numID, d.styleList.ilvl
			}
			if m := d.lists.marker(num, ilvl); m != "" {
				d.para.WriteString(m + " ")
			}
		}
	case "p":
		d.inPara = false
		if d.tables > 0 {
			return nil
		}
		return d.para.Flush()
	case "tbl":
		if d.tables--; d.tables == 0 {
			return d.para.Flush()
		}
	}
	return nil
}

// headingStyles returns the ids of paragraph styles that are headings:
// named "heading N" or "Title", or with an outline level. The styles part
// is read within the bounds of the document's (maxDepth, and a run guard)
// and tighter ones of its own (maxStylesBytes, maxStylesRunBytes,
// maxStyles, maxStyleIDBytes): a styles part over them is refused as the
// document would be, with the limit named, rather than skipped, for it
// can only be hostile or broken, and a document read without its
// headings would cite sections wrongly without saying so.
func headingStyles(f *zip.File) (map[string]bool, error) {
	headings, _, err := readStyles(f)
	return headings, err
}

// styleList is the list a paragraph style numbers its paragraphs in
// (numId "" for none) and at which level.
type styleList struct {
	numID string
	ilvl  int
}

// readStyles is headingStyles, and the lists of the styles that number
// their paragraphs (a w:numPr in the style: "List Bullet", "List
// Number").
func readStyles(f *zip.File) (map[string]bool, map[string]styleList, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, nil, badf("is not a readable DOCX (word/styles.xml is damaged): open it in Word and save it again")
	}
	defer rc.Close()
	cr := &countingReader{r: io.LimitReader(rc, maxStylesBytes+1)}
	dec := xml.NewDecoder(&runGuard{r: cr, max: maxStylesRunBytes, styles: true})
	s := &styleScan{out: map[string]bool{}, lists: map[string]styleList{}}
	depth := 0
	for {
		tok, err := dec.Token()
		if cr.n > maxStylesBytes {
			return nil, nil, overStylesLimit(fmt.Sprintf("has styles (word/styles.xml) of more than %d bytes uncompressed", int64(maxStylesBytes)), maxStylesBytes, "bytes")
		}
		if errors.Is(err, io.EOF) {
			return s.out, s.lists, nil
		}
		if err != nil {
			return nil, nil, xmlError(err, "word/styles.xml")
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if depth++; depth > maxDepth {
				return nil, nil, overStylesLimit(fmt.Sprintf("nests the XML of its styles (word/styles.xml) more than %d elements deep", maxDepth), maxDepth, "levels")
			}
			if t.Name.Space != wordNS {
				continue
			}
			if err := s.start(t); err != nil {
				return nil, nil, err
			}
		case xml.EndElement:
			depth--
			if t.Name.Space == wordNS && t.Name.Local == "style" {
				s.id = ""
			}
		}
	}
}

// styleScan is headingStyles' state: the heading styles found, the id of
// the style it is in ("" outside one, or for an id too long to keep) and
// the styles counted.
type styleScan struct {
	out    map[string]bool
	lists  map[string]styleList
	id     string
	styles int
}

// start handles the start of an element of Word's namespace.
func (s *styleScan) start(st xml.StartElement) error {
	switch st.Name.Local {
	case "style":
		if s.styles++; s.styles > maxStyles {
			return overStylesLimit(fmt.Sprintf("has more than %d styles (word/styles.xml)", maxStyles), maxStyles, "styles")
		}
		s.id = attr(st, "styleId")
		if len(s.id) > maxStyleIDBytes {
			s.id = ""
		}
		if l := strings.ToLower(s.id); strings.HasPrefix(l, "heading") || l == "title" {
			s.out[s.id] = true
		}
	case "name":
		if n := strings.ToLower(attr(st, "val")); s.id != "" && (strings.HasPrefix(n, "heading") || n == "title") {
			s.out[s.id] = true
		}
	case "outlineLvl":
		if s.id != "" {
			s.out[s.id] = true
		}
	case "numId":
		if s.id != "" {
			l := s.lists[s.id]
			l.numID = attr(st, "val")
			s.lists[s.id] = l
		}
	case "ilvl":
		if s.id != "" {
			l := s.lists[s.id]
			l.ilvl, _ = strconv.Atoi(attr(st, "val"))
			s.lists[s.id] = l
		}
	}
	return nil
}

func attr(e xml.StartElement, local string) string {
	for _, a := range e.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

func hasPrefix(files []*zip.File, prefix string) bool {
	for _, f := range files {
		if strings.HasPrefix(f.Name, prefix) {
			return true
		}
	}
	return false
}

func hasName(files []*zip.File, name string) bool {
	for _, f := range files {
		if f.Name == name {
			return true
		}
	}
	return false
}

// clipLabel bounds a section heading kept as its label.
func clipLabel(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return strings.TrimSpace(contract.ClipUTF8(s, max)) + "…"
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// sectionCounter numbers the sections of a document without pages: text
// before the first heading is section 1, and each heading opens the next.
type sectionCounter struct {
	tw      *textWriter
	number  int
	hasText bool
}

func newSectionCounter(tw *textWriter) *sectionCounter {
	tw.begin(1, "")
	return &sectionCounter{tw: tw, number: 1}
}

// admonitions are headings that label a box inside a section ("Tip",
// "Note"), not a section a reader could find by its heading: they open no
// section, and their text stays in the section around them.
var admonitions = map[string]bool{
	"tip": true, "note": true, "notes": true, "warning": true, "caution": true, "important": true,
	"hint": true, "example": true, "danger": true, "attention": true, "see also": true,
}

// heading opens a section labelled with the heading's text, unless the
// heading is an admonition (see admonitions).
func (s *sectionCounter) heading(text string) {
	if admonitions[strings.ToLower(strings.Trim(strings.Join(strings.Fields(text), " "), ":. "))] {
		return
	}
	if s.hasText {
		s.number++
	}
	s.tw.begin(s.number, clipLabel(text))
	s.hasText = false
}

func (s *sectionCounter) paragraph(text string) error {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	s.hasText = true
	return s.tw.paragraph(text)
}
