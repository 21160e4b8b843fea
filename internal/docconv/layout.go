package docconv

import (
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Glyph is one character of a PDF page with its box in PDF user space
// (points, y grows upwards), as PDFium reports it.
type Glyph struct {
	R                        rune
	Left, Bottom, Right, Top float64
	// Size is the font size in points and Baseline the y of the glyph's
	// origin, when known (0 and 0 otherwise): a footnote mark is a digit
	// set smaller and raised above the line's baseline.
	Size, Baseline float64
	// Index is the glyph's place in the page's text stream, from 1 (0
	// when unknown), and SpaceBefore whether a space (the PDF's own, or
	// one PDFium inferred) came between it and the glyph before it in the
	// stream. A space there breaks words that the gap alone would join:
	// typesetters justify lines with word spaces narrower than a fifth of
	// the line's height.
	Index       int
	SpaceBefore bool
	// runStart marks the first glyph of a run of text that untangle put
	// after another run drawn over the same place: a word break.
	runStart bool
}

// Line is one line of a page's text in reading order, with the facts the
// header/footer and paragraph rules need.
type Line struct {
	Text string `json:"t"`
	// Top and Bottom are the line's extent in points, y upwards.
	Top    float64 `json:"y1"`
	Bottom float64 `json:"y0"`
	// Left and Right are its horizontal extent.
	Left  float64 `json:"x0"`
	Right float64 `json:"x1"`
	// Column is 0 for a line across the page, 1 or 2 for the left or
	// right column of a two-column band.
	Column int `json:"c,omitempty"`
	// Band counts the page's vertical bands (a full-width line starts a
	// new one); a paragraph never spans two bands.
	Band int `json:"b,omitempty"`
	// Edge is -1 for the page's two topmost lines, +1 for its two
	// bottom-most, 0 otherwise: the places where running headers, footers
	// and page numbers sit.
	Edge int `json:"e,omitempty"`
	// Outer marks the lines of the topmost and of the bottom-most row
	// (a running header split in two by the column layout is two lines
	// of one row).
	Outer bool `json:"o,omitempty"`
	// Segs are the line's pieces between gaps wider than twice its
	// height, when it has more than one: the fields of a running header
	// ("22", "CHAPTER 2. INTRODUCTION"), which the header rules match
	// one by one.
	Segs []string `json:"s,omitempty"`
	// Cell is the left edge of the last of Segs, where the lines that go
	// on a table row's last field (a description that wraps) start.
	Cell float64 `json:"sx,omitempty"`
	// Note is set on the lines of a footnote at the page's foot: the
	// note's number (its first line starts with it, raised; the number is
	// not in Text). Refs are the footnote marks the line's text dropped
	// ("use OpenMP³⁵": "35").
	Note string   `json:"n,omitempty"`
	Refs []string `json:"r,omitempty"`
	// Size is the line's font size in points, Bold and Mono whether it
	// is set in a bold or a monospaced (typewriter) font, as PDFium
	// reports them for the line's first, middle and last glyphs (a line
	// is bold or monospaced when all three are); Pitch is a monospaced
	// line's character width in points. They tell a heading from the
	// text below it and code from prose; zero when unknown (OCR).
	Size  float64 `json:"z,omitempty"`
	Bold  bool    `json:"w,omitempty"`
	Mono  bool    `json:"m,omitempty"`
	Pitch float64 `json:"pw,omitempty"`
	// samples are the text-stream indexes (from 1) of the glyphs whose
	// font readLineFonts reads, width the median width of the line's
	// glyphs, and even whether nine in ten are that wide: a monospaced
	// font's loose boxes are its one advance wide, so a line of prose
	// with code words at its ends and middle is not taken for code.
	samples [3]int
	width   float64
	even    bool
}

func (l Line) height() float64 { return l.Top - l.Bottom }

// word is a run of glyphs without a gap wide enough to be a space.
type word struct {
	text                     strings.Builder
	left, bottom, right, top float64
	n                        int
}

// PageBox is the part of a page a viewer shows, in PDF user space
// (points, y upwards): its media box cut by its crop box.
type PageBox struct{ Left, Bottom, Right, Top float64 }

// Visible drops the glyphs that box does not show: those wholly left of
// it, below or above it, and those that begin at or past its right edge,
// as pdftotext drops a character whose origin lies past the page's width.
// A path set in a typewriter font that runs past the right margin
// ("~/.local/share/keyrings/*" in debian-reference's PDF) ends where the
// page ends ("~/.local/share/keyr"), rather than print words nobody
// sees. A zero box (unknown) keeps every glyph.
func Visible(glyphs []Glyph, box PageBox) []Glyph {
	if box.Right <= box.Left || box.Top <= box.Bottom {
		return glyphs
	}
	out := glyphs[:0]
	for _, g := range glyphs {
		if g.Right <= box.Left || g.Left >= box.Right || g.Top <= box.Bottom || g.Bottom >= box.Top {
			continue
		}
		out = append(out, g)
	}
	return out
}

// LayoutPage orders a page's glyphs for reading: glyphs are grouped into
// lines, a page whose lines split at a common vertical gutter is read as
// two columns (left, then right, in each band between full-width lines),
// and lines come back top to bottom within each column. width is the
// page's width in points; its height is not known, so a page of one or
// two lines has them at both edges.
func LayoutPage(glyphs []Glyph, width float64) []Line {
	return LayoutPageSize(glyphs, width, 0)
}

// LayoutPageSize is LayoutPage for a page of known height (points): a
// line is at the top edge only in the page's upper half, and at the
// bottom edge only in its lower half, so that the one line of a page that
// holds only its running header is at the top.
func LayoutPageSize(glyphs []Glyph, width, height float64) []Line {
	rows := groupRows(glyphs)
	if len(rows) == 0 {
		return nil
	}
	notes := footnoteNumbers(rows)
	for i := range rows {
		rows[i].notes = notes
	}
	// Each row split at wide horizontal gaps into segments: a two-column
	// page has two segments on most rows, with the gutter between them.
	var segs []segment
	for _, r := range rows {
		segs = append(segs, r.split()...)
	}
	gutter, ok := findGutter(segs, width)
	var lines []Line
	if !ok {
		for _, r := range rows {
			lines = append(lines, r.line(nil, 0, 0))
		}
	} else {
		lines = twoColumns(rows, gutter)
	}
	markEdges(lines, height)
	markNotes(lines, height)
	return lines
}

// markNotes keeps Note on the lines of the footnotes at the page's foot:
// from a line that starts with a footnote's number in the page's lower
// half (or anywhere, with the height unknown), every line below it in its
// column and band is that note's, or the next one's; a line above the
// first is body text, and its number was not a footnote's.
func markNotes(lines []Line, height float64) {
	current := map[[2]int]*Line{}
	for i := range lines {
		l := &lines[i]
		key := [2]int{l.Band, l.Column}
		start := current[key]
		switch {
		case l.Note != "" && (height <= 0 || (l.Top+l.Bottom)/2 < height/2) && (start == nil || l.Top <= start.Top):
			current[key] = l
		case l.Note != "":
			// Raised digits at a line's start above the foot: body text.
			l.Text, l.Note = strings.TrimSpace(l.Note+l.Text), ""
		case start != nil && l.Top <= start.Top:
			l.Note = start.Note
		}
	}
}

// edgeLines is how many lines at the top and at the bottom of a page may
// be a running header or footer.
const edgeLines = 2

// markEdges sets Edge on the topmost and bottom-most lines, and Outer on
// those of the topmost and the bottom-most row. With the page's height
// (> 0), a line is at the top edge only in the page's upper half and at
// the bottom only in its lower half.
func markEdges(lines []Line, height float64) {
	if len(lines) == 0 {
		return
	}
	order := make([]int, len(lines))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return lines[order[a]].Top > lines[order[b]].Top })
	upper := func(l Line) bool { return height <= 0 || (l.Top+l.Bottom)/2 >= height/2 }
	for k := len(order) - 1; k >= 0 && k >= len(order)-edgeLines; k-- {
		if l := &lines[order[k]]; height <= 0 || !upper(*l) {
			l.Edge = 1
		}
	}
	for k := 0; k < edgeLines && k < len(order); k++ {
		if l := &lines[order[k]]; upper(*l) && (height > 0 || l.Edge == 0) {
			l.Edge = -1
		}
	}
	first, last := lines[order[0]], lines[order[len(order)-1]]
	for i := range lines {
		l := &lines[i]
		switch {
		case l.Edge < 0 && overlaps(*l, first), l.Edge > 0 && overlaps(*l, last):
			l.Outer = true
		}
	}
}

// overlaps reports whether two lines share some height: one row.
func overlaps(a, b Line) bool {
	return a.Bottom < b.Top && b.Bottom < a.Top
}

// row is the glyphs that share a baseline band, left to right.
type row struct {
	glyphs      []Glyph
	top, bottom float64
	// notes is the numbers of the page's footnotes (see footnoteNumbers).
	notes map[string]bool
}

// sameSet reports whether two glyphs are set in the same size on the same
// baseline.
func sameSet(a, b Glyph) bool {
	return math.Abs(a.Size-b.Size) <= 0.1*math.Max(a.Size, b.Size) && math.Abs(a.Baseline-b.Baseline) <= 0.1*math.Max(a.Size, b.Size)
}

// footnoteNumbers finds the numbers the page's footnotes begin with: a
// row that starts with superscript digits (see row.superscripts), or a
// row of digits alone (raised above its footnote's line, it is a row of
// its own) set at most 80% of the size of the glyph after it in the text
// stream.
func footnoteNumbers(rows []row) map[string]bool {
	stream := textStream(rows)
	notes := map[string]bool{}
	for k, r := range rows {
		n, alone := r.leadingSuperscripts()
		if alone && n == "" && raisedAlone(rows, k, stream) {
			var b strings.Builder
			for _, g := range r.glyphs {
				b.WriteRune(g.R)
			}
			n = b.String()
		}
		if n != "" {
			notes[n] = true
		}
	}
	return notes
}

// textStream is the rows' glyphs in the order of the text stream (those
// with an index).
func textStream(rows []row) []Glyph {
	var stream []Glyph
	for _, r := range rows {
		for _, g := range r.glyphs {
			if g.Index > 0 {
				stream = append(stream, g)
			}
		}
	}
	sort.Slice(stream, func(i, j int) bool { return stream[i].Index < stream[j].Index })
	return stream
}

// nextInStream is the glyph after g in the text stream.
func nextInStream(stream []Glyph, g Glyph) (Glyph, bool) {
	k := sort.Search(len(stream), func(k int) bool { return stream[k].Index > g.Index })
	if g.Index <= 0 || k == len(stream) {
		return Glyph{}, false
	}
	return stream[k], true
}

// leadingSuperscripts are the superscript digits the row starts with
// (see row.superscripts), and whether the row is digits alone.
func (r row) leadingSuperscripts() (digits string, alone bool) {
	sup := r.superscripts()
	var n strings.Builder
	alone = true
	for i, g := range r.glyphs {
		if !unicode.IsDigit(g.R) {
			alone = false
		}
		if sup[i] && alone {
			n.WriteRune(g.R)
		}
	}
	return n.String(), alone
}

// raisedAlone reports whether rows[k], digits alone, is a footnote's
// number: set at most 80% of the size of the glyph after it in the text
// stream, or raised beside the first line of its note.
func raisedAlone(rows []row, k int, stream []Glyph) bool {
	r := rows[k]
	last := r.glyphs[len(r.glyphs)-1]
	next, ok := nextInStream(stream, last)
	// Or raised beside the first line of its note, which the row
	// below holds: the digits overlap it, just left of its text,
	// and are set smaller.
	beside := false
	if k < len(rows)-1 {
		below := rows[k+1]
		first := below.glyphs[0]
		beside = r.bottom < below.top && r.top > below.top && first.Left >= last.Right-0.5 && first.Left-last.Right < below.height() &&
			r.height() < 0.85*below.height()
	}
	return beside || ok && last.Size > 0 && next.Size > 0 && last.Size <= 0.8*next.Size
}

// groupRows clusters glyphs into rows by vertical overlap, top to bottom,
// each row's glyphs left to right. Glyphs with no box (PDFium's generated
// spaces and line breaks) are dropped; spacing comes from the geometry.
//
// A glyph joins the row whose band holds its middle, and the band grows
// with it. Glyphs much taller than the page's usual (see outsized) join
// only after every other glyph has its row: a symbol font's loose box,
// such as Computer Modern's for "•", "−" or "×" in a Texinfo manual, is
// 1.7 em tall, and as the first to grow a row's band it would draw the
// next line's glyphs into the row, the two lines' characters interleaved
// ("• astasntadnadrdar fdorfo…" for "• a standard for…").
// Overstruck copies of a glyph are dropped (see overstruck).
func groupRows(glyphs []Glyph) []row {
	gs := make([]Glyph, 0, len(glyphs))
	for _, g := range glyphs {
		if g.R == 0 || unicode.IsSpace(g.R) || unicode.IsControl(g.R) || g.Top <= g.Bottom {
			continue
		}
		gs = append(gs, g)
	}
	// Top to bottom by vertical middle, then left to right.
	sort.SliceStable(gs, func(i, j int) bool {
		mi, mj := (gs[i].Top+gs[i].Bottom)/2, (gs[j].Top+gs[j].Bottom)/2
		if math.Abs(mi-mj) > 0.5 {
			return mi > mj
		}
		return gs[i].Left < gs[j].Left
	})
	tall := outsized(gs)
	var rows []row
	var late []Glyph
	for _, g := range gs {
		if g.Top-g.Bottom > tall {
			late = append(late, g)
			continue
		}
		mid := (g.Top + g.Bottom) / 2
		placed := false
		// A glyph joins the latest rows whose band holds its middle.
		for k := len(rows) - 1; k >= 0 && k >= len(rows)-3; k-- {
			r := &rows[k]
			if mid <= r.top && mid >= r.bottom {
				r.add(g)
				placed = true
				break
			}
		}
		if !placed {
			rows = append(rows, row{glyphs: []Glyph{g}, top: g.Top, bottom: g.Bottom})
		}
	}
	rows = placeLate(rows, late)
	for i := range rows {
		// Left to right; the letters of a ligature ("fi": PDFium gives
		// each the ligature's box) in the text stream's order.
		gs := rows[i].glyphs
		sort.SliceStable(gs, func(a, b int) bool {
			if gs[a].Left != gs[b].Left {
				return gs[a].Left < gs[b].Left
			}
			return gs[a].Index < gs[b].Index
		})
		rows[i].glyphs = untangle(overstruck(gs), rows[i].height())
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].top > rows[j].top })
	return rows
}

// add puts g in the row and grows its band to hold g's box.
func (r *row) add(g Glyph) {
	r.glyphs = append(r.glyphs, g)
	r.top, r.bottom = math.Max(r.top, g.Top), math.Min(r.bottom, g.Bottom)
}

// ligature reports whether glyphs a and b are letters of one ligature:
// PDFium spells "ﬀ" as two f's, next to each other in the text stream with
// the ligature's box each. An overstruck copy is drawn again, after the
// rest of its word or line, and rarely to a hundredth of a point.
func ligature(a, b Glyph) bool {
	const same = 0.01
	return a.Index > 0 && b.Index > 0 && (a.Index-b.Index == 1 || b.Index-a.Index == 1) &&
		math.Abs(a.Left-b.Left) < same && math.Abs(a.Right-b.Right) < same &&
		math.Abs(a.Bottom-b.Bottom) < same && math.Abs(a.Top-b.Top) < same
}

// outsized is the height above which a glyph of gs (sorted by middle) is
// too tall to set a row's band: 1.4 times the median height. A page's
// body text sets the median; headings up to Texinfo's section size (14.4
// on 10 or 11 points) stay under the bound, and taller glyphs still make
// rows of their own where no line is beside them.
func outsized(gs []Glyph) float64 {
	if len(gs) == 0 {
		return 0
	}
	hs := make([]float64, len(gs))
	for i, g := range gs {
		hs[i] = g.Top - g.Bottom
	}
	sort.Float64s(hs)
	return 1.4 * hs[len(hs)/2]
}

// placeLate puts each of the late glyphs (outsized, top to bottom) in the
// row of rows whose band, as the other glyphs set it, holds its middle
// (the nearest band's middle when two do), without growing the band; the
// rest make rows of their own, which later late glyphs may join.
func placeLate(rows []row, late []Glyph) []row {
	if len(late) == 0 {
		return rows
	}
	// The bands before any late glyph grows them, by top.
	n := len(rows)
	type band struct {
		top, bottom float64
		k           int
	}
	bands := make([]band, n)
	for k, r := range rows {
		bands[k] = band{r.top, r.bottom, k}
	}
	sort.Slice(bands, func(i, j int) bool { return bands[i].top > bands[j].top })
	var own []row
	for _, g := range late {
		mid := (g.Top + g.Bottom) / 2
		// The bands that reach above mid are a prefix; of its last few
		// (bands overlap little), the nearest that holds mid.
		end := sort.Search(len(bands), func(i int) bool { return bands[i].top < mid })
		best, dist := -1, math.Inf(1)
		for i := end - 1; i >= 0 && i >= end-4; i-- {
			b := bands[i]
			if mid >= b.bottom {
				if d := math.Abs(mid - (b.top+b.bottom)/2); d < dist {
					best, dist = b.k, d
				}
			}
		}
		if best >= 0 {
			// The band stays the line's: as tall as the symbol, it
			// would overlap the next line, and Paragraphs would
			// break the paragraph there.
			rows[best].glyphs = append(rows[best].glyphs, g)
			continue
		}
		placed := false
		for k := len(own) - 1; k >= 0 && k >= len(own)-3; k-- {
			if r := &own[k]; mid <= r.top && mid >= r.bottom {
				r.add(g)
				placed = true
				break
			}
		}
		if !placed {
			own = append(own, row{glyphs: []Glyph{g}, top: g.Top, bottom: g.Bottom})
		}
	}
	return append(rows, own...)
}

// overstruck drops from a row's glyphs (left to right) the copies of a
// glyph drawn again over it: the same character whose box is shifted by
// at most a tenth of its height sideways and a fifth up or down, the way
// "poor man's bold" (a font without a bold face, a typewriter's
// overstrike) sets it twice or more, and the way pdftotext removes them.
// The copy first in the text stream stays. A letter set twice in a row
// ("committee", "ll") is a glyph's width apart and stays, and so do the
// letters of a ligature (see ligature).
func overstruck(gs []Glyph) []Glyph {
	out := gs[:0]
	for _, g := range gs {
		h := g.Top - g.Bottom
		dup := false
		for j := len(out) - 1; j >= 0 && out[j].Left >= g.Left-0.1*h; j-- {
			o := &out[j]
			if o.R == g.R && math.Abs(o.Left-g.Left) <= 0.1*h && math.Abs(o.Bottom-g.Bottom) <= 0.2*h && math.Abs(o.Top-g.Top) <= 0.2*h && !ligature(*o, g) {
				if g.Index > 0 && (o.Index == 0 || g.Index < o.Index) {
					*o = g
				}
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, g)
		}
	}
	return out
}

func (r row) height() float64 { return r.top - r.bottom }

// accent reports whether r is an accent set as a glyph of its own: a
// modifier symbol such as "¨" or "´", a spacing modifier letter such as
// "ˆ" (U+02C6), or a combining mark.
func accent(r rune) bool {
	return unicode.In(r, unicode.Sk, unicode.Mn) || r >= 0x02B0 && r <= 0x02FF
}

// untangle keeps apart the texts of a row that are drawn over each other:
// a table cell whose text runs on into the next cell's ("ssh-askpass(1)"
// under "ask user for a pass phrase" in dblatex's tables), whose glyphs,
// put left to right, interleave ("ssh-askpassa(1sk)s user"). The row's
// glyphs (left to right, of height h) are cut, in the text stream's
// order, into runs that go left to right; when two runs of three glyphs
// or more overlap by more than half the row's height, the row is read
// run by run, each left to right, the runs by where they start, with a
// word break between them. A row whose runs lie side by side, the usual
// case, is left as it is; so is one whose glyphs' places in the stream
// are not known.
func untangle(gs []Glyph, h float64) []Glyph {
	if len(gs) < 6 {
		return gs
	}
	byStream := make([]Glyph, len(gs))
	copy(byStream, gs)
	for _, g := range byStream {
		if g.Index == 0 {
			return gs
		}
	}
	sort.SliceStable(byStream, func(a, b int) bool { return byStream[a].Index < byStream[b].Index })
	type run struct {
		glyphs      []Glyph
		left, right float64
	}
	var runs []run
	var last Glyph // the run's last glyph that is not an accent
	for _, g := range byStream {
		if n := len(runs); n > 0 {
			// An accent (LaTeX sets "ö" as "o" and a "¨" over it, in
			// either order) goes with its run; the glyph after it is
			// measured from the letter before.
			if accent(g.R) || g.Left >= last.Left-h*0.3 && (g.Left >= last.Right-h*0.3 || ligature(last, g)) {
				r := &runs[n-1]
				r.glyphs = append(r.glyphs, g)
				r.left, r.right = math.Min(r.left, g.Left), math.Max(r.right, g.Right)
				if !accent(g.R) {
					last = g
				}
				continue
			}
		}
		runs = append(runs, run{glyphs: []Glyph{g}, left: g.Left, right: g.Right})
		last = g
	}
	tangled := false
	for i := range runs {
		for j := i + 1; j < len(runs) && !tangled; j++ {
			a, b := runs[i], runs[j]
			if len(a.glyphs) >= 3 && len(b.glyphs) >= 3 && math.Min(a.right, b.right)-math.Max(a.left, b.left) > h*0.5 {
				tangled = true
			}
		}
	}
	if !tangled {
		return gs
	}
	// Each run in the stream's order is a block of its own, read left to
	// right, unless it starts where a glyph of an earlier block ends, later
	// in the stream, and that glyph ends its block or is overlapped by the
	// glyph after it: then it goes on after that glyph ("(1)" after
	// "ssh-askpass", with a word break before "asks user", which it was
	// drawn over). The blocks are read by where they start, set apart by
	// word breaks.
	byLeft := func(gs []Glyph) {
		sort.SliceStable(gs, func(a, b int) bool {
			if gs[a].Left != gs[b].Left {
				return gs[a].Left < gs[b].Left
			}
			return gs[a].Index < gs[b].Index
		})
	}
	var blocks [][]Glyph
	for _, r := range runs {
		byLeft(r.glyphs)
		b, at, best := -1, -1, h*0.1
		for i, block := range blocks {
			for k, g := range block {
				// After the block's last glyph, or one the next glyph
				// was drawn over (a run cut short, its end put
				// elsewhere in the stream): not inside a word.
				over := k == len(block)-1 || block[k+1].Left < g.Right-h*0.05
				if d := math.Abs(g.Right - r.left); over && d <= best && g.Index < r.glyphs[0].Index {
					b, at, best = i, k, d
				}
			}
		}
		if b < 0 {
			blocks = append(blocks, r.glyphs)
			continue
		}
		rest := append([]Glyph(nil), blocks[b][at+1:]...)
		if len(rest) > 0 {
			rest[0].runStart = true
		}
		// The space the stream has before the run was before it where
		// the stream had it, not here: only a gap breaks the word.
		r.glyphs[0].SpaceBefore = false
		blocks[b] = append(append(blocks[b][:at+1], r.glyphs...), rest...)
	}
	sort.SliceStable(blocks, func(a, b int) bool { return blocks[a][0].Left < blocks[b][0].Left })
	out := make([]Glyph, 0, len(gs))
	for k, block := range blocks {
		if k > 0 {
			block[0].runStart = true
		}
		out = append(out, block...)
	}
	return out
}

// text joins the row's glyphs (those keep accepts, or all), with a space
// where the gap between two glyphs is wider than a fifth of the row's
// height. Footnote reference marks are dropped: superscripts (see
// r.superscripts) glued to the end of a word or of punctuation, such as
// "OpenMP³⁵" or "error,⁵¹", and after a digit when the page has a
// footnote of that number ("C99³"); otherwise a superscript after a digit
// is an exponent, kept as "2^31".
func (r row) text(keep func(Glyph) bool) string {
	t, _ := r.textRefs(keep)
	return t
}

// textRefs is text, and the footnote marks it dropped.
func (r row) textRefs(keep func(Glyph) bool) (string, []string) {
	var refs []string
	var b strings.Builder
	h := r.height()
	sup := r.superscripts()
	var prev *Glyph
	afterMark := false
	space := r.wordSpace()
	for i := 0; i < len(r.glyphs); i++ {
		g := r.glyphs[i]
		if keep != nil && !keep(g) {
			continue
		}
		if sup[i] && prev != nil && g.Left-prev.Right <= h*0.2 {
			j := i
			for j < len(r.glyphs) && sup[j] && (keep == nil || keep(r.glyphs[j])) {
				j++
			}
			var mark strings.Builder
			for _, s := range r.glyphs[i:j] {
				mark.WriteRune(s.R)
			}
			if r.writeMark(&b, *prev, mark.String()) {
				refs = append(refs, mark.String())
			}
			prev = &r.glyphs[j-1]
			i = j - 1
			afterMark = true
			continue
		}
		if prev != nil && (g.runStart || breaksWord(*prev, g, h, afterMark) || !afterMark && space.breaks(*prev, g)) {
			b.WriteByte(' ')
		}
		b.WriteRune(g.R)
		prev = &r.glyphs[i]
		afterMark = false
	}
	return b.String(), refs
}

// writeMark writes superscript digits mark, glued to glyph prev, to b,
// or reports a footnote mark, which it leaves out: "^31" for an exponent
// after a digit, nothing for a footnote's mark after a number (the page
// has that footnote), a letter or punctuation, mark as it is otherwise.
func (r row) writeMark(b *strings.Builder, prev Glyph, mark string) (ref bool) {
	switch {
	case unicode.IsDigit(prev.R) && !r.notes[mark]:
		b.WriteByte('^')
		b.WriteString(mark)
	case unicode.IsDigit(prev.R):
		// A footnote mark after a number.
		return true
	case unicode.IsLetter(prev.R) || strings.ContainsRune(".,;:!?)]}'\"’”", prev.R):
		// A footnote mark: dropped, and the next glyph spaced
		// from the word as if it were not there.
		return true
	default:
		b.WriteString(mark)
	}
	return false
}

// breaksWord reports whether a space goes between glyphs prev and g of a
// row of height h; afterMark says prev ends a superscript mark.
func breaksWord(prev, g Glyph, h float64, afterMark bool) bool {
	if afterMark {
		// PDFium may see a space where the baseline drops back
		// after a superscript: only a real gap counts.
		gap := g.Left - prev.Right
		return gap > h*0.2 || g.SpaceBefore && gap > h*0.05
	}
	return spaced(prev, g, h)
}

// spaced reports whether a word break lies between glyphs a and b of a
// row of height h, b right of a: a gap wider than a fifth of h, or a
// space in the text stream between them (the PDF's own, or one PDFium
// inferred) where they do not overlap by more than a tenth of h. On one
// baseline in one font (loose boxes of the same bottom and top), a space
// that b is drawn back over, however little, is a kern: Ghostscript
// places a kerned pair with the PDF's own space between its glyphs and a
// word spacing that cancels it ("Nev ertheless" in groff's pdfmark.pdf,
// the "e" 0.15 pt over the "v"), and the page shows no space there;
// pdftotext, which reads no space characters, breaks words by the gap
// alone. Text set on a slant (a figure's rotated labels) keeps its
// spaces: its glyphs' boxes overlap whatever the spacing.
func spaced(a, b Glyph, h float64) bool {
	gap := b.Left - a.Right
	if gap > h*0.2 {
		return true
	}
	if !b.SpaceBefore || b.Index <= a.Index {
		return false
	}
	level := math.Abs(a.Bottom-b.Bottom) <= h*0.01 && math.Abs(a.Top-b.Top) <= h*0.01
	return gap > 0 || !level && gap > -h*0.1
}

// rowSpace is the width of a row's word spaces, from the gaps where
// the text stream has a space: a gap at least 60% as wide, and wider
// than a tenth of the row's height, is a word break though the stream
// has none there. groff's justified lines set some words apart by a
// position alone, 1.8–2 pt at 10 pt ("If any jobs", "turns off any" in
// bash's manual), where the other word spaces of the line are 2–3 pt and
// the gaps between letters under 0.1 pt; a fixed fifth of the height
// joined them ("anyjobs", "offany").
type rowSpace struct{ min float64 }

// wordSpace measures the row's word spaces: the median of its stream
// spaces' gaps wider than a tenth of its height, when it has three or
// more (too few leave the fixed rule alone).
func (r row) wordSpace() rowSpace {
	h := r.height()
	var gaps []float64
	for i := 1; i < len(r.glyphs); i++ {
		a, b := r.glyphs[i-1], r.glyphs[i]
		if gap := b.Left - a.Right; b.SpaceBefore && b.Index > a.Index && gap > h*0.1 && gap < h {
			gaps = append(gaps, gap)
		}
	}
	if len(gaps) < 3 {
		return rowSpace{}
	}
	sort.Float64s(gaps)
	return rowSpace{min: math.Max(h*0.1, gaps[len(gaps)/2]*0.6)}
}

// breaks reports whether the gap between a and b, b right of a, is as
// wide as the row's word spaces.
func (s rowSpace) breaks(a, b Glyph) bool {
	return s.min > 0 && b.Left-a.Right >= s.min && !accent(a.R) && !accent(b.R)
}

// superscripts marks the row's digits that are set as superscripts: a
// run of digits set alike, in a font at most 80% of the size of the glyph before the
// run (or, at the row's start, after it), with its baseline raised by at
// least a fifth of that size. Glyphs without a known size are never
// superscripts.
func (r row) superscripts() []bool {
	sup := make([]bool, len(r.glyphs))
	for i := 0; i < len(r.glyphs); {
		if !unicode.IsDigit(r.glyphs[i].R) {
			i++
			continue
		}
		// A run of digits set alike: "2³¹" is two runs.
		j := i + 1
		for j < len(r.glyphs) && unicode.IsDigit(r.glyphs[j].R) && sameSet(r.glyphs[i], r.glyphs[j]) {
			j++
		}
		var ref Glyph
		switch {
		case i > 0:
			ref = r.glyphs[i-1]
		case j < len(r.glyphs):
			ref = r.glyphs[j]
		}
		raised := ref.Size > 0
		for _, g := range r.glyphs[i:j] {
			raised = raised && g.Size > 0 && g.Size <= 0.8*ref.Size && g.Baseline-ref.Baseline >= 0.2*ref.Size
		}
		for k := i; k < j; k++ {
			sup[k] = raised
		}
		i = j
	}
	return sup
}

// line makes a Line of the row's glyphs that keep accepts (or all). A
// line that starts with raised digits that number one of the page's
// footnotes (see footnoteNumbers) may be a footnote's first line: its
// Note is that number, which its Text leaves out (markNotes decides).
func (r row) line(keep func(Glyph) bool, column, band int) Line {
	note, keep := r.leadingNote(keep)
	text, refs := r.textRefs(keep)
	if note == "" && text != "" && strings.Trim(text, "0123456789") == "" && r.notes[text] {
		// The number of the footnote whose text is on the row below.
		note, text = text, ""
	}
	l := Line{Text: text, Refs: refs, Note: note, Top: r.top, Bottom: r.bottom, Column: column, Band: band, Left: math.Inf(1), Right: math.Inf(-1)}
	for _, g := range r.glyphs {
		if keep == nil || keep(g) {
			l.Left, l.Right = math.Min(l.Left, g.Left), math.Max(l.Right, g.Right)
		}
	}
	l.Segs = r.fields(keep)
	if len(l.Segs) > 1 {
		segs := r.split()
		l.Cell = segs[len(segs)-1].left
	}
	var kept []Glyph
	for _, g := range r.glyphs {
		if keep == nil || keep(g) {
			kept = append(kept, g)
		}
	}
	if n := len(kept); n > 0 {
		l.samples = [3]int{kept[0].Index, kept[n/2].Index, kept[n-1].Index}
		ws := make([]float64, n)
		for i, g := range kept {
			ws[i] = g.Right - g.Left
		}
		sort.Float64s(ws)
		l.width = ws[n/2]
		alike := 0
		for _, w := range ws {
			if math.Abs(w-l.width) <= 0.03*l.width {
				alike++
			}
		}
		l.even = alike*10 >= n*9
	}
	return l
}

// leadingNote is the number of one of the page's footnotes that the
// row's first glyphs (those keep accepts, or all) set in raised digits,
// and keep without those digits; or "" and keep.
func (r row) leadingNote(keep func(Glyph) bool) (string, func(Glyph) bool) {
	var note strings.Builder
	sup := r.superscripts()
	lead := map[int]bool{}
	for i, g := range r.glyphs {
		if keep != nil && !keep(g) {
			continue
		}
		if !sup[i] {
			break
		}
		note.WriteRune(g.R)
		lead[i] = true
	}
	if note.Len() == 0 || !r.notes[note.String()] {
		return "", keep
	}
	inner := keep
	return note.String(), func(g Glyph) bool {
		for i := range lead {
			if r.glyphs[i] == g {
				return false
			}
		}
		return inner == nil || inner(g)
	}
}

// fields are the texts of the row's pieces apart by gaps too wide to be
// a space (see split), of the glyphs keep accepts (or all); nil for a
// row of fewer than two.
func (r row) fields(keep func(Glyph) bool) []string {
	segs := r.split()
	if len(segs) <= 1 {
		return nil
	}
	var out []string
	for _, sg := range segs {
		t := r.text(func(g Glyph) bool {
			return (keep == nil || keep(g)) && g.Left >= sg.left && g.Right <= sg.right
		})
		if t != "" {
			out = append(out, t)
		}
	}
	if len(out) < 2 {
		return nil
	}
	return out
}

// segment is a horizontal piece of a row, between gaps too wide to be a
// space.
type segment struct{ left, right, top, bottom float64 }

// split cuts a row at gaps wider than twice its height.
func (r row) split() []segment {
	var out []segment
	h := r.height()
	for i, g := range r.glyphs {
		if i == 0 || g.Left-r.glyphs[i-1].Right > 2*h {
			out = append(out, segment{left: g.Left, right: g.Right, top: r.top, bottom: r.bottom})
			continue
		}
		s := &out[len(out)-1]
		s.right = math.Max(s.right, g.Right)
	}
	return out
}

// findGutter looks for a vertical strip in the middle of the page that
// many rows cross on both sides and few rows cross at all: the gutter of a
// two-column layout.
func findGutter(segs []segment, width float64) (float64, bool) {
	if width <= 0 || len(segs) < 6 {
		return 0, false
	}
	best, bestCross := 0.0, math.MaxInt
	for x := width * 0.3; x <= width*0.7; x += 2 {
		left, right, cross := 0, 0, 0
		for _, s := range segs {
			switch {
			case s.right <= x:
				left++
			case s.left >= x:
				right++
			default:
				cross++
			}
		}
		if left >= 3 && right >= 3 && cross < bestCross {
			best, bestCross = x, cross
		}
	}
	if bestCross == math.MaxInt {
		return 0, false
	}
	// Columns, not a table or a label beside a value: the two sides must
	// both be text-heavy, and full-width lines at most a third.
	var left, right int
	var leftSpan, rightSpan float64
	for _, s := range segs {
		switch {
		case s.right <= best:
			left++
			leftSpan = math.Max(leftSpan, s.right-s.left)
		case s.left >= best:
			right++
			rightSpan = math.Max(rightSpan, s.right-s.left)
		}
	}
	if bestCross*3 > len(segs) || left < 3 || right < 3 || leftSpan < width*0.2 || rightSpan < width*0.2 {
		return 0, false
	}
	return best, true
}

// twoColumns orders the rows of a two-column page: full-width rows in
// place, and between two of them (a band) the left column's lines, then
// the right's.
func twoColumns(rows []row, gutter float64) []Line {
	var out, left, right []Line
	band := 0
	flush := func() {
		out = append(out, left...)
		out = append(out, right...)
		left, right = nil, nil
	}
	for _, r := range rows {
		crosses := false
		for _, s := range r.split() {
			if s.left < gutter && s.right > gutter {
				crosses = true
				break
			}
		}
		if crosses {
			flush()
			band++
			out = append(out, r.line(nil, 0, band))
			band++
			continue
		}
		isLeft := func(g Glyph) bool { return g.Right <= gutter }
		isRight := func(g Glyph) bool { return g.Right > gutter }
		if l := r.line(isLeft, 1, band); l.Text != "" || l.Note != "" {
			left = append(left, l)
		}
		if l := r.line(isRight, 2, band); l.Text != "" || l.Note != "" {
			right = append(right, l)
		}
	}
	flush()
	return out
}

// Paragraphs joins a page's lines (in reading order, running headers and
// footers already dropped) into paragraphs. A line continues the paragraph
// above it in the same column and band unless the gap between them is
// wider than the column's usual line gap by half a line, the two differ
// in height or, where PDFium gave the fonts, in size, weight or pitch (a
// heading, a term, code), or the line above ends a sentence more than a
// third short of the column's right edge. Structure stays apart:
//   - a heading is a paragraph of its own: a line in another font than
//     the text after it, or a short line that starts with a section
//     number ("2.2.2 Working on input files") and ends no sentence;
//   - a list item starts a paragraph: a line that starts with a bullet
//     ("•", "◦", ...), or with a number or a dash where the line above
//     ends a clause or hangs to the right of it ("1.", "(a)", "-");
//   - a term (a short line with its description indented below it) is a
//     paragraph, its description the next;
//   - code (monospaced lines) is a paragraph of lines, each with its
//     indentation in spaces, relative to the block's leftmost line;
//   - a table of contents' entry (a line ending in a dot leader and a
//     number) ends its paragraph;
//   - a line set in fields apart (a table's row: Segs) is a line of its
//     own, its fields apart by " | ", and the rows that follow it are the
//     next lines of the same paragraph; a line that starts where the
//     row's last field starts (Cell: a term's description that wraps)
//     goes on that field, unless the line above ends a sentence short of
//     the column's edge.
//
// A word broken with a hyphen at a line's end is joined, whatever the
// next line's font or size (groff sets a section's name smaller: "PA-" /
// "RAMETERS"), and under a table's row wherever the next line is
// indented past the row's first field: without the hyphen when both
// halves are lowercase (but for the second half of a suspended compound,
// "copy- and move-constructors") or both in capitals ("EVALUA-" /
// "TION"), with it otherwise ("FILE-based"), and left as it is before
// "and", "or", "nor" and "to" ("copy- and move-"). The page's footnotes (Note) are paragraphs of
// their own, "[4] text", each after the paragraph that marks it (Refs),
// else at the page's end.
func Paragraphs(lines []Line) []string {
	var out []string
	for _, b := range pageBlocks(lines) {
		out = append(out, b.text)
	}
	return out
}

// pdfBlock is a paragraph of a page; pre says its text is preformatted
// (code): its lines keep their leading spaces.
type pdfBlock struct {
	text string
	pre  bool
}

// pageBlocks is Paragraphs, with each paragraph's kind.
func pageBlocks(lines []Line) []pdfBlock {
	figs := measureColumns(lines)
	var body []*pdfPara
	notes := &pdfNotes{of: map[string]*pdfPara{}}
	var cur *pdfPara
	var prev *Line
	for i := range lines {
		l := &lines[i]
		if l.Note != "" {
			notes.add(l)
			continue
		}
		text := strings.Join(strings.Fields(l.Text), " ")
		if text == "" {
			continue
		}
		row := len(l.Segs) > 1 && !l.Mono
		if row {
			text = rowText(l.Segs)
		}
		switch {
		case !figs.continues(cur, prev, l, row):
			cur = &pdfPara{row: row, left: l.Left, cell: l.Cell}
			body = append(body, cur)
			if l.Mono {
				cur.code = append(cur.code, l)
			} else {
				cur.text.WriteString(text)
			}
		case l.Mono:
			cur.code = append(cur.code, l)
		case row:
			cur.text.WriteString("\n" + text)
			cur.cell = l.Cell
		default:
			joinLine(&cur.text, text)
		}
		cur.lines++
		cur.refs = append(cur.refs, l.Refs...)
		prev = l
	}
	return notes.place(body)
}

// pdfColumn is a column of a band of a page.
type pdfColumn struct{ band, column int }

// columnFigures are, per column of a page, its usual gap between lines
// and its right and left edges.
type columnFigures struct {
	usual, right, left map[pdfColumn]float64
}

// measureColumns measures the columns of a page's lines (not its
// footnotes).
func measureColumns(lines []Line) columnFigures {
	gaps := map[pdfColumn][]float64{}
	f := columnFigures{usual: map[pdfColumn]float64{}, right: map[pdfColumn]float64{}, left: map[pdfColumn]float64{}}
	for i := range lines {
		if lines[i].Note != "" {
			continue
		}
		c := columnOf(lines[i])
		if r, ok := f.right[c]; !ok || lines[i].Right > r {
			f.right[c] = lines[i].Right
		}
		if l, ok := f.left[c]; !ok || lines[i].Left < l {
			f.left[c] = lines[i].Left
		}
		if i > 0 && sameColumn(lines[i-1], lines[i]) {
			if g := lines[i-1].Bottom - lines[i].Top; g > -lines[i].height()/2 && g < 2*lines[i].height() {
				gaps[c] = append(gaps[c], g)
			}
		}
	}
	for c, g := range gaps {
		sort.Float64s(g)
		f.usual[c] = g[len(g)/2]
	}
	return f
}

// continues reports whether line l (row: a table's row) goes on
// paragraph cur, whose last line is prev (see Paragraphs).
func (f columnFigures) continues(cur *pdfPara, prev, l *Line, row bool) bool {
	if cur == nil || prev == nil || !sameColumn(*prev, *l) {
		return false
	}
	if !row && !prev.Mono && !l.Mono && brokenWord(prev.Text, l.Text) {
		// A word broken at the line's end goes on whatever the font of
		// its second half (a small-caps "PA-" / "RAMETERS"), and, under a
		// table's row or a term's description, on the row's last cell:
		// the line is indented past the row's first cell.
		gap := prev.Bottom - l.Top
		usual := f.usual[columnOf(*l)]
		h := math.Max(prev.height(), l.height())
		return gap > -h/2 && gap < usual+0.5*h && (!cur.row || l.Left > cur.left+h)
	}
	if cur.row && !row && !l.Mono && cur.cell > 0 && math.Abs(l.Left-cur.cell) < l.height()/2 {
		// A line that starts where the row above's last field does goes
		// on that field (a description that wraps), unless the line
		// above ends a sentence short of the column's edge.
		c := columnOf(*l)
		gap := prev.Bottom - l.Top
		width := f.right[c] - f.left[c]
		ends := strings.TrimRight(prev.Text, " ")
		short := width > 0 && f.right[c]-prev.Right > 0.35*width
		return alike(prev.height(), l.height()) && gap > -l.height()/2 && gap < f.usual[c]+0.5*l.height() &&
			!(short && ends != "" && strings.ContainsAny(ends[len(ends)-1:], ".!?:"))
	}
	if !alike(prev.height(), l.height()) {
		return false
	}
	if prev.Size > 0 && l.Size > 0 && (!sameSize(prev.Size, l.Size) || prev.Bold != l.Bold || prev.Mono != l.Mono) {
		return false
	}
	c := columnOf(*l)
	if gap := prev.Bottom - l.Top; !(gap > -l.height()/2 && gap < f.usual[c]+0.5*l.height()) {
		return false
	}
	if l.Mono && prev.Mono {
		return !cur.row
	}
	width := f.right[c] - f.left[c]
	short := width > 0 && f.right[c]-prev.Right > 0.35*width
	ends := strings.TrimRight(prev.Text, " ")
	if !row && !cur.row {
		if short && ends != "" && strings.ContainsAny(ends[len(ends)-1:], ".!?:") {
			return false
		}
		if cur.lines == 1 && short && numberedHeading.MatchString(ends) && !strings.ContainsAny(ends[len(ends)-1:], ".,;:!?") {
			// A numbered heading, alone on its line.
			return false
		}
		if tocEntry.MatchString(ends) {
			return false
		}
		if startsItem(prev, l) {
			return false
		}
		if cur.lines == 1 && short && l.Left > prev.Left+l.height() {
			// A term, its description indented below it.
			return false
		}
	}
	return row == cur.row
}

// sameSize reports whether two font sizes are one: within 5%.
func sameSize(a, b float64) bool {
	return math.Abs(a-b) <= 0.05*math.Max(a, b)
}

var (
	// numberedHeading matches a line that starts with a section number
	// and a capitalised word: "2.2.2 Working on input files",
	// "4.1. Overview", "A.3 Index", "3 Installation".
	numberedHeading = regexp.MustCompile(`^(?:\d{1,3}(?:\.\d{1,3}){0,6}|[A-Z](?:\.\d{1,3}){1,6})\.?\s+\p{Lu}`)
	// tocEntry matches a table of contents' entry: a dot leader, then a
	// page number.
	tocEntry = regexp.MustCompile(`(?:\.\s?){4,}\s*(?:\d+|[ivxlc]+)$`)
	// itemMarker matches a numbered list item's marker, and dashMarker a
	// dash or star one: "1.", "2)", "(a)", "iv.", "-", "*".
	itemMarker = regexp.MustCompile(`^(?:\(?(?:\d{1,2}|[a-zA-Z]|[ivx]{1,4})[.)]|\((?:\d{1,2}|[a-zA-Z]|[ivx]{1,4})\))\s`)
	dashMarker = regexp.MustCompile(`^[-–—*]\s`)
)

// bullets start a list item wherever a line starts with one.
const bullets = "•◦▪‣∙○●■□►▸➢✓✔"

// startsItem reports whether line l starts a list item after line prev:
// it starts with a bullet, or with a number or dash marker where prev
// ends a clause or hangs to the right of l (the item before it).
func startsItem(prev, l *Line) bool {
	t := strings.TrimSpace(l.Text)
	if r, _ := utf8.DecodeRuneInString(t); strings.ContainsRune(bullets, r) {
		return true
	}
	if !itemMarker.MatchString(t) && !dashMarker.MatchString(t) {
		return false
	}
	ends := strings.TrimRight(prev.Text, " ")
	return prev.Left > l.Left+1 || ends != "" && strings.ContainsAny(ends[len(ends)-1:], ".:;!?")
}

// rowText is the text of a line set in fields apart: its fields, their
// spaces folded, apart by " | ".
func rowText(segs []string) string {
	var cells []string
	for _, f := range segs {
		if f = strings.Join(strings.Fields(f), " "); f != "" {
			cells = append(cells, f)
		}
	}
	return strings.Join(cells, " | ")
}

// pdfPara is a paragraph Paragraphs builds: its text (or, for code, its
// lines), the footnotes it marks, whether it is a table's rows, and how
// many lines it has.
type pdfPara struct {
	text  strings.Builder
	code  []*Line
	refs  []string
	row   bool
	lines int
	// left is the left edge of the paragraph's first line, cell that of
	// the last field of its last table row (Line.Cell).
	left, cell float64
}

// block is the paragraph's text: code's lines each indented by its
// distance from the block's leftmost line, in characters of its pitch.
func (p *pdfPara) block() pdfBlock {
	if len(p.code) == 0 {
		return pdfBlock{text: p.text.String()}
	}
	left := math.Inf(1)
	var pitches []float64
	for _, l := range p.code {
		left = math.Min(left, l.Left)
		if l.Pitch > 0 {
			pitches = append(pitches, l.Pitch)
		}
	}
	pitch := 0.0
	if len(pitches) > 0 {
		sort.Float64s(pitches)
		pitch = pitches[len(pitches)/2]
	}
	var b strings.Builder
	for i, l := range p.code {
		if i > 0 {
			b.WriteByte('\n')
		}
		if pitch > 0 {
			b.WriteString(strings.Repeat(" ", min(int(math.Round((l.Left-left)/pitch)), 80)))
		}
		b.WriteString(strings.Join(strings.Fields(l.Text), " "))
	}
	return pdfBlock{text: b.String(), pre: true}
}

// pdfNotes are a page's footnotes, in order, by mark.
type pdfNotes struct {
	list []*pdfPara
	of   map[string]*pdfPara
}

// add adds footnote line l to its note.
func (n *pdfNotes) add(l *Line) {
	text := strings.Join(strings.Fields(l.Text), " ")
	p := n.of[l.Note]
	if p == nil {
		p = &pdfPara{}
		p.text.WriteString("[" + l.Note + "]")
		n.of[l.Note] = p
		n.list = append(n.list, p)
	}
	if text != "" {
		joinLine(&p.text, text)
	}
}

// place returns the paragraphs of body, each footnote after the first
// paragraph that marks it, and the footnotes no paragraph marks at the
// end.
func (n *pdfNotes) place(body []*pdfPara) []pdfBlock {
	var out []pdfBlock
	placed := map[*pdfPara]bool{}
	for _, p := range body {
		out = append(out, p.block())
		for _, r := range p.refs {
			if note := n.of[r]; note != nil && !placed[note] {
				placed[note] = true
				out = append(out, note.block())
			}
		}
	}
	for _, note := range n.list {
		if !placed[note] {
			out = append(out, note.block())
		}
	}
	return out
}

// suspendedHyphen matches text that ends with the second half of a
// suspended compound ("copy- and move-"): the hyphen at the line's end is
// the compound's.
var suspendedHyphen = regexp.MustCompile(`\pL- (and|or|nor|to) \pL+-$`)

// brokenWord reports whether a line that ends with text prev and the
// next, text next, hold a word broken with a hyphen at the line's end: a
// letter, a hyphen, then a letter to start the next line.
func brokenWord(prev, next string) bool {
	prev = strings.TrimRight(prev, " ")
	if !strings.HasSuffix(prev, "-") {
		return false
	}
	before, _ := utf8.DecodeLastRuneInString(strings.TrimSuffix(prev, "-"))
	first, _ := utf8.DecodeRuneInString(strings.TrimLeft(next, " "))
	return unicode.IsLetter(before) && unicode.IsLetter(first)
}

// capitalsBroken reports whether s (ending with a hyphen) and text, the
// next line, hold a word in capitals broken at the line's end: two
// capitals or more before the hyphen (after any other character) and two
// to start text ("EVALUA-" / "TION", "READLINE_AR-" / "GUMENT").
func capitalsBroken(s, text string) bool {
	head := []rune(strings.TrimSuffix(s, "-"))
	n := 0
	for i := len(head) - 1; i >= 0 && unicode.IsLetter(head[i]); i-- {
		if !unicode.IsUpper(head[i]) {
			return false
		}
		n++
	}
	tail := []rune(text)
	return n >= 2 && len(tail) >= 2 && unicode.IsUpper(tail[0]) && unicode.IsUpper(tail[1])
}

// joinLine appends the next line of a paragraph to b: after a space, or,
// for a word broken with a hyphen at the line's end, joined (see
// Paragraphs).
func joinLine(b *strings.Builder, text string) {
	s := b.String()
	if strings.HasSuffix(s, "-") && s != "-" {
		before, _ := utf8.DecodeLastRuneInString(strings.TrimSuffix(s, "-"))
		first, _ := utf8.DecodeRuneInString(text)
		word, _, _ := strings.Cut(text, " ")
		word = strings.TrimRight(word, ",.;:")
		if (unicode.IsLetter(before) || unicode.IsDigit(before)) && (unicode.IsLetter(first) || unicode.IsDigit(first)) &&
			word != "and" && word != "or" && word != "nor" && word != "to" {
			if (unicode.IsLower(before) && unicode.IsLower(first) || capitalsBroken(s, text)) && !suspendedHyphen.MatchString(s) {
				s = strings.TrimSuffix(s, "-")
			}
			b.Reset()
			b.WriteString(s)
			b.WriteString(text)
			return
		}
	}
	if s != "" {
		b.WriteByte(' ')
	}
	b.WriteString(text)
}

// sameColumn reports whether lines a and b (b after a in reading order)
// are in one column: both across the page, or in the same column of one
// band. Lines across the
// page are one column whatever their bands: twoColumns gives each such
// line a band of its own, and where a page it reads as two columns has
// full-width lines one after the other (a paragraph between code blocks
// that cross the gutter), they are one paragraph's lines.
func sameColumn(a, b Line) bool {
	if a.Column == 0 && b.Column == 1 && b.Band == a.Band+1 {
		// b, the first line of the left column after a, may be the last
		// line of a's paragraph, short enough to fit the left column.
		return true
	}
	return a.Column == b.Column && (a.Band == b.Band || a.Column == 0)
}

// columnOf is the column whose figures (columnFigures) line l is
// measured by: all lines across the page are one.
func columnOf(l Line) pdfColumn {
	if l.Column == 0 {
		return pdfColumn{}
	}
	return pdfColumn{l.Band, l.Column}
}

func alike(a, b float64) bool {
	if a <= 0 || b <= 0 {
		return true
	}
	r := a / b
	return r > 0.7 && r < 1.43
}

// pageNumberLine matches a line that is only a page number: "17", "- 17 -",
// "Page 17", "Page 17 of 30", "17 / 30", "p. 17", "xii".
var pageNumberLine = regexp.MustCompile(`^(?i)[-–—\s]*((page|p\.|pg\.?|seite|página|pagina)\s*)?([0-9]+|[ivxlcdm]+)(\s*(of|/|von|de|sur)\s*[0-9]+)?[-–—\s]*$`)

// IsPageNumber reports a line that is only a page number.
func IsPageNumber(text string) bool {
	return pageNumberLine.MatchString(strings.TrimSpace(text))
}

// romanNumeral matches a roman numeral of front-matter page numbers
// (i to mmmcmxcix), lowercase.
var romanNumeral = regexp.MustCompile(`^m{0,3}(cm|cd|d?c{0,3})(xc|xl|l?x{0,3})(ix|iv|v?i{0,3})$`)

// edgeKey is how a running header or footer is recognised across pages:
// its text with each number (a run of digits, or a word that is a roman
// numeral) masked as "#", since page numbers, and their width, change
// from page to page, less the numbers and punctuation at its ends (a page
// number beside a running title, which the layout may set in the same
// line or apart), and whether it sits at the top or the bottom. nums is
// the masked numbers, in order.
func edgeKey(edge int, text string) (key, nums string) {
	if edge == 0 {
		return "", ""
	}
	masked, nums := maskNumbers(strings.ToLower(strings.Join(strings.Fields(text), " ")))
	words := strings.Fields(masked)
	for len(words) > 0 && edgeEnd(words[0]) {
		words = words[1:]
	}
	for len(words) > 0 && edgeEnd(words[len(words)-1]) {
		words = words[:len(words)-1]
	}
	if len(words) == 0 {
		return "", nums
	}
	side := "top:"
	if edge > 0 {
		side = "bottom:"
	}
	return side + strings.Join(words, " "), nums
}

// edgeEnd reports whether word w, at an end of an edge line, is left out
// of its key: a masked number, or a word without a letter.
func edgeEnd(w string) bool {
	return w == "#" || strings.IndexFunc(w, func(r rune) bool { return unicode.IsLetter(r) || r == '#' }) < 0
}

// maskNumbers masks each number of text (lowercase: a run of digits, or
// a word that is a roman numeral) as "#"; nums are the numbers, in
// order, each followed by a space.
func maskNumbers(text string) (masked, nums string) {
	var b, n strings.Builder
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case unicode.IsDigit(r):
			j := i
			for j < len(text) && text[j] >= '0' && text[j] <= '9' {
				j++
			}
			if j == i { // a digit outside ASCII
				j = i + size
			}
			b.WriteByte('#')
			n.WriteString(text[i:j])
			n.WriteByte(' ')
			i = j
			continue
		case unicode.IsLetter(r) && !endsWord(text[:i]):
			j := wordEnd(text, i)
			w := text[i:j]
			if romanNumeral.MatchString(w) && !startsWord(text[j:]) {
				b.WriteByte('#')
				n.WriteString(w)
				n.WriteByte(' ')
			} else {
				b.WriteString(w)
			}
			i = j
			continue
		}
		b.WriteRune(r)
		i += size
	}
	return b.String(), n.String()
}

// wordEnd is the end of the run of letters of text that starts at i.
func wordEnd(text string, i int) int {
	j := i
	for j < len(text) {
		r, size := utf8.DecodeRuneInString(text[j:])
		if !unicode.IsLetter(r) {
			break
		}
		j += size
	}
	return j
}

// edgeFields are the pieces of an edge line the header rules match: its
// segments (Segs), or its whole text.
func edgeFields(l Line) []string {
	if len(l.Segs) > 1 {
		return l.Segs
	}
	return []string{l.Text}
}

// endsWord reports whether s ends with a letter or digit; startsWord,
// whether it starts with one.
func endsWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return s != "" && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

func startsWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return s != "" && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// edgeStat is what EdgeCounter knows of one masked edge line.
type edgeStat struct {
	pages       int // pages it is on
	first, last int // the first and last of them, from 1
	nums        string
	// changing is set when its numbers differ between two pages: a page
	// number, not a version or a year.
	changing bool
}

// EdgeCounter counts, across a document's pages, the top and bottom lines
// that repeat: running headers and footers.
type EdgeCounter struct {
	pages int
	stats map[string]*edgeStat
	// offsets counts, for each difference between a number that begins
	// or ends an edge line and its page's index, the pages that have it:
	// the printed page numbers are the index plus the commonest.
	offsets map[int]int
	offset  *int
}

// endNumbers returns the numbers that begin and end text, if they are
// whole words of digits.
func endNumbers(text string) []int {
	f := strings.Fields(text)
	if len(f) < 2 {
		return nil
	}
	var out []int
	for _, w := range []string{f[0], f[len(f)-1]} {
		if n, err := strconv.Atoi(w); err == nil && n >= 0 && n < 1_000_000 {
			out = append(out, n)
		}
	}
	return out
}

// Add records one page's lines.
func (c *EdgeCounter) Add(lines []Line) {
	c.pages++
	if c.stats == nil {
		c.stats = map[string]*edgeStat{}
	}
	if c.offsets == nil {
		c.offsets = map[int]int{}
	}
	seen := map[string]bool{}
	seenOffset := map[int]bool{}
	for _, l := range lines {
		if l.Edge == 0 {
			continue
		}
		for _, n := range endNumbers(l.Text) {
			if d := n - c.pages; !seenOffset[d] {
				seenOffset[d] = true
				c.offsets[d]++
			}
		}
		for _, f := range edgeFields(l) {
			k, nums := edgeKey(l.Edge, f)
			if k == "" || seen[k] {
				continue
			}
			seen[k] = true
			st := c.stats[k]
			if st == nil {
				st = &edgeStat{first: c.pages, nums: nums}
				c.stats[k] = st
			}
			st.pages++
			st.last = c.pages
			if nums != st.nums {
				st.changing = true
			}
		}
	}
}

// pageOffset returns the difference between the document's printed page
// numbers and its page indexes, when at least a quarter of its pages (and
// three) have an edge line that begins or ends with their index plus it.
func (c *EdgeCounter) pageOffset() (int, bool) {
	if c.offset == nil {
		best, bestN := 0, 0
		for d, n := range c.offsets {
			if n > bestN || n == bestN && d < best {
				best, bestN = d, n
			}
		}
		if bestN < 3 || bestN*4 < c.pages {
			best = math.MinInt
		}
		c.offset = &best
	}
	return *c.offset, *c.offset != math.MinInt
}

// numbered reports whether text begins or ends with page's printed number:
// its label, or its index plus the document's page offset. (Only for a
// page's outermost lines: "Chapter 1" below page 1's running header is a
// heading.)
func (c *EdgeCounter) numbered(text string, page int, label string) bool {
	f := strings.Fields(text)
	if len(f) < 2 {
		return false
	}
	if label != "" && (f[0] == label || f[len(f)-1] == label) {
		return true
	}
	if d, ok := c.pageOffset(); ok {
		for _, n := range endNumbers(text) {
			if n == page+d {
				return true
			}
		}
	}
	return false
}

// Drop reports whether a line of page (from 1, labelled label in the
// PDF's page labels, or "") is a running header, footer or page number, as
// a reader's eye skips them (Drops, for a line alone).
func (c *EdgeCounter) Drop(l Line, page int, label string) bool {
	return c.Drops([]Line{l}, page, label)[0]
}

// Drops reports which lines of page (from 1, labelled label in the PDF's
// page labels, or "") are running headers, footers or page numbers, as a
// reader's eye skips them: a page's top or bottom line (one of two at each
// edge) that
//   - is only a page number; or
//   - is on the page's topmost or bottom-most row and begins or ends with
//     the page's number: its label, or its index plus the offset most of
//     the document's edge lines show (a header that names the topic of
//     one page, "abbreviate 7"); or shares that row with the page's number
//     set apart (a title the column layout split from its number); or
//   - has fields (Segs, else its whole text) that are, numbers masked and
//     a page number at either end left out, each a page number or at the
//     same edge of
//   - at least a quarter of the pages, and of three; or
//   - at least three pages, with a changing number, and at least a third of
//     the pages of its run (from the first page it is on to the last): a
//     chapter's running header, or one of the two of a book printed on
//     both sides; or
//   - at least four pages and half the pages of its run (a chapter title
//     above each page).
func (c *EdgeCounter) Drops(lines []Line, page int, label string) []bool {
	drop := make([]bool, len(lines))
	numberOn := map[int]bool{} // an edge whose outer row has the page's number apart
	for _, l := range lines {
		if l.Outer && l.Note == "" && IsPageNumber(l.Text) && c.isPageNumber(strings.TrimSpace(l.Text), page, label) {
			numberOn[l.Edge] = true
		}
	}
	for i, l := range lines {
		if l.Edge == 0 || l.Note != "" {
			// Not at an edge, or a footnote: text.
			continue
		}
		switch {
		case IsPageNumber(l.Text):
			drop[i] = true
		case l.Outer && (c.numbered(l.Text, page, label) || numberOn[l.Edge]):
			drop[i] = true
		default:
			drop[i] = c.running(l)
		}
	}
	return drop
}

// running reports whether every field of an edge line is a page number
// or repeats as a running line does (see Drops), and one does.
func (c *EdgeCounter) running(l Line) bool {
	any := false
	for _, f := range edgeFields(l) {
		if IsPageNumber(f) {
			continue
		}
		k, _ := edgeKey(l.Edge, f)
		st := c.stats[k]
		if st == nil {
			return false
		}
		n, run := st.pages, st.last-st.first+1
		switch {
		case n >= 3 && n*4 >= c.pages:
		case st.changing && n >= 3 && n*3 >= run:
		case n >= 4 && n*2 >= run:
		default:
			return false
		}
		any = true
	}
	return any
}

// isPageNumber reports whether n, a line that is only a number, is
// page's: its label, or its index plus the document's page offset.
func (c *EdgeCounter) isPageNumber(n string, page int, label string) bool {
	if label != "" && strings.EqualFold(n, label) {
		return true
	}
	v, err := strconv.Atoi(n)
	d, ok := c.pageOffset()
	return err == nil && ok && v == page+d
}
