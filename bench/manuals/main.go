// Command manuals measures the converter (internal/docconv) on real
// manuals from Debian's -doc packages made by different toolchains, each
// converted in a process of its own, and prints one of two tables:
//
//   - the leaks table of docs/DOCUMENTS.md (the default): how much of a
//     manual's running headers, footers and navigation the text keeps. A
//     PDF is measured against pdftotext's layout of its pages
//     (docconvtest.PDFLeaks), an HTML manual by repetition across its pages'
//     own text (docconvtest.HTMLPageLeaks) and by the shape of Texinfo's navigation
//     panels (docconvtest.TexinfoPanels), which name each page's own
//     neighbours and so never repeat.
//   - the fidelity table of BENCHMARKS.md (-fidelity): beside the leaks,
//     the lines holding a word pdftotext never prints for the same PDF
//     (docconvtest.UnprintedLines), the numbered headings run into their
//     paragraph (docconvtest.HeadingsRunOn), and pages per second per core
//     and peak memory, memagent's converter side by side with pdftotext
//     in the same run.
//
// scripts/manuals.sh downloads the manuals (apt-get download, dpkg -x) and
// runs it:
//
//	scripts/manuals.sh                       # the leaks table
//	scripts/manuals.sh -fidelity             # the fidelity table
//	scripts/manuals.sh -fidelity -rounds 3   # medians of three conversions a tool, for speed and memory
//	go run ./bench/manuals -dir DIR -v       # DIR as the script leaves it; -v lists each leak and unprinted line
//
// memagent's converter runs in a child process (this binary, started
// again with MEMAGENT_MANUALS_CONVERT naming the file), one PDFium
// instance, after PDFium started: its CPU time is the conversion's
// (with the OCR engine's processes, for the scan) and its peak memory the
// child's VmHWM, as `go run ./bench -only convert` measures. pdftotext
// runs under `/usr/bin/time -v`, as its users would measure it, and its
// text of the same file is the reference the unprinted words are counted
// against.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/memagent"
)

// manual is one manual of the tables.
type manual struct {
	Name, Package, Toolchain string
	// Path is the PDF, the DOCX, or the directory of HTML pages, under the
	// directory the packages were extracted into.
	Path string
	// Gzipped: the package ships the PDF gzipped (Path names the .gz).
	Gzipped bool
	// Scan, if set, is the first and last page of Path to rasterise and
	// wrap into an image-only PDF: the manual then measured is that scan,
	// read by OCR.
	Scan [2]int
}

func (m manual) isPDF() bool  { return strings.HasSuffix(m.Path, ".pdf") || m.Gzipped }
func (m manual) isDOCX() bool { return strings.HasSuffix(m.Path, ".docx") }
func (m manual) isScan() bool { return m.Scan[0] > 0 }

// manuals are the tables' rows, in order. scripts/manuals.sh downloads
// their packages (its `all`). A Texinfo PDF says "Creator: TeX" in pdfinfo
// (texinfo.tex under pdfTeX; LaTeX's hyperref says "LaTeX with hyperref").
var manuals = []manual{
	{Name: "cplusplus.pdf", Package: "c++-annotations-pdf", Toolchain: "LaTeX", Path: "usr/share/doc/c++-annotations/cplusplus.pdf"},
	{Name: "gnuplot.pdf", Package: "gnuplot-doc", Toolchain: "LaTeX (doc2tex)", Path: "usr/share/doc/gnuplot/gnuplot.pdf"},
	{Name: "debian-reference.en.pdf", Package: "debian-reference-en", Toolchain: "DocBook (dblatex)", Path: "usr/share/debian-reference/debian-reference.en.pdf"},
	{Name: "R-exts.pdf", Package: "r-doc-pdf", Toolchain: "Texinfo (texi2dvi)", Path: "usr/share/doc/r-doc-pdf/manual/R-exts.pdf"},
	{Name: "asymptote.pdf", Package: "asymptote-doc", Toolchain: "Texinfo (texi2dvi)", Path: "usr/share/doc/asymptote/asymptote.pdf"},
	{Name: "bashref.pdf", Package: "bash-doc", Toolchain: "Texinfo (texi2dvi)", Path: "usr/share/doc/bash/bashref.pdf"},
	{Name: "standards.pdf", Package: "gnu-standards", Toolchain: "Texinfo (texi2dvi)", Path: "usr/share/doc/gnu-standards/standards.pdf.gz", Gzipped: true},
	{Name: "pdfmark.pdf", Package: "groff", Toolchain: "groff (ms, grops)", Path: "usr/share/doc/groff-base/pdf/pdfmark.pdf.gz", Gzipped: true},
	{Name: "automake.pdf", Package: "groff", Toolchain: "groff (mom, gropdf)", Path: "usr/share/doc/groff-base/pdf/automake.pdf.gz", Gzipped: true},
	{Name: "bash.pdf", Package: "bash-doc", Toolchain: "groff (man, grops, Ghostscript)", Path: "usr/share/doc/bash/bash.pdf"},
	{Name: "gnuplot.pdf pages 30–32, scanned", Package: "gnuplot-doc", Toolchain: "scan (pdftoppm -r 300, img2pdf; OCR)", Path: "usr/share/doc/gnuplot/gnuplot.pdf", Scan: [2]int{30, 32}},
	{Name: "example.docx", Package: "r-cran-officer", Toolchain: "Word (Microsoft Macintosh Word)", Path: "usr/lib/R/site-library/officer/doc_examples/example.docx"},
	{Name: "postgresql-doc-15 HTML", Package: "postgresql-doc-15", Toolchain: "DocBook XSL (HTML)", Path: "usr/share/doc/postgresql-doc-15/html"},
	{Name: "sphinx-doc HTML", Package: "sphinx-doc", Toolchain: "Sphinx (HTML)", Path: "usr/share/doc/sphinx-doc/html"},
	{Name: "standards.html", Package: "gnu-standards", Toolchain: "Texinfo 6.8 (makeinfo HTML, one file)", Path: "usr/share/doc/gnu-standards/standards.html"},
	{Name: "liboctave HTML", Package: "octave-doc", Toolchain: "Texinfo 6.8 (makeinfo HTML)", Path: "usr/share/doc/octave/liboctave.html"},
	{Name: "gnuplot-doc HTML", Package: "gnuplot-doc", Toolchain: "LaTeX2HTML", Path: "usr/share/doc/gnuplot/htmldocs"},
	{Name: "asymptote-doc HTML", Package: "asymptote-doc", Toolchain: "Texinfo 6.8 (makeinfo HTML)", Path: "usr/share/doc/asymptote/html"},
	{Name: "asymptote-doc HTML (trixie)", Package: "asymptote-doc/trixie", Toolchain: "Texinfo 7.1 (makeinfo HTML)", Path: "trixie/usr/share/doc/asymptote/html"},
}

func main() {
	if path := os.Getenv(childEnv); path != "" {
		if err := runChild(path); err != nil {
			fmt.Fprintln(os.Stderr, "manuals: converting process:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "manuals:", err)
		os.Exit(1)
	}
}

// measure is what one manual measured.
type measure struct {
	m manual
	// mem is memagent's conversion; pdf pdftotext's of the same file (no
	// Pages for a DOCX, HTML or a scan).
	mem, pdf conversion
	// lines are memagent's text's non-empty lines; unprinted those holding
	// a word pdftotext never prints (PDF and scan only: hasReference).
	lines        int
	unprinted    []string
	hasReference bool
	// pieces counts the unprinted lines whose every such word is a piece
	// of a longer word pdftotext prints: a word cut by a line-end hyphen
	// that the converter keeps apart ("permis-", "signment") where
	// pdftotext joins it.
	pieces int
	// ocrLines are the lines of the pages of a born-digital PDF that OCR
	// read (a page without a text layer, where pdftotext prints nothing):
	// they are left out of unprinted, whose reference has no word of
	// theirs, and ocrUnprinted counts those that hold a word pdftotext
	// never prints, as unprinted would. compared is lines less ocrLines.
	ocrLines, ocrUnprinted, compared int
	// numbered and runOn are docconvtest.HeadingsRunOn's counts.
	numbered, runOn int
	leaks           docconvtest.Leaks
	hasLeaks        bool
	// joined counts the page breaks inside a paragraph: two pages' spans
	// of the page map not apart by a blank line, where a quote could
	// cross from one page to the next.
	joined int
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("manuals", flag.ContinueOnError)
	dir := fs.String("dir", "", "the directory the manuals' packages were extracted into (dpkg -x PKG.deb DIR)")
	only := fs.String("only", "", "measure only the manual of this name")
	fidelity := fs.Bool("fidelity", false, "print the fidelity table (unprinted words, headings run on, leaks, speed and memory beside pdftotext) instead of the leaks table")
	rounds := fs.Int("rounds", 1, "convert each manual this many times with each tool, alternating, and report the median CPU time and the median peak of each (the texts are the same each time)")
	verbose := fs.Bool("v", false, "list each leak, unprinted line and heading run on, on stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return fmt.Errorf("-dir is required: run scripts/manuals.sh, which downloads the manuals")
	}
	for _, tool := range []string{"pdftotext", "pdfinfo", timeCommand} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is missing: apt-get install poppler-utils time", tool)
		}
	}
	// Fill PDFium's compilation cache once, so that no child compiles it.
	warm := &docconv.Converter{Instances: 1, CacheDir: docconv.DefaultCacheDir()}
	if err := warm.Warm(); err != nil {
		return err
	}
	warm.Close()
	began := time.Now()
	var rows []measure
	for _, m := range manuals {
		if *only != "" && m.Name != *only {
			continue
		}
		if !*fidelity && (m.isDOCX() || m.isScan()) {
			continue // no running lines to measure
		}
		r, err := measureManual(ctx, filepath.Join(*dir, m.Path), m, max(*rounds, 1))
		if err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		fmt.Fprintf(os.Stderr, "manuals: %s: %d pages (%d by OCR) in %.1f s\n", m.Name, r.mem.Pages, r.mem.OCRPages, r.mem.Wall.Seconds())
		if *verbose {
			for _, l := range r.leaks.Lines {
				fmt.Fprintf(os.Stderr, "%s: leak: %s\n", m.Name, l)
			}
			if *fidelity {
				for _, l := range r.unprinted {
					fmt.Fprintf(os.Stderr, "%s: unprinted: %.200s\n", m.Name, l)
				}
				for _, t := range r.mem.Texts {
					for _, l := range strings.Split(t, "\n") {
						if n, on := docconvtest.HeadingsRunOn(l); n == 1 && on == 1 {
							fmt.Fprintf(os.Stderr, "%s: run on: %.200s\n", m.Name, l)
						}
					}
				}
			}
		}
		rows = append(rows, r)
	}
	if *fidelity {
		writeFidelity(stdout, rows)
	} else {
		writeLeaks(stdout, rows)
	}
	fmt.Fprintf(os.Stderr, "manuals: measured in %.0f s\n", time.Since(began).Seconds())
	return nil
}

// measureManual converts m (path, under the packages' directory) with
// pdftotext (a PDF) and with memagent's converter, rounds times each,
// alternating, and measures the text.
func measureManual(ctx context.Context, path string, m manual, rounds int) (measure, error) {
	r := measure{m: m}
	tmp, err := os.MkdirTemp("", "memagent-manual-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(tmp)
	if m.Gzipped {
		pdf := filepath.Join(tmp, "manual.pdf")
		f, err := os.Create(pdf)
		if err != nil {
			return r, err
		}
		cmd := exec.CommandContext(ctx, "gzip", "-dc", path)
		cmd.Stdout = f
		err = cmd.Run()
		f.Close()
		if err != nil {
			return r, fmt.Errorf("gunzip %s: %w", path, err)
		}
		path = pdf
	}
	if _, err := os.Stat(path); err != nil {
		return r, fmt.Errorf("%w: run scripts/manuals.sh --download-only %s", err, m.Package)
	}
	var reference string
	pages := 0
	switch {
	case m.isScan():
		if path, reference, err = scan(ctx, path, m.Scan[0], m.Scan[1], tmp); err != nil {
			return r, err
		}
		r.hasReference = true
	case m.isPDF():
		if pages, err = pdfPages(ctx, path); err != nil {
			return r, err
		}
		r.hasReference = true
	}
	var mems, pdfs []conversion
	for i := 0; i < rounds; i++ {
		if pages > 0 {
			c, err := pdftotext(ctx, path, pages)
			if err != nil {
				return r, err
			}
			pdfs = append(pdfs, c)
			reference = c.Text
		}
		c, err := convertInChild(ctx, path, m.isScan())
		if err != nil {
			return r, err
		}
		mems = append(mems, c)
	}
	r.mem, r.pdf = medians(mems), medians(pdfs)
	for i, t := range r.mem.Texts {
		spans := r.mem.Maps[i].Spans
		for k := 1; k < len(spans) && r.mem.Maps[i].Unit == api.UnitPage; k++ {
			if gap := t[spans[k-1].End:spans[k].Start]; !strings.Contains(gap, "\n\n") {
				r.joined++
			}
		}
		for _, l := range strings.Split(t, "\n") {
			if strings.TrimSpace(l) != "" {
				r.lines++
			}
		}
		n, on := docconvtest.HeadingsRunOn(t)
		r.numbered += n
		r.runOn += on
	}
	switch {
	case m.isDOCX():
	case m.isPDF():
		layer, ocr := byTextLayer(r.mem.Texts[0], r.mem.Maps[0], m.isScan())
		r.unprinted = docconvtest.UnprintedLines(reference, layer)
		r.ocrLines, r.ocrUnprinted = nonEmptyLines(ocr), len(docconvtest.UnprintedLines(reference, ocr))
		r.compared = r.lines - r.ocrLines
		r.pieces = hyphenPieces(reference, r.unprinted)
		r.leaks, r.hasLeaks = docconvtest.PDFLeaks(reference, r.mem.Texts[0], r.mem.Maps[0]), !m.isScan()
	default:
		names, err := htmlFiles(path)
		if err != nil {
			return r, err
		}
		pages := make([][]byte, len(names))
		for i := range names {
			if pages[i], err = os.ReadFile(names[i]); err != nil {
				return r, err
			}
			names[i], _ = filepath.Rel(path, names[i])
		}
		r.leaks, r.hasLeaks = docconvtest.HTMLPageLeaks(names, pages, r.mem.Texts), true
		// Texinfo's panels, which repetition misses, are leaks too.
		seen := map[string]bool{}
		for _, l := range r.leaks.Lines {
			seen[l] = true
		}
		for i, text := range r.mem.Texts {
			for _, p := range docconvtest.TexinfoPanels(text) {
				if l := fmt.Sprintf("%s: %q", names[i], docconvtest.Mask(p)); !seen[l] {
					seen[l] = true
					r.leaks.Lines = append(r.leaks.Lines, l)
				}
			}
		}
	}
	return r, nil
}

// byTextLayer splits text (a PDF's, with its page map m) into the text
// of the pages that kept their text layer and that of the pages OCR read;
// a scan's pages are all compared (its reference is pdftotext of the
// pages it was made from), so its text is all layer.
func byTextLayer(text string, m memagent.PageMap, scan bool) (layer, ocr string) {
	if scan || len(m.OCR) == 0 {
		return text, ""
	}
	read := map[int]bool{}
	for _, o := range m.OCR {
		read[o.Page] = true
	}
	var l, o strings.Builder
	last := int64(0)
	for _, sp := range m.Spans {
		l.WriteString(text[last:sp.Start])
		if read[sp.Number] {
			o.WriteString(text[sp.Start:sp.End])
			o.WriteString("\n\n")
		} else {
			l.WriteString(text[sp.Start:sp.End])
		}
		last = sp.End
	}
	l.WriteString(text[last:])
	return l.String(), o.String()
}

// nonEmptyLines counts the lines of text that hold more than white space.
func nonEmptyLines(text string) int {
	n := 0
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) != "" {
			n++
		}
	}
	return n
}

func writeLeaks(w io.Writer, rows []measure) {
	fmt.Fprintln(w, "| Manual | Package | Toolchain | Pages | Header-bearing pages | Leaked lines | Leaked per header-bearing page |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %d | %d | %d | %.2f%% |\n", r.m.Name, r.m.Package, r.m.Toolchain, r.leaks.Pages, r.leaks.Bearing, len(r.leaks.Lines), 100*r.leaks.Rate())
	}
}

func writeFidelity(w io.Writer, rows []measure) {
	fmt.Fprintln(w, "| Manual | Package | Toolchain | Pages | Text lines | Lines with a word pdftotext never prints (of the lines on pages with a text layer) | Lines on pages read by OCR, not compared (pdftotext prints nothing there) | Numbered headings run on (> 100 chars) | Running or navigation lines left | memagent pages/s per core | pdftotext pages/s per core | memagent peak | pdftotext peak |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	dash := "–"
	for _, r := range rows {
		pages := fmt.Sprint(r.mem.Pages)
		switch {
		case r.m.isDOCX() || (!r.m.isPDF() && r.mem.Files == 1):
			pages += " sections"
		case !r.m.isPDF():
			pages += " files"
		}
		if n := r.mem.OCRPages; n > 0 && !r.m.isScan() {
			pages += fmt.Sprintf(" (%d by OCR)", n)
		}
		unprinted, ocr := dash, dash
		if r.hasReference {
			of := ""
			if r.ocrLines > 0 {
				of = fmt.Sprintf(" of %d", r.compared)
			}
			unprinted = fmt.Sprintf("%d (%s%s)", len(r.unprinted), percent(len(r.unprinted), r.compared), of)
			if r.pieces > 0 {
				unprinted = fmt.Sprintf("%d (%s%s; %d a hyphenated word's piece)", len(r.unprinted), percent(len(r.unprinted), r.compared), of, r.pieces)
			}
			if !r.m.isScan() {
				ocr = "0"
			}
		}
		if r.ocrLines > 0 {
			ocr = fmt.Sprintf("%d (%d with a word pdftotext never prints)", r.ocrLines, r.ocrUnprinted)
		}
		runOn := fmt.Sprintf("%d of %d (%s)", r.runOn, r.numbered, percent(r.runOn, r.numbered))
		if r.numbered == 0 {
			runOn = "0 of 0"
		}
		leaks := dash
		if r.hasLeaks {
			leaks = fmt.Sprintf("%d on %d pages", len(r.leaks.Lines), r.leaks.Bearing)
		}
		pdfSpeed, pdfPeak := dash, dash
		if r.pdf.Pages > 0 {
			pdfSpeed, pdfPeak = fmt.Sprintf("%.0f", r.pdf.pagesPerCoreSecond()), mb(r.pdf.PeakRSS)
		} else if r.m.isScan() {
			pdfSpeed = "– (no text layer)"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.m.Name, r.m.Package, r.m.Toolchain, pages, r.lines,
			unprinted, ocr, runOn, leaks, speed(r.mem), pdfSpeed, mb(r.mem.PeakRSS), pdfPeak)
	}
	joined, pageBreaks := 0, 0
	for _, r := range rows {
		joined += r.joined
		for _, m := range r.mem.Maps {
			if m.Unit == api.UnitPage {
				pageBreaks += max(len(m.Spans)-1, 0)
			}
		}
	}
	fmt.Fprintf(w, "\nPage breaks inside a paragraph of the text (where a quote could run from one page onto the next): %d of %d.\n", joined, pageBreaks)
}

func speed(c conversion) string {
	if v := c.pagesPerCoreSecond(); v < 10 {
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.0f", c.pagesPerCoreSecond())
}

func percent(n, of int) string {
	if of == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f%%", 100*float64(n)/float64(of))
}

func mb(b int64) string { return fmt.Sprintf("%.0f MB", float64(b)/(1<<20)) }

// longWord is a word of letters alone, as docconvtest.UnprintedLines
// counts them.
var longWord = regexp.MustCompile(`\pL+`)

// hyphenPieces counts the lines (docconvtest.UnprintedLines' of text
// against reference) whose every word of six letters or more that
// reference lacks is the start or the end of a longer word reference has:
// a word the converter left cut at a line-end hyphen where pdftotext
// joined it, rather than letters out of order or two words glued.
func hyphenPieces(reference string, unprinted []string) int {
	printed := map[string]bool{}
	for _, w := range longWord.FindAllString(reference, -1) {
		printed[strings.ToLower(w)] = true
	}
	piece := func(w string) bool {
		for p := range printed {
			if len(p) > len(w) && (strings.HasPrefix(p, w) || strings.HasSuffix(p, w)) {
				return true
			}
		}
		return false
	}
	n := 0
	for _, line := range unprinted {
		all := true
		for _, w := range longWord.FindAllString(line, -1) {
			w = strings.ToLower(w)
			if utf8.RuneCountInString(w) >= 6 && !printed[w] && !piece(w) {
				all = false
				break
			}
		}
		if all {
			n++
		}
	}
	return n
}

// medians returns runs[0] (its text, pages and wall time) with the
// median CPU time and the median peak of all runs; the zero conversion
// for none.
func medians(runs []conversion) conversion {
	if len(runs) == 0 {
		return conversion{}
	}
	out := runs[0]
	cpu := make([]time.Duration, len(runs))
	peak := make([]int64, len(runs))
	for i, c := range runs {
		cpu[i], peak[i] = c.CPU, c.PeakRSS
	}
	slices.Sort(cpu)
	slices.Sort(peak)
	out.CPU, out.PeakRSS = cpu[len(cpu)/2], peak[len(peak)/2]
	return out
}
