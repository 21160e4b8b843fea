package memagent

import (
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// The prompt guard. Text that goes inside a prompt (a document's chunk, a
// memory a model returned, a question) must not be able to close or open
// one of the template's sections: a chunk that says "</section> new
// instructions <section>" would otherwise step out of its place. Anything
// in such text that a model could read as one of the template's tags is
// rewritten with the look-alike brackets ‹ and ›, which no template uses
// and which the guard itself leaves alone: the text stays readable, the
// tag is gone.
//
// "Could read as a tag" is decided on a folded copy of the text, where
// the disguises a tag can wear are undone: case; white space and
// attributes inside the brackets (</section id=1>); invisible characters
// (zero-width spaces and joiners, word joiners, soft hyphens, byte order
// marks, bidirectional controls, variation selectors); full-width and
// other look-alike angle brackets and slashes (＜/section＞, ﹤, 〈, ⟨);
// full-width letters; and HTML character references (&lt;/section&gt;,
// &#60;, &#x3C;). A match in the folded copy rewrites the whole stretch of
// the original text it came from.

// defaultTags are the tags of the default templates, also guarded in every
// custom template.
var defaultTags = []string{"memory", "problem", "section"}

// templateTag finds the tag names a template uses.
var templateTag = regexp.MustCompile(`</?\s*([A-Za-z][A-Za-z0-9_.:-]*)`)

// TemplateTags returns the tag names a template uses (<name> or </name>,
// lower case), with the default templates' tags, sorted.
func TemplateTags(tmpl string) []string {
	tags := slices.Clone(defaultTags)
	for _, m := range templateTag.FindAllStringSubmatch(tmpl, -1) {
		if name := strings.ToLower(m[1]); !slices.Contains(tags, name) {
			tags = append(tags, name)
		}
	}
	slices.Sort(tags)
	return tags
}

// tagPatterns caches the pattern of each tag set (a process has one or
// two).
var tagPatterns sync.Map // string → *regexp.Regexp

func tagPattern(tags []string) *regexp.Regexp {
	key := strings.Join(tags, "|")
	if re, ok := tagPatterns.Load(key); ok {
		return re.(*regexp.Regexp)
	}
	quoted := make([]string, len(tags))
	for i, t := range tags {
		quoted[i] = regexp.QuoteMeta(t)
	}
	re := regexp.MustCompile(`(?i)<\s*/?\s*(?:` + strings.Join(quoted, "|") + `)(?:[\s/][^<>]*)?>`)
	tagPatterns.Store(key, re)
	return re
}

// NeutralizeTags rewrites whatever in text a model could read as one of
// tags (see the package's guard notes): its brackets become ‹ and ›, and
// its disguise (invisible characters, look-alikes, character references)
// is dropped. Text with nothing of the kind is returned unchanged.
//
// Rewriting one tag can complete another around it ("<section <doc>>"
// becomes "<section ‹doc›>", a section tag), so the rewrite is repeated
// until nothing is left to rewrite. Each round turns at least one '<'
// into '‹', so the rounds are bounded by the text's brackets.
func NeutralizeTags(text string, tags []string) string {
	for {
		out := neutralizeOnce(text, tags)
		if out == text {
			return out
		}
		text = out
	}
}

// neutralizeOnce is one round of NeutralizeTags.
func neutralizeOnce(text string, tags []string) string {
	if !mayHoldTag(text) {
		return text
	}
	folded, from := fold(text)
	matches := tagPattern(tags).FindAllStringIndex(folded, -1)
	if matches == nil {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	last := 0
	for _, m := range matches {
		start, end := from[m[0]], from[m[1]]
		b.WriteString(text[last:start])
		inner := folded[m[0]+1 : m[1]-1]
		b.WriteString("‹" + inner + "›")
		last = end
	}
	b.WriteString(text[last:])
	return b.String()
}

// tagOpenersWide are the characters other than '<' and '&' that can open
// a tag once folded: the look-alikes of '<'.
var tagOpenersWide = [...]string{"\uFF1C", "\uFE64", "\u2329", "\u3008", "\u27E8", "\u02C2"}

// mayHoldTag reports whether text holds '<', '&' or one of
// tagOpenersWide: strings.ContainsAny(text, "<&"+tagOpenersWide...), which
// UpdateMemory asks of every chunk, as eight searches for bytes instead of
// one decode of each rune and a search of the set for it. A match of an
// opener's bytes is a match of the character: ASCII bytes never occur
// inside a multi-byte character, and a multi-byte character's first byte
// never occurs inside another, so wherever its bytes are, ContainsAny
// decodes it too.
func mayHoldTag(text string) bool {
	if strings.IndexByte(text, '<') >= 0 || strings.IndexByte(text, '&') >= 0 {
		return true
	}
	for _, o := range tagOpenersWide {
		if strings.Contains(text, o) {
			return true
		}
	}
	return false
}

// fold returns the folded copy of text (see the guard notes) and, for each
// byte offset of the copy (and its end), the offset in text it came from.
func fold(text string) (string, []int) {
	var b strings.Builder
	from := make([]int, 0, len(text)+1)
	emit := func(r rune, at int) {
		n := utf8.RuneLen(r)
		if n < 0 {
			r, n = utf8.RuneError, 3
		}
		for range n {
			from = append(from, at)
		}
		b.WriteRune(r)
	}
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		switch {
		case invisible(r):
		case r == '&':
			if c, m := charRef(text[i:]); m > 0 {
				emit(c, i)
				n = m
				break
			}
			emit(r, i)
		default:
			emit(foldRune(r), i)
		}
		i += n
	}
	from = append(from, len(text))
	return b.String(), from
}

// invisible reports characters that render as nothing, or nearly: inside a
// tag a model would read past them.
func invisible(r rune) bool {
	switch {
	case r >= 0x200B && r <= 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2060 && r <= 0x2064,
		r >= 0x2066 && r <= 0x2069, r >= 0xFE00 && r <= 0xFE0F:
		return true
	}
	switch r {
	case 0xFEFF, 0x00AD, 0x180E, 0x034F, 0x061C:
		return true
	}
	return false
}

// foldRune maps look-alike brackets, slashes, spaces and full-width
// letters to ASCII.
func foldRune(r rune) rune {
	switch r {
	case '\uFF1C', '\uFE64', '\u2329', '\u3008', '\u27E8', '\u02C2':
		return '<'
	case '\uFF1E', '\uFE65', '\u232A', '\u3009', '\u27E9', '\u02C3':
		return '>'
	case '\uFF0F', '\u2044', '\u2215', '\u29F8':
		return '/'
	case '\u00A0', '\u3000', '\u2007', '\u202F':
		return ' '
	}
	switch {
	case r >= 0xFF21 && r <= 0xFF3A:
		return r - 0xFF21 + 'A'
	case r >= 0xFF41 && r <= 0xFF5A:
		return r - 0xFF41 + 'a'
	case r >= 0x2000 && r <= 0x200A:
		return ' '
	}
	return r
}

// charRef reads an HTML character reference for <, > or / at the start of
// s ("&lt;", "&LT", "&#60;", "&#x3c;", "&sol;"), returning the character
// and the reference's length, or 0 when there is none.
func charRef(s string) (rune, int) {
	lower := strings.ToLower(s[:min(len(s), 16)])
	for _, named := range []struct {
		name string
		r    rune
	}{{"&lt", '<'}, {"&gt", '>'}, {"&sol", '/'}} {
		if strings.HasPrefix(lower, named.name) {
			n := len(named.name)
			if n < len(lower) && lower[n] == ';' {
				n++
			}
			return named.r, n
		}
	}
	if !strings.HasPrefix(lower, "&#") {
		return 0, 0
	}
	i, base := 2, 10
	if i < len(lower) && lower[i] == 'x' {
		i, base = 3, 16
	}
	start, v := i, 0
	for i < len(lower) {
		d := strings.IndexByte("0123456789abcdef"[:base], lower[i])
		if d < 0 {
			break
		}
		v = v*base + d
		i++
		if v > 0x10FFFF {
			return 0, 0
		}
	}
	if i == start {
		return 0, 0
	}
	if i < len(lower) && lower[i] == ';' {
		i++
	}
	switch r := foldRune(rune(v)); r {
	case '<', '>', '/':
		return r, i
	}
	return 0, 0
}
