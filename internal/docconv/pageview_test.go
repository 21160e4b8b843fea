package docconv

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"strings"
	"testing"

	"github.com/memagent/memagent/internal/testdeps"
)

// TestPageViewOnRealManual renders a page of gnuplot's manual and finds a
// phrase of it, broken over two lines, where PDFium's character boxes put
// it: every box FindText returns covers characters of the phrase, and
// every character of the phrase is under a box.
func TestPageViewOnRealManual(t *testing.T) {
	path := testdeps.Manual(t, "gnuplot-doc", "usr/share/doc/gnuplot/gnuplot.pdf")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c Converter
	defer c.Close()
	ctx := context.Background()
	const page = 40
	img, err := c.RenderPage(ctx, bytes.NewReader(data), int64(len(data)), page, 100)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := png.Decode(bytes.NewReader(img.PNG)); err != nil || m.Bounds().Dx() != img.Width || img.Width < 800 {
		t.Fatalf("page image: %v, %dx%d", err, img.Width, img.Height)
	}
	chars, err := c.CharBoxes(ctx, bytes.NewReader(data), int64(len(data)), page)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, ch := range chars {
		text.WriteRune(ch.Char)
	}
	// Two lines' worth from the middle of the page: the phrase crosses a
	// line's end.
	lines := strings.Split(text.String(), "\r\n")
	if len(lines) < 20 {
		t.Fatalf("page %d has %d lines", page, len(lines))
	}
	mid := len(lines) / 2
	a, b := strings.Fields(lines[mid]), strings.Fields(lines[mid+1])
	if len(a) < 3 || len(b) < 3 {
		t.Fatalf("lines %q, %q: want words", lines[mid], lines[mid+1])
	}
	phrase := strings.Join(append(a[len(a)-3:], b[:3]...), " ")
	boxes, err := FindText(chars, phrase)
	if err != nil {
		t.Fatalf("FindText(%q): %v", phrase, err)
	}
	if len(boxes) != 2 {
		t.Errorf("FindText(%q) = %d boxes, want one a line, 2", phrase, len(boxes))
	}
	var under strings.Builder
	for _, ch := range chars {
		cx, cy := (ch.Box.Left+ch.Box.Right)/2, (ch.Box.Top+ch.Box.Bottom)/2
		for _, bx := range boxes {
			if cx >= bx.Left && cx <= bx.Right && cy >= bx.Top && cy <= bx.Bottom && ch.Box.Right > ch.Box.Left {
				under.WriteRune(ch.Char)
			}
		}
	}
	got := strings.Join(strings.Fields(under.String()), "")
	if want := strings.Join(strings.Fields(phrase), ""); got != want {
		t.Errorf("characters under the boxes read %q, want %q", got, want)
	}
	if _, err := FindText(chars, "no such text on this page at all"); err != ErrTextNotOnPage {
		t.Errorf("missing text: %v", err)
	}
}

// TestFindTextTableRow finds a quote of a table's row, its cells apart
// by " | " as the converted text sets them, on a page that prints the
// cells apart by space alone; and a bar the page prints between spaces
// ("ls | sort") is found by the text that quotes it.
func TestFindTextTableRow(t *testing.T) {
	page := func(s string) []CharBox {
		var chars []CharBox
		for i, r := range s {
			chars = append(chars, CharBox{Char: r, Box: Box{Left: float64(10 * i), Right: float64(10*i + 8), Top: 10, Bottom: 20}})
		}
		return chars
	}
	for _, c := range []struct{ page, quote string }{
		{"Option Default Meaning -V false view the output", "-V | false | view the output"},
		{"run ls | sort to sort them", "ls | sort"},
	} {
		if _, err := FindText(page(c.page), c.quote); err != nil {
			t.Errorf("FindText(%q) on %q: %v", c.quote, c.page, err)
		}
	}
}
