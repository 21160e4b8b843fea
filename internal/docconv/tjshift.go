package docconv

import (
	"bytes"
	"io"
	"slices"

	"github.com/klippa-app/go-pdfium"
	"github.com/klippa-app/go-pdfium/enums"
	"github.com/klippa-app/go-pdfium/references"
	"github.com/klippa-app/go-pdfium/requests"
	"github.com/klippa-app/go-pdfium/structs"
)

// PDFium drops a TJ array's trailing shift when the array also holds an
// empty string (CPDF_StreamContentParser::Handle_ShowText_Positioning
// skips the empty string, so AddTextObject applies kernings.back(), a
// slot never filled, instead of the last string's shift; upstream PDFium
// of November 2025 still does). gropdf ends a justified run with
// `(in) -317.840 ()] TJ`: the word space after "in" is lost, and the text
// shown after it, up to the next Td, TD, T*, Tm, ', " or BT, is drawn that
// much to the left: "ingrolbp_SOURCES". tjshift reads the page's content
// stream itself, finds the text objects PDFium placed short, and moves
// their glyphs by the shift PDFium dropped. In a vertical font PDFium
// loses it in y: such a page is left as PDFium read it.

// tjShift is how far PDFium drew one text object short, in page space.
type tjShift struct {
	// obj is the object's place among the page-level text objects PDFium
	// makes (one a Tj, ', " or TJ that shows a non-empty string), from 0.
	obj    int
	dx, dy float64
}

// pdfMatrix is a PDF matrix [a b c d e f].
type pdfMatrix [6]float64

var pdfIdentity = pdfMatrix{1, 0, 0, 1, 0, 0}

// mul is m then n (m × n in the PDF's row-vector convention).
func (m pdfMatrix) mul(n pdfMatrix) pdfMatrix {
	return pdfMatrix{
		m[0]*n[0] + m[1]*n[2], m[0]*n[1] + m[1]*n[3],
		m[2]*n[0] + m[3]*n[2], m[2]*n[1] + m[3]*n[3],
		m[4]*n[0] + m[5]*n[2] + n[4], m[4]*n[1] + m[5]*n[3] + n[5],
	}
}

// mayDropTJShift says whether content can hold a TJ array with an empty
// string: the cheap test that spares most pages the tokenizer. An empty
// string is "()" or "<>" not after a backslash ("(\\()" is a string of a
// parenthesis, common in LaTeX's output).
func mayDropTJShift(content []byte) bool {
	if !bytes.Contains(content, []byte("TJ")) {
		return false
	}
	for _, empty := range [][]byte{[]byte("()"), []byte("<>")} {
		for i := 0; i < len(content); {
			j := bytes.Index(content[i:], empty)
			if j < 0 {
				break
			}
			if j += i; j == 0 || content[j-1] != '\\' {
				return true
			}
			i = j + 2
		}
	}
	return false
}

// tjShifts interprets a page's content stream as far as text positions go
// and returns the text objects PDFium draws short (none on almost every
// page), how many page-level text objects PDFium makes of it, and the
// fonts (resource names) of the TJ arrays whose displacement it lost.
func tjShifts(content []byte) (shifts []tjShift, objects int, fonts []string) {
	type state struct {
		ctm         pdfMatrix
		tm          pdfMatrix
		err         float64 // PDFium's text position minus the true one, text space x
		size, scale float64
		font        string
	}
	st := state{ctm: pdfIdentity, tm: pdfIdentity, scale: 1}
	var stack []state
	var ops []any
	l := &pdfLexer{b: content}
	num := func(k int) float64 { // operand k of n, from the first
		if k < 0 || k >= len(ops) {
			return 0
		}
		v, _ := ops[k].(float64)
		return v
	}
	show := func(kernDropped float64) {
		if st.err != 0 {
			// This object starts where PDFium's text position says,
			// st.err short of where the page draws it.
			m := st.tm.mul(st.ctm)
			shifts = append(shifts, tjShift{obj: objects, dx: -st.err * m[0], dy: -st.err * m[1]})
		}
		objects++
		st.err += kernDropped
	}
	for {
		x, err := l.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			// A malformed operand: PDFium may read it otherwise, and if
			// that changes what objects it makes, the count check of
			// repairTJShifts leaves the page alone.
			ops = ops[:0]
			continue
		}
		op, isOp := x.(pdfKeyword)
		if !isOp {
			if len(ops) < 16 {
				ops = append(ops, x)
			}
			continue
		}
		n := len(ops)
		switch op {
		case "q":
			if len(stack) < 256 {
				stack = append(stack, st)
			}
		case "Q":
			if len(stack) > 0 {
				st, stack = stack[len(stack)-1], stack[:len(stack)-1]
			}
		case "cm":
			if n == 6 {
				st.ctm = pdfMatrix{num(0), num(1), num(2), num(3), num(4), num(5)}.mul(st.ctm)
			}
		case "BT":
			st.tm, st.err = pdfIdentity, 0
		case "Tm":
			if n == 6 {
				st.tm = pdfMatrix{num(0), num(1), num(2), num(3), num(4), num(5)}
			}
			st.err = 0
		case "Td", "TD", "T*":
			st.err = 0
		case "Tf":
			if n >= 1 {
				st.size = num(n - 1)
			}
			if n >= 2 {
				if name, ok := ops[n-2].(pdfName); ok {
					st.font = string(name)
				}
			}
		case "Tz":
			if n == 1 {
				st.scale = num(0) / 100
			}
		case "Tj", "'", "\"":
			if op != "Tj" {
				st.err = 0
			}
			if n >= 1 {
				if s, ok := ops[n-1].([]byte); ok && len(s) > 0 {
					show(0)
				}
			}
		case "TJ":
			if n < 1 {
				break
			}
			arr, ok := ops[n-1].([]any)
			if !ok {
				break
			}
			strs, empties, trailing := 0, 0, 0.0
			for _, e := range arr {
				switch e := e.(type) {
				case []byte:
					if len(e) == 0 {
						empties++
						continue
					}
					strs++
					trailing = 0
				case float64:
					trailing += e
				}
			}
			if strs == 0 {
				break // PDFium moves by the shifts and makes no object
			}
			dropped := 0.0
			if empties > 0 && trailing != 0 {
				// The page moves by -trailing/1000 of the font size (scaled
				// by Tz); PDFium does not move: its position is off by
				// trailing/1000 of it from then on.
				dropped = trailing / 1000 * st.size * st.scale
				if !slices.Contains(fonts, st.font) {
					fonts = append(fonts, st.font)
				}
			}
			show(dropped)
		case "BI":
			// An inline image: skip its data, up to EI.
			i := bytes.Index(content[l.p:], []byte("ID"))
			if i < 0 {
				return shifts, objects, fonts
			}
			l.p += i + 2
			for {
				j := bytes.Index(content[l.p:], []byte("EI"))
				if j < 0 {
					return shifts, objects, fonts
				}
				l.p += j + 2
				if isPDFSpace(content[l.p-3]) && (l.p >= len(content) || isPDFSpace(content[l.p]) || isPDFDelim(content[l.p])) {
					break
				}
			}
		}
		ops = ops[:0]
	}
	return shifts, objects, fonts
}

// repairTJShifts moves the glyphs of the text objects PDFium drew short
// on page i (see tjShift) back where the page draws them. It does nothing
// unless the page's content stream has such an object, and gives up
// (leaving glyphs as PDFium placed them) whenever the page's objects do
// not match the content stream one to one.
func repairTJShifts(inst pdfium.Pdfium, src *pdfFile, page references.FPDF_PAGE, tp references.FPDF_TEXTPAGE, i int, glyphs []Glyph) {
	if src == nil || len(glyphs) == 0 {
		return
	}
	content, err := src.pageContent(i)
	if err != nil || !mayDropTJShift(content) {
		return
	}
	shifts, objects, fonts := tjShifts(content)
	if len(shifts) == 0 {
		return
	}
	for _, font := range fonts {
		if src.verticalFont(i, font) {
			return // PDFium lost the displacement in y: not repaired
		}
	}
	// The page's text objects, in stream order, known by their matrices
	// (text position included): a glyph's object is found by its matrix.
	ref := requests.Page{ByReference: &page}
	count, err := inst.FPDFPage_CountObjects(&requests.FPDFPage_CountObjects{Page: ref})
	if err != nil {
		return
	}
	var texts []structs.FPDF_FS_MATRIX
	for k := 0; k < count.Count; k++ {
		obj, err := inst.FPDFPage_GetObject(&requests.FPDFPage_GetObject{Page: ref, Index: k})
		if err != nil {
			return
		}
		typ, err := inst.FPDFPageObj_GetType(&requests.FPDFPageObj_GetType{PageObject: obj.PageObject})
		if err != nil {
			return
		}
		if typ.Type != enums.FPDF_PAGEOBJ_TEXT {
			continue
		}
		m, err := inst.FPDFPageObj_GetMatrix(&requests.FPDFPageObj_GetMatrix{PageObject: obj.PageObject})
		if err != nil {
			return
		}
		texts = append(texts, m.Matrix)
	}
	if len(texts) != objects {
		return
	}
	shiftOf := make(map[int]tjShift, len(shifts))
	for _, s := range shifts {
		shiftOf[s.obj] = s
	}
	at := 0 // the object of the glyph before: glyphs come in stream order
	for j := range glyphs {
		g := &glyphs[j]
		if g.Index <= 0 {
			continue
		}
		obj, err := inst.FPDFText_GetTextObject(&requests.FPDFText_GetTextObject{TextPage: tp, Index: g.Index - 1})
		if err != nil {
			continue
		}
		m, err := inst.FPDFPageObj_GetMatrix(&requests.FPDFPageObj_GetMatrix{PageObject: obj.TextObject})
		if err != nil {
			continue
		}
		k := findMatrix(texts, m.Matrix, at)
		if k < 0 {
			continue
		}
		at = k
		if s, ok := shiftOf[k]; ok {
			g.Left += s.dx
			g.Right += s.dx
			g.Bottom += s.dy
			g.Top += s.dy
		}
	}
}

// findMatrix is the first object from `from` on (then from the start)
// whose matrix is m, or -1.
func findMatrix(texts []structs.FPDF_FS_MATRIX, m structs.FPDF_FS_MATRIX, from int) int {
	for k := from; k < len(texts); k++ {
		if texts[k] == m {
			return k
		}
	}
	for k := 0; k < from && k < len(texts); k++ {
		if texts[k] == m {
			return k
		}
	}
	return -1
}
