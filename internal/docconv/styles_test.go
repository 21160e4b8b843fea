package docconv

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/memagent/memagent/internal/docconv/docconvtest"
)

const stylesHead = `<?xml version="1.0" encoding="UTF-8"?><w:styles xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">`

// stylesDOCX is a DOCX of the given styles part (its content inside
// w:styles) and document body (inside w:body).
func stylesDOCX(styles, body string) []byte {
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	f, _ := z.Create("word/styles.xml")
	io.WriteString(f, stylesHead+styles+`</w:styles>`)
	f, _ = z.Create("word/document.xml")
	io.WriteString(f, `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>`+body+`</w:body></w:document>`)
	z.Close()
	return buf.Bytes()
}

// convertDOCXBytes converts data as a DOCX, and says how many bytes the
// conversion allocated in all.
func convertDOCXBytes(t *testing.T, data []byte) (string, *Result, uint64, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "doc.docx")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, err := (&Converter{}).Convert(context.Background(), FormatZip, path, &out, nil)
	runtime.ReadMemStats(&after)
	return out.String(), res, after.TotalAlloc - before.TotalAlloc, err
}

// TestHeadingStyles: the styles named or outlined as headings make their
// paragraphs open sections; a style id longer than maxStyleIDBytes is not
// kept, and a name outside any style, or a paragraph style with no id,
// makes no heading.
func TestHeadingStyles(t *testing.T) {
	longID := "Heading" + strings.Repeat("x", maxStyleIDBytes)
	styles := `<w:style w:type="paragraph" w:styleId="Normal"><w:name w:val="Normal"/></w:style>` +
		`<w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/></w:style>` +
		`<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/><w:pPr><w:outlineLvl w:val="0"/></w:pPr></w:style>` +
		`<w:style w:type="paragraph" w:styleId="KeyClause"><w:name w:val="Key Clause"/><w:pPr><w:outlineLvl w:val="1"/></w:pPr></w:style>` +
		`<w:style w:type="paragraph" w:styleId="` + longID + `"><w:name w:val="heading 2"/></w:style>` +
		`<w:latentStyles><w:name w:val="heading 3"/></w:latentStyles>`
	para := func(style, text string) string {
		ppr := ""
		switch style {
		case "":
		case "-":
			ppr = `<w:pPr><w:pStyle/></w:pPr>`
		default:
			ppr = `<w:pPr><w:pStyle w:val="` + style + `"/></w:pPr>`
		}
		return `<w:p>` + ppr + `<w:r><w:t>` + text + `</w:t></w:r></w:p>`
	}
	body := para("Title", "Agreement") + para("Heading1", "Terms") + para("", "Body one.") +
		para("KeyClause", "Key") + para("Normal", "Body two.") + para(longID, "Long id.") + para("-", "No id.")
	text, res, _, err := convertDOCXBytes(t, stylesDOCX(styles, body))
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, s := range res.Map.Spans {
		labels = append(labels, s.Label)
	}
	if got, want := strings.Join(labels, "|"), "Agreement|Terms|Key"; got != want {
		t.Errorf("sections %q, want %q; text:\n%s", got, want, text)
	}
	if !strings.Contains(text, "Long id.") || !strings.Contains(text, "No id.") {
		t.Errorf("a paragraph is missing from the text:\n%s", text)
	}
}

// TestHostileStylesRefused: a styles part over one of the bounds fails as
// *Error naming the limit, having allocated a few MB at most (the nested
// and many-attribute parts, read unbounded, allocated hundreds of MB).
func TestHostileStylesRefused(t *testing.T) {
	manyStyles := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `<w:style w:type="paragraph" w:styleId="S%d"><w:name w:val="s %d"/></w:style>`, i, i)
		}
		return b.String()
	}
	body := `<w:p><w:r><w:t>Text.</w:t></w:r></w:p>`
	for _, tc := range []struct {
		name     string
		data     []byte
		want     string
		maxAlloc uint64 // 0: not measured
	}{
		{"16 MiB of nested elements", docconvtest.NestedStylesDOCX(docconvtest.StylesPartBytes / 3),
			"nests the XML of its styles (word/styles.xml) more than 256 elements deep", 8 << 20},
		{"one element of 3.4 million attributes", docconvtest.ManyAttributesStylesDOCX(docconvtest.StylesPartBytes / 5),
			"has a run of more than 65536 bytes with no markup in its styles (word/styles.xml)", 8 << 20},
		{"a style id of 8 MiB", stylesDOCX(`<w:style w:styleId="`+strings.Repeat("x", 8<<20)+`"/>`, body),
			"has a run of more than 65536 bytes with no markup in its styles", 8 << 20},
		{"a text node of 8 MiB", stylesDOCX(`<w:style w:styleId="Heading1">`+strings.Repeat("x", 8<<20)+`</w:style>`, body),
			"has a run of more than 65536 bytes with no markup in its styles", 8 << 20},
		{"more styles than maxStyles", stylesDOCX(manyStyles(maxStyles+1), body),
			"has more than 10000 styles (word/styles.xml)", 0},
		{"a part over 16 MiB", stylesDOCX(strings.Repeat("<x/>"+strings.Repeat(" ", 60<<10), 16<<20/(60<<10)+1), body),
			"has styles (word/styles.xml) of more than 16777216 bytes uncompressed", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, alloc, err := convertDOCXBytes(t, tc.data)
			var bad *Error
			if !errors.As(err, &bad) {
				t.Fatalf("err = %v, want an *Error", err)
			}
			if !strings.Contains(bad.Msg, tc.want) || !strings.Contains(bad.Msg, "open it in Word and save it again") {
				t.Errorf("message %q does not say %q and how to fix it", bad.Msg, tc.want)
			}
			t.Logf("%s; allocated %.1f MB", bad.Msg, float64(alloc)/(1<<20))
			if tc.maxAlloc > 0 && alloc > tc.maxAlloc {
				t.Errorf("allocated %d bytes, want at most %d", alloc, tc.maxAlloc)
			}
		})
	}
}

// TestStylesWithinBounds: a styles part at the bounds (maxStyles styles,
// nesting of maxDepth, a run of maxStylesRunBytes) is read.
func TestStylesWithinBounds(t *testing.T) {
	var b strings.Builder
	for i := range maxStyles - 1 {
		fmt.Fprintf(&b, `<w:style w:type="paragraph" w:styleId="S%d"/>`, i)
	}
	b.WriteString(`<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/>`)
	b.WriteString(strings.Repeat("<x>", maxDepth-2) + strings.Repeat(" ", maxStylesRunBytes) + strings.Repeat("</x>", maxDepth-2))
	b.WriteString(`</w:style>`)
	body := `<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Terms</w:t></w:r></w:p><w:p><w:r><w:t>Text.</w:t></w:r></w:p>`
	_, res, _, err := convertDOCXBytes(t, stylesDOCX(b.String(), body))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Map.Spans) != 1 || res.Map.Spans[0].Label != "Terms" {
		t.Errorf("spans %+v, want one section labelled Terms", res.Map.Spans)
	}
}
