// Command manuals measures how much of a manual's running headers,
// footers and navigation the converter (internal/docconv) leaves in the
// text, on real manuals from Debian's -doc packages made by different
// toolchains: the table of docs/DOCUMENTS.md. scripts/manuals.sh
// downloads them (apt-get download, dpkg -x) and runs it:
//
//	scripts/manuals.sh                 # the table
//	go run ./bench/manuals -dir DIR -v # DIR as the script leaves it; -v lists the leaks
//
// A PDF is measured against pdftotext's layout of its pages
// (docconvtest.PDFLeaks), an HTML manual by repetition across its pages'
// own text (docconvtest.HTMLPageLeaks).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
)

// manual is one manual of the table.
type manual struct {
	Name, Package, Toolchain string
	// Path is the PDF, or the directory of HTML pages, under the
	// directory the packages were extracted into.
	Path string
	// Gzipped: the package ships the PDF gzipped (Path names the .gz).
	Gzipped bool
}

// manuals are the table's rows, in order. scripts/manuals.sh downloads
// their packages.
var manuals = []manual{
	{"cplusplus.pdf", "c++-annotations-pdf", "LaTeX", "usr/share/doc/c++-annotations/cplusplus.pdf", false},
	{"gnuplot.pdf", "gnuplot-doc", "LaTeX (doc2tex)", "usr/share/doc/gnuplot/gnuplot.pdf", false},
	{"debian-reference.en.pdf", "debian-reference-en", "DocBook (dblatex)", "usr/share/debian-reference/debian-reference.en.pdf", false},
	{"R-exts.pdf", "r-doc-pdf", "Texinfo (texi2dvi)", "usr/share/doc/r-doc-pdf/manual/R-exts.pdf", false},
	{"pdfmark.pdf", "groff", "groff (ms, grops)", "usr/share/doc/groff-base/pdf/pdfmark.pdf.gz", true},
	{"automake.pdf", "groff", "groff (mom, gropdf)", "usr/share/doc/groff-base/pdf/automake.pdf.gz", true},
	{"postgresql-doc-15 HTML", "postgresql-doc-15", "DocBook XSL (HTML)", "usr/share/doc/postgresql-doc-15/html", false},
	{"sphinx-doc HTML", "sphinx-doc", "Sphinx (HTML)", "usr/share/doc/sphinx-doc/html", false},
	{"gnuplot-doc HTML", "gnuplot-doc", "LaTeX2HTML", "usr/share/doc/gnuplot/htmldocs", false},
	{"asymptote-doc HTML", "asymptote-doc", "Texinfo 6.8 (HTML)", "usr/share/doc/asymptote/html", false},
	{"asymptote-doc HTML (trixie)", "asymptote-doc/trixie", "Texinfo 7.1 (HTML)", "trixie/usr/share/doc/asymptote/html", false},
}

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "manuals:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("manuals", flag.ContinueOnError)
	dir := fs.String("dir", "", "the directory the manuals' packages were extracted into (dpkg -x PKG.deb DIR)")
	only := fs.String("only", "", "measure only the manual of this name")
	verbose := fs.Bool("v", false, "list each leak")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return fmt.Errorf("-dir is required: run scripts/manuals.sh, which downloads the manuals")
	}
	conv := &docconv.Converter{CacheDir: docconv.DefaultCacheDir()}
	defer conv.Close()
	fmt.Fprintln(stdout, "| Manual | Package | Toolchain | Pages | Header-bearing pages | Leaked lines | Leaked per header-bearing page |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|")
	for _, m := range manuals {
		if *only != "" && m.Name != *only {
			continue
		}
		var r docconvtest.Leaks
		var err error
		path := filepath.Join(*dir, m.Path)
		if strings.HasSuffix(m.Path, ".pdf") || m.Gzipped {
			r, err = measurePDF(ctx, conv, path, m.Gzipped)
		} else {
			r, err = measureHTML(ctx, conv, path)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		fmt.Fprintf(stdout, "| %s | %s | %s | %d | %d | %d | %.2f%% |\n", m.Name, m.Package, m.Toolchain, r.Pages, r.Bearing, len(r.Lines), 100*r.Rate())
		if *verbose {
			for _, l := range r.Lines {
				fmt.Fprintf(os.Stderr, "%s: %s\n", m.Name, l)
			}
		}
	}
	return nil
}

// convert converts path with the project's converter and returns its text
// and the text of each page (PDF) or of the whole (HTML).
func convert(ctx context.Context, conv *docconv.Converter, path string) (string, *docconv.Result, error) {
	head := make([]byte, docconv.SniffBytes)
	f, err := os.Open(path)
	if err != nil {
		return "", nil, err
	}
	n, _ := io.ReadFull(f, head)
	f.Close()
	var out bytes.Buffer
	res, err := conv.Convert(ctx, docconv.Detect(head[:n]), path, &out, nil)
	if err != nil {
		return "", nil, err
	}
	return out.String(), res, nil
}

func measurePDF(ctx context.Context, conv *docconv.Converter, path string, gzipped bool) (docconvtest.Leaks, error) {
	if gzipped {
		tmp, err := os.CreateTemp("", "manual-*.pdf")
		if err != nil {
			return docconvtest.Leaks{}, err
		}
		defer os.Remove(tmp.Name())
		cmd := exec.Command("gzip", "-dc", path)
		cmd.Stdout = tmp
		if err := cmd.Run(); err != nil {
			return docconvtest.Leaks{}, fmt.Errorf("gunzip %s: %w", path, err)
		}
		tmp.Close()
		path = tmp.Name()
	}
	raw, err := exec.Command("pdftotext", "-enc", "UTF-8", path, "-").Output()
	if err != nil {
		return docconvtest.Leaks{}, fmt.Errorf("pdftotext (apt-get install poppler-utils): %w", err)
	}
	text, res, err := convert(ctx, conv, path)
	if err != nil {
		return docconvtest.Leaks{}, err
	}
	return docconvtest.PDFLeaks(string(raw), text, res.Map), nil
}

func measureHTML(ctx context.Context, conv *docconv.Converter, dir string) (docconvtest.Leaks, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), "_") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".html") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return docconvtest.Leaks{}, err
	}
	sort.Strings(files)
	names := make([]string, len(files))
	pages := make([][]byte, len(files))
	texts := make([]string, len(files))
	for i, f := range files {
		names[i], _ = filepath.Rel(dir, f)
		if pages[i], err = os.ReadFile(f); err != nil {
			return docconvtest.Leaks{}, err
		}
		if texts[i], _, err = convert(ctx, conv, f); err != nil {
			return docconvtest.Leaks{}, fmt.Errorf("%s: %w", f, err)
		}
	}
	return docconvtest.HTMLPageLeaks(names, pages, texts), nil
}
