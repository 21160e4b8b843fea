package docconv

import (
	"fmt"
	"strings"
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

// TestEdgeCounterFields: a running header is recognised whatever the
// layout did with its page number: set in its own field, split off into
// another line by the column layout, or alone on a page that holds only
// its header; a field that repeats with another beside it (the header of
// the table of contents pages) counts on its own.
func TestEdgeCounterFields(t *testing.T) {
	body := func(n int) Line { return Line{Text: fmt.Sprintf("body text %d of the page", n)} }
	header := func(i int) []Line {
		title := fmt.Sprintf("CHAPTER %d. INTRODUCTION", 1+i/20)
		if i%2 == 0 {
			return []Line{{Text: fmt.Sprintf("%d %s", i, title), Segs: []string{fmt.Sprint(i), title}, Edge: -1, Outer: true}, body(i)}
		}
		return []Line{{Text: "2.1. WHAT'S NEW " + fmt.Sprint(i), Segs: []string{"2.1. WHAT'S NEW", fmt.Sprint(i)}, Edge: -1, Outer: true}, body(i)}
	}
	var c EdgeCounter
	for i := 1; i <= 100; i++ {
		c.Add(header(i))
	}
	for _, tc := range []struct {
		name  string
		page  int
		lines []Line
		want  []bool
	}{
		{"a header with its number as a field", 50, header(50), []bool{true, false}},
		{"a title split from its number by the column layout", 51, []Line{
			{Text: "2.1. WHAT'S NEW", Edge: -1, Outer: true, Column: 1},
			{Text: "51", Edge: -1, Outer: true, Column: 2},
			body(51)}, []bool{true, true, false}},
		{"a page of its header alone", 52, []Line{{Text: "52 CHAPTER 3. INTRODUCTION", Edge: -1, Outer: true}}, []bool{true}},
		{"the title beside the page's number, not a repeated one", 53, []Line{
			{Text: "A HEADER SEEN ONCE", Edge: -1, Outer: true, Column: 1},
			{Text: "53", Edge: -1, Outer: true, Column: 2},
			body(53)}, []bool{true, true, false}},
		{"a number beside it that is not the page's", 53, []Line{
			{Text: "A HEADER SEEN ONCE", Edge: -1, Outer: true, Column: 1},
			{Text: "7", Edge: -1, Outer: true, Column: 2},
			body(53)}, []bool{false, true, false}},
		{"a heading below the header beside a number", 54, []Line{
			{Text: "A heading", Edge: -1},
			{Text: "54", Edge: -1, Outer: true},
			body(54)}, []bool{false, true, false}},
		{"a footnote at the foot is text", 55, []Line{body(55), {Text: "CHAPTER 3. INTRODUCTION", Edge: 1, Outer: true, Note: "4"}}, []bool{false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.Drops(tc.lines, tc.page, ""); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("Drops = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestMarkEdgesByPosition: with the page's height known, the one line of a
// page that holds only its running header is at the top edge, and the
// lines of the outer row are all Outer.
func TestMarkEdgesByPosition(t *testing.T) {
	lines := []Line{{Text: "22 CHAPTER 2. INTRODUCTION", Top: 748, Bottom: 739}}
	markEdges(lines, 792)
	if lines[0].Edge != -1 || !lines[0].Outer {
		t.Errorf("a header-only page's line: %+v, want the top edge and outer", lines[0])
	}
	lines = []Line{{Text: "the last line of a page", Top: 80, Bottom: 70}}
	markEdges(lines, 792)
	if lines[0].Edge != 1 {
		t.Errorf("a footer-only page's line: %+v, want the bottom edge", lines[0])
	}
	lines = []Line{{Text: "6.6. ADVANCED TOPICS", Top: 748, Bottom: 739, Column: 1}, {Text: "155", Top: 748, Bottom: 739, Column: 2},
		{Text: "body", Top: 700, Bottom: 690}, {Text: "more body", Top: 600, Bottom: 590}, {Text: "foot", Top: 60, Bottom: 50}}
	markEdges(lines, 792)
	if !lines[0].Outer || !lines[1].Outer || lines[2].Outer || !lines[4].Outer {
		t.Errorf("outer rows: %+v", lines)
	}
}

// TestParagraphsNotesRowsHyphens: footnotes come apart, marked, after the
// paragraph that marks them; a table's rows are a line each; a word
// broken at a line's end is joined as it was written.
func TestParagraphsNotesRowsHyphens(t *testing.T) {
	y := 700.0
	line := func(text string) Line {
		y -= 12
		return Line{Text: text, Top: y + 10, Bottom: y, Left: 72, Right: 500}
	}
	lines := []Line{
		line("In major version four Frank added new chapters and converted the"),
		line("document to yodl."), // marks note 4
		line("The annotations are freely distributable; the standard FILE-"),
		line("based I/O of C stays, as do copy- and move-"),
		line("constructors and other well-"),
		line("known ideas."),
	}
	lines[1].Refs = []string{"4"}
	lines[1].Right = 200
	lines = append(lines, Line{Text: "Name\tSize", Segs: []string{"Name", "Size"}, Top: y - 30, Bottom: y - 40, Left: 72, Right: 400})
	y -= 40
	lines = append(lines, Line{Text: "int 4", Segs: []string{"int", "4 bytes"}, Top: y - 2, Bottom: y - 12, Left: 72, Right: 400})
	lines = append(lines,
		Line{Text: "https://fbb-git.gitlab.io/yodl/", Note: "4", Top: 90, Bottom: 80, Left: 72, Right: 300},
		Line{Text: "legal.shtml", Note: "5", Top: 78, Bottom: 68, Left: 72, Right: 300})
	got := Paragraphs(lines)
	want := []string{
		"In major version four Frank added new chapters and converted the document to yodl.",
		"[4] https://fbb-git.gitlab.io/yodl/",
		"The annotations are freely distributable; the standard FILE-based I/O of C stays, as do copy- and move-constructors and other wellknown ideas.",
		"Name | Size\nint | 4 bytes",
		"[5] legal.shtml",
	}
	if strings.Join(got, "\n---\n") != strings.Join(want, "\n---\n") {
		t.Errorf("Paragraphs =\n%q\nwant\n%q", got, want)
	}
}
