package docconv

import (
	"fmt"
	"testing"
)

// TestEdgeCounter runs the running-header rules over made-up books.
func TestEdgeCounter(t *testing.T) {
	top := func(text string) Line { return Line{Text: text, Edge: -1, Outer: true} }
	body := func(n int) Line { return Line{Text: fmt.Sprintf("body text %d of the page", n)} }
	for _, tc := range []struct {
		name  string
		pages func(i int) []Line // page i from 1
		line  Line
		want  bool
	}{
		{"page numbers of changing width", func(i int) []Line {
			return []Line{top(fmt.Sprintf("Debian Reference %d / 233", i)), body(i)}
		}, top("Debian Reference 100 / 233"), true},
		{"roman front matter", func(i int) []Line {
			return []Line{top("Debian Reference " + []string{"i", "ii", "iii", "iv", "v", "vi", "vii", "viii"}[i%8]), body(i)}
		}, top("Debian Reference xix"), true},
		{"a chapter's header over its run", func(i int) []Line {
			return []Line{top(fmt.Sprintf("Chapter %d: Title %d", 1+i/25, i)), body(i)}
		}, top("Chapter 2: Title 30"), true},
		{"odd pages only", func(i int) []Line {
			if i%2 == 0 || i > 20 {
				return []Line{body(i)}
			}
			return []Line{top(fmt.Sprintf("Chapter 1: Rivers %d", i)), body(i)}
		}, top("Chapter 1: Rivers 7"), true},
		{"a page's topic and its number", func(i int) []Line {
			return []Line{top(fmt.Sprintf("topic%d %d", i, i+6)), body(i)}
		}, top("topic50 56"), true},
		{"a heading with the page's number below the header", func(i int) []Line {
			if i != 50 {
				return []Line{top(fmt.Sprintf("Book %d", i)), body(i)}
			}
			return []Line{top(fmt.Sprintf("Book %d", i)), {Text: "Chapter 50", Edge: -1}, body(i)}
		}, Line{Text: "Chapter 50", Edge: -1}, false},
		{"a version repeated twice", func(i int) []Line {
			if i > 2 {
				return []Line{body(i)}
			}
			return []Line{top("Version 4.2.2"), body(i)}
		}, top("Version 4.2.2"), false},
		{"a line on three scattered pages", func(i int) []Line {
			if i%40 != 1 {
				return []Line{body(i)}
			}
			return []Line{top("See the figure below"), body(i)}
		}, top("See the figure below"), false},
		{"not at an edge", func(i int) []Line {
			return []Line{body(i)}
		}, body(3), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c EdgeCounter
			for i := 1; i <= 100; i++ {
				c.Add(tc.pages(i))
			}
			if got := c.Drop(tc.line, 50, ""); got != tc.want {
				t.Errorf("Drop(%q) = %v, want %v", tc.line.Text, got, tc.want)
			}
		})
	}
}

// TestFootnoteMarks: raised, smaller digits glued to a word are footnote
// marks; after a digit they are one only when the page has that footnote.
func TestFootnoteMarks(t *testing.T) {
	// glyphs sets text at x from 0, 6 points a glyph; digits in sup are
	// superscripts (size 7, baseline raised 4), others size 10.
	glyphs := func(text string, sup map[int]bool, y float64) []Glyph {
		var gs []Glyph
		x := 0.0
		for i, r := range text {
			g := Glyph{R: r, Left: x, Right: x + 5, Bottom: y - 2, Top: y + 8, Size: 10, Baseline: y, Index: i + 1}
			if sup[i] {
				g.Size, g.Baseline, g.Bottom, g.Top = 7, y+4, y+3, y+9
			}
			if r == ' ' {
				x += 6
				continue
			}
			gs = append(gs, g)
			x += 6
		}
		return gs
	}
	for _, tc := range []struct {
		name     string
		text     string
		sup      map[int]bool
		footnote string
		want     string
	}{
		{"after a word", "use OpenMP35 here", map[int]bool{10: true, 11: true}, "", "use OpenMP here"},
		{"after punctuation", "an error,5 then", map[int]bool{9: true}, "", "an error, then"},
		{"an exponent", "up to 231 bytes", map[int]bool{7: true, 8: true}, "", "up to 2^31 bytes"},
		{"a footnote after a number", "gcc 10107 and", map[int]bool{6: true, 7: true, 8: true}, "107", "gcc 10 and"},
		{"plain digits", "version 42 now", nil, "", "version 42 now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gs := glyphs(tc.text, tc.sup, 700)
			if tc.footnote != "" {
				for _, g := range glyphs(tc.footnote+" The note.", map[int]bool{0: true, 1: true, 2: true}, 100) {
					if g.Size == 7 {
						g.Size = 6
					} else {
						g.Size = 8
					}
					gs = append(gs, g)
				}
			}
			lines := LayoutPage(gs, 600)
			if len(lines) == 0 || lines[0].Text != tc.want {
				t.Errorf("lines = %+v, want the first %q", lines, tc.want)
			}
		})
	}
}
