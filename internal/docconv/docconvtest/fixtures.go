// Package docconvtest generates the PDF, DOCX and HTML documents that the
// conversion tests, the end-to-end tests and the benchmark read: filler
// text with running headers, footers and page numbers, and one planted
// fact on a chosen page or in a chosen section. Nothing is downloaded;
// everything is deterministic in its arguments.
package docconvtest

import (
	"archive/zip"
	"bytes"
	"fmt"
	"html"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"strings"

	"github.com/go-pdf/fpdf"
)

// Header and Footer are the running header and footer of every generated
// PDF page; the page number is printed below the footer's line as "Page N
// of M". Conversion must drop all three.
const (
	Header = "Meridian Holdings Ltd. - Master Services Agreement"
	Footer = "Confidential - prepared for review"
)

// fillerWords share no word with docgen.Question, so only the planted
// fact answers it.
var fillerWords = strings.Fields(`river harvest lantern meadow copper winter orchard valley whistle pebble
ferry harbor candle ribbon marble thunder willow basket pigeon saddle quarry blanket compass drizzle
ember falcon garnet hammock island jasmine kettle ladder mosaic nectar oyster paddle quiver rafter
sparrow timber umbrella velvet wagon yarrow zephyr anchor bramble cinder dune estuary fern glacier
baker weaver potter miller sailor farmer painter tailor cooper mason shepherd fisher merchant
walked carried painted gathered folded traded mended counted watched planted sang measured
quietly slowly early later often rarely together nearby beyond beneath across along around`)

// Paragraph returns a filler paragraph of about n words, deterministic in
// rng.
func Paragraph(rng *rand.Rand, n int) string {
	var b strings.Builder
	for w := 0; w < n; w++ {
		word := fillerWords[rng.IntN(len(fillerWords))]
		if w == 0 || b.String()[b.Len()-1] == '.' {
			if w > 0 {
				b.WriteByte(' ')
			}
			word = strings.ToUpper(word[:1]) + word[1:]
		} else {
			b.WriteByte(' ')
		}
		b.WriteString(word)
		if rng.IntN(10) == 0 || w == n-1 {
			b.WriteByte('.')
		}
	}
	return b.String()
}

// PDFOptions shape a generated PDF.
type PDFOptions struct {
	// Pages is the page count.
	Pages int
	// FactPage is the page (from 1) that carries Fact in its third
	// paragraph; 0 plants nothing.
	FactPage int
	Fact     string
	// TwoColumns lays the body out in two columns under a full-width
	// title.
	TwoColumns bool
	// Password encrypts the file (RC4, as fpdf does) with this user
	// password.
	Password string
	// Seed varies the filler.
	Seed uint64
}

// PDF returns a generated PDF: on every page the running header, body
// paragraphs, the footer and "Page N of M".
func PDF(o PDFOptions) []byte {
	pdf := fpdf.New("P", "pt", "Letter", "")
	pdf.SetAutoPageBreak(false, 0)
	pdf.SetCompression(true)
	if o.Password != "" {
		pdf.SetProtection(fpdf.CnProtectPrint, o.Password, o.Password+"-owner")
	}
	for p, paras := range PageParagraphs(o) {
		p++
		pdf.AddPage()
		pdf.SetFont("Helvetica", "", 9)
		pdf.Text(54, 40, Header)
		pdf.Text(54, 752, Footer)
		pdf.Text(280, 768, fmt.Sprintf("Page %d of %d", p, o.Pages))
		pdf.SetFont("Helvetica", "", 11)
		if !o.TwoColumns {
			pdf.SetXY(54, 70)
			for _, para := range paras {
				pdf.SetX(54)
				pdf.MultiCell(504, 15, para, "", "L", false)
				pdf.Ln(10)
			}
			continue
		}
		pdf.SetFont("Helvetica", "B", 14)
		pdf.SetXY(54, 64)
		pdf.CellFormat(504, 18, ColumnTitle(p), "", 1, "L", false, 0, "")
		pdf.SetFont("Helvetica", "", 10)
		// Left column: the first three paragraphs; right: the rest.
		for col, set := range [][]string{paras[:3], paras[3:]} {
			x := 54.0 + float64(col)*264
			pdf.SetXY(x, 96)
			for _, para := range set {
				pdf.SetX(x)
				pdf.MultiCell(240, 13, para, "", "L", false)
				pdf.Ln(9)
			}
		}
	}
	var buf bytes.Buffer
	if err := pdf.Output(&buf); err != nil {
		panic(fmt.Sprintf("docconvtest: pdf: %v", err))
	}
	return buf.Bytes()
}

// ColumnTitle is the full-width title over the two columns of page p.
func ColumnTitle(p int) string {
	w := fillerWords[(p*7)%len(fillerWords)]
	return "Schedule of the " + w + " works"
}

// PageParagraphs returns the body paragraphs PDF lays out on each page:
// five a page; in two columns, the first three on the left.
func PageParagraphs(o PDFOptions) [][]string {
	rng := rand.New(rand.NewPCG(o.Seed, 0x5eed))
	out := make([][]string, o.Pages)
	for p := range out {
		paras := make([]string, 5)
		for i := range paras {
			paras[i] = Paragraph(rng, 40+rng.IntN(15))
		}
		if p+1 == o.FactPage {
			paras[2] = strings.TrimSuffix(paras[2], ".") + ". " + o.Fact + " " + Paragraph(rng, 12)
		}
		out[p] = paras
	}
	return out
}

// ImagePDF returns a PDF of pages that each show only an image: a scan
// without a text layer.
func ImagePDF(pages int) []byte {
	img := image.NewGray(image.Rect(0, 0, 200, 260))
	for y := 0; y < 260; y++ {
		for x := 0; x < 200; x++ {
			if (x/10+y/6)%3 == 0 {
				img.Set(x, y, color.Gray{Y: 40})
			} else {
				img.Set(x, y, color.Gray{Y: 230})
			}
		}
	}
	var pngData bytes.Buffer
	if err := png.Encode(&pngData, img); err != nil {
		panic(err)
	}
	pdf := fpdf.New("P", "pt", "Letter", "")
	pdf.SetAutoPageBreak(false, 0)
	pdf.RegisterImageOptionsReader("scan", fpdf.ImageOptions{ImageType: "PNG"}, bytes.NewReader(pngData.Bytes()))
	for p := 0; p < pages; p++ {
		pdf.AddPage()
		pdf.ImageOptions("scan", 36, 36, 540, 702, false, fpdf.ImageOptions{ImageType: "PNG"}, 0, "")
	}
	var buf bytes.Buffer
	if err := pdf.Output(&buf); err != nil {
		panic(fmt.Sprintf("docconvtest: image pdf: %v", err))
	}
	return buf.Bytes()
}

// Section is one heading and its paragraphs, for DOCX and HTML.
type Section struct {
	Heading    string
	Paragraphs []string
}

// Sections returns n sections of filler, the fact planted in the second
// paragraph of section factSection (from 1; 0 plants nothing).
func Sections(n, factSection int, fact string, seed uint64) []Section {
	rng := rand.New(rand.NewPCG(seed, 0xd0c))
	out := make([]Section, n)
	for i := range out {
		out[i].Heading = fmt.Sprintf("Clause %d: %s terms", i+1, strings.ToUpper(fillerWords[i%len(fillerWords)][:1])+fillerWords[i%len(fillerWords)][1:])
		for k := 0; k < 3; k++ {
			out[i].Paragraphs = append(out[i].Paragraphs, Paragraph(rng, 40+rng.IntN(20)))
		}
		if i+1 == factSection {
			out[i].Paragraphs[1] = strings.TrimSuffix(out[i].Paragraphs[1], ".") + ". " + fact
		}
	}
	return out
}

// DOCX returns a Word document (the zip of XML parts a .docx is) with a
// title, a heading per section, and a page header and footer part, which
// conversion must not read.
func DOCX(title string, sections []Section) []byte {
	var body strings.Builder
	para := func(style, text string) {
		body.WriteString("<w:p>")
		if style != "" {
			fmt.Fprintf(&body, `<w:pPr><w:pStyle w:val="%s"/></w:pPr>`, style)
		}
		// Two runs, to check that runs join into one paragraph.
		half := len(text) / 2
		for half > 0 && text[half] != ' ' {
			half--
		}
		fmt.Fprintf(&body, `<w:r><w:t xml:space="preserve">%s</w:t></w:r><w:r><w:rPr><w:b/></w:rPr><w:t xml:space="preserve">%s</w:t></w:r>`,
			xmlText(text[:half]), xmlText(text[half:]))
		body.WriteString("</w:p>")
	}
	para("Title", title)
	for _, s := range sections {
		para("Heading1", s.Heading)
		for _, p := range s.Paragraphs {
			para("", p)
		}
	}
	parts := map[string]string{
		"[Content_Types].xml": `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/><Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/><Override PartName="/word/header1.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.header+xml"/></Types>`,
		"_rels/.rels": `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`,
		"word/_rels/document.xml.rels": `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/header" Target="header1.xml"/></Relationships>`,
		"word/styles.xml": `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:styles xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/></w:style><w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/><w:pPr><w:outlineLvl w:val="0"/></w:pPr></w:style></w:styles>`,
		"word/header1.xml": `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:hdr xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:p><w:r><w:t>` + xmlText(Header) + `</w:t></w:r></w:p></w:hdr>`,
		"word/document.xml": `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><w:body>` +
			body.String() + `<w:sectPr><w:headerReference w:type="default" r:id="rId2"/></w:sectPr></w:body></w:document>`,
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range []string{"[Content_Types].xml", "_rels/.rels", "word/_rels/document.xml.rels", "word/styles.xml", "word/header1.xml", "word/document.xml"} {
		w, err := zw.Create(name)
		if err != nil {
			panic(err)
		}
		if _, err := w.Write([]byte(parts[name])); err != nil {
			panic(err)
		}
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func xmlText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// HTML returns a web page with site navigation, a script, a heading per
// section and a footer: only the headings and paragraphs are its text.
func HTML(title string, sections []Section) []byte {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>")
	b.WriteString(html.EscapeString(title))
	b.WriteString("</title><style>body { font-family: serif }</style><script>var tracking = 'north gate';</script></head>\n<body>\n")
	b.WriteString("<nav><a href=\"/\">Home</a> | <a href=\"/contracts\">Contracts</a></nav>\n<main>\n<h1>")
	b.WriteString(html.EscapeString(title))
	b.WriteString("</h1>\n")
	for _, s := range sections {
		fmt.Fprintf(&b, "<section>\n<h2>%s</h2>\n", html.EscapeString(s.Heading))
		for _, p := range s.Paragraphs {
			fmt.Fprintf(&b, "<p>%s</p>\n", html.EscapeString(p))
		}
		b.WriteString("</section>\n")
	}
	b.WriteString("</main>\n<footer>" + html.EscapeString(Footer) + "</footer>\n</body></html>\n")
	return []byte(b.String())
}
