package docconv_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/testdeps"
)

// TestDebianManuals converts real manuals nobody here wrote, made by
// other toolchains than the generated fixtures, and holds the converter
// to the targets of docs/DOCUMENTS.md's table: running headers and footers
// left on at most 0.5% of the header-bearing pages of gnuplot's PDF (LaTeX
// from doc2tex) and of c++-annotations' (LaTeX, two-sided, roman front
// matter, pages holding only their header), measured against pdftotext's
// layout (docconvtest.PDFLeaks); no DocBook navigation in PostgreSQL's
// HTML (docconvtest.HTMLPageLeaks, over the reference pages: its
// navfooter's page titles, "15.2. When Can Parallel Query Be Used?", read
// as prose and stayed on 5 pages before the navfooter's class dropped
// it); none of LaTeX2HTML's in gnuplot's HTML; and footnotes
// kept apart and marked. scripts/test-deps.sh downloads the manuals;
// scripts/manuals.sh measures the whole table.
func TestDebianManuals(t *testing.T) {
	pdftotext := testdeps.Command(t, "pdftotext", "apt-get install poppler-utils")
	for _, m := range []struct{ pkg, path string }{
		{"gnuplot-doc", "usr/share/doc/gnuplot/gnuplot.pdf"},
		{"c++-annotations-pdf", "usr/share/doc/c++-annotations/cplusplus.pdf"},
	} {
		t.Run(filepath.Base(m.path), func(t *testing.T) {
			if testing.Short() && m.pkg == "c++-annotations-pdf" {
				t.Skip("1,151 pages: not in -short")
			}
			path := testdeps.Manual(t, m.pkg, m.path)
			raw, err := exec.Command(pdftotext, "-enc", "UTF-8", path, "-").Output()
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			res, err := converter(t).Convert(context.Background(), docconv.FormatPDF, path, &out, nil)
			if err != nil {
				t.Fatal(err)
			}
			l := docconvtest.PDFLeaks(string(raw), out.String(), res.Map)
			for _, line := range l.Lines {
				t.Log(line)
			}
			t.Logf("%d pages, %d header-bearing, %d leaked", l.Pages, l.Bearing, len(l.Lines))
			if l.Bearing*2 < l.Pages || l.Rate() > 0.005 {
				t.Errorf("%d running lines leaked on %d header-bearing pages of %d (%.2f%%), want at most 0.5%%",
					len(l.Lines), l.Bearing, l.Pages, 100*l.Rate())
			}
			if m.pkg == "c++-annotations-pdf" {
				text := out.String()
				for _, want := range []string{
					"In major version four Frank added new chapters and converted the document from SGML to yodl.\n\n[4] https://fbb-git.gitlab.io/yodl/",
					"the standard FILE-based I/O",
				} {
					if !strings.Contains(text, want) {
						t.Errorf("the text lacks %q", want)
					}
				}
			}
		})
	}
	t.Run("postgresql HTML", func(t *testing.T) {
		dir := filepath.Dir(testdeps.Manual(t, "postgresql-doc-15", "usr/share/doc/postgresql-doc-15/html/index.html"))
		files, err := filepath.Glob(filepath.Join(dir, "*.html"))
		if err != nil || len(files) < 1000 {
			t.Fatalf("%d pages (%v)", len(files), err)
		}
		sort.Strings(files)
		texts := make([]string, len(files))
		pages := make([][]byte, len(files))
		for i, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			pages[i] = data
			if texts[i], _, err = convert(t, data); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			for _, p := range strings.Split(texts[i], "\n\n") {
				for _, cell := range strings.Split(p, " | ") {
					switch cell {
					case "Prev", "Next", "Up", "Home":
						t.Errorf("%s keeps its navigation: %q", filepath.Base(f), p)
					}
				}
			}
		}
		l := docconvtest.HTMLPageLeaks(files, pages, texts)
		for _, line := range l.Lines[:min(len(l.Lines), 10)] {
			t.Log(line)
		}
		if len(l.Lines) > 0 {
			t.Errorf("%d pieces of navigation left on %d pages, want none", len(l.Lines), l.Pages)
		}
		if !strings.Contains(texts[sort.SearchStrings(files, filepath.Join(dir, "app-psql.html"))], "psql is a terminal-based front-end to PostgreSQL.") {
			t.Error("app-psql.html lost its description")
		}
	})
	t.Run("gnuplot HTML", func(t *testing.T) {
		// LaTeX2HTML's panel (div class navigation: next, up, previous
		// and index as images, then "Next: … Up: … Previous: …" in
		// words) stayed on every page: 150 pieces before.
		dir := filepath.Dir(testdeps.Manual(t, "gnuplot-doc", "usr/share/doc/gnuplot/htmldocs/index.html"))
		files, err := filepath.Glob(filepath.Join(dir, "*.html"))
		if err != nil || len(files) < 600 {
			t.Fatalf("%d pages (%v)", len(files), err)
		}
		pages := make([][]byte, len(files))
		texts := make([]string, len(files))
		for i, f := range files {
			if pages[i], err = os.ReadFile(f); err != nil {
				t.Fatal(err)
			}
			if texts[i], _, err = convert(t, pages[i]); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
		}
		l := docconvtest.HTMLPageLeaks(files, pages, texts)
		for _, line := range l.Lines[:min(len(l.Lines), 10)] {
			t.Log(line)
		}
		if len(l.Lines) > 0 {
			t.Errorf("%d pieces of navigation left on %d pages, want none", len(l.Lines), l.Pages)
		}
	})
}

// TestDebianManualsTexinfo7HTML converts every page of asymptote-doc's
// HTML manual from Debian 13 (Texinfo 7.1's makeinfo, which Debian 12
// builds none with: scripts/manuals.sh downloads asymptote-doc/trixie),
// whose navigation panels ("Next: LaTeX usage, Previous: Bezier curves,
// Up: Asymptote [Contents][Index]", in a div of class nav-panel) came
// through on 26 of its 156 pages, as the text of a section "§ 1": where
// the page names made ten words and more, and on a node that is its
// heading and a menu of the nodes below, written whole. No navigation is
// left (docconvtest.HTMLPageLeaks: 26 pieces before), every page's first
// section is named by its heading, and the pages keep their text (the
// menu node its heading).
func TestDebianManualsTexinfo7HTML(t *testing.T) {
	index := testdeps.Manual(t, "asymptote-doc/trixie", "trixie/usr/share/doc/asymptote/html/index.html")
	files, err := filepath.Glob(filepath.Join(filepath.Dir(index), "*.html"))
	if err != nil || len(files) < 100 {
		t.Fatalf("%d pages (%v)", len(files), err)
	}
	sort.Strings(files)
	pages := make([][]byte, len(files))
	texts := make([]string, len(files))
	for i, f := range files {
		if pages[i], err = os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
		if i == 0 && !bytes.Contains(pages[i], []byte("Created by GNU Texinfo 7.")) {
			t.Fatalf("%s was not made by Texinfo 7", f)
		}
		var res *docconv.Result
		if texts[i], res, err = convert(t, pages[i]); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		// A page's text opens with its heading, which names its first
		// section: the panel before it made a section without one ("§ 1").
		if sp := res.Map.Spans; bytes.Contains(pages[i], []byte(`class="nav-panel"`)) && (len(sp) == 0 || sp[0].Label == "") {
			t.Errorf("%s opens with a section without a heading: %.80q", filepath.Base(f), texts[i])
		}
		for _, line := range strings.Split(texts[i], "\n") {
			if strings.Contains(line, "[Contents][Index]") || strings.HasPrefix(line, "Next: ") || strings.HasPrefix(line, "Previous: ") {
				t.Errorf("%s keeps its navigation panel: %q", filepath.Base(f), line)
			}
		}
	}
	l := docconvtest.HTMLPageLeaks(files, pages, texts)
	for _, line := range l.Lines[:min(len(l.Lines), 10)] {
		t.Log(line)
	}
	if len(l.Lines) > 0 {
		t.Errorf("%d pieces of navigation left on %d pages, want none", len(l.Lines), l.Pages)
	}
	for page, want := range map[string]string{
		"Bezier-curves.html": "Each interior node of a cubic spline may be given a direction prefix or suffix {dir}",
		"Operators.html":     "6.10 Operators",
	} {
		i := sort.SearchStrings(files, filepath.Join(filepath.Dir(index), page))
		if i == len(files) || !strings.Contains(texts[i], want) {
			t.Errorf("%s lacks %q", page, want)
		}
	}
}

// TestDebianManualsLinesApart converts asymptote-doc's manual (Texinfo
// via TeX), whose bullets, minus and times signs are set in Computer
// Modern's symbol font with loose boxes 1.7 em tall: a row grown by one
// took the next line's glyphs too, and the text read "• astasntadnadrdar
// fdorfotyrpteyspeetsteinttginegqumataitohnesm." for page 6's "• a
// standard for typesetting mathematical figures, …". Page 6 reads as
// printed, and no more than 0.5% of the manual's lines hold a word of
// six or more letters that pdftotext never produces for it
// (docconvtest.UnprintedLines: 33 lines of about 2,000 before; 5 now, a
// rotated figure's labels and a word hyphenated across a table's rows).
func TestDebianManualsLinesApart(t *testing.T) {
	pdftotext := testdeps.Command(t, "pdftotext", "apt-get install poppler-utils")
	path := testdeps.Manual(t, "asymptote-doc", "usr/share/doc/asymptote/asymptote.pdf")
	raw, err := exec.Command(pdftotext, "-enc", "UTF-8", path, "-").Output()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := converter(t).Convert(context.Background(), docconv.FormatPDF, path, &out, nil)
	if err != nil {
		t.Fatal(err)
	}
	text := out.String()
	var page6 strings.Builder
	for _, s := range res.Map.Spans {
		if s.Number == 6 {
			page6.WriteString(text[s.Start:s.End] + "\n")
		}
	}
	for _, want := range []string{
		"• a standard for typesetting mathematical figures, just as TEX/LaTeX is the de-facto standard for typesetting equations.",
		"• a natural coordinate-based framework for technical drawing, inspired by MetaPost, with a much cleaner, powerful C++-like programming syntax;",
		"• compilation of figures into virtual machine code for speed, without sacrificing portability;",
	} {
		if !strings.Contains(page6.String(), want) {
			t.Errorf("page 6 lacks %q", want)
		}
	}
	if l := docconvtest.UnprintedLines(string(raw), page6.String()); len(l) > 0 {
		t.Errorf("page 6 has words pdftotext never prints: %q", l)
	}
	unprinted := docconvtest.UnprintedLines(string(raw), text)
	lines := 0
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) != "" {
			lines++
		}
	}
	for _, l := range unprinted {
		t.Logf("%.120s", l)
	}
	t.Logf("%d of %d lines hold words pdftotext never prints", len(unprinted), lines)
	if len(unprinted)*200 > lines {
		t.Errorf("%d of %d lines hold words pdftotext never prints, want at most 0.5%%", len(unprinted), lines)
	}
}

// TestDebianManualsHyphenatedWords converts bash-doc's two manuals, the
// Texinfo one (bashref.pdf) and the man page (bash.pdf, groff), whose
// definition lists break words with a hyphen at a line's end in their
// descriptions and whose man page breaks names in capitals ("EVALUA-" /
// "TION") and sets a section's name a size smaller ("PA-" / "RAMETERS"):
// every such word is joined, as pdftotext joins it, and a description's
// lines go on its term's row, where the converter left "permis-" /
// "sions" apart, the second half a paragraph of its own. No line holds a
// word of six letters or more that is only the start or the end of a
// word pdftotext prints (a hyphenated word's piece), and of bashref.pdf's
// lines at most 0.1% hold a word pdftotext never prints.
func TestDebianManualsHyphenatedWords(t *testing.T) {
	pdftotext := testdeps.Command(t, "pdftotext", "apt-get install poppler-utils")
	for _, m := range []struct {
		path string
		want []string
	}{
		{"usr/share/doc/bash/bashref.pdf", []string{
			"U | The expansion is a string that is the value of parameter with lowercase alphabetic characters converted to uppercase.",
			"-x | Mark each name for export to subsequent commands via the environment.",
		}},
		{"usr/share/doc/bash/bash.pdf", []string{
			"U | The expansion is a string that is the value of parameter with lowercase alphabetic characters converted to uppercase.",
			"−r | Make names readonly. These names cannot then be assigned values by subsequent assignment statements or unset.",
			"described below under ARITHMETIC EVALUATION. If the value",
			"as explained above (see PARAMETERS).",
		}},
	} {
		t.Run(filepath.Base(m.path), func(t *testing.T) {
			path := testdeps.Manual(t, "bash-doc", m.path)
			raw, err := exec.Command(pdftotext, "-enc", "UTF-8", path, "-").Output()
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if _, err := converter(t).Convert(context.Background(), docconv.FormatPDF, path, &out, nil); err != nil {
				t.Fatal(err)
			}
			text := out.String()
			for _, w := range m.want {
				if !strings.Contains(text, w) {
					t.Errorf("text lacks %q", w)
				}
			}
			printed := map[string]bool{}
			for _, w := range strings.FieldsFunc(strings.ToLower(string(raw)), func(r rune) bool { return !unicode.IsLetter(r) }) {
				printed[w] = true
			}
			unprinted := docconvtest.UnprintedLines(string(raw), text)
			for _, l := range unprinted {
				for _, w := range strings.FieldsFunc(strings.ToLower(l), func(r rune) bool { return !unicode.IsLetter(r) }) {
					if utf8.RuneCountInString(w) < 6 || printed[w] {
						continue
					}
					for p := range printed {
						if len(p) > len(w) && (strings.HasPrefix(p, w) || strings.HasSuffix(p, w)) {
							t.Errorf("%q is a piece of %q, which pdftotext prints: %.120s", w, p, l)
							break
						}
					}
				}
			}
			lines := 0
			for _, l := range strings.Split(text, "\n") {
				if strings.TrimSpace(l) != "" {
					lines++
				}
			}
			t.Logf("%d of %d lines hold words pdftotext never prints", len(unprinted), lines)
			if strings.HasSuffix(m.path, "bashref.pdf") && len(unprinted)*1000 > lines {
				t.Errorf("%d of %d lines hold words pdftotext never prints, want at most 0.1%%: %q", len(unprinted), lines, unprinted)
			}
		})
	}
}
