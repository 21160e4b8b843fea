package docconvtest

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"

	"github.com/go-pdf/fpdf"
)

// StructuredParagraphs are the paragraphs a converter should make of
// StructuredPDF, in order (paragraphs apart by a blank line, a code
// block's or a table's lines by a newline): a numbered heading alone, a
// paragraph, bulleted and numbered items each with its marker, code with
// its indentation, a table's rows with their cells apart by " | ", and a
// term above its description.
var StructuredParagraphs = []string{
	"2.2.2 Working on input files",
	"LilyPond input files are similar to source files in many common programming languages. They contain a version statement, are case sensitive, and white space is generally ignored. Expressions are formed with curly braces and comments are denoted with a percent sign:",
	"• a standard for typesetting mathematical figures, just as TeX is the standard for typesetting equations, with labels set in the document's own fonts;",
	"• a natural coordinate-based framework for technical drawing.",
	"To install it:",
	"1. Open the archive;",
	"2. Copy the files into place;",
	"3. Run the configuration script.",
	"A structure is declared as follows:",
	"struct point {\n    real x;\n    real y;\n    pair z() {\n        return (x,y);\n    }\n}",
	"The options are these:",
	"Option | Default | Meaning\n-V | false | view the output\n-f pdf | eps | the output format",
	"-noV",
	"Do not view the output after it is written, whatever the configuration file says about viewers.",
}

// StructuredPDF is a one-page PDF of StructuredParagraphs, set as a
// Texinfo manual sets them: the heading in a bold font a size larger than
// the text and as close above it as its lines are to each other, the
// bullets and numbers hanging left of their items' text, the code in
// Courier, the table's cells in columns, and the term in Courier above
// its description, indented.
func StructuredPDF() []byte {
	pdf := fpdf.New("P", "pt", "Letter", "")
	pdf.SetAutoPageBreak(false, 0)
	tr := pdf.UnicodeTranslatorFromDescriptor("")
	p := StructuredParagraphs
	y := 72.0
	text := func(x float64, s string) { pdf.Text(x, y, tr(s)) }
	body := func(x, w float64, s string) {
		pdf.SetXY(x, y-11)
		pdf.MultiCell(w, 14, tr(s), "", "L", false)
		y = pdf.GetY() + 11
	}
	pdf.AddPage()
	pdf.SetFont("Helvetica", "B", 12)
	text(72, p[0])
	y += 16
	pdf.SetFont("Helvetica", "", 11)
	body(72, 468, p[1])
	y += 6
	for _, item := range p[2:4] {
		text(72, "•")
		body(86, 454, item[len("• "):])
	}
	y += 10
	body(72, 468, p[4])
	for _, item := range p[5:8] {
		text(72, item[:2])
		body(86, 454, item[3:])
	}
	y += 6
	body(72, 468, p[8])
	pdf.SetFont("Courier", "", 10)
	for _, line := range []struct {
		indent int
		s      string
	}{{0, "struct point {"}, {4, "real x;"}, {4, "real y;"}, {4, "pair z() {"}, {8, "return (x,y);"}, {4, "}"}, {0, "}"}} {
		text(86+6*float64(line.indent), line.s)
		y += 12
	}
	y += 8
	pdf.SetFont("Helvetica", "", 11)
	body(72, 468, p[10])
	for _, row := range [][3]string{{"Option", "Default", "Meaning"}, {"-V", "false", "view the output"}, {"-f pdf", "eps", "the output format"}} {
		for i, cell := range row {
			text(86+float64(i)*130, cell)
		}
		y += 14
	}
	y += 6
	pdf.SetFont("Courier", "", 11)
	text(72, p[12])
	y += 14
	pdf.SetFont("Helvetica", "", 11)
	body(108, 432, p[13])
	var buf bytes.Buffer
	if err := pdf.Output(&buf); err != nil {
		panic(fmt.Sprintf("docconvtest: pdf: %v", err))
	}
	return buf.Bytes()
}

// StructuredDOCXText is the text a converter should make of
// StructuredDOCX: headings alone (each opening a section named by its
// text, without a list's number), list items after their markers as
// word/numbering.xml numbers them (bullets, decimal, letters under a
// number, a number that goes on after a nested list), and a table's rows
// a line each, cells apart by " | "; a paragraph of the List Bullet
// style, numbered by its style, is a bullet item too.
const StructuredDOCXText = `Installing

Before you start:

• back up your files;

• close the editor.

1. Open the archive;

a) check its signature;

b) check its size.

2. Copy the files into place.

• Keep the archive.

Options

Option | Default | Meaning
-V | false | view the output (the viewer set in the configuration file)
-f pdf | eps | the output format
`

// StructuredDOCX is a Word document of StructuredDOCXText: Heading 1
// paragraphs, list paragraphs (w:numPr) of a bulleted and a numbered list
// (its second level lettered), a paragraph whose style (List Bullet)
// numbers it, and a table of three rows, one cell of
// two paragraphs.
func StructuredDOCX() []byte {
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	add := func(name, content string) {
		f, _ := z.Create(name)
		io.WriteString(f, content)
	}
	const w = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`
	add("[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`)
	add("_rels/.rels", `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`)
	add("word/styles.xml", `<?xml version="1.0" encoding="UTF-8"?><w:styles `+w+`><w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/><w:pPr><w:outlineLvl w:val="0"/></w:pPr></w:style><w:style w:type="paragraph" w:styleId="ListParagraph"><w:name w:val="List Paragraph"/></w:style><w:style w:type="paragraph" w:styleId="ListBullet"><w:name w:val="List Bullet"/><w:pPr><w:numPr><w:numId w:val="1"/></w:numPr></w:pPr></w:style></w:styles>`)
	add("word/numbering.xml", `<?xml version="1.0" encoding="UTF-8"?><w:numbering `+w+`>`+
		`<w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="bullet"/><w:lvlText w:val="`+"\uf0b7"+`"/></w:lvl></w:abstractNum>`+
		`<w:abstractNum w:abstractNumId="1"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl><w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/><w:lvlText w:val="%2)"/></w:lvl></w:abstractNum>`+
		`<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num><w:num w:numId="2"><w:abstractNumId w:val="1"/></w:num></w:numbering>`)
	para := func(style, num string, ilvl int, runs ...string) string {
		s := `<w:p><w:pPr>`
		if style != "" {
			s += `<w:pStyle w:val="` + style + `"/>`
		}
		if num != "" {
			s += fmt.Sprintf(`<w:numPr><w:ilvl w:val="%d"/><w:numId w:val="%s"/></w:numPr>`, ilvl, num)
		}
		s += `</w:pPr>`
		for _, r := range runs {
			s += `<w:r><w:t xml:space="preserve">` + r + `</w:t></w:r>`
		}
		return s + `</w:p>`
	}
	cell := func(paras ...string) string {
		s := `<w:tc>`
		for _, p := range paras {
			s += para("", "", 0, p)
		}
		return s + `</w:tc>`
	}
	row := func(cells ...string) string {
		s := `<w:tr>`
		for _, c := range cells {
			s += c
		}
		return s + `</w:tr>`
	}
	body := para("Heading1", "", 0, "Installing") +
		para("", "", 0, "Before you start:") +
		para("ListParagraph", "1", 0, "back up ", "your files;") +
		para("ListParagraph", "1", 0, "close the editor.") +
		para("ListParagraph", "2", 0, "Open the archive;") +
		para("ListParagraph", "2", 1, "check its signature;") +
		para("ListParagraph", "2", 1, "check its size.") +
		para("ListParagraph", "2", 0, "Copy the files into place.") +
		para("ListBullet", "", 0, "Keep the archive.") +
		para("Heading1", "", 0, "Options") +
		`<w:tbl>` +
		row(cell("Option"), cell("Default"), cell("Meaning")) +
		row(cell("-V"), cell("false"), cell("view the output", "(the viewer set in the configuration file)")) +
		row(cell("-f pdf"), cell("eps"), cell("the output format")) +
		`</w:tbl>`
	add("word/document.xml", `<?xml version="1.0" encoding="UTF-8"?><w:document `+w+`><w:body>`+body+`</w:body></w:document>`)
	z.Close()
	return buf.Bytes()
}
