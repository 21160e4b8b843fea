package docconv_test

import (
	"strings"
	"testing"

	"github.com/memagent/memagent/internal/docconv"
)

// setter lays out synthetic glyphs the way PDFium reports a Computer
// Modern page: each character a loose box from 0.25 em below its
// baseline to 0.75 em above, 0.5 em wide, numbered in stream order.
type setter struct {
	glyphs []docconv.Glyph
	index  int
}

// set draws s from x on baseline y in size pt, and returns the x after
// it. Its first glyph follows no space in the stream.
func (st *setter) set(s string, x, y, size float64) float64 {
	space := false
	for _, r := range s {
		if r == ' ' {
			x += 0.33 * size
			space = true
			continue
		}
		st.index++
		st.glyphs = append(st.glyphs, docconv.Glyph{R: r, Left: x, Right: x + 0.5*size,
			Bottom: y - 0.25*size, Top: y + 0.75*size, Index: st.index, SpaceBefore: space})
		x += 0.5 * size
		space = false
	}
	return x
}

// symbol draws r with a symbol font's loose box: height em tall, from
// below the baseline by bottom em, as Computer Modern's cmsy "•" or "−"
// (1.73 em, 0.96 em below).
func (st *setter) symbol(r rune, x, y, size, height, bottom float64) float64 {
	st.index++
	st.glyphs = append(st.glyphs, docconv.Glyph{R: r, Left: x, Right: x + 0.5*size,
		Bottom: y - bottom*size, Top: y + (height-bottom)*size, Index: st.index, SpaceBefore: true})
	return x + 0.5*size
}

func layoutText(glyphs []docconv.Glyph) []string {
	var out []string
	for _, l := range docconv.LayoutPage(glyphs, 612) {
		out = append(out, l.Text)
	}
	return out
}

// TestTallSymbolKeepsLinesApart: a symbol font's tall loose box (the "•"
// of a Texinfo bullet list, 1.73 em) reaches into the next line, and was
// the first glyph to grow its row's band, so the row took the next line
// too and the two lines' characters came out interleaved ("• astasntadn…"
// on asymptote.pdf's page 6). Each line keeps its own glyphs, the symbol
// in the line its middle sits in.
func TestTallSymbolKeepsLinesApart(t *testing.T) {
	const size, lead = 10.9, 13.15
	for _, tc := range []struct {
		name string
		// The symbol's box, in em (see setter.symbol): its middle
		// is below or above the line's.
		height, bottom float64
		// The symbols: a bullet at the first line's start, or minus
		// signs in both lines.
		minus bool
	}{
		{"bullet, middle below the line's", 1.73, 0.96, false},
		{"bullet, middle above the line's", 2.6, 1, false},
		{"minus in both lines", 1.73, 0.96, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st setter
			y := 600.0
			// A paragraph above, to set the page's usual height.
			st.set("The Asymptote vector graphics language provides:", 72, y+2*lead, size)
			var want []string
			if tc.minus {
				x := st.set("returns n!/(k!(n", 111.6, y, size)
				x = st.symbol('−', x+3, y, size, tc.height, tc.bottom)
				st.set("k)!), are also", x+3, y, size)
				x = st.set("defined (n", 111.6, y-lead, size)
				x = st.symbol('−', x+3, y-lead, size, tc.height, tc.bottom)
				st.set("1) for all n", x+3, y-lead, size)
				want = []string{"returns n!/(k!(n − k)!), are also", "defined (n − 1) for all n"}
			} else {
				st.symbol('•', 98.9, y, size, tc.height, tc.bottom)
				st.set("a standard for typesetting mathematical figures, just as", 111.6, y, size)
				st.set("standard for typesetting equations.", 111.6, y-lead, size)
				want = []string{"• a standard for typesetting mathematical figures, just as", "standard for typesetting equations."}
			}
			got := layoutText(st.glyphs)
			if len(got) != 3 || got[1] != want[0] || got[2] != want[1] {
				t.Errorf("lines %q, want the paragraph's, then %q", got, want)
			}
		})
	}
	t.Run("alone", func(t *testing.T) {
		// A tall glyph beside no line is a row of its own.
		var st setter
		st.set("Body text of the page, in its usual size.", 72, 600, 10)
		st.set("More body text on the next line.", 72, 588, 10)
		st.symbol('∑', 300, 560, 10, 2.6, 1)
		st.set("After the formula.", 72, 530, 10)
		want := []string{"Body text of the page, in its usual size.", "More body text on the next line.", "∑", "After the formula."}
		if got := layoutText(st.glyphs); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("lines %q, want %q", got, want)
		}
	})
}

// TestOverstrikeReadOnce: "poor man's bold" draws a word again over
// itself, shifted by a fraction of a point (twice, or three times); the
// text has it once. Letters set twice in a row ("committee", "all") are a
// glyph's width apart and stay, and so do the two f's PDFium spells a "ﬀ"
// ligature with, which share its box.
func TestOverstrikeReadOnce(t *testing.T) {
	const size = 10.0
	t.Run("poor man's bold", func(t *testing.T) {
		var st setter
		x := st.set("The", 72, 600, size)
		for _, dx := range []float64{0, 0.3, 0.6} {
			// Each copy of the word is drawn after the last.
			st.set("committee", x+3.3+dx, 600+dx/3, size)
		}
		st.set("shall meet.", x+3.3+9*5+3.3, 600, size)
		if got, want := layoutText(st.glyphs), []string{"The committee shall meet."}; strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("lines %q, want %q", got, want)
		}
	})
	t.Run("ligature", func(t *testing.T) {
		var st setter
		x := st.set("a di", 72, 600, size)
		// "ﬀ": two f's with the ligature's box, one after the other in
		// the stream.
		for range 2 {
			st.index++
			st.glyphs = append(st.glyphs, docconv.Glyph{R: 'f', Left: x, Right: x + 0.6*size,
				Bottom: 600 - 0.25*size, Top: 600 + 0.75*size, Index: st.index})
		}
		st.set("erent bell, de", x+0.6*size, 600, size)
		// "ﬁ", its i ahead of its f in the glyphs, as the sort by
		// height of a row of mixed fonts may leave them
		// (asymptote.pdf's page 49 read "deifned").
		x = st.glyphs[len(st.glyphs)-1].Right
		st.index += 2
		st.glyphs = append(st.glyphs,
			docconv.Glyph{R: 'i', Left: x, Right: x + 0.6*size, Bottom: 600 - 0.25*size, Top: 600 + 0.7*size, Index: st.index},
			docconv.Glyph{R: 'f', Left: x, Right: x + 0.6*size, Bottom: 600 - 0.25*size, Top: 600 + 0.7*size, Index: st.index - 1})
		st.set("ned", x+0.6*size, 600, size)
		if got, want := layoutText(st.glyphs), []string{"a different bell, defined"}; strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("lines %q, want %q", got, want)
		}
	})
}
