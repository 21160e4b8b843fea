package docconv

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// pdfobj.go is a small reader of a PDF's objects (cross-reference tables
// and streams, object streams, Flate streams, the page tree): just enough
// to hand tjshift.go a page's content stream, which PDFium's API does not
// expose. It never decides what text a page holds; anything it cannot
// read (encryption, other filters, a broken cross-reference) makes it give
// up, and the page keeps PDFium's reading unrepaired.

// pdfRef is an indirect reference, "N G R".
type pdfRef struct{ num, gen int }

// pdfName is a name object without its slash; pdfKeyword is an operator
// of a content stream (or true/false/null, resolved by the lexer).
type (
	pdfName    string
	pdfKeyword string
)

// pdfStream is a stream object: its dictionary and its raw (encoded)
// data.
type pdfStream struct {
	dict map[string]any
	raw  []byte
}

var errPDFSyntax = errors.New("pdf syntax")

// Bounds that keep the reader cheap on hostile input: it gives up
// rather than read more.
const (
	pdfMaxStream  = 16 << 20 // decoded bytes of one stream (a page's content)
	pdfMaxXrefs   = 64       // cross-reference sections followed
	pdfMaxDepth   = 32       // nesting of arrays and dictionaries
	pdfMaxObjects = 1 << 22  // objects the cross-reference may name
)

// pdfLexer reads PDF tokens from b.
type pdfLexer struct {
	b     []byte
	p     int
	depth int
}

func isPDFSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' || c == 0
}

func isPDFDelim(c byte) bool {
	switch c {
	case '(', ')', '<', '>', '[', ']', '{', '}', '/', '%':
		return true
	}
	return false
}

func (l *pdfLexer) skipSpace() {
	for l.p < len(l.b) {
		c := l.b[l.p]
		if isPDFSpace(c) {
			l.p++
			continue
		}
		if c == '%' {
			for l.p < len(l.b) && l.b[l.p] != '\n' && l.b[l.p] != '\r' {
				l.p++
			}
			continue
		}
		return
	}
}

// regular reads a run of regular characters (a number, keyword or name).
func (l *pdfLexer) regular() []byte {
	s := l.p
	for l.p < len(l.b) && !isPDFSpace(l.b[l.p]) && !isPDFDelim(l.b[l.p]) {
		l.p++
	}
	return l.b[s:l.p]
}

// next reads one object or keyword; io.EOF at the end. "]" and ">>" come
// back as keywords. References "N G R" are left to the caller.
func (l *pdfLexer) next() (any, error) {
	l.skipSpace()
	if l.p >= len(l.b) {
		return nil, io.EOF
	}
	c := l.b[l.p]
	switch {
	case c == '/':
		l.p++
		return pdfName(l.regular()), nil
	case c == '(':
		return l.literal()
	case c == '<' && l.p+1 < len(l.b) && l.b[l.p+1] == '<':
		l.p += 2
		return l.dict()
	case c == '<':
		return l.hex()
	case c == '>' && l.p+1 < len(l.b) && l.b[l.p+1] == '>':
		l.p += 2
		return pdfKeyword(">>"), nil
	case c == '[':
		l.p++
		return l.array()
	case c == ']':
		l.p++
		return pdfKeyword("]"), nil
	case c == '{' || c == '}' || c == ')' || c == '>':
		l.p++
		return pdfKeyword(string(c)), nil
	}
	tok := l.regular()
	if len(tok) == 0 {
		l.p++
		return nil, errPDFSyntax
	}
	if c == '+' || c == '-' || c == '.' || (c >= '0' && c <= '9') {
		if f, err := strconv.ParseFloat(string(tok), 64); err == nil {
			return f, nil
		}
		return 0.0, nil // a malformed number reads as 0, as PDFium reads it
	}
	switch string(tok) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "null":
		return nil, nil
	}
	return pdfKeyword(tok), nil
}

func (l *pdfLexer) literal() (any, error) {
	l.p++ // (
	var out []byte
	depth := 1
	for l.p < len(l.b) {
		c := l.b[l.p]
		l.p++
		switch c {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return out, nil
			}
		case '\\':
			if l.p >= len(l.b) {
				return out, nil
			}
			e := l.b[l.p]
			l.p++
			switch e {
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case '\r':
				if l.p < len(l.b) && l.b[l.p] == '\n' {
					l.p++
				}
				continue
			case '\n':
				continue
			default:
				if e >= '0' && e <= '7' {
					v := int(e - '0')
					for k := 0; k < 2 && l.p < len(l.b) && l.b[l.p] >= '0' && l.b[l.p] <= '7'; k++ {
						v = v*8 + int(l.b[l.p]-'0')
						l.p++
					}
					c = byte(v)
				} else {
					c = e
				}
			}
		}
		out = append(out, c)
	}
	return out, nil
}

func (l *pdfLexer) hex() (any, error) {
	l.p++ // <
	var out []byte
	half, odd := byte(0), false
	for l.p < len(l.b) {
		c := l.b[l.p]
		l.p++
		var v byte
		switch {
		case c == '>':
			if odd {
				out = append(out, half<<4)
			}
			return out, nil
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		default:
			continue
		}
		if odd {
			out = append(out, half<<4|v)
		} else {
			half = v
		}
		odd = !odd
	}
	return out, nil
}

// foldRefs folds "N G R" in a run of objects into pdfRefs.
func foldRefs(xs []any) []any {
	out := xs[:0]
	for _, x := range xs {
		if k, ok := x.(pdfKeyword); ok && k == "R" && len(out) >= 2 {
			n, ok1 := out[len(out)-2].(float64)
			g, ok2 := out[len(out)-1].(float64)
			if ok1 && ok2 {
				out = append(out[:len(out)-2], pdfRef{int(n), int(g)})
				continue
			}
		}
		out = append(out, x)
	}
	return out
}

func (l *pdfLexer) array() (any, error) {
	if l.depth++; l.depth > pdfMaxDepth {
		return nil, errPDFSyntax
	}
	defer func() { l.depth-- }()
	var xs []any
	for {
		x, err := l.next()
		if err != nil {
			return nil, err
		}
		if k, ok := x.(pdfKeyword); ok && k == "]" {
			return foldRefs(xs), nil
		}
		xs = append(xs, x)
	}
}

func (l *pdfLexer) dict() (any, error) {
	if l.depth++; l.depth > pdfMaxDepth {
		return nil, errPDFSyntax
	}
	defer func() { l.depth-- }()
	var xs []any
	for {
		x, err := l.next()
		if err != nil {
			return nil, err
		}
		if k, ok := x.(pdfKeyword); ok && k == ">>" {
			break
		}
		xs = append(xs, x)
	}
	xs = foldRefs(xs)
	d := make(map[string]any, len(xs)/2)
	for i := 0; i+1 < len(xs); i += 2 {
		if k, ok := xs[i].(pdfName); ok {
			d[string(k)] = xs[i+1]
		}
	}
	return d, nil
}

// xrefEntry locates an object: at off in the file, or (inStm) as the
// index-th object of object stream stm.
type xrefEntry struct {
	off        int64
	stm, index int
	inStm      bool
}

// pdfFile is a PDF's objects, read on demand.
type pdfFile struct {
	r       io.ReaderAt
	size    int64
	xref    map[int]xrefEntry
	trailer map[string]any
	objStms map[int][]any // decoded object streams: their objects
	zr      io.ReadCloser // zlib, reset for each stream
	content []byte        // pageContent's buffer, reused page after page
	depth   int           // objectAt calls under way (a Length may name its own stream)
	// pages is each page and its content streams, in the page tree's
	// order (nil before pageRefs walks the tree).
	pages []pdfPageObj
}

// openPDFFile reads the cross-reference of the PDF in r. Encrypted files
// are refused: their streams would need decrypting.
func openPDFFile(r io.ReaderAt, size int64) (*pdfFile, error) {
	f := &pdfFile{r: r, size: size, xref: map[int]xrefEntry{}, objStms: map[int][]any{}}
	tail := min(size, 2048)
	buf := make([]byte, tail)
	if _, err := r.ReadAt(buf, size-tail); err != nil && err != io.EOF {
		return nil, err
	}
	i := bytes.LastIndex(buf, []byte("startxref"))
	if i < 0 {
		return nil, fmt.Errorf("no startxref: %w", errPDFSyntax)
	}
	l := &pdfLexer{b: buf[i+len("startxref"):]}
	x, _ := l.next()
	off, ok := x.(float64)
	if !ok {
		return nil, fmt.Errorf("startxref: %w", errPDFSyntax)
	}
	seen := map[int64]bool{}
	for n := 0; off > 0 && n < pdfMaxXrefs && !seen[int64(off)]; n++ {
		seen[int64(off)] = true
		trailer, err := f.readXref(int64(off))
		if err != nil {
			return nil, err
		}
		if f.trailer == nil {
			f.trailer = trailer
		}
		if s, ok := trailer["XRefStm"].(float64); ok && !seen[int64(s)] {
			seen[int64(s)] = true
			if _, err := f.readXref(int64(s)); err != nil {
				return nil, err
			}
		}
		off, _ = trailer["Prev"].(float64)
	}
	if f.trailer == nil {
		return nil, errPDFSyntax
	}
	if _, ok := f.trailer["Encrypt"]; ok {
		return nil, errors.New("encrypted")
	}
	return f, nil
}

// readAt reads up to n bytes at off.
func (f *pdfFile) readAt(off int64, n int) []byte {
	if off < 0 || off >= f.size {
		return nil
	}
	n = int(min(int64(n), f.size-off))
	b := make([]byte, n)
	k, _ := f.r.ReadAt(b, off)
	return b[:k]
}

// set records an entry unless a newer section already did.
func (f *pdfFile) set(num int, e xrefEntry) {
	if _, ok := f.xref[num]; !ok && num >= 0 && num < pdfMaxObjects {
		f.xref[num] = e
	}
}

// readXref reads the cross-reference section at off (a table or a
// stream) and returns its trailer dictionary.
func (f *pdfFile) readXref(off int64) (map[string]any, error) {
	head := f.readAt(off, 16)
	if bytes.HasPrefix(bytes.TrimLeft(head, " \r\n\t"), []byte("xref")) {
		return f.readXrefTable(off)
	}
	_, obj, err := f.objectAt(off)
	if err != nil {
		return nil, err
	}
	s, ok := obj.(pdfStream)
	if !ok {
		return nil, fmt.Errorf("xref at %d: %w", off, errPDFSyntax)
	}
	data, err := f.decode(s)
	if err != nil {
		return nil, err
	}
	w, _ := s.dict["W"].([]any)
	if len(w) != 3 {
		return nil, fmt.Errorf("xref stream W: %w", errPDFSyntax)
	}
	var ws [3]int
	row := 0
	for k := range 3 {
		v, _ := w[k].(float64)
		if v < 0 || v > 8 {
			return nil, errPDFSyntax
		}
		ws[k] = int(v)
		row += ws[k]
	}
	size, _ := s.dict["Size"].(float64)
	index := []any{0.0, size}
	if ix, ok := s.dict["Index"].([]any); ok {
		index = ix
	}
	field := func(b []byte) int64 {
		var v int64
		for _, c := range b {
			v = v<<8 | int64(c)
		}
		return v
	}
	p := 0
	for k := 0; k+1 < len(index); k += 2 {
		first, _ := index[k].(float64)
		count, _ := index[k+1].(float64)
		for j := 0; j < int(count); j++ {
			if row == 0 || p+row > len(data) {
				return s.dict, nil
			}
			typ := int64(1)
			if ws[0] > 0 {
				typ = field(data[p : p+ws[0]])
			}
			a := field(data[p+ws[0] : p+ws[0]+ws[1]])
			b := field(data[p+ws[0]+ws[1] : p+row])
			p += row
			num := int(first) + j
			switch typ {
			case 1:
				f.set(num, xrefEntry{off: a})
			case 2:
				f.set(num, xrefEntry{stm: int(a), index: int(b), inStm: true})
			default:
				f.set(num, xrefEntry{off: -1})
			}
		}
	}
	return s.dict, nil
}

func (f *pdfFile) readXrefTable(off int64) (map[string]any, error) {
	// Read the table in growing windows until its trailer is whole.
	for n := 1 << 14; ; n *= 4 {
		b := f.readAt(off, n)
		t := bytes.Index(b, []byte("trailer"))
		if t < 0 || !bytes.Contains(b[t:], []byte(">>")) {
			if int64(len(b)) < int64(n) || n > 1<<26 {
				return nil, fmt.Errorf("xref table at %d: %w", off, errPDFSyntax)
			}
			continue
		}
		l := &pdfLexer{b: b[:t]}
		l.p = bytes.Index(b, []byte("xref")) + 4
		for {
			x, err := l.next()
			if err != nil {
				break
			}
			first, ok := x.(float64)
			if !ok {
				break
			}
			y, _ := l.next()
			count, _ := y.(float64)
			for j := 0; j < int(count); j++ {
				o, _ := l.next()
				_, _ = l.next()
				kind, _ := l.next()
				ov, _ := o.(float64)
				if k, _ := kind.(pdfKeyword); k == "n" {
					f.set(int(first)+j, xrefEntry{off: int64(ov)})
				} else {
					f.set(int(first)+j, xrefEntry{off: -1})
				}
			}
		}
		l = &pdfLexer{b: b[t+len("trailer"):]}
		d, err := l.next()
		if err != nil {
			return nil, err
		}
		dict, ok := d.(map[string]any)
		if !ok {
			return nil, errPDFSyntax
		}
		return dict, nil
	}
}

// objectAt parses "N G obj ..." at off: the object, a stream with its
// raw data when it is one.
func (f *pdfFile) objectAt(off int64) (int, any, error) {
	if f.depth++; f.depth > 8 {
		f.depth--
		return 0, nil, fmt.Errorf("object at %d: references loop: %w", off, errPDFSyntax)
	}
	defer func() { f.depth-- }()
	for n := 1 << 10; ; n *= 4 {
		b := f.readAt(off, n)
		l := &pdfLexer{b: b}
		num, _ := l.next()
		_, _ = l.next()
		kw, _ := l.next()
		nv, ok := num.(float64)
		if k, _ := kw.(pdfKeyword); !ok || k != "obj" {
			return 0, nil, fmt.Errorf("object at %d: %w", off, errPDFSyntax)
		}
		obj, err := l.next()
		if err == nil {
			var after any
			after, err = l.next()
			d, isDict := obj.(map[string]any)
			if k, ok := after.(pdfKeyword); ok && k == "stream" && isDict {
				start := off + int64(l.p)
				if start < f.size && f.readAt(start, 1)[0] == '\r' {
					start++
				}
				if start < f.size && f.readAt(start, 1)[0] == '\n' {
					start++
				}
				length, _ := f.resolve(d["Length"]).(float64)
				if length < 0 || length > pdfMaxStream {
					return 0, nil, fmt.Errorf("stream length %v: %w", length, errPDFSyntax)
				}
				return int(nv), pdfStream{dict: d, raw: f.readAt(start, int(length))}, nil
			}
			return int(nv), obj, nil
		}
		if int64(len(b)) < int64(n) || n > 1<<24 {
			return 0, nil, fmt.Errorf("object at %d: %w", off, errPDFSyntax)
		}
	}
}

// object returns object num (nil when it is missing or unreadable).
func (f *pdfFile) object(num int) any {
	e, ok := f.xref[num]
	if !ok || e.off < 0 {
		return nil
	}
	if !e.inStm {
		_, obj, err := f.objectAt(e.off)
		if err != nil {
			return nil
		}
		return obj
	}
	objs, ok := f.objStms[e.stm]
	if !ok {
		objs = f.readObjStm(e.stm)
		f.objStms[e.stm] = objs
	}
	if e.index < 0 || e.index >= len(objs) {
		return nil
	}
	return objs[e.index]
}

func (f *pdfFile) readObjStm(num int) []any {
	e, ok := f.xref[num]
	if !ok || e.inStm || e.off < 0 {
		return nil
	}
	_, obj, err := f.objectAt(e.off)
	if err != nil {
		return nil
	}
	s, ok := obj.(pdfStream)
	if !ok {
		return nil
	}
	data, err := f.decode(s)
	if err != nil {
		return nil
	}
	n, _ := s.dict["N"].(float64)
	first, _ := s.dict["First"].(float64)
	if n <= 0 || int(first) > len(data) {
		return nil
	}
	head := &pdfLexer{b: data[:int(first)]}
	var objs []any
	for range int(n) {
		_, _ = head.next()
		o, err := head.next()
		ov, ok := o.(float64)
		if err != nil || !ok || int(first)+int(ov) > len(data) {
			break
		}
		l := &pdfLexer{b: data, p: int(first) + int(ov)}
		x, err := l.next()
		if err != nil {
			break
		}
		if v, ok := x.(float64); ok {
			// A reference as the object: "M H R".
			p := l.p
			g, _ := l.next()
			r, _ := l.next()
			if gv, ok := g.(float64); ok && r == pdfKeyword("R") {
				x = pdfRef{int(v), int(gv)}
			} else {
				l.p = p
			}
		}
		objs = append(objs, x)
	}
	return objs
}

// resolve follows references (a few deep) to the object.
func (f *pdfFile) resolve(x any) any {
	for range 8 {
		r, ok := x.(pdfRef)
		if !ok {
			return x
		}
		x = f.object(r.num)
	}
	return nil
}

// decode returns a stream's decoded data: Flate (with PNG predictors) or
// none; other filters are an error.
func (f *pdfFile) decode(s pdfStream) ([]byte, error) {
	return f.decodeAppend(nil, s)
}

// decodeAppend appends s's decoded data to dst. The zlib reader is the
// file's own, reset for each stream: pages are read one after another,
// and a page's content costs no allocation but its growth.
func (f *pdfFile) decodeAppend(dst []byte, s pdfStream) ([]byte, error) {
	filter := f.resolve(s.dict["Filter"])
	if a, ok := filter.([]any); ok {
		switch len(a) {
		case 0:
			filter = nil
		case 1:
			filter = f.resolve(a[0])
		default:
			return nil, errors.New("filter chain")
		}
	}
	switch filter {
	case nil:
		return append(dst, s.raw...), nil
	case pdfName("FlateDecode"), pdfName("Fl"):
	default:
		return nil, fmt.Errorf("filter %v", filter)
	}
	parms, _ := f.resolve(s.dict["DecodeParms"]).(map[string]any)
	if a, ok := f.resolve(s.dict["DecodeParms"]).([]any); ok && len(a) == 1 {
		parms, _ = f.resolve(a[0]).(map[string]any)
	}
	pred, _ := parms["Predictor"].(float64)
	if pred > 1 && pred < 10 {
		return nil, errors.New("TIFF predictor")
	}
	var err error
	if f.zr == nil {
		f.zr, err = zlib.NewReader(bytes.NewReader(s.raw))
	} else {
		err = f.zr.(zlib.Resetter).Reset(bytes.NewReader(s.raw), nil)
	}
	if err != nil {
		f.zr = nil
		return nil, err
	}
	start := len(dst)
	for {
		if len(dst)-start > pdfMaxStream {
			return nil, errors.New("stream too large")
		}
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := f.zr.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
			break // a truncated stream reads as far as it goes, as in PDFium
		}
		if err != nil {
			return nil, err
		}
	}
	if pred >= 10 {
		cols := 1.0
		if c, ok := parms["Columns"].(float64); ok && c > 0 {
			cols = c
		}
		out, err := unpredictPNG(dst[start:], int(cols))
		return append(dst[:start], out...), err
	}
	return dst, nil
}

// unpredictPNG undoes PNG row filters of rows of cols bytes (one byte a
// pixel, as cross-reference streams use them).
func unpredictPNG(data []byte, cols int) ([]byte, error) {
	if cols <= 0 || cols > 1<<16 {
		return nil, errPDFSyntax
	}
	var out []byte
	prev := make([]byte, cols)
	for p := 0; p+cols+1 <= len(data); p += cols + 1 {
		kind, row := data[p], data[p+1:p+1+cols]
		cur := make([]byte, cols)
		for i := range cols {
			var left, up, ul byte
			if i > 0 {
				left, ul = cur[i-1], prev[i-1]
			}
			up = prev[i]
			switch kind {
			case 0:
				cur[i] = row[i]
			case 1:
				cur[i] = row[i] + left
			case 2:
				cur[i] = row[i] + up
			case 3:
				cur[i] = row[i] + byte((int(left)+int(up))/2)
			case 4:
				pa, pb, pc := absInt(int(up)-int(ul)), absInt(int(left)-int(ul)), absInt(int(left)+int(up)-2*int(ul))
				switch {
				case pa <= pb && pa <= pc:
					cur[i] = row[i] + left
				case pb <= pc:
					cur[i] = row[i] + up
				default:
					cur[i] = row[i] + ul
				}
			default:
				return nil, errPDFSyntax
			}
		}
		out = append(out, cur...)
		prev = cur
	}
	return out, nil
}

func absInt(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// pdfPageObj is a page object and its content streams.
type pdfPageObj struct {
	ref      pdfRef
	contents []pdfRef
}

// pageRefs lists each page and its content streams in the page tree's order
// (walking the tree once). The objects it decoded on the way are then
// let go: a content stream is never inside an object stream.
func (f *pdfFile) pageRefs() []pdfPageObj {
	if f.pages != nil {
		return f.pages
	}
	f.pages = []pdfPageObj{}
	root, _ := f.resolve(f.trailer["Root"]).(map[string]any)
	seen := map[pdfRef]bool{}
	var walk func(x any, depth int)
	walk = func(x any, depth int) {
		r, ok := x.(pdfRef)
		if !ok || seen[r] || depth > pdfMaxDepth || len(f.pages) > pdfMaxObjects {
			return
		}
		seen[r] = true
		node, _ := f.resolve(r).(map[string]any)
		if node == nil {
			return
		}
		if kids, ok := f.resolve(node["Kids"]).([]any); ok && node["Type"] != pdfName("Page") {
			for _, k := range kids {
				walk(k, depth+1)
			}
			return
		}
		var contents []pdfRef
		c := node["Contents"]
		if _, ok := c.(pdfRef); ok {
			if a, ok := f.resolve(c).([]any); ok {
				c = a // an indirect array of streams
			}
		}
		switch c := c.(type) {
		case pdfRef:
			contents = []pdfRef{c}
		case []any:
			for _, x := range c {
				if r, ok := x.(pdfRef); ok {
					contents = append(contents, r)
				}
			}
		}
		f.pages = append(f.pages, pdfPageObj{ref: r, contents: contents})
	}
	if root != nil {
		walk(root["Pages"], 0)
	}
	f.objStms = map[int][]any{}
	return f.pages
}

// pageContent returns page i's content streams, decoded and joined, in
// a buffer the next call reuses.
func (f *pdfFile) pageContent(i int) ([]byte, error) {
	pages := f.pageRefs()
	if i < 0 || i >= len(pages) {
		return nil, errors.New("no such page")
	}
	out := f.content[:0]
	for _, r := range pages[i].contents {
		s, ok := f.resolve(r).(pdfStream)
		if !ok {
			continue
		}
		var err error
		if out, err = f.decodeAppend(out, s); err != nil {
			return nil, err
		}
		if len(out) > pdfMaxStream {
			return nil, errors.New("content too large")
		}
		out = append(out, '\n')
	}
	f.content = out
	return out, nil
}

// verticalFont says whether font name of page i's resources (inherited
// from the page tree as PDF allows) writes vertically: a Type0 font whose
// CMap is a -V one or says /WMode 1.
func (f *pdfFile) verticalFont(i int, name string) bool {
	pages := f.pageRefs()
	if i < 0 || i >= len(pages) {
		return false
	}
	node, _ := f.resolve(pages[i].ref).(map[string]any)
	for depth := 0; node != nil && depth < pdfMaxDepth; depth++ {
		if res, ok := f.resolve(node["Resources"]).(map[string]any); ok {
			fonts, _ := f.resolve(res["Font"]).(map[string]any)
			font, _ := f.resolve(fonts[name]).(map[string]any)
			switch enc := f.resolve(font["Encoding"]).(type) {
			case pdfName:
				return strings.HasSuffix(string(enc), "-V")
			case pdfStream:
				w, _ := enc.dict["WMode"].(float64)
				return w == 1
			}
			return false
		}
		node, _ = f.resolve(node["Parent"]).(map[string]any)
	}
	return false
}
