package docconv

import (
	"bytes"
	"context"
	"image/png"
	"math"
	"os"
	"strings"
	"testing"
	"unicode"

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

// TestFindTextAmongOCRWords: words OCR read (pixels of a 1,000 × 2,000
// image) become boxes on the page, and a quote is found among them as on
// a text layer: across a line break, a word hyphenated there whole, with
// a box a line over just the quote's words (the hyphen left out).
func TestFindTextAmongOCRWords(t *testing.T) {
	pt := &PageText{Words: []OCRWord{
		{Text: "The", Left: 100, Top: 200, Width: 60, Height: 20, Line: [3]int{1, 1, 1}},
		{Text: "answer", Left: 180, Top: 200, Width: 120, Height: 20, Line: [3]int{1, 1, 1}},
		{Text: "is", Left: 320, Top: 200, Width: 30, Height: 20, Line: [3]int{1, 1, 1}},
		{Text: "hyphen-", Left: 370, Top: 200, Width: 140, Height: 20, Line: [3]int{1, 1, 1}},
		{Text: "ated", Left: 100, Top: 240, Width: 80, Height: 20, Line: [3]int{1, 1, 2}},
		{Text: "here.", Left: 200, Top: 240, Width: 100, Height: 20, Line: [3]int{1, 1, 2}},
	}}
	words := pt.WordBoxes(1000, 2000)
	if w := words[1]; w.Text != "answer" || w.Line != 0 || w.Box != (Box{Left: 0.18, Top: 0.1, Right: 0.3, Bottom: 0.11}) {
		t.Errorf("word 2 = %+v, want answer on line 0 at 0.18,0.1–0.3,0.11", w)
	}
	if words[4].Line != 1 {
		t.Errorf("word 5 on line %d, want 1", words[4].Line)
	}
	chars := OCRChars(words)
	boxes, err := FindText(chars, "answer is hyphenated")
	if err != nil {
		t.Fatal(err)
	}
	want := []Box{{Left: 0.18, Top: 0.1, Right: 0.49, Bottom: 0.11}, {Left: 0.1, Top: 0.12, Right: 0.18, Bottom: 0.13}}
	if len(boxes) != 2 {
		t.Fatalf("boxes %v, want %v", boxes, want)
	}
	for i := range want {
		for _, d := range [][2]float64{{boxes[i].Left, want[i].Left}, {boxes[i].Top, want[i].Top}, {boxes[i].Right, want[i].Right}, {boxes[i].Bottom, want[i].Bottom}} {
			if math.Abs(d[0]-d[1]) > 1e-9 {
				t.Errorf("box %d = %+v, want %+v", i, boxes[i], want[i])
				break
			}
		}
	}
	if _, err := FindText(chars, "answer is here"); err != ErrTextNotOnPage {
		t.Errorf("words not next to each other found: %v", err)
	}
}

// TestFindTextAcrossHyphenatedLineEnds: in bash's reference manual
// (Texinfo), TeX breaks words with a hyphen at lines' ends, which PDFium
// marks (U+0002) and the converted text joins ("structures"); a quote
// holding such a word, as the converted text has it, is found on the
// page. Every such word of pages 10–29 is tried (35), with the two words
// around it; before, one was found (the same words elsewhere on its page).
func TestFindTextAcrossHyphenatedLineEnds(t *testing.T) {
	path := testdeps.Manual(t, "bash-doc", "usr/share/doc/bash-doc/bashref.pdf")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c Converter
	defer c.Close()
	tried := 0
	for p := 10; p < 30; p++ {
		chars, err := c.CharBoxes(context.Background(), bytes.NewReader(data), int64(len(data)), p)
		if err != nil {
			t.Fatal(err)
		}
		for i, ch := range chars {
			if ch.Char != 2 {
				continue
			}
			// The word broken and a word either side, joined.
			lo, hi := i, i+1
			for words := 0; lo > 0 && words < 2; lo-- {
				if unicode.IsSpace(chars[lo-1].Char) {
					words++
				}
			}
			for hi < len(chars) && (chars[hi].Char == '\r' || chars[hi].Char == '\n') {
				hi++
			}
			for words := 0; hi < len(chars) && words < 2; hi++ {
				if unicode.IsSpace(chars[hi].Char) {
					words++
				}
			}
			var quote strings.Builder
			for k := lo; k < hi; k++ {
				if r := chars[k].Char; r != 2 && (k < i || k > i+2 || (r != '\r' && r != '\n')) {
					quote.WriteRune(r)
				}
			}
			q := strings.TrimSpace(quote.String())
			tried++
			if boxes, err := FindText(chars, q); err != nil || len(boxes) == 0 {
				t.Errorf("page %d: %q: %d boxes, %v; want it found", p, q, len(boxes), err)
			}
		}
	}
	if tried < 10 {
		t.Errorf("%d words broken at lines' ends on pages 10–29, want at least 10", tried)
	}
	t.Logf("%d words broken at lines' ends found", tried)
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
