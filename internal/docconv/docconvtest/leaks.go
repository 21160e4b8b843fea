package docconvtest

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"

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
// repetition: a piece of text (a paragraph, a line of one, or a table
// cell: the text between " | ") that comes out of half the files or more
// (and three) is navigation or a banner, and each file that keeps one
// leaked it. Every file is header-bearing.
func HTMLLeaks(names, texts []string) Leaks {
	perFile := make([][]string, len(texts))
	count := map[string]int{}
	for i, text := range texts {
		seen := map[string]bool{}
		var pieces []string
		for _, p := range strings.Split(text, "\n") {
			for _, c := range strings.Split(p, " | ") {
				if c = Mask(c); c != "" {
					pieces = append(pieces, c)
				}
			}
		}
		for _, p := range pieces {
			if !seen[p] {
				seen[p] = true
				perFile[i] = append(perFile[i], p)
				count[p]++
			}
		}
	}
	out := Leaks{Pages: len(texts), Bearing: len(texts)}
	for i, ps := range perFile {
		for _, p := range ps {
			if n := count[p]; n >= 3 && n*2 >= len(texts) {
				out.Lines = append(out.Lines, fmt.Sprintf("%s: %q", names[i], p))
			}
		}
	}
	return out
}
