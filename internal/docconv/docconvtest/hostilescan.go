package docconvtest

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"math/rand/v2"
)

// rawPDF writes objs as objects 1, 2, … of a PDF whose catalog is
// object 1. An object given as []byte is written as it is; a string
// too.
func rawPDF(objs [][]byte) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n", i+1)
		b.Write(o)
		b.WriteString("\nendobj\n")
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// imageObject is a gray image XObject of w × h pixels of bpc bits, its
// rows (already packed) deflated.
func imageObject(w, h, bpc int, rows func(write func([]byte))) []byte {
	var data bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&data, zlib.BestCompression)
	rows(func(p []byte) { zw.Write(p) })
	zw.Close()
	var b bytes.Buffer
	fmt.Fprintf(&b, "<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent %d /Filter /FlateDecode /Length %d >>\nstream\n", w, h, bpc, data.Len())
	b.Write(data.Bytes())
	b.WriteString("\nendstream")
	return b.Bytes()
}

func stream(s string) []byte {
	return []byte(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(s), s))
}

// ImageBombPDF is a one-page scan whose page image is side × side pixels
// of one bit, all white: a decompression bomb of side²/8 bytes (1.25 GB
// for 100,000) in about a thousandth of that, deflated.
func ImageBombPDF(side int) []byte {
	row := make([]byte, (side+7)/8)
	for i := range row {
		row[i] = 0xFF
	}
	img := imageObject(side, side, 1, func(write func([]byte)) {
		for range side {
			write(row)
		}
	})
	return rawPDF([][]byte{
		[]byte("<< /Type /Catalog /Pages 2 0 R >>"),
		[]byte("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
		[]byte("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im 5 0 R >> >> /Contents 4 0 R >>"),
		stream("q 612 0 0 792 0 0 cm /Im Do Q"),
		img,
	})
}

// LongScanPDF is a scan of pages pages of one inch square, each drawing
// one shared 300 DPI image: white, except on every inkEvery-th page (from
// the first; 0: none), whose image has a black bar: a page with ink that
// the engine reads, where the others are blank.
func LongScanPDF(pages, inkEvery int) []byte {
	blank := imageObject(300, 300, 8, func(write func([]byte)) {
		row := bytes.Repeat([]byte{0xFF}, 300)
		for range 300 {
			write(row)
		}
	})
	ink := imageObject(300, 300, 8, func(write func([]byte)) {
		white := bytes.Repeat([]byte{0xFF}, 300)
		bar := append(bytes.Repeat([]byte{0xFF}, 50), append(bytes.Repeat([]byte{0}, 200), bytes.Repeat([]byte{0xFF}, 50)...)...)
		for y := range 300 {
			if y >= 140 && y < 160 {
				write(bar)
			} else {
				write(white)
			}
		}
	})
	// Objects: 1 catalog, 2 pages, 3 content, 4 blank image, 5 ink
	// image, then one page object each.
	var kids bytes.Buffer
	for i := range pages {
		fmt.Fprintf(&kids, "%d 0 R ", 6+i)
	}
	objs := [][]byte{
		[]byte("<< /Type /Catalog /Pages 2 0 R >>"),
		[]byte(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", kids.String(), pages)),
		stream("q 72 0 0 72 0 0 cm /Im Do Q"),
		blank,
		ink,
	}
	for i := range pages {
		im := 4
		if inkEvery > 0 && i%inkEvery == 0 {
			im = 5
		}
		objs = append(objs, []byte(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 72 72] /Resources << /XObject << /Im %d 0 R >> >> /Contents 3 0 R >>", im)))
	}
	return rawPDF(objs)
}

// EngineHangPDF is a scan of pages letter pages whose image (300 DPI, one
// bit) is a fine dither of random specks: Tesseract looks for text in it
// for minutes (over two on a 2-core machine, at 38 s of CPU by then).
func EngineHangPDF(pages int) []byte {
	const w, h = 2550, 3300
	rng := rand.New(rand.NewPCG(1, 2))
	img := imageObject(w, h, 1, func(write func([]byte)) {
		row := make([]byte, (w+7)/8)
		for y := range h {
			for i := range row {
				row[i] = 0xFF
			}
			for x := range w {
				if (y/3+x/3)%2 == 0 && rng.IntN(3) == 0 {
					row[x/8] &^= 0x80 >> (x % 8)
				}
			}
			write(row)
		}
	})
	var kids bytes.Buffer
	for i := range pages {
		fmt.Fprintf(&kids, "%d 0 R ", 5+i)
	}
	objs := [][]byte{
		[]byte("<< /Type /Catalog /Pages 2 0 R >>"),
		[]byte(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", kids.String(), pages)),
		stream("q 612 0 0 792 0 0 cm /Im Do Q"),
		img,
	}
	for range pages {
		objs = append(objs, []byte("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im 4 0 R >> >> /Contents 3 0 R >>"))
	}
	return rawPDF(objs)
}

// NestedGroupsPDF is a two-page PDF: page 1 draws a chain of depth form
// XObjects, each a transparency group that draws the next twice under a
// blend mode, so PDFium composites 2^depth page-sized groups: 1.6 KB and
// 3 s at depth 3, 2.8 KB and minutes at depth 8 (measured at 110 dpi);
// page 2 is one line of text.
func NestedGroupsPDF(depth int) []byte {
	const first = 9 // object number of the first form
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >>",
		fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /X %d 0 R >> >> /Contents 5 0 R >>", first),
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 7 0 R >> >> /Contents 6 0 R >>",
		string(stream("/X Do")),
		string(stream("BT /F1 12 Tf 72 700 Td (The refund window is 30 days.) Tj ET")),
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
	raw := make([][]byte, len(objs))
	for i, o := range objs {
		raw[i] = []byte(o)
	}
	return rawPDF(raw)
}
