package docconvtest

import (
	"bytes"
	"fmt"

	"github.com/go-pdf/fpdf"
)

// HyphenatedParagraphs are the paragraphs a converter should make of
// HyphenatedPDF, in order: the words broken with a hyphen at a line's
// end joined, as pdftotext joins them, in a definition list's
// descriptions (each term and its description a row, "-r | …") and in a
// paragraph where the broken words are in capitals ("EVALUA-" / "TION")
// or set smaller after the break, as groff's man pages set a section's
// name ("PA-" / "RAMETERS").
var HyphenatedParagraphs = []string{
	"The options are these:",
	"-r | Make names readonly: these names cannot then be assigned values by later assignment statements or unset, nor by the shell itself.\n" +
		"-x | Mark each name for export to subsequent commands via the environment.",
	"Using a plus sign instead of a minus sign turns the attribute off.",
	"The expression is evaluated by the rules described below under ARITHMETIC EVALUATION. If the value is non-zero, the status is 0, as explained above (see PARAMETERS). Arrays are described below.",
}

// HyphenatedPDF is a one-page PDF of HyphenatedParagraphs, its lines
// broken where a manual breaks them: each description of the definition
// list in a column of its own to the right of its term, its lines
// starting where the description's first line does, and the paragraph's
// lines broken inside words, "RAMETERS" in a smaller size than the rest.
func HyphenatedPDF() []byte {
	pdf := fpdf.New("P", "pt", "Letter", "")
	pdf.SetAutoPageBreak(false, 0)
	pdf.AddPage()
	pdf.SetFont("Helvetica", "", 11)
	y := 72.0
	line := func(x float64, s string) {
		pdf.Text(x, y, s)
		y += 14
	}
	line(72, "The options are these:")
	y += 6
	pdf.Text(72, y, "-r")
	line(144, "Make names readonly: these names cannot then be as-")
	line(144, "signed values by later assignment statements or unset, nor")
	line(144, "by the shell itself.")
	pdf.Text(72, y, "-x")
	line(144, "Mark each name for export to subsequent commands via the envi-")
	line(144, "ronment.")
	y += 6
	line(72, "Using a plus sign instead of a minus sign turns the attribute off.")
	y += 14
	line(72, "The expression is evaluated by the rules described below under ARITHMETIC EVALUA-")
	line(72, "TION. If the value is non-zero, the status is 0, as explained above (see PA-")
	pdf.SetFont("Helvetica", "", 9)
	pdf.Text(72, y, "RAMETERS")
	x := 72 + pdf.GetStringWidth("RAMETERS")
	pdf.SetFont("Helvetica", "", 11)
	line(x, "). Arrays are described below.")
	var buf bytes.Buffer
	if err := pdf.Output(&buf); err != nil {
		panic(fmt.Sprintf("docconvtest: pdf: %v", err))
	}
	return buf.Bytes()
}

// FullWidthParagraph is the paragraph of FullWidthPDF set across the
// page, under its two columns: one paragraph, its broken word joined.
const FullWidthParagraph = "The following example illustrates the use of the istringstream class: several values are " +
	"extracted from the object. Such objects are most often used for doing string to type conversions, " +
	"like converting text to int values. Formatting flags can be used with them as well."

// FullWidthPDF is a one-page PDF read as two columns (six rows of two
// columns each, as a page of code set side by side) with, below them,
// FullWidthParagraph set across the page in four lines, broken inside
// "conver-" / "sions": each line across a two-column page is a band of
// its own, and the last, short, is the left column of the next band,
// which the lines of one paragraph are not kept apart by.
func FullWidthPDF() []byte {
	pdf := fpdf.New("P", "pt", "Letter", "")
	pdf.SetAutoPageBreak(false, 0)
	pdf.AddPage()
	pdf.SetFont("Helvetica", "", 11)
	y := 72.0
	for i := range 6 {
		pdf.Text(72, y, fmt.Sprintf("Left column line %d of the first part.", i+1))
		pdf.Text(330, y, fmt.Sprintf("Right column line %d of the second part.", i+1))
		y += 14
	}
	y += 14
	pdf.SetFont("Helvetica", "", 10)
	for _, l := range []string{
		"The following example illustrates the use of the istringstream class: several values are",
		"extracted from the object. Such objects are most often used for doing string to type conver-",
		"sions, like converting text to int values. Formatting flags can be used with them",
		"as well.",
	} {
		pdf.Text(72, y, l)
		y += 13
	}
	var buf bytes.Buffer
	if err := pdf.Output(&buf); err != nil {
		panic(fmt.Sprintf("docconvtest: pdf: %v", err))
	}
	return buf.Bytes()
}
