package docconv_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/testdeps"
)

// TestPDFStructure converts a page set as a Texinfo manual sets its
// structure: the numbered heading, list items, code, a table, a term and
// its description each stay apart, as docconvtest.StructuredParagraphs
// says, where the lines were rejoined into prose before ("2.2.2 Working
// on input files LilyPond input files are…").
func TestPDFStructure(t *testing.T) {
	text, _, err := convert(t, docconvtest.StructuredPDF())
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(text, "\n"), "\n\n")
	want := docconvtest.StructuredParagraphs
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
	if numbered, runOn := docconvtest.HeadingsRunOn(text); numbered != 1 || runOn != 0 {
		t.Errorf("HeadingsRunOn = %d, %d; want 1 numbered heading, 0 run on", numbered, runOn)
	}
}

// TestDOCXStructure converts a Word document's headings, lists (bulleted,
// numbered, a nested lettered level) and table: list items carry their
// markers as word/numbering.xml numbers them, table rows are a line each
// with their cells apart by " | ", and the headings still open the
// sections citations name, by their text alone.
func TestDOCXStructure(t *testing.T) {
	text, res, err := convert(t, docconvtest.StructuredDOCX())
	if err != nil {
		t.Fatal(err)
	}
	if text != docconvtest.StructuredDOCXText {
		t.Errorf("text:\n%s\nwant:\n%s", text, docconvtest.StructuredDOCXText)
	}
	var labels []string
	for _, s := range res.Map.Spans {
		labels = append(labels, s.Label)
	}
	if strings.Join(labels, "|") != "Installing|Options" {
		t.Errorf("sections %q, want Installing and Options", labels)
	}
	at := int64(strings.Index(text, "-f pdf"))
	if ref := res.Map.Ref(at, at+6); ref.String() != "§ Options" {
		t.Errorf("the table's row is cited %q, want § Options", ref.String())
	}
}

// TestDebianManualsStructure converts asymptote-doc's manual (Texinfo via
// TeX), where headings opened the paragraph below them ("2.1 UNIX binary
// distributions We release both tgz and RPM…": 65 of its 85 numbered
// headings ran past 100 characters), code ran into prose ("…of a pair:
// pair z=(3,4); z=(z.x,-z.y); Here I is…") and numbered lists collapsed
// to one line. At most 10% of its numbered headings (each section number
// once, contents lines with dot leaders left out) may run past 100 characters
// (docconvtest.HeadingsRunOn), and the places the issue named read as
// printed.
func TestDebianManualsStructure(t *testing.T) {
	path := testdeps.Manual(t, "asymptote-doc", "usr/share/doc/asymptote/asymptote.pdf")
	var out bytes.Buffer
	if _, err := converter(t).Convert(context.Background(), docconv.FormatPDF, path, &out, nil); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	numbered, runOn := docconvtest.HeadingsRunOn(text)
	for _, l := range docconvtest.RunOnHeadings(text) {
		t.Logf("%.160s", l)
	}
	t.Logf("%d of %d numbered headings run on", runOn, numbered)
	// The manual numbers 83 sections of two parts or more (each counted
	// once, its contents' lines left out).
	if numbered < 75 || runOn*10 > numbered {
		t.Errorf("%d of %d numbered headings run past %d characters, want at least 75 headings and at most 10%% run on", runOn, numbered, docconvtest.RunOnLength)
	}
	paras := map[string]bool{}
	for _, p := range strings.Split(text, "\n\n") {
		paras[p] = true
	}
	for _, want := range []string{
		"2.1 UNIX binary distributions",
		"2.5 Search paths",
		"In looking for Asymptote files, asy will search the following paths, in the order listed:",
		"1. The current directory;",
		"pair z=(3,4);\nz=(z.x,-z.y);\nz=z.x-I*z.y;\nz=conj(z);",
		"Here I is the pair (0,1). A number of built-in functions are defined for pairs:",
		"pair conj(pair z)",
		"returns the conjugate of z;",
		"void draw(picture pic=currentpicture, Label L=\"\", path g,\n          align align=NoAlign, pen p=currentpen,",
	} {
		if !paras[want] && !(strings.Contains(want, "\n") && strings.Contains(text, "\n\n"+want)) {
			t.Errorf("no paragraph %q", want)
		}
	}
}
