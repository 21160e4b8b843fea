package docconv_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/testdeps"
)

var update = flag.Bool("update", false, "rewrite testdata golden files from the current output")

const goldenFile = "testdata/golden.json"

// goldenInput is one document the golden test converts.
type goldenInput struct {
	name string
	data func(t *testing.T) []byte
}

// TestGoldenOutput pins the converter's output: the SHA-256 of the text
// and of the page map (as JSON) of generated PDF, DOCX and HTML fixtures,
// a few pages of two Debian manuals' PDFs and a handful of DocBook and
// LaTeX2HTML pages, and of the boxes FindText finds for phrases of pages
// of gnuplot's manual, recorded in testdata/golden.json. A change to any byte
// of any text, span or count fails it; go test -run TestGoldenOutput
// -update rewrites the file after a change meant to alter the output.
func TestGoldenOutput(t *testing.T) {
	inputs := goldenFixtures()
	inputs = append(inputs, goldenManuals(t)...)
	got := findTextGolden(t)
	for _, in := range inputs {
		text, res, err := convert(t, in.data(t))
		if err != nil {
			got[in.name] = "error: " + err.Error()
			continue
		}
		m, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		got[in.name] = fmt.Sprintf("text %s map %s", digest([]byte(text)), digest(m))
	}
	if *update {
		data, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenFile, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatalf("%v (go test -run TestGoldenOutput -update writes it)", err)
	}
	var want map[string]string
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if got[name] != want[name] {
			t.Errorf("%s: got %s, want %s", name, got[name], want[name])
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d inputs converted, golden file has %d", len(got), len(want))
	}
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func fixed(b []byte) func(*testing.T) []byte { return func(*testing.T) []byte { return b } }

// goldenFixtures are the generated documents and small hand-written
// pages that exercise the HTML, DOCX and PDF paths.
func goldenFixtures() []goldenInput {
	secs := docconvtest.Sections(8, 3, docgen.Fact, 4)
	return []goldenInput{
		{"fixture pdf 12 pages", fixed(docconvtest.PDF(docconvtest.PDFOptions{Pages: 12, FactPage: 5, Fact: docgen.Fact, Seed: 1}))},
		{"fixture pdf two columns", fixed(docconvtest.PDF(docconvtest.PDFOptions{Pages: 4, FactPage: 2, Fact: docgen.Fact, TwoColumns: true, Seed: 2}))},
		{"fixture docx", fixed(docconvtest.DOCX("Supply agreement", secs))},
		{"fixture html", fixed(docconvtest.HTML("Supply agreement", secs))},
		{"html admonition", fixed([]byte(`<!DOCTYPE html><html><body><h2>5.2 Bash Variables</h2><p>Variables hold strings.</p>
<h3>Tip</h3><p>Quote every expansion of a variable.</p><h2>5.3 Arrays</h2><p>Arrays hold <b>lists</b> and<br>tables:</p>
<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table><ul><li>one</li><li>two</li></ul><pre>x := 1
y := 2</pre></body></html>`))},
	}
}

// goldenManuals are pages of the Debian manuals TestDebianManuals reads:
// PDF pages cut out with pdfseparate and pdfunite, and HTML pages.
func goldenManuals(t *testing.T) []goldenInput {
	var out []goldenInput
	for _, m := range []struct {
		pkg, path string
		pages     []int
	}{
		{"gnuplot-doc", "usr/share/doc/gnuplot/gnuplot.pdf", []int{1, 2, 3, 20, 21, 57, 100, 101, 150, 230}},
		{"c++-annotations-pdf", "usr/share/doc/c++-annotations/cplusplus.pdf", []int{1, 2, 3, 5, 30, 31, 60, 200, 201, 500, 900, 1100}},
	} {
		path := testdeps.Manual(t, m.pkg, m.path)
		out = append(out, goldenInput{"manual " + filepath.Base(m.path), func(t *testing.T) []byte { return pdfPages(t, path, m.pages) }})
	}
	for _, m := range []struct {
		pkg, index string
		files      []string
	}{
		{"postgresql-doc-15", "usr/share/doc/postgresql-doc-15/html/index.html",
			[]string{"index.html", "app-psql.html", "sql-select.html", "datatype-numeric.html", "functions-json.html", "monitoring-stats.html", "bookindex.html"}},
		{"gnuplot-doc", "usr/share/doc/gnuplot/htmldocs/index.html",
			[]string{"index.html", "node5.html", "node100.html"}},
	} {
		dir := filepath.Dir(testdeps.Manual(t, m.pkg, m.index))
		for _, f := range m.files {
			p := filepath.Join(dir, f)
			out = append(out, goldenInput{"manual " + m.pkg + " " + f, func(t *testing.T) []byte {
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				return data
			}})
		}
	}
	return out
}

// pdfPages returns a PDF of the given pages of the PDF at path.
func pdfPages(t *testing.T, path string, pages []int) []byte {
	sep := testdeps.Command(t, "pdfseparate", "apt-get install poppler-utils")
	unite := testdeps.Command(t, "pdfunite", "apt-get install poppler-utils")
	dir := t.TempDir()
	var parts []string
	for _, p := range pages {
		part := filepath.Join(dir, fmt.Sprintf("p%04d.pdf", p))
		if out, err := exec.Command(sep, "-f", fmt.Sprint(p), "-l", fmt.Sprint(p), path, part).CombinedOutput(); err != nil {
			t.Fatalf("pdfseparate page %d: %v: %s", p, err, out)
		}
		parts = append(parts, part)
	}
	all := filepath.Join(dir, "all.pdf")
	if out, err := exec.Command(unite, append(parts, all)...).CombinedOutput(); err != nil {
		t.Fatalf("pdfunite: %v: %s", err, out)
	}
	data, err := os.ReadFile(all)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("%PDF")) {
		t.Fatalf("pdfunite made no PDF")
	}
	return data
}

// findTextGolden finds, with FindText, every run of six words (from
// every fifth word) of three pages of gnuplot's manual, and returns the
// digest of the boxes (or errors) found, a page each.
func findTextGolden(t *testing.T) map[string]string {
	path := testdeps.Manual(t, "gnuplot-doc", "usr/share/doc/gnuplot/gnuplot.pdf")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c docconv.Converter
	defer c.Close()
	got := map[string]string{}
	for _, page := range []int{40, 57, 100} {
		chars, err := c.CharBoxes(context.Background(), bytes.NewReader(data), int64(len(data)), page)
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		for _, ch := range chars {
			text.WriteRune(ch.Char)
		}
		words := strings.Fields(text.String())
		var found strings.Builder
		n, hits := 0, 0
		for k := 0; k+6 <= len(words); k += 5 {
			boxes, err := docconv.FindText(chars, strings.Join(words[k:k+6], " "))
			b, _ := json.Marshal(boxes)
			if n++; err == nil {
				hits++
			}
			fmt.Fprintf(&found, "%d %s %v\n", k, b, err)
		}
		boxes, err := docconv.FindText(chars, "no such text on this page at all")
		fmt.Fprintf(&found, "missing %v %v\n", boxes, err)
		got[fmt.Sprintf("findtext gnuplot.pdf page %d", page)] = fmt.Sprintf("%d of %d phrases found %s", hits, n, digest([]byte(found.String())))
	}
	return got
}
