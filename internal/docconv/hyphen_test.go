package docconv_test

import (
	"strings"
	"testing"

	"github.com/memagent/memagent/internal/docconv/docconvtest"
)

// TestPDFHyphenatedWordsJoined converts a page whose words are broken
// with a hyphen at a line's end where a manual breaks them: in a
// definition list's descriptions, whose lines go on the row of their term
// ("-r | … assignment statements …", where the description's second
// line was a paragraph of its own, "signment statements…"), and in
// capitals or with the second half set smaller ("EVALUATION",
// "PARAMETERS", where they were "EVALUA-TION" and a paragraph
// "RAMETERS)."), as docconvtest.HyphenatedParagraphs says.
func TestPDFHyphenatedWordsJoined(t *testing.T) {
	text, _, err := convert(t, docconvtest.HyphenatedPDF())
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(text, "\n"), "\n\n")
	want := docconvtest.HyphenatedParagraphs
	for i := 0; i < max(len(got), len(want)); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("paragraph %d:\n got %q\nwant %q", i+1, g, w)
		}
	}
}

// TestPDFFullWidthLinesOneParagraph converts a page read as two columns
// whose paragraph across the page below them was a paragraph a line (each
// line across the page a band of its own), its broken word's halves
// apart: the lines are one paragraph, the word joined.
func TestPDFFullWidthLinesOneParagraph(t *testing.T) {
	text, _, err := convert(t, docconvtest.FullWidthPDF())
	if err != nil {
		t.Fatal(err)
	}
	paras := strings.Split(strings.TrimSuffix(text, "\n"), "\n\n")
	if got := paras[len(paras)-1]; got != docconvtest.FullWidthParagraph {
		t.Errorf("last paragraph:\n got %q\nwant %q\ntext: %q", got, docconvtest.FullWidthParagraph, text)
	}
}
