package docconv_test

import (
	"bytes"
	"context"
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

// goldenDir holds one readable file per input: the converted text cut at
// its pages' (or sections') byte ranges, each under a line naming the span.
const goldenDir = "testdata/golden"

// goldenInput is one document the golden test converts.
type goldenInput struct {
	name string
	data func(t *testing.T) []byte
}

// TestGoldenOutput pins the converter's output: the text and page map of
// generated PDF, DOCX and HTML fixtures, a few pages of two Debian manuals'
// PDFs and a handful of DocBook and LaTeX2HTML pages, and the boxes
// FindText finds for phrases of pages of gnuplot's manual, each in a file
// of testdata/golden that a person can read. A change to any byte of any
// text, span or count fails it with the first lines that differ;
// go test ./internal/docconv -run TestGoldenOutput -update rewrites the
// files after a change meant to alter the output, and git diff shows what
// changed.
func TestGoldenOutput(t *testing.T) {
	inputs := goldenFixtures()
	inputs = append(inputs, goldenManuals(t)...)
	inputs = append(inputs, goldenEmails(t)...)
	got := findTextGolden(t)
	for _, in := range inputs {
		text, res, err := convert(t, in.data(t))
		if err != nil {
			got[in.name] = "error: " + err.Error() + "\n"
			continue
		}
		got[in.name] = goldenText(text, res)
	}
	if *update {
		if err := os.RemoveAll(goldenDir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, out := range got {
			if err := os.WriteFile(goldenPath(name), []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	names := make([]string, 0, len(got))
	for name := range got {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		want, err := os.ReadFile(goldenPath(name))
		if err != nil {
			t.Errorf("%s: %v (go test ./internal/docconv -run TestGoldenOutput -update writes it)", name, err)
			continue
		}
		if d := firstDifference(string(want), got[name]); d != "" {
			t.Errorf("%s (%s) differs from the golden file:\n%s", name, goldenPath(name), d)
		}
	}
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(got) {
		t.Errorf("%d inputs converted, %s holds %d files: -update rewrites the directory", len(got), goldenDir, len(files))
	}
}

// goldenPath is the file of one input: its name with every run of other
// characters than letters, digits, '.' and '-' made one '-'.
func goldenPath(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	return filepath.Join(goldenDir, strings.Trim(b.String(), "-")+".txt")
}

// goldenText lays out a conversion for a person: a line of the page map's
// counts, then the text, each span under a line naming it and its byte
// range, and any text outside every span under a line saying so.
func goldenText(text string, res *docconv.Result) string {
	var b strings.Builder
	m := res.Map
	fmt.Fprintf(&b, "format %s, unit %s, %d pages or sections, map version %d, %d bytes, %d header/footer lines dropped\n",
		m.Format, m.Unit, m.Pages, m.Version, res.Bytes, res.Dropped)
	segment := func(head string, from, to int64) {
		if from >= to {
			return
		}
		body := text[from:to]
		fmt.Fprintf(&b, "=== %s, bytes %d-%d ===\n%s", head, from, to, body)
		if !strings.HasSuffix(body, "\n") {
			b.WriteString("\n")
		}
	}
	var at int64
	for _, sp := range m.Spans {
		segment("outside any span", at, sp.Start)
		head := fmt.Sprintf("%s %d", m.Unit, sp.Number)
		if sp.PageLabel != "" {
			head += fmt.Sprintf(" (printed %q)", sp.PageLabel)
		}
		if sp.Label != "" {
			head += fmt.Sprintf(" %q", sp.Label)
		}
		segment(head, sp.Start, sp.End)
		at = max(at, sp.End)
	}
	segment("outside any span", at, int64(len(text)))
	return b.String()
}

// firstDifference returns "" when want and got are equal, else the count of
// lines that differ and the first difference with two lines around it.
func firstDifference(want, got string) string {
	if want == got {
		return ""
	}
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	first, differ := -1, 0
	for i := range max(len(w), len(g)) {
		if i >= len(w) || i >= len(g) || w[i] != g[i] {
			differ++
			if first < 0 {
				first = i
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d lines differ (compared line by line); first at line %d:\n", differ, max(len(w), len(g)), first+1)
	for i := max(0, first-2); i < min(max(len(w), len(g)), first+3); i++ {
		switch {
		case i < len(w) && i < len(g) && w[i] == g[i]:
			fmt.Fprintf(&b, "  %5d   %s\n", i+1, w[i])
		default:
			if i < len(w) {
				fmt.Fprintf(&b, "  %5d - %s\n", i+1, w[i])
			}
			if i < len(g) {
				fmt.Fprintf(&b, "  %5d + %s\n", i+1, g[i])
			}
		}
	}
	return b.String()
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

// goldenEmails are messages of Python's test suite (quoted-printable,
// base64 and Latin-1 bodies; a forward; a digest of five messages) and a
// mailbox of two messages whose second has a PDF and a DOCX attached.
func goldenEmails(t *testing.T) []goldenInput {
	dir := pythonEmailData(t)
	var out []goldenInput
	for _, name := range []string{"msg_10.txt", "msg_46.txt", "msg_02.txt"} {
		path := filepath.Join(dir, name)
		out = append(out, goldenInput{"email " + strings.TrimSuffix(name, ".txt"), func(t *testing.T) []byte {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			return data
		}})
	}
	out = append(out, goldenInput{"email mailbox with attachments", func(t *testing.T) []byte {
		msg := "From: Alice <alice@example.org>\nTo: Bob <bob@example.org>\nDate: Tue, 3 May 2022 10:00:00 +0200\nSubject: Re: Lease\nMessage-ID: <lease-2@example.org>\nIn-Reply-To: <m1@example.org>\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"outer\"\n\n" +
			"--outer\nContent-Type: text/plain; charset=iso-8859-1\nContent-Transfer-Encoding: quoted-printable\n\nBob, the lease and its terms are attached. Caf=E9 at noon?\n\n> Here is the draft.\n" +
			attach("outer", "application/pdf", "lease.pdf", docconvtest.PDF(docconvtest.PDFOptions{Pages: 2, FactPage: 2, Fact: docgen.Fact, Seed: 7})) +
			attach("outer", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", "terms.docx", docconvtest.DOCX("Terms", docconvtest.Sections(2, 1, docgen.Fact, 8))) +
			"--outer--\n"
		data, err := os.ReadFile(mboxOf(t, plainMessage(1, "Lease", "Here is the draft."), msg))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}})
	return out
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
// boxes (or errors) found, a page each, a phrase a line.
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
			phrase := strings.Join(words[k:k+6], " ")
			boxes, err := docconv.FindText(chars, phrase)
			if n++; err == nil {
				hits++
			}
			fmt.Fprintf(&found, "%d %q:", k, phrase)
			for _, b := range boxes {
				fmt.Fprintf(&found, " [%.4f %.4f %.4f %.4f]", b.Left, b.Top, b.Right, b.Bottom)
			}
			if err != nil {
				fmt.Fprintf(&found, " %v", err)
			}
			found.WriteString("\n")
		}
		boxes, err := docconv.FindText(chars, "no such text on this page at all")
		fmt.Fprintf(&found, "missing %v %v\n", boxes, err)
		got[fmt.Sprintf("findtext gnuplot.pdf page %d", page)] = fmt.Sprintf("%d of %d phrases found\n%s", hits, n, found.String())
	}
	return got
}
