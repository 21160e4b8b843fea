package docconvtest

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
)

// ReplacePageWithScan returns pdf with page (from 1) replaced by a scan of
// it: a page of the same size that draws only img (gray, at dpi), with no
// text layer. The rest of the PDF, its page labels included, is kept: the
// new page is an incremental update appended to the file, as a PDF editor
// saves one. pdf must have a classic cross-reference table and one flat
// page tree (as groff's gropdf writes).
func ReplacePageWithScan(pdf []byte, page int, img *image.Gray) ([]byte, error) {
	kids := regexp.MustCompile(`/Kids\s*\[([^\]]*)\]`).FindSubmatch(pdf)
	if kids == nil {
		return nil, fmt.Errorf("no page tree")
	}
	refs := regexp.MustCompile(`(\d+)\s+0\s+R`).FindAllSubmatch(kids[1], -1)
	if page < 1 || page > len(refs) {
		return nil, fmt.Errorf("page %d of %d", page, len(refs))
	}
	obj, _ := strconv.Atoi(string(refs[page-1][1]))
	body := regexp.MustCompile(fmt.Sprintf(`(?s)\n%d 0 obj(.*?)endobj`, obj)).FindSubmatch(pdf)
	if body == nil {
		return nil, fmt.Errorf("page object %d not found", obj)
	}
	parent := regexp.MustCompile(`/Parent\s+(\d+)\s+0\s+R`).FindSubmatch(body[1])
	if parent == nil {
		return nil, fmt.Errorf("page object %d has no parent", obj)
	}
	box := regexp.MustCompile(`/MediaBox\s*\[([^\]]*)\]`).FindSubmatch(body[1])
	if box == nil {
		box = regexp.MustCompile(`/MediaBox\s*\[([^\]]*)\]`).FindSubmatch(pdf)
	}
	if box == nil {
		return nil, fmt.Errorf("no media box")
	}
	var x0, y0, x1, y1 float64
	if _, err := fmt.Sscan(string(box[1]), &x0, &y0, &x1, &y1); err != nil {
		return nil, fmt.Errorf("media box %q: %v", box[1], err)
	}
	trailers := regexp.MustCompile(`(?s)trailer\s*<<(.*?)>>\s*startxref\s*(\d+)`).FindAllSubmatch(pdf, -1)
	if trailers == nil {
		return nil, fmt.Errorf("no trailer (a cross-reference stream?)")
	}
	last := trailers[len(trailers)-1]
	size := regexp.MustCompile(`/Size\s+(\d+)`).FindSubmatch(last[1])
	root := regexp.MustCompile(`/Root\s+(\d+\s+\d+\s+R)`).FindSubmatch(last[1])
	if size == nil || root == nil {
		return nil, fmt.Errorf("trailer without /Size or /Root")
	}
	n, _ := strconv.Atoi(string(size[1]))
	imgObj, contentObj := n, n+1

	var pixels bytes.Buffer
	zw := zlib.NewWriter(&pixels)
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		zw.Write(img.Pix[(y-b.Min.Y)*img.Stride : (y-b.Min.Y)*img.Stride+b.Dx()])
	}
	zw.Close()
	content := fmt.Sprintf("q %g 0 0 %g %g %g cm /Scan Do Q\n", x1-x0, y1-y0, x0, y0)

	out := bytes.NewBuffer(append([]byte(nil), pdf...))
	if !bytes.HasSuffix(pdf, []byte("\n")) {
		out.WriteByte('\n')
	}
	offsets := map[int]int{}
	offsets[obj] = out.Len()
	fmt.Fprintf(out, "%d 0 obj\n<< /Type /Page /Parent %s 0 R /MediaBox [%g %g %g %g] /Contents %d 0 R /Resources << /XObject << /Scan %d 0 R >> >> >>\nendobj\n",
		obj, parent[1], x0, y0, x1, y1, contentObj, imgObj)
	offsets[imgObj] = out.Len()
	fmt.Fprintf(out, "%d 0 obj\n<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode /Length %d >>\nstream\n",
		imgObj, b.Dx(), b.Dy(), pixels.Len())
	out.Write(pixels.Bytes())
	out.WriteString("\nendstream\nendobj\n")
	offsets[contentObj] = out.Len()
	fmt.Fprintf(out, "%d 0 obj\n<< /Length %d >>\nstream\n%sendstream\nendobj\n", contentObj, len(content), content)
	xref := out.Len()
	fmt.Fprintf(out, "xref\n%d 1\n%010d 00000 n \n%d 2\n%010d 00000 n \n%010d 00000 n \n", obj, offsets[obj], imgObj, offsets[imgObj], offsets[contentObj])
	fmt.Fprintf(out, "trailer\n<< /Size %d /Root %s /Prev %s >>\nstartxref\n%d\n%%%%EOF\n", n+2, root[1], last[2], xref)
	return out.Bytes(), nil
}

// ScannedCopy returns pdf with page (from 1) replaced by its scan
// (ReplacePageWithScan): pdftoppm (the path of poppler's command)
// rasterises the page at 300 DPI in gray, as a scanner would.
func ScannedCopy(pdftoppm string, pdf []byte, page int) ([]byte, error) {
	dir, err := os.MkdirTemp("", "memagent-scan-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "src.pdf")
	if err := os.WriteFile(src, pdf, 0o600); err != nil {
		return nil, err
	}
	p := strconv.Itoa(page)
	if out, err := exec.Command(pdftoppm, "-r", "300", "-gray", "-png", "-singlefile", "-f", p, "-l", p, src, filepath.Join(dir, "page")).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pdftoppm: %v: %s", err, out)
	}
	f, err := os.Open(filepath.Join(dir, "page.png"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		return nil, err
	}
	return ReplacePageWithScan(pdf, page, Degrade(img, Degradation{Scale: 1}))
}
