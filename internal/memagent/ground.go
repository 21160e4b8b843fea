package memagent

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/memagent/memagent/api"
)

// Limits of grounding. They bound the memory a [Grounder] holds, whatever
// the length of the text it reads.
const (
	// MaxGroundVerbatimBytes is the longest answer searched byte for
	// byte; a longer one is searched by its normalised form only.
	MaxGroundVerbatimBytes = 2048
	// MaxGroundTokens is the most words an answer's normalised form may
	// have to be searched; an answer with more is not_found.
	MaxGroundTokens = 256
	// maxGroundField bounds one whitespace-delimited run of the text that
	// is normalised as a whole; a longer run matches no answer word.
	maxGroundField = 4 * MaxGroundVerbatimBytes
)

// GroundMatch is where a [Grounder] found one answer: Status is
// api.GroundingVerbatim, api.GroundingNormalized or api.GroundingNotFound,
// and [Start, End) the byte range of the occurrence when found.
type GroundMatch struct {
	Status     string
	Start, End int64
}

// Grounder finds answers in a text that is written to it in order, in
// pieces of any size, holding at most a few kilobytes of it: the first
// verbatim occurrence of each answer (byte for byte, not starting or
// ending inside a word), and the first occurrence of its normalised form
// ([Normalize]: lowercase, ASCII punctuation and the articles dropped,
// whitespace collapsed) as a run of whole normalised words of the text.
// A match that straddles two writes is found like any other.
type Grounder struct {
	pats []groundPattern
	// tail holds the last bytes written, from tailStart, that a verbatim
	// match not decided yet may still need.
	tail      []byte
	tailStart int64
	off       int64 // offset of the next byte written

	// The word stream: pending is a rune split by a write, field the
	// whitespace-delimited run being read.
	pending    []byte
	field      []byte
	fieldStart int64
	inField    bool
	fieldOver  bool
	ids        map[string]int // answer word -> id
	ring       []int64        // start offsets of the last words
	nwords     int64
	active     []int // patterns in the middle of a match
	scratch    []byte
	closed     bool
}

type groundPattern struct {
	verbatim       []byte // nil when not searched verbatim
	wordStart      bool   // verbatim starts / ends with a word rune
	wordEnd        bool
	next           int64 // verbatim: the first start not yet ruled out
	toks           []int // normalised words as ids; nil when not searched so
	fail           []int // KMP failure function of toks
	state          int
	vFound, nFound bool
	v, n           GroundMatch
}

// NewGrounder returns a Grounder for answers. An answer over
// MaxGroundVerbatimBytes is searched by its normalised form only; one
// whose normalised form is empty or over MaxGroundTokens words, only
// verbatim (if at all).
func NewGrounder(answers []string) *Grounder {
	g := &Grounder{ids: map[string]int{}}
	longest := 1
	for _, a := range answers {
		var p groundPattern
		if a != "" && len(a) <= MaxGroundVerbatimBytes {
			p.verbatim = []byte(a)
			first, _ := utf8.DecodeRuneInString(a)
			last, _ := utf8.DecodeLastRuneInString(a)
			p.wordStart, p.wordEnd = isWordRune(first), isWordRune(last)
		}
		if words := strings.Fields(Normalize(a)); len(words) > 0 && len(words) <= MaxGroundTokens {
			for _, w := range words {
				id, ok := g.ids[w]
				if !ok {
					id = len(g.ids)
					g.ids[w] = id
				}
				p.toks = append(p.toks, id)
			}
			p.fail = kmpFailure(p.toks)
			longest = max(longest, len(p.toks))
		}
		g.pats = append(g.pats, p)
	}
	g.ring = make([]int64, longest)
	return g
}

// kmpFailure is the Knuth-Morris-Pratt failure function of p: f[i] is the
// length of the longest proper prefix of p[:i+1] that is also its suffix.
func kmpFailure(p []int) []int {
	f := make([]int, len(p))
	k := 0
	for i := 1; i < len(p); i++ {
		for k > 0 && p[i] != p[k] {
			k = f[k-1]
		}
		if p[i] == p[k] {
			k++
		}
		f[i] = k
	}
	return f
}

// Write reads the next piece of the text. It never fails.
func (g *Grounder) Write(p []byte) (int, error) {
	if g.closed || len(p) == 0 {
		return len(p), nil
	}
	g.words(p)
	buf := make([]byte, 0, len(g.tail)+len(p))
	buf = append(append(buf, g.tail...), p...)
	g.off += int64(len(p))
	g.verbatim(buf, g.tailStart, false)
	return len(p), nil
}

// Close ends the text: matches that waited for what follows them are
// decided.
func (g *Grounder) Close() {
	if g.closed {
		return
	}
	g.end()
	g.closed = true
}

// end decides what waited for the text that follows: the field being
// read (a rune split by a write included) and the verbatim matches not
// decided yet, as at the text's end.
func (g *Grounder) end() {
	if len(g.pending) > 0 {
		g.addToField(g.pending, g.off-int64(len(g.pending)))
		g.pending = nil
	}
	g.endField(g.off)
	g.verbatim(g.tail, g.tailStart, true)
}

// Skip passes over the next n bytes of the text without reading them: no
// match includes any of them or spans them, and the bytes on either side
// are read as if the text ended and began there. A corpus's document
// headers are skipped so.
func (g *Grounder) Skip(n int64) {
	if g.closed || n <= 0 {
		return
	}
	g.end()
	g.off += n
	g.tail, g.tailStart = nil, g.off
	for i := range g.pats {
		p := &g.pats[i]
		p.next = max(p.next, g.off)
		p.state = 0
	}
	g.active = g.active[:0]
}

// Done reports whether reading more can change no result: every answer
// was found verbatim, or found normalised when it is not searched
// verbatim, or is not searched at all.
func (g *Grounder) Done() bool {
	for _, p := range g.pats {
		switch {
		case p.vFound:
		case p.verbatim == nil && (p.nFound || p.toks == nil):
		default:
			return false
		}
	}
	return true
}

// Results returns one match per answer, in the order given: verbatim if
// the answer occurs verbatim, else normalised if it occurs so, else not
// found. Call it after Close.
func (g *Grounder) Results() []GroundMatch {
	out := make([]GroundMatch, len(g.pats))
	for i, p := range g.pats {
		switch {
		case p.vFound:
			out[i] = p.v
		case p.nFound:
			out[i] = p.n
		default:
			out[i] = GroundMatch{Status: api.GroundingNotFound}
		}
	}
	return out
}

// verbatim searches buf, the text from start, for the answers not found
// verbatim yet, then keeps as tail what an undecided match may need. A
// match is decided once the rune after it is known (or the text ended).
func (g *Grounder) verbatim(buf []byte, start int64, final bool) {
	end := start + int64(len(buf))
	keep := end
	for i := range g.pats {
		p := &g.pats[i]
		if p.verbatim == nil || p.vFound {
			continue
		}
		n := int64(len(p.verbatim))
		for p.next+n <= end {
			from := p.next - start
			j := bytes.Index(buf[from:], p.verbatim)
			if j < 0 {
				p.next = end - n + 1
				break
			}
			s := p.next + int64(j)
			if !final && s+n+utf8.UTFMax > end {
				// The rune after it is not all here yet.
				p.next = s
				break
			}
			if g.atBoundaries(p, buf, start, s, s+n) {
				p.vFound = true
				p.v = GroundMatch{Status: api.GroundingVerbatim, Start: s, End: s + n}
				break
			}
			p.next = s + 1
		}
		if !p.vFound {
			keep = min(keep, p.next-utf8.UTFMax)
		}
	}
	keep = max(keep, start)
	if final {
		g.tail = nil
		return
	}
	g.tail = append(g.tail[:0:0], buf[keep-start:]...)
	g.tailStart = keep
}

// atBoundaries reports whether [s, e) neither starts nor ends inside a
// word: an answer that begins (ends) with a letter, digit or '_' must not
// have one right before (after) it.
func (g *Grounder) atBoundaries(p *groundPattern, buf []byte, start, s, e int64) bool {
	if p.wordStart && s > start {
		if r, _ := utf8.DecodeLastRune(buf[:s-start]); isWordRune(r) {
			return false
		}
	}
	if p.wordEnd && e < start+int64(len(buf)) {
		if r, _ := utf8.DecodeRune(buf[e-start:]); isWordRune(r) {
			return false
		}
	}
	return true
}

// words feeds p to the word stream: runs between whitespace runes are
// the fields that are normalised (a rune split between writes waits in
// pending).
func (g *Grounder) words(p []byte) {
	base := g.off
	if len(g.pending) > 0 {
		base -= int64(len(g.pending))
		p = append(g.pending, p...)
		g.pending = nil
	}
	for i := 0; i < len(p); {
		if !utf8.FullRune(p[i:]) {
			g.pending = append([]byte(nil), p[i:]...)
			return
		}
		_, size := utf8.DecodeRune(p[i:])
		g.rune(p[i:i+size], base+int64(i))
		i += size
	}
}

// rune handles one rune (or one invalid byte) at offset at.
func (g *Grounder) rune(b []byte, at int64) {
	r, _ := utf8.DecodeRune(b)
	if b[0] < utf8.RuneSelf {
		r = rune(b[0])
	}
	if unicode.IsSpace(r) {
		g.endField(at)
		return
	}
	g.addToField(b, at)
}

func (g *Grounder) addToField(b []byte, at int64) {
	if !g.inField {
		g.inField, g.fieldStart, g.fieldOver = true, at, false
		g.field = g.field[:0]
	}
	if len(g.field)+len(b) > maxGroundField {
		g.fieldOver = true
		return
	}
	g.field = append(g.field, b...)
}

// endField normalises the field that ends at end into words.
func (g *Grounder) endField(end int64) {
	if !g.inField {
		return
	}
	g.inField = false
	if g.fieldOver {
		g.word(-1, end)
		return
	}
	if w, ok := g.asciiWord(g.field); ok {
		if len(w) > 0 && !isArticle(w) {
			g.word(g.idOf(w), end)
		}
		return
	}
	for _, w := range strings.Fields(Normalize(string(g.field))) {
		g.word(g.idOf([]byte(w)), end)
	}
}

func (g *Grounder) idOf(w []byte) int {
	if id, ok := g.ids[string(w)]; ok {
		return id
	}
	return -1
}

func isArticle(w []byte) bool {
	s := string(w)
	return s == "a" || s == "an" || s == "the"
}

// asciiWord normalises a field of printable ASCII the way Normalize does,
// without allocating: lowercase, punctuation deleted, one word (or none).
// It reports false for any other field.
func (g *Grounder) asciiWord(f []byte) ([]byte, bool) {
	w := g.scratch[:0]
	for _, c := range f {
		switch {
		case c >= utf8.RuneSelf || c < 0x20 || c == 0x7f:
			return nil, false
		case 'A' <= c && c <= 'Z':
			w = append(w, c+('a'-'A'))
		case strings.IndexByte(asciiPunctuation, c) >= 0:
		default:
			w = append(w, c)
		}
	}
	g.scratch = w
	return w, true
}

// word advances every answer's normalised match by one word of the text
// (id -1 for a word no answer has) whose field started at g.fieldStart.
func (g *Grounder) word(id int, end int64) {
	g.ring[g.nwords%int64(len(g.ring))] = g.fieldStart
	g.nwords++
	if id < 0 {
		for _, i := range g.active {
			g.pats[i].state = 0
		}
		g.active = g.active[:0]
		return
	}
	g.active = g.active[:0]
	for i := range g.pats {
		p := &g.pats[i]
		if p.toks == nil || p.nFound {
			continue
		}
		for p.state > 0 && p.toks[p.state] != id {
			p.state = p.fail[p.state-1]
		}
		if p.toks[p.state] == id {
			p.state++
		}
		if p.state == len(p.toks) {
			first := g.nwords - int64(len(p.toks))
			p.nFound = true
			p.n = GroundMatch{Status: api.GroundingNormalized, Start: g.ring[first%int64(len(g.ring))], End: end}
			p.state = 0
			continue
		}
		if p.state > 0 {
			g.active = append(g.active, i)
		}
	}
}

// GroundQuote is a quote of at most max bytes of valid UTF-8 around the
// match [start, end), from text, the bytes of the document from offset
// at: the match with as much context on each side as fits, or its first
// bytes when it is longer than max. The context is cut at white space, so
// that the quote starts and ends on whole words (a match longer than max
// is cut at its last white space that fits, or inside its one long word
// when it has none); the ends of text count as word boundaries, so a
// caller passes a page's text, or a window that ends past where the quote
// can reach. Runes are never cut; invalid bytes become U+FFFD.
func GroundQuote(text []byte, at, start, end int64, max int) string {
	lo, hi := start-at, end-at
	lo, hi = clamp(lo, 0, int64(len(text))), clamp(hi, 0, int64(len(text)))
	m := int64(max)
	var qs, qe int64
	if hi-lo >= m {
		qs, qe = lo, lo+m
		// The match's last whole word that fits.
		if i := bytes.LastIndexFunc(text[lo:min(qe+1, int64(len(text)))], isSpace); i > 0 {
			qe = lo + int64(i)
		}
		for qe > lo && isSpace(rune(text[qe-1])) {
			qe--
		}
	} else {
		ctx := (m - (hi - lo)) / 2
		qs, qe = clamp(lo-ctx, 0, lo), clamp(hi+ctx, hi, int64(len(text)))
		// What one side cannot use goes to the other.
		left := m - (qe - qs)
		qe = clamp(qe+left, hi, int64(len(text)))
		left = m - (qe - qs)
		qs = clamp(qs-left, 0, lo)
		qs, qe = wholeWords(text, qs, lo, hi, qe)
	}
	for qs < lo && !utf8.RuneStart(text[qs]) {
		qs++
	}
	for qe < int64(len(text)) && qe > qs && !utf8.RuneStart(text[qe]) {
		qe--
	}
	q := strings.ToValidUTF8(string(text[qs:qe]), "\uFFFD")
	for len(q) > max {
		_, size := utf8.DecodeLastRuneInString(q)
		q = q[:len(q)-size]
	}
	return q
}

// wholeWords moves the context [qs, lo) before a match [lo, hi) of text
// forward, and the context [hi, qe) after it back, to white space, so that
// neither cuts a word: a context that is one cut word goes, and so does
// the white space at the quote's ends.
func wholeWords(text []byte, qs, lo, hi, qe int64) (int64, int64) {
	if qs > 0 && qs < lo && !isSpace(rune(text[qs-1])) {
		i := bytes.IndexFunc(text[qs:lo], isSpace)
		if i < 0 {
			qs = lo
		} else {
			qs += int64(i)
		}
	}
	for qs < lo && isSpace(rune(text[qs])) {
		qs++
	}
	if qe < int64(len(text)) && qe > hi && !isSpace(rune(text[qe])) {
		qe = hi + int64(max(bytes.LastIndexFunc(text[hi:qe], isSpace), 0))
	}
	for qe > hi && isSpace(rune(text[qe-1])) {
		qe--
	}
	return qs, qe
}

// isSpace reports whether r is ASCII white space: a byte of it is never
// part of a multi-byte rune.
func isSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' || r == '\v'
}

// QuotePart is one page's part of a quote: its text, and the part [Start,
// End) of the match (in document offsets) that lies on that page.
type QuotePart struct {
	Text       string
	Start, End int64
}

// GroundQuoteParts cuts the quote of the match [start, end) page by page:
// pages are the byte ranges (in document offsets, in order) of the pages
// or sections that the match touches, and text the bytes of the document
// from offset at. Each part is GroundQuote of the match's bytes on one
// page with context from that page only, so that no part crosses a page
// boundary; the match's bytes between two pages (the blank line that
// separates them) are in no part. With no pages (a text document), the
// one part is GroundQuote's.
func GroundQuoteParts(text []byte, at, start, end int64, limit int, pages [][2]int64) []QuotePart {
	if len(pages) == 0 {
		return []QuotePart{{Text: GroundQuote(text, at, start, end, limit), Start: start, End: end}}
	}
	var parts []QuotePart
	for _, p := range pages {
		s, e := max(start, p[0]), min(end, p[1])
		if e <= s {
			continue
		}
		from, to := clamp(p[0]-at, 0, int64(len(text))), clamp(p[1]-at, 0, int64(len(text)))
		parts = append(parts, QuotePart{Text: GroundQuote(text[from:to], at+from, s, e, limit), Start: s, End: e})
	}
	return parts
}

func clamp(v, lo, hi int64) int64 {
	return min(max(v, lo), hi)
}
