package docconv

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/memagent"
)

// skipped are elements whose content is not text: code, styles, embedded
// objects, forms' controls and the head.
var skipped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Svg: true, atom.Math: true, atom.Iframe: true, atom.Object: true, atom.Canvas: true,
	atom.Head: true, atom.Select: true, atom.Button: true,
}

// blocks end the paragraph before and after them; those that are not void
// are the nodes the main-content detection weighs (htmlNode).
var blocks = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Section: true, atom.Article: true, atom.Main: true,
	atom.Header: true, atom.Footer: true, atom.Nav: true, atom.Aside: true, atom.Blockquote: true,
	atom.Pre: true, atom.Ul: true, atom.Ol: true, atom.Li: true, atom.Dl: true, atom.Dt: true,
	atom.Dd: true, atom.Table: true, atom.Tr: true, atom.Td: true, atom.Th: true, atom.Caption: true,
	atom.Figure: true, atom.Figcaption: true, atom.Form: true, atom.Fieldset: true, atom.Address: true,
	atom.Hr: true, atom.Br: true, atom.Body: true, atom.Html: true, atom.Details: true, atom.Summary: true,
	atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
}

var headingTags = map[atom.Atom]bool{
	atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
}

// voidTags have no end tag: a start tag of one must not count as an open
// element.
var voidTags = map[atom.Atom]bool{
	atom.Br: true, atom.Hr: true, atom.Img: true, atom.Input: true, atom.Meta: true, atom.Link: true,
	atom.Area: true, atom.Base: true, atom.Col: true, atom.Embed: true, atom.Source: true, atom.Track: true, atom.Wbr: true,
}

// implicitClose are the elements a start tag closes when one is open in
// its scope, as HTML's parser does for markup that leaves them open
// (<p>a<p>b, <li>a<li>b): what a start tag of the key closes, and the
// elements that bound the search.
var implicitClose = map[atom.Atom]struct{ closes, scope []atom.Atom }{
	atom.P:  {[]atom.Atom{atom.P}, nil},
	atom.Li: {[]atom.Atom{atom.Li}, []atom.Atom{atom.Ul, atom.Ol}},
	atom.Dt: {[]atom.Atom{atom.Dt, atom.Dd}, []atom.Atom{atom.Dl}},
	atom.Dd: {[]atom.Atom{atom.Dt, atom.Dd}, []atom.Atom{atom.Dl}},
	atom.Tr: {[]atom.Atom{atom.Tr, atom.Td, atom.Th}, []atom.Atom{atom.Table}},
	atom.Td: {[]atom.Atom{atom.Td, atom.Th}, []atom.Atom{atom.Tr, atom.Table}},
	atom.Th: {[]atom.Atom{atom.Td, atom.Th}, []atom.Atom{atom.Tr, atom.Table}},
}

// maxHTMLNodes bounds the block elements the main-content detection keeps
// figures for (about 40 bytes each); a page with more is converted whole.
const maxHTMLNodes = 1 << 20

// maxRowWords bounds a table row written as one line: a row with more
// words, a heading or a table inside is written a paragraph per block, as
// a table that lays out a page is.
const maxRowWords = 200

// htmlNode is what the main-content detection knows of one block element:
// its words (its own text and its descendants'), those inside links, its
// "sentence" words (see htmlRun.weight), its links and among them those
// that navigate between pages (rel prev, next, up…, or an accesskey), and
// what kind of element it is.
type htmlNode struct {
	parent                   int32
	words, linkWords, weight int32
	links, navLinks          int32
	flags                    uint8
}

const (
	// nodeLandmark: navigation by declaration: nav, an ARIA role of
	// navigation, search, banner, contentinfo or complementary, or a
	// header, footer or aside outside an article, main or section.
	nodeLandmark uint8 = 1 << iota
	// nodeMain: main, or role main.
	nodeMain
	// nodeHeading and nodeTable: it holds a heading, a table.
	nodeHeading
	nodeTable
	// nodeRow: a table row (tr).
	nodeRow
	// nodeRoot: html or body, which hold the page whatever it is.
	nodeRoot
)

// htmlOpen is an open element on the walk's stack; node is its htmlNode,
// or -1 (a link, an inline element that is tracked for link text).
type htmlOpen struct {
	tag  atom.Atom
	node int32
}

// htmlWalk is what both passes over a page share: the tokenizer, the
// stack of open block elements and links (closed as HTML's parser closes
// them), the node numbering, the nesting bound and the skipped elements.
// Both passes see the same nodes in the same order.
type htmlWalk struct {
	z     *html.Tokenizer
	cr    *countingReader
	f     *os.File
	stack []htmlOpen
	next  int32 // the next node's number, from 1 (0 is the page)
	skip  int
	depth int
}

func openHTML(path string) (*htmlWalk, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(1024)
	enc, _, _ := charset.DetermineEncoding(head, "text/html")
	cr := &countingReader{r: br}
	return &htmlWalk{z: html.NewTokenizer(&runGuard{r: enc.NewDecoder().Reader(cr)}), cr: cr, f: f, next: 1}, st.Size(), nil
}

func (w *htmlWalk) close() { w.f.Close() }

// current is the innermost open node (0: the page).
func (w *htmlWalk) current() int32 {
	for i := len(w.stack) - 1; i >= 0; i-- {
		if w.stack[i].node >= 0 {
			return w.stack[i].node
		}
	}
	return 0
}

// below is the innermost open node under the top of the stack: the
// parent of a node just opened.
func (w *htmlWalk) below() int32 {
	for i := len(w.stack) - 2; i >= 0; i-- {
		if w.stack[i].node >= 0 {
			return w.stack[i].node
		}
	}
	return 0
}

// inLink reports whether the walk is inside a link.
func (w *htmlWalk) inLink() bool {
	for i := len(w.stack) - 1; i >= 0; i-- {
		if w.stack[i].tag == atom.A {
			return true
		}
		if w.stack[i].node >= 0 {
			return false
		}
	}
	return false
}

// within reports whether an element of one of tags is open.
func (w *htmlWalk) within(tags ...atom.Atom) bool {
	for _, o := range w.stack {
		for _, t := range tags {
			if o.tag == t {
				return true
			}
		}
	}
	return false
}

// token is one token of the walk: its type, its element for a tag (0 for
// an element outside the tracked ones), and, for a start tag that opens a
// node, the node (else -1). popped are the nodes an end tag (or an
// implicit close) closed, innermost first.
type htmlToken struct {
	tt     html.TokenType
	a      atom.Atom
	node   int32
	popped []int32
}

// step reads the next token and keeps the stack. Tokens inside skipped
// elements are reported as html.CommentToken (nothing to do).
func (w *htmlWalk) step(popped []int32) (htmlToken, error) {
	tt := w.z.Next()
	t := htmlToken{tt: tt, node: -1, popped: popped[:0]}
	switch tt {
	case html.StartTagToken:
		if w.depth++; w.depth > maxDepth*16 {
			return t, overLimit(fmt.Sprintf("nests its HTML more than %d elements deep", maxDepth*16), maxDepth*16, "levels", "")
		}
	case html.EndTagToken:
		w.depth = max(w.depth-1, 0)
	}
	switch tt {
	case html.StartTagToken, html.SelfClosingTagToken:
		name, _ := w.z.TagName()
		t.a = atom.Lookup(name)
		w.startTag(&t)
	case html.EndTagToken:
		name, _ := w.z.TagName()
		t.a = atom.Lookup(name)
		w.endTag(&t)
	case html.TextToken:
		if w.skip > 0 {
			t.tt = html.CommentToken
		}
	}
	return t, nil
}

// startTag keeps the stack for start tag t (or a self-closing one).
func (w *htmlWalk) startTag(t *htmlToken) {
	if skipped[t.a] {
		if t.tt == html.StartTagToken && !voidTags[t.a] {
			w.skip++
		}
		t.tt = html.CommentToken
		return
	}
	if w.skip > 0 {
		t.tt = html.CommentToken
		return
	}
	if t.tt == html.SelfClosingTagToken || voidTags[t.a] {
		return
	}
	if ic, ok := implicitClose[t.a]; ok {
		t.popped = w.closeImplicit(ic.closes, ic.scope, t.popped)
	}
	switch {
	case blocks[t.a]:
		t.node = w.next
		w.next++
		w.stack = append(w.stack, htmlOpen{tag: t.a, node: t.node})
	case t.a == atom.A:
		w.stack = append(w.stack, htmlOpen{tag: t.a, node: -1})
	}
}

// endTag keeps the stack for end tag t.
func (w *htmlWalk) endTag(t *htmlToken) {
	if skipped[t.a] {
		if w.skip > 0 {
			w.skip--
		}
		t.tt = html.CommentToken
		return
	}
	if w.skip > 0 {
		t.tt = html.CommentToken
		return
	}
	if blocks[t.a] || t.a == atom.A {
		t.popped = w.popTo(t.a, t.popped)
	}
}

// popTo closes the innermost open a and what is open inside it; an end
// tag with none open closes nothing.
func (w *htmlWalk) popTo(a atom.Atom, popped []int32) []int32 {
	for i := len(w.stack) - 1; i >= 0; i-- {
		if w.stack[i].tag != a {
			continue
		}
		for j := len(w.stack) - 1; j >= i; j-- {
			if w.stack[j].node >= 0 {
				popped = append(popped, w.stack[j].node)
			}
		}
		w.stack = w.stack[:i]
		break
	}
	return popped
}

// closeImplicit closes the innermost open element of closes, unless an
// element of scope (or any node besides closes' own kind) is open inside
// it first.
func (w *htmlWalk) closeImplicit(closes, scope []atom.Atom, popped []int32) []int32 {
	for i := len(w.stack) - 1; i >= 0; i-- {
		o := w.stack[i]
		for _, c := range closes {
			if o.tag == c {
				return w.popTo(c, popped)
			}
		}
		for _, s := range scope {
			if o.tag == s {
				return popped
			}
		}
		if o.node >= 0 && scope == nil {
			// <p> closes only a paragraph that is the innermost block.
			return popped
		}
	}
	return popped
}

// htmlRun is the text since the last block boundary, as the first pass
// counts it.
type htmlRun struct {
	words, linkWords int32
	// navLinks are the run's links between pages (see countLink).
	navLinks int32
	last     rune
}

// weight is the run's sentence words: its words outside links when it
// reads as prose (ten words or more, or a last character that ends a
// sentence or a clause), else none. Navigation labels, titles and table
// cells weigh nothing; paragraphs do.
//
// A run of links between pages whose other words are no more than its
// links (Texinfo's "Next: Bezier curves, Previous: Tutorial, Up:
// Asymptote [Contents][Index]", ten words and more) weighs nothing either:
// its other words are the links' labels.
func (r htmlRun) weight() int32 {
	if r.navLinks >= 2 && r.words-r.linkWords <= r.navLinks {
		return 0
	}
	if r.words >= 10 || strings.ContainsRune(".!?:;", r.last) {
		return r.words - r.linkWords
	}
	return 0
}

// htmlPage is the first pass's verdict on a page: which nodes' text is
// kept, and which rows are written as one line. Nil slices keep every
// node and write no row as a line (a page over maxHTMLNodes).
type htmlPage struct {
	keep []bool
	row  []bool
}

func (p *htmlPage) keeps(n int32) bool { return p.keep == nil || int(n) >= len(p.keep) || p.keep[n] }
func (p *htmlPage) isRow(n int32) bool { return p.row != nil && int(n) < len(p.row) && p.row[n] }

// navRels are the rel values of links between the pages of a manual, and
// navKeys the accesskeys DocBook and Texinfo give them.
var (
	navRels = map[string]bool{"prev": true, "previous": true, "next": true, "up": true, "home": true, "index": true,
		"contents": true, "toc": true, "start": true, "first": true, "last": true, "top": true, "parent": true}
	navKeys    = map[string]bool{"p": true, "n": true, "u": true, "h": true, "t": true}
	landRoles  = map[string]bool{"navigation": true, "search": true, "banner": true, "contentinfo": true, "complementary": true}
	sideblocks = map[atom.Atom]bool{atom.Header: true, atom.Footer: true, atom.Aside: true}
	// navClasses are the classes the generators docs/DOCUMENTS.md names
	// give their navigation: Texinfo 7's nav-panel, DocBook XSL's
	// navheader and navfooter, Sphinx's related bar and sidebar,
	// LaTeX2HTML's navigation panel.
	navClasses = map[string]bool{"nav-panel": true, "navheader": true, "navfooter": true, "related": true,
		"sphinxsidebar": true, "navigation": true}
	// sideClasses are classes that declare navigation outside an article,
	// main or section, as header, footer and aside do: Texinfo 6's header
	// (its navigation panel), Sphinx's footer.
	sideClasses = map[string]bool{"header": true, "footer": true}
)

// analyzeHTML is the first pass: it weighs every block element and
// decides what is the page's content and what is its boilerplate
// (navigation bars, breadcrumbs, per-page tables of contents, banners and
// footers), by main-content detection rather than by tag:
//   - with a main element (main, or role main), only its text is kept;
//   - an element declared as navigation (nav, an ARIA landmark role of
//     navigation, search, banner, contentinfo or complementary; a header,
//     footer or aside outside an article, main or section; a class the
//     generators give their navigation: navClasses, and sideClasses
//     outside an article, main or section) is dropped;
//   - so is one without prose (no sentence words: see htmlRun.weight) that
//     holds two links between the manual's pages (rel prev, next, up…,
//     or an accesskey: DocBook's and Texinfo's Prev/Up/Next bars), or one
//     in at most twelve words, or three links or more that make at least
//     half its words (a table of contents, a menu, breadcrumbs), unless
//     it holds half the page's words: a page that is a table of contents
//     keeps it.
//
// The page's html and body elements are never dropped.
//
// Everything inside a dropped element is dropped.
func analyzeHTML(ctx context.Context, path string) (*htmlPage, error) {
	w, _, err := openHTML(path)
	if err != nil {
		return nil, err
	}
	defer w.close()
	a := &htmlAnalysis{w: w, nodes: []htmlNode{{parent: -1}}}
	var popped []int32
	for count := 0; ; count++ {
		if count&0xFFF == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		t, err := w.step(popped)
		popped = t.popped
		if err != nil {
			return nil, err
		}
		if a.overflow {
			if t.tt == html.ErrorToken {
				break // too many nodes to weigh: the page is kept whole
			}
			continue
		}
		switch t.tt {
		case html.ErrorToken:
			if w.z.Err() != io.EOF {
				return nil, w.z.Err()
			}
			return a.finish(), nil
		case html.StartTagToken, html.SelfClosingTagToken:
			a.start(t)
		case html.EndTagToken:
			if len(t.popped) > 0 {
				// The run ends with the innermost element it closed.
				finishIn(a.nodes, t.popped[0], &a.run)
			}
			closeNodes(a.nodes, t.popped)
		case html.TextToken:
			countWords(&a.run, w.z.Text(), w.inLink())
		}
	}
	return &htmlPage{}, nil
}

// htmlAnalysis is the first pass's state: the nodes weighed so far and
// the run of text since the last block boundary.
type htmlAnalysis struct {
	w        *htmlWalk
	nodes    []htmlNode
	run      htmlRun
	overflow bool // more than maxHTMLNodes nodes
}

// finish closes the elements left open at the end of the page,
// innermost first, and decides.
func (a *htmlAnalysis) finish() *htmlPage {
	finishIn(a.nodes, a.w.current(), &a.run)
	var open []int32
	for i := len(a.w.stack) - 1; i >= 0; i-- {
		if a.w.stack[i].node >= 0 {
			open = append(open, a.w.stack[i].node)
		}
	}
	closeNodes(a.nodes, open)
	return decideHTML(a.nodes)
}

// start handles a start tag (or a self-closing one).
func (a *htmlAnalysis) start(t htmlToken) {
	if len(t.popped) > 0 {
		// Closed by this tag: the run ends with the innermost.
		finishIn(a.nodes, t.popped[0], &a.run)
		closeNodes(a.nodes, t.popped)
	}
	if t.node >= 0 {
		parent := a.w.below()
		finishIn(a.nodes, parent, &a.run)
		if len(a.nodes) >= maxHTMLNodes {
			a.overflow = true
			return
		}
		a.nodes = append(a.nodes, htmlNode{parent: parent, flags: nodeFlags(a.w, t.a)})
		return
	}
	if blocks[t.a] {
		finishIn(a.nodes, a.w.current(), &a.run)
	}
	if t.a == atom.A && t.tt == html.StartTagToken && countLink(&a.nodes[a.w.current()], a.w.z) {
		a.run.navLinks++
	}
}

// nodeFlags are the flags of a node of element a just opened on w.
func nodeFlags(w *htmlWalk, a atom.Atom) uint8 {
	var flags uint8
	at := tagAttrs(w.z, "role", "class")
	role := strings.ToLower(at["role"])
	nav, side := false, sideblocks[a]
	for _, c := range strings.Fields(strings.ToLower(at["class"])) {
		nav = nav || navClasses[c]
		side = side || sideClasses[c]
	}
	switch {
	case a == atom.Nav || landRoles[role] || nav:
		flags |= nodeLandmark
	case side && !w.within(atom.Article, atom.Main, atom.Section):
		flags |= nodeLandmark
	}
	if a == atom.Main || role == "main" {
		flags |= nodeMain
	}
	if headingTags[a] {
		flags |= nodeHeading
	}
	if a == atom.Table {
		flags |= nodeTable
	}
	if a == atom.Tr {
		flags |= nodeRow
	}
	if a == atom.Html || a == atom.Body {
		flags |= nodeRoot
	}
	return flags
}

// countLink counts the link whose start tag z is at into n, and among
// the links between pages if its rel or accesskey says so; it reports
// whether it is one.
func countLink(n *htmlNode, z *html.Tokenizer) bool {
	n.links++
	at := tagAttrs(z, "rel", "accesskey")
	rel, key := strings.ToLower(at["rel"]), strings.ToLower(at["accesskey"])
	for _, r := range strings.Fields(rel) {
		if navRels[r] {
			key = "n"
		}
	}
	if navKeys[key] {
		n.navLinks++
		return true
	}
	return false
}

// finishIn adds the run to node n and starts the next.
func finishIn(nodes []htmlNode, n int32, run *htmlRun) {
	nodes[n].words += run.words
	nodes[n].linkWords += run.linkWords
	nodes[n].weight += run.weight()
	*run = htmlRun{}
}

// closeNodes adds closed nodes' figures to their parents, innermost first.
// An element declared as navigation adds its words alone: it goes
// whatever it holds, and its links must not make the element around it
// (Texinfo's section, whose navigation panel is its first child) look
// like navigation too.
func closeNodes(nodes []htmlNode, closed []int32) {
	for _, c := range closed {
		if int(c) >= len(nodes) {
			continue
		}
		n := nodes[c]
		p := &nodes[n.parent]
		if n.flags&nodeLandmark != 0 {
			p.words += n.words
			continue
		}
		p.words += n.words
		p.linkWords += n.linkWords
		p.weight += n.weight
		p.links += n.links
		p.navLinks += n.navLinks
		p.flags |= n.flags & (nodeHeading | nodeTable)
	}
}

// countWords counts text's words (runs with a letter or a digit) into run.
func countWords(run *htmlRun, text []byte, link bool) {
	for _, f := range strings.Fields(string(text)) {
		if strings.IndexFunc(f, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0 {
			run.words++
			if link {
				run.linkWords++
			}
		}
		run.last, _ = utf8.DecodeLastRuneInString(f)
	}
}

// decideHTML turns the first pass's figures into the page's verdict (see
// analyzeHTML).
func decideHTML(nodes []htmlNode) *htmlPage {
	keep := make([]bool, len(nodes))
	drop := make([]bool, len(nodes))
	inMain := make([]bool, len(nodes))
	aboveMain, hasMain := markAboveMain(nodes)
	row := make([]bool, len(nodes))
	for i := range nodes {
		n := nodes[i]
		if i > 0 {
			drop[i] = drop[n.parent]
			inMain[i] = inMain[n.parent] || n.flags&nodeMain != 0
		}
		if !drop[i] && i != 0 && n.flags&nodeRoot == 0 {
			drop[i] = boilerplate(n, hasMain && !inMain[i] && !aboveMain[i], nodes[0].words)
		}
		keep[i] = !drop[i] && (!hasMain || inMain[i])
		row[i] = n.flags&nodeRow != 0 && n.words <= maxRowWords && n.flags&(nodeHeading|nodeTable) == 0
	}
	return &htmlPage{keep: keep, row: row}
}

// markAboveMain marks the nodes that hold a main element, and says
// whether the page has one.
func markAboveMain(nodes []htmlNode) (aboveMain []bool, hasMain bool) {
	aboveMain = make([]bool, len(nodes))
	for i := range nodes {
		if nodes[i].flags&nodeMain == 0 {
			continue
		}
		hasMain = true
		for p := nodes[i].parent; p >= 0 && !aboveMain[p]; p = nodes[p].parent {
			aboveMain[p] = true
		}
	}
	return aboveMain, hasMain
}

// boilerplate reports whether node n (not the page, html or body, and
// in no dropped element) is dropped: outside the main element, declared
// as navigation, or links without prose (see analyzeHTML). pageWords are
// the page's words.
func boilerplate(n htmlNode, outsideMain bool, pageWords int32) bool {
	switch {
	case outsideMain:
		return true
	case n.flags&nodeLandmark != 0:
		return true
	case n.weight == 0 && (n.navLinks >= 2 || n.navLinks == 1 && n.words <= 12):
		return true
	case n.weight == 0 && n.links >= 3 && 2*n.linkWords >= n.words && 2*n.words < pageWords:
		return true
	}
	return false
}

// tagAttrs are the current tag's attributes among keys (the tokenizer
// reads a tag's attributes once).
func tagAttrs(z *html.Tokenizer, keys ...string) map[string]string {
	out := map[string]string{}
	for {
		k, v, more := z.TagAttr()
		for _, key := range keys {
			if string(k) == key {
				out[key] = string(v)
			}
		}
		if !more {
			return out
		}
	}
}

// convertHTML writes the visible text of an HTML page, a paragraph per
// block element and a table row a line (its cells apart by " | "), a new
// section at every h1–h6, with the page's boilerplate left out
// (analyzeHTML). A page whose boilerplate would be all its text is
// written whole. Its encoding is taken from a byte order mark, a <meta
// charset> in the first KiB, or else UTF-8 (or windows-1252 where the
// bytes say so), as browsers do.
func convertHTML(ctx context.Context, path string, w io.Writer, progress Progress, limits Limits) (*Result, error) {
	page, err := analyzeHTML(ctx, path)
	if err != nil {
		return nil, err
	}
	var buf strings.Builder
	cw := &capWriter{w: w, held: &buf, max: 64 << 10}
	res, err := writeHTML(ctx, path, cw, progress, limits, page)
	if err != nil {
		return nil, err
	}
	if res.Bytes == 0 && page.keep != nil {
		// Nothing but boilerplate: the page is its boilerplate.
		return writeHTML(ctx, path, w, progress, limits, &htmlPage{})
	}
	return res, cw.flush()
}

// capWriter holds the first bytes written to it until flush (or until
// they pass max), so that a conversion that writes nothing can be done
// again from the start.
type capWriter struct {
	w    io.Writer
	held *strings.Builder
	max  int
	gone bool
}

func (c *capWriter) Write(p []byte) (int, error) {
	if c.gone {
		return c.w.Write(p)
	}
	c.held.Write(p)
	if c.held.Len() > c.max {
		return len(p), c.flush()
	}
	return len(p), nil
}

func (c *capWriter) flush() error {
	if c.gone {
		return nil
	}
	c.gone = true
	_, err := io.WriteString(c.w, c.held.String())
	return err
}

// writeHTML is the second pass: the text of the nodes page keeps.
func writeHTML(ctx context.Context, path string, w io.Writer, progress Progress, limits Limits, page *htmlPage) (*Result, error) {
	walk, size, err := openHTML(path)
	if err != nil {
		return nil, err
	}
	defer walk.close()
	tw := newTextWriter(w, limits.MaxTextBytes)
	sections := newSectionCounter(tw)
	hw := &htmlWriter{
		walk: walk, page: page, tw: tw, sections: sections,
		heading: newParagraphBuilder(func(string) error { return nil }),
	}
	hw.para = newParagraphBuilder(func(text string) error {
		if hw.para.keepRaw {
			return sections.preformatted(text)
		}
		return sections.paragraph(text)
	})
	var lastProgress int64
	var popped []int32
	for {
		t, err := walk.step(popped)
		popped = t.popped
		if err != nil {
			return nil, err
		}
		if walk.cr.n-lastProgress > 1<<20 {
			lastProgress = walk.cr.n
			progress(walk.cr.n, size)
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		keep := page.keeps(walk.current())
		switch t.tt {
		case html.ErrorToken:
			if walk.z.Err() != io.EOF {
				return nil, walk.z.Err()
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return hw.finish()
		case html.StartTagToken, html.SelfClosingTagToken:
			err = hw.start(t, keep)
		case html.EndTagToken:
			err = hw.end(t)
		case html.TextToken:
			if keep {
				hw.text(walk.z.Text())
			}
		}
		if err != nil {
			return nil, err
		}
	}
}

// htmlWriter is the second pass's state: the paragraph and the heading
// being built, and the rows, link, headings and pre elements open.
type htmlWriter struct {
	walk     *htmlWalk
	page     *htmlPage
	tw       *textWriter
	sections *sectionCounter
	para     *paragraphBuilder
	heading  *paragraphBuilder

	pre, inHeading int
	// rows counts the open rows written as one line; cells whether the
	// row has a cell yet.
	rows  int
	cells bool
	// link is a link's text, held until its end: a link without a word
	// (¶) is left out.
	link       []byte
	inLinkText bool
	// lists are the ul and ol elements open in kept nodes, innermost
	// last; marker is a list item's marker ("• ", "3. "), held until the
	// item's first text.
	lists  []htmlList
	marker string
}

// htmlList is an open list: its node, and for an ordered list the number
// of its last item.
type htmlList struct {
	node    int32
	ordered bool
	n       int
	kind    string // an ordered list's type: "1", "a", "A", "i" or "I"
}

// itemNumber is item n's number in an ordered list of type kind (a, b, c
// for "a"; i, ii, iii for "i"), as a browser numbers it.
func itemNumber(n int, kind string) string {
	switch {
	case n <= 0 || kind == "1" || kind == "":
	case kind == "a" || kind == "A":
		var b []byte
		for m := n; m > 0; m = (m - 1) / 26 {
			b = append([]byte{byte('a' + (m-1)%26)}, b...)
		}
		if kind == "A" {
			return strings.ToUpper(string(b))
		}
		return string(b)
	case (kind == "i" || kind == "I") && n < 4000:
		var b strings.Builder
		m := n
		for _, r := range []struct {
			v int
			s string
		}{{1000, "m"}, {900, "cm"}, {500, "d"}, {400, "cd"}, {100, "c"}, {90, "xc"}, {50, "l"}, {40, "xl"}, {10, "x"}, {9, "ix"}, {5, "v"}, {4, "iv"}, {1, "i"}} {
			for ; m >= r.v; m -= r.v {
				b.WriteString(r.s)
			}
		}
		if kind == "I" {
			return strings.ToUpper(b.String())
		}
		return b.String()
	}
	return strconv.Itoa(n)
}

// preformatted writes a preformatted block (see textWriter.preformatted).
func (s *sectionCounter) preformatted(text string) error {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	s.hasText = true
	return s.tw.preformatted(text)
}

// writeMarker writes the list item's marker held, before its first text.
func (h *htmlWriter) writeMarker() {
	if h.marker != "" {
		h.para.WriteString(h.marker)
		h.marker = ""
	}
}

// flushLink writes the link text held, if any.
func (h *htmlWriter) flushLink() {
	if h.inLinkText {
		if hasWord(h.link) {
			h.writeMarker()
		}
		h.para.Write(h.link)
		if h.inHeading > 0 && len(h.heading.buf) < 1<<10 {
			h.heading.Write(h.link)
		}
	}
	h.link, h.inLinkText = h.link[:0], false
}

// boundary ends the paragraph, or, inside a row written as one line,
// separates its parts by a space.
func (h *htmlWriter) boundary() error {
	h.flushLink()
	if h.rows > 0 {
		h.para.WriteString(" ")
		return nil
	}
	err := h.para.Flush()
	h.para.keepRaw = h.pre > 0
	return err
}

// finish ends the text at the end of the page.
func (h *htmlWriter) finish() (*Result, error) {
	h.rows = 0
	if err := h.boundary(); err != nil {
		return nil, err
	}
	if err := h.tw.finish(); err != nil {
		return nil, err
	}
	res := &Result{Map: memagent.PageMap{Format: FormatHTML, Unit: api.UnitSection}}
	res.Map.Pages = len(h.tw.spans)
	res.Bytes, res.Map.Spans = h.tw.n, h.tw.spans
	return res, nil
}

// closeList ends the innermost list if node n is it; an item's marker
// that found no text goes with it.
func (h *htmlWriter) closeList(n int32) {
	if k := len(h.lists) - 1; k >= 0 && h.lists[k].node == n {
		h.lists = h.lists[:k]
		h.marker = ""
	}
}

// start handles a start tag (or a self-closing one); keep says whether
// the node it is in is kept.
func (h *htmlWriter) start(t htmlToken, keep bool) error {
	for _, n := range t.popped {
		if h.page.isRow(n) && h.rows > 0 {
			h.rows--
		}
		h.closeList(n)
	}
	switch {
	case t.a == atom.Tr && h.page.isRow(t.node) && keep:
		if h.rows == 0 {
			if err := h.boundary(); err != nil {
				return err
			}
			h.cells = false
		}
		h.rows++
		return nil
	case (t.a == atom.Td || t.a == atom.Th) && h.rows > 0:
		h.flushLink()
		if h.cells {
			h.para.WriteString(" | ")
		}
		h.cells = true
		return nil
	case blocks[t.a]:
		if err := h.boundary(); err != nil {
			return err
		}
	}
	if keep {
		h.startKept(t)
	}
	return nil
}

// startKept handles a start tag in a kept node.
func (h *htmlWriter) startKept(t htmlToken) {
	opens := t.tt == html.StartTagToken
	if t.a == atom.Pre && opens {
		h.pre++
		h.para.keepRaw = true
	}
	if headingTags[t.a] && opens {
		h.inHeading++
		h.heading.Flush()
	}
	if t.a == atom.A && opens {
		h.flushLink()
		h.inLinkText = true
	}
	if (t.a == atom.Ul || t.a == atom.Ol) && opens {
		l := htmlList{node: t.node, ordered: t.a == atom.Ol}
		if l.ordered {
			at := tagAttrs(h.walk.z, "start", "type")
			if n, err := strconv.Atoi(strings.TrimSpace(at["start"])); err == nil {
				l.n = n - 1
			}
			l.kind = strings.TrimSpace(at["type"])
		}
		h.lists = append(h.lists, l)
	}
	if t.a == atom.Li && opens {
		// An item's marker, before its first text: a bullet, or its
		// number in an ordered list (its value attribute, else the next).
		h.marker = "• "
		if k := len(h.lists) - 1; k >= 0 && h.lists[k].ordered {
			l := &h.lists[k]
			l.n++
			if v, err := strconv.Atoi(strings.TrimSpace(tagAttrs(h.walk.z, "value")["value"])); err == nil {
				l.n = v
			}
			h.marker = itemNumber(l.n, l.kind) + ". "
		}
	}
	if t.a == atom.Img {
		// Alt text stands in for an image.
		if alt := strings.TrimSpace(tagAttrs(h.walk.z, "alt")["alt"]); alt != "" {
			h.writeMarker()
			h.para.WriteString(" " + alt + " ")
		}
	}
}

// end handles an end tag.
func (h *htmlWriter) end(t htmlToken) error {
	closedKept := len(t.popped) == 0 || h.page.keeps(t.popped[0])
	if t.a == atom.A {
		if h.inLinkText && !hasWord(h.link) && len(h.link) <= 8 {
			h.link, h.inLinkText = h.link[:0], false
		}
		h.flushLink()
	}
	if headingTags[t.a] && h.inHeading > 0 && closedKept {
		h.inHeading--
		h.flushLink()
		h.sections.heading(h.heading.String())
	}
	endRow := false
	for _, n := range t.popped {
		if h.page.isRow(n) && h.rows > 0 {
			h.rows--
			endRow = h.rows == 0
		}
		h.closeList(n)
	}
	if endRow {
		return h.boundary()
	}
	if blocks[t.a] {
		if err := h.boundary(); err != nil {
			return err
		}
	}
	if t.a == atom.Pre && h.pre > 0 && closedKept {
		h.pre--
		h.para.keepRaw = h.pre > 0
	}
	return nil
}

// text handles text in a kept node.
func (h *htmlWriter) text(text []byte) {
	if h.inLinkText && len(h.link)+len(text) <= 1<<10 {
		h.link = append(h.link, text...)
		return
	}
	h.flushLink()
	if h.pre > 0 || strings.TrimSpace(string(text)) != "" {
		h.writeMarker()
	}
	h.para.Write(text)
	if h.inHeading > 0 && len(h.heading.buf) < 1<<10 {
		h.heading.Write(text)
	}
}

// hasWord reports whether b has a letter or a digit.
func hasWord(b []byte) bool {
	return strings.IndexFunc(string(b), func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}
