package docconvtest

// TJEmptyStringPDF is a page whose TJ arrays end in an empty string after
// a word space, as gropdf writes justified lines (`(in) -317.840 ()] TJ`
// in groff's automake.pdf): PDFium drops the space, so what follows on
// the line is drawn short unless the converter repairs it. Its first line
// reads "listed in grolbp_SOURCES will" (the second TJ's empty string is
// hex, and its dropped space adds to the first's), its second
// "everynext": a Td puts PDFium right again, and "next" there touches
// "every" (a repair that moved it would part the two).
func TJEmptyStringPDF() []byte {
	content := "BT /F1 12 Tf 72 700 Td [(listed) -333 (in) -333 ()] TJ (grolbp_) Tj [(SOURCES) -333 <>] TJ (will) Tj ET\n" +
		"BT /F1 12 Tf 72 670 Td [(every) -333 ()] TJ 29.34 0 Td (next) Tj ET"
	return rawPDF([][]byte{
		[]byte("<< /Type /Catalog /Pages 2 0 R >>"),
		[]byte("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
		[]byte("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>"),
		stream(content),
		[]byte("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"),
	})
}
