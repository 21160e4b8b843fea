package desk

import (
	"bytes"
	"fmt"
	"strings"
)

// nestedGroupsPDF is a two-page PDF: page 1 draws a chain of depth form
// XObjects, each a transparency group that draws the next twice under a
// blend mode, so PDFium composites 2^depth page-sized groups: 1.6 KB and
// 3 s at depth 3, 2.8 KB and minutes at depth 8 (measured at 110 dpi);
// page 2 is one line of text.
func nestedGroupsPDF(depth int) []byte {
	const first = 9 // object number of the first form
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >>",
		fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /X %d 0 R >> >> /Contents 5 0 R >>", first),
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 7 0 R >> >> /Contents 6 0 R >>",
		stream("/X Do"),
		stream("BT /F1 12 Tf 72 700 Td (The refund window is 30 days.) Tj ET"),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
		"<< /Type /ExtGState /ca 0.5 /CA 0.5 /BM /Multiply >>",
	}
	for i := range depth {
		body := "/G gs 0 0 612 792 re f"
		res := "/ExtGState << /G 8 0 R >>"
		if i < depth-1 {
			body = "/G gs /X Do /X Do"
			res += fmt.Sprintf(" /XObject << /X %d 0 R >>", first+i+1)
		}
		objs = append(objs, fmt.Sprintf("<< /Subtype /Form /BBox [0 0 612 792] /Group << /S /Transparency /I true /K true >> /Resources << %s >> /Length %d >>\nstream\n%s\nendstream", res, len(body), body))
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

func stream(s string) string {
	return fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(s), strings.TrimSpace(s))
}
