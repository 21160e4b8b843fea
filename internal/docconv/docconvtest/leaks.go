package docconvtest

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/memagent/memagent/internal/memagent"
)

// Leaks is what of a manual's running headers, footers and navigation
// the converter left in its text (PDFLeaks, HTMLLeaks).
type Leaks struct {
	// Pages is the manual's pages (a PDF's) or files (HTML); Bearing those
	// that carry a running line (every HTML file).
	Pages, Bearing int
	// Lines are the leaks, one per page and running line, as "page 22:
	// \"# chapter #. introduction\"".
	Lines []string
}

// Rate is the leaked lines per header-bearing page.
func (l Leaks) Rate() float64 {
	return float64(len(l.Lines)) / float64(max(l.Bearing, 1))
}

// edgeDepth is how many lines at a page's top and bottom may be a
// running line.
const edgeDepth = 2

// PDFLeaks measures a converted PDF's text against pdftotext's layout of
// the same PDF (its pages apart by form feeds), found without the
// converter: a line among the first or last two of a pdftotext page that
// repeats, numbers masked, at the same edge of at least five pages and of
// a third of the pages from the first it is on to the last is a running
// header or footer (a page number alone included); a page with one is
// header-bearing. It leaked when the converter's text for that page (m's
// spans of it) still has the line as printed there, less a page number at
// either end: a paragraph that is it, or begins or ends with it, or, for
// a line of three words or more, holds it anywhere.
func PDFLeaks(pdftotext, text string, m memagent.PageMap) Leaks {
	pagesText := make([]string, m.Pages+1)
	for _, s := range m.Spans {
		if s.Number > 0 && s.Number < len(pagesText) && s.End <= int64(len(text)) {
			pagesText[s.Number] += text[s.Start:s.End] + "\n\n"
		}
	}
	truth := strings.Split(pdftotext, "\f")
	running := runningLines(truth)
	out := Leaks{Pages: m.Pages}
	for i, lines := range running {
		if len(lines) == 0 {
			continue
		}
		out.Bearing++
		if i+1 >= len(pagesText) {
			continue
		}
		paras := plainParagraphs(pagesText[i+1])
		var printed []string
		for _, p := range strings.Split(truth[i], "\n") {
			printed = append(printed, plain(p))
		}
		for _, l := range lines {
			if leaked(l, paras, printed) {
				out.Lines = append(out.Lines, fmt.Sprintf("page %d: %q", i+1, l))
			}
		}
	}
	return out
}

// runningLines returns, for each page (from 0), its running lines as
// printed there (lowercased, white space collapsed).
func runningLines(pages []string) [][]string {
	type edgeKey struct {
		top  bool
		text string
	}
	type stat struct{ n, first, last int }
	type edgeLine struct {
		key  edgeKey
		line string
	}
	stats := map[edgeKey]*stat{}
	edges := make([][]edgeLine, len(pages))
	for i, p := range pages {
		var lines []string
		for _, l := range strings.Split(p, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				lines = append(lines, l)
			}
		}
		seen := map[edgeKey]bool{}
		for k, l := range lines {
			for _, top := range []bool{true, false} {
				if (top && k >= edgeDepth) || (!top && k < len(lines)-edgeDepth) {
					continue
				}
				key := edgeKey{top, Mask(l)}
				if seen[key] || strings.IndexFunc(key.text, func(r rune) bool { return unicode.IsLetter(r) || r == '#' }) < 0 {
					continue
				}
				seen[key] = true
				edges[i] = append(edges[i], edgeLine{key, plain(l)})
				st := stats[key]
				if st == nil {
					st = &stat{first: i}
					stats[key] = st
				}
				st.n++
				st.last = i
			}
		}
	}
	out := make([][]string, len(pages))
	for i, lines := range edges {
		for _, l := range lines {
			if st := stats[l.key]; st.n >= 5 && st.n*3 >= st.last-st.first+1 {
				out[i] = append(out[i], l.line)
			}
		}
	}
	return out
}

var (
	digitRun = regexp.MustCompile(`[0-9]+`)
	romanNum = regexp.MustCompile(`^m{0,3}(cm|cd|d?c{0,3})(xc|xl|l?x{0,3})(ix|iv|v?i{0,3})$`)
)

// Mask lowercases s, collapses its white space and masks its numbers (runs
// of digits, and words that are roman numerals) as "#".
func Mask(s string) string {
	words := strings.Fields(strings.ToLower(s))
	for i, w := range words {
		if w != "" && len(w) <= 8 && romanNum.MatchString(w) {
			words[i] = "#"
			continue
		}
		words[i] = digitRun.ReplaceAllString(w, "#")
	}
	return strings.Join(words, " ")
}

// maskedParagraphs splits converted text into its masked paragraphs.
func maskedParagraphs(text string) []string {
	var out []string
	for _, p := range strings.Split(text, "\n\n") {
		if p = Mask(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// plain lowercases s and collapses its white space.
func plain(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(s)), " ")
}

// plainParagraphs splits converted text into its plain paragraphs.
func plainParagraphs(text string) []string {
	var out []string
	for _, p := range strings.Split(text, "\n\n") {
		if p = plain(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// leaked reports whether the running line l, as printed (plain), is
// still in paras, less a page number or punctuation at either end: it is
// there as often as pdftotext has it on the page (page, its plain lines),
// the running line included. A title page whose running header is also
// its title keeps the title and leaks nothing.
func leaked(l string, paras []string, page []string) bool {
	core := strings.Fields(l)
	end := func(w string) bool {
		return Mask(w) == "#" || strings.IndexFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0
	}
	for len(core) > 1 && end(core[0]) {
		core = core[1:]
	}
	for len(core) > 1 && end(core[len(core)-1]) {
		core = core[:len(core)-1]
	}
	c := strings.Join(core, " ")
	bare := len(core) == 1 && end(c) // a page number, with its punctuation
	printed := 0
	for _, p := range page {
		if p == l || p == c {
			printed++
		}
	}
	found := 0
	for _, p := range paras {
		switch {
		case p == l || p == c:
			found++
		case bare:
		case len(core) >= 3:
			found += strings.Count(" "+p+" ", " "+c+" ")
		case strings.HasPrefix(p, c+" ") || strings.HasSuffix(p, " "+c):
			found++
		}
	}
	return found > 0 && found >= printed
}

// HTMLLeaks measures converted HTML pages (texts, the files named) by
// repetition among them: a piece of text (a line, or a table cell: the
// text between " | ") that comes out of half the files or more (and
// three) is navigation or a banner, and each file that keeps one leaked
// it. So is a piece whose skeleton does: its common words (those that
// half the files hold), each run of other words elided (see skeletons).
// A navigation
// panel that names the pages around each page (Texinfo's "Next: Bezier
// curves, Previous: Tutorial, Up: Asymptote [Contents][Index]") differs
// from page to page; its skeleton ("next: … previous: … up: …
// [contents][index]") does not. Every file is header-bearing.
//
// What the converter leaves on a few pages only does not repeat in its
// text: HTMLPageLeaks finds the repetition in the pages' markup instead.
func HTMLLeaks(names, texts []string) Leaks {
	return htmlLeaks(names, texts, texts, nil)
}

// HTMLPageLeaks is HTMLLeaks with the repetition found in every text of
// the pages themselves (pages, the HTML files' bytes, in the order of
// names and texts; see HTMLLines) rather than in what the converter kept
// of them: the pieces, and skeletons, of half the pages' text or more
// that the converted text of a page still has. It counts a navigation
// panel the converter drops on most pages and keeps on a few.
//
// A page leaked a piece when its converted text holds it as often as the
// page's own text does (a table of contents the converter dropped and a
// caption it kept say the same words once each); a piece that is a heading
// of its own page, and a heading of fewer than half the pages, is the
// page's title, not navigation, though the other pages' tables of
// contents repeat it; and pieces are told apart by case ("NEXT", a keyword
// of SQL, is not "Next").
func HTMLPageLeaks(names []string, pages [][]byte, texts []string) Leaks {
	ref := make([]string, len(pages))
	headings := make([][]string, len(pages))
	for i, p := range pages {
		ref[i], headings[i] = htmlLines(p)
	}
	return htmlLeaks(names, ref, texts, headings)
}

// HTMLLines is all the text of an HTML page, a line per block element
// and per table cell, without the converter: what is outside the head,
// scripts and styles, navigation and boilerplate included.
func HTMLLines(page []byte) string {
	text, _ := htmlLines(page)
	return text
}

// htmlLines is HTMLLines, and the text of the page's headings (h1–h6).
func htmlLines(page []byte) (string, []string) {
	z := html.NewTokenizer(bytes.NewReader(page))
	var out, line strings.Builder
	var headings []string
	skip, inHeading := 0, false
	flush := func() {
		// A heading's permalink (Sphinx's "¶") is not its text.
		if l := strings.TrimRight(strings.Join(strings.Fields(line.String()), " "), " ¶"); l != "" {
			out.WriteString(l)
			out.WriteByte('\n')
			if inHeading {
				headings = append(headings, l)
			}
		}
		line.Reset()
	}
	for {
		switch tt := z.Next(); tt {
		case html.ErrorToken:
			flush()
			return out.String(), headings
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			switch a := atom.Lookup(name); a {
			case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
				flush()
				inHeading = tt == html.StartTagToken
			case atom.Head, atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Svg, atom.Math:
				if tt == html.StartTagToken {
					skip++
				} else if tt == html.EndTagToken && skip > 0 {
					skip--
				}
			default:
				if lineBlocks[a] {
					flush()
				}
			}
		case html.TextToken:
			if skip == 0 {
				line.Write(z.Text())
			}
		}
	}
}

// lineBlocks are the elements that HTMLLines ends a line at.
var lineBlocks = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Section: true, atom.Article: true, atom.Main: true,
	atom.Header: true, atom.Footer: true, atom.Nav: true, atom.Aside: true, atom.Blockquote: true,
	atom.Pre: true, atom.Ul: true, atom.Ol: true, atom.Li: true, atom.Dl: true, atom.Dt: true,
	atom.Dd: true, atom.Table: true, atom.Tr: true, atom.Td: true, atom.Th: true, atom.Caption: true,
	atom.Figure: true, atom.Figcaption: true, atom.Form: true, atom.Fieldset: true, atom.Address: true,
	atom.Hr: true, atom.Br: true, atom.Body: true, atom.Html: true, atom.Details: true, atom.Summary: true,
}

// pieces are the masked pieces of a converted text: its lines, and the
// cells of a table row (apart by " | ").
func pieces(text string, mask func(string) string) []string {
	var out []string
	for _, p := range strings.Split(text, "\n") {
		for _, c := range strings.Split(p, " | ") {
			// A list item's marker, which the converter writes and the
			// page's text has not, is no part of the piece (nor a
			// number's, a heading's or an item's, on either side).
			c = mask(c)
			for _, m := range []string{"• ", "#. "} {
				c = strings.TrimPrefix(c, m)
			}
			if c != "" {
				out = append(out, c)
			}
		}
	}
	return out
}

// maskCase is Mask without lowercasing.
func maskCase(s string) string {
	words := strings.Fields(s)
	for i, w := range words {
		if w != "" && len(w) <= 8 && romanNum.MatchString(strings.ToLower(w)) {
			words[i] = "#"
			continue
		}
		words[i] = digitRun.ReplaceAllString(w, "#")
	}
	return strings.Join(words, " ")
}

// htmlLeaks finds the pieces, and skeletons, that half the reference
// texts or more hold, and reports each file of texts that still has one,
// less its own headings that fewer than half the pages have among theirs
// (headings, the reference pages' headings; nil: none).
func htmlLeaks(names, ref, texts []string, headings [][]string) Leaks {
	mask := Mask
	if headings != nil {
		mask = maskCase
	}
	hdf := map[string]int{}
	own := make([]map[string]bool, len(texts))
	for i, hs := range headings {
		own[i] = map[string]bool{}
		for _, h := range hs {
			if h = mask(h); !own[i][h] {
				own[i][h] = true
				hdf[h]++
			}
		}
	}
	count := map[string]int{}
	df := map[string]int{} // the reference texts that hold a word
	refPieces := make([][]string, len(ref))
	printed := make([]map[string]int, len(ref)) // a piece's copies in a reference text
	for i, text := range ref {
		seen := map[string]bool{}
		printed[i] = map[string]int{}
		for _, p := range pieces(text, mask) {
			printed[i][p]++
			if !seen[p] {
				seen[p] = true
				refPieces[i] = append(refPieces[i], p)
				count[p]++
			}
		}
	}
	repeated := func(n int) bool { return n >= 3 && n*2 >= len(ref) }
	// A word is common by the pieces that are not repeated whole: a menu
	// of every page on every page does not make its titles common.
	for _, ps := range refPieces {
		seen := map[string]bool{}
		for _, p := range ps {
			if repeated(count[p]) {
				continue
			}
			for _, w := range strings.Fields(p) {
				if !seen[w] {
					seen[w] = true
					df[w]++
				}
			}
		}
	}
	common := func(w string) bool { return repeated(df[w]) }
	skelCount := map[string]int{}
	for _, ps := range refPieces {
		seen := map[string]bool{}
		for _, p := range ps {
			for _, sk := range skeletons(p, common) {
				if !seen[sk] {
					seen[sk] = true
					skelCount[sk]++
				}
			}
		}
	}
	out := Leaks{Pages: len(texts), Bearing: len(texts)}
	for i, text := range texts {
		found := map[string]int{}
		var ps []string
		for _, p := range pieces(text, mask) {
			if found[p]++; found[p] == 1 {
				ps = append(ps, p)
			}
		}
		for _, p := range ps {
			if own[i][p] && !repeated(hdf[p]) || headings != nil && found[p] < printed[i][p] {
				continue
			}
			leak := repeated(count[p])
			for _, sk := range skeletons(p, common) {
				leak = leak || repeated(skelCount[sk])
			}
			if leak {
				out.Lines = append(out.Lines, fmt.Sprintf("%s: %q", names[i], p))
			}
		}
	}
	return out
}

// skeletons are the masked piece p's skeletons: p with each run of words
// that are not common elided as "…", and that with one of its common
// words elided too (the title of the page a panel goes up to may be a
// common word), when it keeps three words or more and more than the runs
// it elides (prose, whose common words are "the", "of", "is", has many
// runs; a title, "The … command", few words). A word is common when half
// the pages or more hold it in pieces that are not repeated whole. A
// piece of more than 64 words has none.
func skeletons(p string, common func(string) bool) []string {
	words := strings.Fields(p)
	if len(words) > 64 {
		return nil
	}
	keep := make([]bool, len(words))
	var kept []int
	for i, w := range words {
		if keep[i] = common(w); keep[i] {
			kept = append(kept, i)
		}
	}
	if len(kept) == len(words) {
		return nil // p itself, which repetition counts
	}
	var out []string
	build := func(drop int) {
		var b []string
		n, runs := 0, 0
		for i, w := range words {
			switch {
			case keep[i] && i != drop:
				b = append(b, w)
				n++
			case len(b) == 0 || b[len(b)-1] != "…":
				b = append(b, "…")
				runs++
			}
		}
		if n >= 3 && n > runs {
			out = append(out, strings.Join(b, " "))
		}
	}
	build(-1)
	for _, k := range kept {
		build(k)
	}
	return out
}
