package docconvtest

import (
	"archive/zip"
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
)

// Hostile is one document a hostile caller could hand a worker, made small
// on the wire (the HTML aside, large by construction), each of which once
// took a worker past 1 GiB, or to 600 MB from 17 KB (the styles parts).
type Hostile struct {
	Name string
	// Format is what docconv.Detect calls it.
	Format string
	Make   func() []byte
	// MaxPeakBytes bounds the peak resident set of converting it in a
	// process of its own; 0 means 1 GiB, the chart's limit for a worker.
	MaxPeakBytes int64
}

// HostileInputs are the documents of the hostile-input tests: a 255 KB
// DOCX with one paragraph of 256 MiB of "a " (3.48 GB once), a DOCX of 20
// million nested elements (3.58 GB), a 17 KB DOCX whose word/styles.xml
// nests 5.6 million elements (599 MB: the styles part was read without
// the document's limits), a 26 KB DOCX whose word/styles.xml has one
// element of 3.4 million attributes (596 MB), a 2 KB PDF whose one page
// draws a form XObject 64,000 times (3.75 GB), and an HTML page of 100
// MiB in one <p> (1.56 GB).
func HostileInputs() []Hostile {
	return []Hostile{
		{Name: "DOCX: one paragraph of 256 MiB of \"a \"", Format: "zip", Make: func() []byte { return HugeParagraphDOCX(256 << 20) }},
		{Name: "DOCX: 20 million nested elements", Format: "zip", Make: func() []byte { return NestedDOCX(20_000_000) }},
		// About 600 MB unbounded, under 1 GiB: held to what bounded takes.
		{Name: "DOCX: styles.xml of 16 MiB of nested elements", Format: "zip", Make: func() []byte { return NestedStylesDOCX(StylesPartBytes / len("<a>")) }, MaxPeakBytes: 64 << 20},
		{Name: "DOCX: styles.xml of one element of 3.4 million attributes", Format: "zip", Make: func() []byte { return ManyAttributesStylesDOCX(StylesPartBytes / len(`a="" `)) }, MaxPeakBytes: 64 << 20},
		{Name: "PDF: a form XObject drawn 64,000 times on one page", Format: "pdf", Make: func() []byte { return XObjectBombPDF(64000) }},
		{Name: "HTML: 100 MiB in one <p>", Format: "html", Make: func() []byte { return HugeParagraphHTML(100 << 20) }},
	}
}

// docxWith writes a DOCX whose word/document.xml body is written by body,
// deflated as it streams.
func docxWith(body func(w io.Writer)) []byte { return docxWithStyles(body, nil) }

// docxWithStyles is docxWith with a word/styles.xml written by styles,
// if not nil, before the document body (as Word orders its parts).
func docxWithStyles(body, styles func(w io.Writer)) []byte {
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	add := func(name, content string) {
		f, _ := z.Create(name)
		io.WriteString(f, content)
	}
	add("[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`)
	add("_rels/.rels", `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`)
	if styles != nil {
		f, _ := z.Create("word/styles.xml")
		io.WriteString(f, `<?xml version="1.0" encoding="UTF-8"?><w:styles xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">`)
		styles(f)
		io.WriteString(f, `</w:styles>`)
	}
	f, _ := z.Create("word/document.xml")
	io.WriteString(f, `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>`)
	body(f)
	io.WriteString(f, `</w:body></w:document>`)
	z.Close()
	return buf.Bytes()
}

// HugeParagraphDOCX is a DOCX of one paragraph of n bytes of "a a a …".
func HugeParagraphDOCX(n int) []byte {
	return docxWith(func(w io.Writer) {
		io.WriteString(w, `<w:p><w:r><w:t xml:space="preserve">`)
		block := bytes.Repeat([]byte("a "), 32<<10)
		for written := 0; written < n; written += len(block) {
			w.Write(block)
		}
		io.WriteString(w, `</w:t></w:r></w:p>`)
	})
}

// NestedDOCX is a DOCX whose body nests n paragraphs inside one another.
func NestedDOCX(n int) []byte {
	return docxWith(func(w io.Writer) {
		open, closing := bytes.Repeat([]byte("<w:p>"), 1<<12), bytes.Repeat([]byte("</w:p>"), 1<<12)
		for i := 0; i < n; i += 1 << 12 {
			w.Write(open)
		}
		for i := 0; i < n; i += 1 << 12 {
			w.Write(closing)
		}
	})
}

// StylesPartBytes is the size of the hostile inputs' word/styles.xml:
// just under the 16 MiB the converter reads of a styles part.
const StylesPartBytes = 16<<20 - 256

// NestedStylesDOCX is a DOCX of one short paragraph whose word/styles.xml
// opens n elements <a> inside one another and never closes them: 17 KB
// deflated for n of 5.6 million (16 MiB).
func NestedStylesDOCX(n int) []byte {
	return docxWithStyles(shortBody, func(w io.Writer) { writeRepeated(w, "<a>", n) })
}

// ManyAttributesStylesDOCX is a DOCX of one short paragraph whose
// word/styles.xml is well-formed, one style with n empty attributes a=""
// (repeated, as encoding/xml allows): 26 KB deflated for n of 3.4 million
// (16 MiB).
func ManyAttributesStylesDOCX(n int) []byte {
	return docxWithStyles(shortBody, func(w io.Writer) {
		io.WriteString(w, `<w:style w:type="paragraph" w:styleId="Heading1" `)
		writeRepeated(w, `a="" `, n)
		io.WriteString(w, `><w:name w:val="heading 1"/></w:style>`)
	})
}

func shortBody(w io.Writer) { io.WriteString(w, `<w:p><w:r><w:t>Styled.</w:t></w:r></w:p>`) }

// writeRepeated writes s n times, in blocks.
func writeRepeated(w io.Writer, s string, n int) {
	const per = 1 << 12
	block := bytes.Repeat([]byte(s), per)
	for ; n >= per; n -= per {
		w.Write(block)
	}
	w.Write(block[:n*len(s)])
}

// HugeParagraphHTML is an HTML page of one <p> of n bytes of words.
func HugeParagraphHTML(n int) []byte {
	var b bytes.Buffer
	b.Grow(n + 64)
	b.WriteString("<!DOCTYPE html><html><body><p>")
	word := []byte("lorem ipsum ")
	for b.Len() < n {
		b.Write(word)
	}
	b.WriteString("</p></body></html>")
	return b.Bytes()
}

// XObjectBombPDF is a one-page PDF whose content stream draws one form
// XObject, holding a line of text, draws times over: a few KB deflated,
// millions of characters for a text extractor.
func XObjectBombPDF(draws int) []byte {
	var content bytes.Buffer
	zw := zlib.NewWriter(&content)
	for range draws {
		io.WriteString(zw, "q /X1 Do Q\n")
	}
	zw.Close()
	form := "BT /F1 10 Tf 20 700 Td (The quick brown fox jumps over the lazy dog, again and again and again and again.) Tj ET"
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /X1 5 0 R >> /Font << /F1 6 0 R >> >> /Contents 4 0 R >>",
		fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", content.Len(), content.Bytes()),
		fmt.Sprintf("<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /F1 6 0 R >> >> /Length %d >>\nstream\n%s\nendstream", len(form), form),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}
