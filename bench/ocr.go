package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/memagent/memagent/internal/dev/procstat"
	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
)

// ocrProcessEnv makes the bench binary convert one scanned PDF with OCR
// and report, under /usr/bin/time -v, so that its CPU time (the engine
// processes' included) and peak memory are the conversion's alone.
const ocrProcessEnv = "MEMAGENT_BENCH_OCR"

// ocrTextEnv names the file the OCR child writes its text to.
const ocrTextEnv = "MEMAGENT_BENCH_OCR_TEXT"

// ocrFirstPage and ocrPages are the pages of gnuplot's manual the section
// scans: prose, tables and code, as a manual has them.
const (
	ocrFirstPage = 30
	ocrPages     = 20
)

// ocrChild is what the OCR child prints.
type ocrChild struct {
	OCRPages  int   `json:"ocr_pages"`
	WallNanos int64 `json:"wall_ns"`
	// PeakRSS is the worker process's own peak (VmHWM), without the
	// engine's processes.
	PeakRSS int64 `json:"peak_rss"`
	Workers int   `json:"workers"`
}

// runOCRProcess is the child: convert the scan named by the environment
// with the OCR engine (as many pages at once as GOMAXPROCS), write the
// text where the environment says, and print an ocrChild.
func runOCRProcess(pdf string) error {
	e, err := docconv.FindEngine(context.Background(), "")
	if err != nil {
		return err
	}
	c := &docconv.Converter{Instances: 1, CacheDir: docconv.DefaultCacheDir(), OCR: e}
	defer c.Close()
	if err := c.Warm(); err != nil {
		return err
	}
	out, err := os.Create(os.Getenv(ocrTextEnv))
	if err != nil {
		return err
	}
	defer out.Close()
	began := time.Now()
	res, err := c.ConvertWith(context.Background(), docconv.FormatPDF, pdf, out, docconv.Options{})
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(ocrChild{OCRPages: len(res.Map.OCR), WallNanos: time.Since(began).Nanoseconds(),
		PeakRSS: procstat.PeakRSS(), Workers: e.Slots()})
}

// ocrRun is one tool's reading of the scan.
type ocrRun struct {
	Tool  string
	Pages int
	// CPU is user+system time of the tool and the processes it waited
	// for (the engine's), Wall its elapsed time.
	CPU, Wall time.Duration
	// PeakRSS is /usr/bin/time -v's maximum resident set: the largest
	// single process of the tool's tree. WorkerRSS is memagent's own
	// process's.
	PeakRSS, WorkerRSS int64
	// Accuracy is the word accuracy against pdftotext of the original.
	Accuracy float64
}

func (r ocrRun) pagesPerCoreSecond() float64 { return float64(r.Pages) / r.CPU.Seconds() }

// ocrResult is the section's outcome.
type ocrResult struct {
	Source  string
	Workers int
	Runs    []ocrRun
	Missing string
}

// runOCR scans ocrPages pages of source (pdftoppm -r 300 -gray, img2pdf),
// then reads the scan with memagent's converter and with ocrmypdf
// --sidecar, each under /usr/bin/time -v, and scores both against
// pdftotext's text of the original pages.
func runOCR(ctx context.Context, source string) (*ocrResult, error) {
	res := &ocrResult{Source: source, Workers: runtime.GOMAXPROCS(0)}
	var tools []string
	for _, t := range []string{"pdftoppm", "pdftotext", "img2pdf", "tesseract", "ocrmypdf", timeCommand} {
		if _, err := exec.LookPath(t); err != nil {
			tools = append(tools, t)
		}
	}
	if _, err := os.Stat(source); err != nil {
		tools = append(tools, source+" (scripts/manuals.sh --download-only gnuplot-doc)")
	}
	if len(tools) > 0 {
		res.Missing = "missing: " + strings.Join(tools, ", ") + " (scripts/test-deps.sh installs them; apt-get install ocrmypdf)"
		return res, nil
	}
	dir, err := os.MkdirTemp("", "memagent-bench-ocr-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	first, last := fmt.Sprint(ocrFirstPage), fmt.Sprint(ocrFirstPage+ocrPages-1)
	if out, err := exec.CommandContext(ctx, "pdftoppm", "-r", "300", "-gray", "-png", "-f", first, "-l", last, source, filepath.Join(dir, "p")).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pdftoppm: %v: %s", err, out)
	}
	pngs, _ := filepath.Glob(filepath.Join(dir, "p-*.png"))
	scan := filepath.Join(dir, "scan.pdf")
	if out, err := exec.CommandContext(ctx, "img2pdf", append(pngs, "-o", scan)...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("img2pdf: %v: %s", err, out)
	}
	ref, err := exec.CommandContext(ctx, "pdftotext", "-enc", "UTF-8", "-f", first, "-l", last, source, "-").Output()
	if err != nil {
		return nil, fmt.Errorf("pdftotext: %w", err)
	}
	refWords := docconvtest.WordsOf(string(ref))

	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	text := filepath.Join(dir, "memagent.txt")
	cmd := exec.CommandContext(ctx, timeCommand, "-v", self)
	cmd.Env = append(os.Environ(), ocrProcessEnv+"="+scan, ocrTextEnv+"="+text)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("memagent OCR: %v: %s", err, stderr.String())
	}
	wall := time.Since(began)
	tv, err := procstat.ParseTimeV(stderr.String())
	if err != nil {
		return nil, err
	}
	var child ocrChild
	if err := json.NewDecoder(io.LimitReader(&stdout, 1<<20)).Decode(&child); err != nil {
		return nil, fmt.Errorf("memagent OCR printed %q: %w", stdout.String(), err)
	}
	got, err := os.ReadFile(text)
	if err != nil {
		return nil, err
	}
	res.Runs = append(res.Runs, ocrRun{Tool: fmt.Sprintf("memagent (Tesseract, %d pages at once)", child.Workers), Pages: child.OCRPages,
		CPU: tv.CPU, Wall: wall, PeakRSS: tv.MaxRSS, WorkerRSS: child.PeakRSS, Accuracy: docconvtest.WordAccuracy(refWords, docconvtest.WordsOf(string(got)))})
	fmt.Fprintf(os.Stderr, "ocr: memagent %d pages in %v\n", child.OCRPages, wall.Round(time.Millisecond))

	sidecar := filepath.Join(dir, "sidecar.txt")
	cmd = exec.CommandContext(ctx, timeCommand, "-v", "ocrmypdf", "--sidecar", sidecar, "-l", "eng", "--jobs", fmt.Sprint(res.Workers),
		scan, filepath.Join(dir, "ocrmypdf.pdf"))
	stderr.Reset()
	cmd.Stderr = &stderr
	began = time.Now()
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("ocrmypdf: %v: %s", err, stderr.String())
	}
	wall = time.Since(began)
	if tv, err = procstat.ParseTimeV(stderr.String()); err != nil {
		return nil, err
	}
	if got, err = os.ReadFile(sidecar); err != nil {
		return nil, err
	}
	res.Runs = append(res.Runs, ocrRun{Tool: fmt.Sprintf("ocrmypdf --sidecar (--jobs %d)", res.Workers), Pages: ocrPages,
		CPU: tv.CPU, Wall: wall, PeakRSS: tv.MaxRSS, Accuracy: docconvtest.WordAccuracy(refWords, docconvtest.WordsOf(string(got)))})
	fmt.Fprintf(os.Stderr, "ocr: ocrmypdf in %v\n", wall.Round(time.Millisecond))
	return res, nil
}

// writeOCR writes the section.
func writeOCR(w io.Writer, r *ocrResult) {
	fmt.Fprintln(w, "## OCR of scanned pages")
	fmt.Fprintln(w)
	if r.Missing != "" {
		fmt.Fprintf(w, "Not measured: %s.\n\n", r.Missing)
		return
	}
	fmt.Fprintf(w, "Pages %d–%d of gnuplot's manual (%s, Debian's gnuplot-doc) rasterised by `pdftoppm -r 300 -gray` and wrapped by `img2pdf` into an image-only PDF of %d pages, then read by memagent's converter (PDFium rasterises each page at the image's 300 DPI, Tesseract reads it in a process of its own with `OMP_THREAD_LIMIT=1`, %d pages at once) and by Debian's `ocrmypdf --sidecar` (the same Tesseract, `--jobs %d`), each under `/usr/bin/time -v`, one run each. Pages per second per core is pages over the user+system CPU time of the tool and the processes it waited for (the engines'); peak memory is GNU time's maximum resident set, which is that of the largest single process of the tree, not their sum (memagent's own process's is beside it). Word accuracy is against `pdftotext` of the original pages (docconvtest.WordAccuracy: 1 − word edit distance / reference words); the pages hold tables and code, which the tools read in other orders than pdftotext, and memagent drops the running headers pdftotext keeps, so both figures are below what prose alone scores (the accuracy test's pages: 0.98 and above).\n\n",
		ocrFirstPage, ocrFirstPage+ocrPages-1, filepath.Base(r.Source), ocrPages, r.Workers, r.Workers)
	fmt.Fprintln(w, "| reader | pages | CPU | wall | pages/s per core | peak memory (largest process) | worker process | word accuracy |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, run := range r.Runs {
		worker := "–"
		if run.WorkerRSS > 0 {
			worker = fmt.Sprintf("%.0f MB", float64(run.WorkerRSS)/(1<<20))
		}
		fmt.Fprintf(w, "| %s | %d | %.1f s | %.1f s | %.3f | %.0f MB | %s | %.4f |\n", run.Tool, run.Pages, run.CPU.Seconds(), run.Wall.Seconds(),
			run.pagesPerCoreSecond(), float64(run.PeakRSS)/(1<<20), worker, run.Accuracy)
	}
	if len(r.Runs) == 2 {
		fmt.Fprintf(w, "\nmemagent reads at %.2f× ocrmypdf's pages per core-second.\n", r.Runs[0].pagesPerCoreSecond()/r.Runs[1].pagesPerCoreSecond())
	}
	fmt.Fprintln(w)
}

// defaultOCRSource is gnuplot's manual where scripts/manuals.sh puts it
// ($MEMAGENT_MANUALS, else ~/.cache/memagent/manuals).
func defaultOCRSource() string {
	dir := os.Getenv("MEMAGENT_MANUALS")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "memagent", "manuals")
	}
	return filepath.Join(dir, "x", "usr", "share", "doc", "gnuplot", "gnuplot.pdf")
}
