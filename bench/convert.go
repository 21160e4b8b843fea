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
	"sort"
	"strings"
	"time"

	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/dev/procstat"
	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
)

// convertProcessEnv makes the bench binary convert one PDF and report, so
// that its CPU time and peak memory are the conversion's alone.
const convertProcessEnv = "MEMAGENT_BENCH_CONVERT"

// timeCommand is GNU time, which reports a command's peak resident set
// and CPU time the way pdftotext's users would measure it
// (/usr/bin/time -v): pdftotext runs under it, from the bench directly.
const timeCommand = procstat.TimeCommand

// convertCacheEnv overrides the child's compilation cache directory: an
// empty one measures a cold start.
const convertCacheEnv = "MEMAGENT_BENCH_CONVERT_CACHE"

// convertPages is the length of the convert section's generated PDF.
const convertPages = 1000

// convertRun is one conversion of the generated PDF by one tool.
type convertRun struct {
	Pages int
	// CPU is the user+system time of the conversion (for memagent, after
	// PDFium started); Wall its elapsed time.
	CPU, Wall time.Duration
	// Start is memagent's PDFium start-up, with the compilation cache
	// warm.
	Start time.Duration
	// PeakRSS is the process's maximum resident set, bytes.
	PeakRSS int64
	// Bytes is the text written; Fact whether the planted fact came out
	// as one line.
	Bytes int64
	Fact  bool
}

func (r convertRun) pagesPerCoreSecond() float64 { return float64(r.Pages) / r.CPU.Seconds() }

// convertChild is what the child process prints.
type convertChild struct {
	Pages       int   `json:"pages"`
	CPUNanos    int64 `json:"cpu_ns"`
	WallNanos   int64 `json:"wall_ns"`
	StartNanos  int64 `json:"start_ns"`
	Bytes       int64 `json:"bytes"`
	FactOneLine bool  `json:"fact_one_line"`
	// PeakRSS is the converting process's own peak resident set, bytes:
	// VmHWM (the kernel's wait4 figure would include the bench's memory at
	// fork).
	PeakRSS int64 `json:"peak_rss"`
}

// runConvertProcess is the child: convert the PDF named by the
// environment to a file and print a convertChild.
func runConvertProcess(pdf string) error {
	cache := docconv.DefaultCacheDir()
	if dir := os.Getenv(convertCacheEnv); dir != "" {
		cache = dir
	}
	c := &docconv.Converter{Instances: 1, CacheDir: cache}
	defer c.Close()
	began := time.Now()
	if err := c.Warm(); err != nil {
		return err
	}
	start := time.Since(began)
	out, err := os.CreateTemp("", "memagent-bench-text-*")
	if err != nil {
		return err
	}
	defer os.Remove(out.Name())
	defer out.Close()
	cpu0 := procstat.CPUTime(false)
	began = time.Now()
	res, err := c.Convert(context.Background(), docconv.FormatPDF, pdf, out, nil)
	if err != nil {
		return err
	}
	wall, cpu := time.Since(began), procstat.CPUTime(false)-cpu0
	text, err := os.ReadFile(out.Name())
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(convertChild{
		Pages: res.Map.Pages, CPUNanos: cpu.Nanoseconds(), WallNanos: wall.Nanoseconds(), StartNanos: start.Nanoseconds(),
		Bytes: res.Bytes, FactOneLine: bytes.Contains(text, []byte(docgen.Fact)), PeakRSS: procstat.PeakRSS(),
	})
}

// convertResult is the section's outcome: memagent's and pdftotext's
// runs, alternated, and why pdftotext is missing if it is.
type convertResult struct {
	PDFBytes  int
	Memagent  []convertRun
	Pdftotext []convertRun
	Missing   string
	// ColdStart is PDFium's start-up with an empty compilation cache.
	ColdStart time.Duration
}

// runConvert generates a 1,000-page PDF (running header, footer and page
// number on every page, the fact on page 617) and converts it rounds times
// with memagent's converter and with pdftotext, alternating, each in its
// own process.
func runConvert(ctx context.Context, rounds int) (*convertResult, error) {
	dir, err := os.MkdirTemp("", "memagent-bench-convert-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	pdf := docconvtest.PDF(docconvtest.PDFOptions{Pages: convertPages, FactPage: 617, Fact: docgen.Fact, Seed: 1})
	path := filepath.Join(dir, "bench.pdf")
	if err := os.WriteFile(path, pdf, 0o644); err != nil {
		return nil, err
	}
	res := &convertResult{PDFBytes: len(pdf)}
	tool, lookErr := exec.LookPath("pdftotext")
	if lookErr == nil {
		_, lookErr = os.Stat(timeCommand)
	}
	if lookErr != nil {
		res.Missing = "pdftotext or GNU time is not installed (scripts/test-deps.sh, or apt-get install -y poppler-utils time)"
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	// One conversion first with an empty compilation cache: the cold
	// start. Then one untimed, to fill the worker's cache.
	cold, err := convertChildRun(ctx, self, path, filepath.Join(dir, "cold-cache"))
	if err != nil {
		return nil, err
	}
	res.ColdStart = cold.Start
	if _, err := convertChildRun(ctx, self, path, ""); err != nil {
		return nil, err
	}
	for i := 0; i < rounds; i++ {
		r, err := convertChildRun(ctx, self, path, "")
		if err != nil {
			return nil, err
		}
		res.Memagent = append(res.Memagent, r)
		fmt.Fprintf(os.Stderr, "convert round %d: memagent %.1f pages/s per core, %.0f MB\n", i+1, r.pagesPerCoreSecond(), float64(r.PeakRSS)/(1<<20))
		if lookErr == nil {
			r, err := pdftotextRun(ctx, tool, path)
			if err != nil {
				return nil, err
			}
			res.Pdftotext = append(res.Pdftotext, r)
		}
	}
	return res, nil
}

func convertChildRun(ctx context.Context, self, pdf, cache string) (convertRun, error) {
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), convertProcessEnv+"="+pdf)
	if cache != "" {
		cmd.Env = append(cmd.Env, convertCacheEnv+"="+cache)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return convertRun{}, fmt.Errorf("convert process: %w: %s", err, stderr.String())
	}
	var c convertChild
	if err := json.Unmarshal(stdout.Bytes(), &c); err != nil {
		return convertRun{}, fmt.Errorf("convert process printed %q: %w", stdout.String(), err)
	}
	return convertRun{Pages: c.Pages, CPU: time.Duration(c.CPUNanos), Wall: time.Duration(c.WallNanos),
		Start: time.Duration(c.StartNanos), PeakRSS: c.PeakRSS, Bytes: c.Bytes, Fact: c.FactOneLine}, nil
}

// pdftotextRun runs pdftotext on pdf under /usr/bin/time -v and reads the
// figures GNU time prints: user and system time and the maximum resident
// set. time is a small program, so the figure is pdftotext's own, not
// what a large parent held when it forked.
func pdftotextRun(ctx context.Context, tool, pdf string) (convertRun, error) {
	out, err := os.CreateTemp("", "memagent-bench-pdftotext-*")
	if err != nil {
		return convertRun{}, err
	}
	out.Close()
	defer os.Remove(out.Name())
	cmd := exec.CommandContext(ctx, timeCommand, "-v", tool, pdf, out.Name())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	began := time.Now()
	if err := cmd.Run(); err != nil {
		return convertRun{}, fmt.Errorf("%s -v pdftotext: %w: %s", timeCommand, err, stderr.String())
	}
	wall := time.Since(began)
	text, err := os.ReadFile(out.Name())
	if err != nil {
		return convertRun{}, err
	}
	report, err := procstat.ParseTimeV(stderr.String())
	if err != nil {
		return convertRun{}, err
	}
	return convertRun{Pages: convertPages, CPU: report.CPU, Wall: wall, PeakRSS: report.MaxRSS,
		Bytes: int64(len(text)), Fact: bytes.Contains(text, []byte(docgen.Fact))}, nil
}

// median returns the run with the median CPU time.
func median(runs []convertRun) convertRun {
	s := append([]convertRun(nil), runs...)
	sort.Slice(s, func(i, j int) bool { return s[i].CPU < s[j].CPU })
	return s[len(s)/2]
}

func writeConvert(w io.Writer, r *convertResult) {
	fmt.Fprintf(w, "## Document conversion\n\nA generated %d-page PDF (%.1f MB; one column of body text, a running header, footer and page number on every page, the planted fact on page 617) converted to text by memagent's converter (PDFium in WebAssembly under wazero, one instance, running headers, footers and page numbers dropped, paragraphs rejoined) and by Debian's `pdftotext` (poppler-utils, default reading-order mode) on the same file in the same run, each in its own process, %d rounds alternating; the median round by CPU time. Pages per second per core is pages over the process's user+system CPU time of the conversion (memagent's excludes PDFium's start-up, shown apart); peak memory is the process's maximum resident set: memagent's is its converting process's VmHWM, pdftotext's is what `/usr/bin/time -v pdftotext` reports, run from the bench directly, as pdftotext's users would measure it. \"fact on one line\" says whether the planted sentence came out unbroken, as the simulator needs it.\n\n",
		convertPages, float64(r.PDFBytes)/(1<<20), len(r.Memagent))
	fmt.Fprintln(w, "| converter | pages | CPU | wall | pages/s per core | peak memory | text bytes | fact on one line | start-up |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	row := func(name string, runs []convertRun, start bool) {
		m := median(runs)
		s := "–"
		if start {
			s = fmt.Sprintf("%.2f s", m.Start.Seconds())
		}
		fmt.Fprintf(w, "| %s | %d | %.2f s | %.2f s | %.0f | %.0f MB | %d | %v | %s |\n", name, m.Pages, m.CPU.Seconds(), m.Wall.Seconds(),
			m.pagesPerCoreSecond(), float64(m.PeakRSS)/(1<<20), m.Bytes, m.Fact, s)
	}
	row("memagent (PDFium/wasm)", r.Memagent, true)
	if len(r.Pdftotext) > 0 {
		row("pdftotext (poppler)", r.Pdftotext, false)
		a, b := median(r.Memagent), median(r.Pdftotext)
		fmt.Fprintf(w, "\nmemagent converts at %.2f× pdftotext's pages per core-second, in %.2f× its peak memory.", a.pagesPerCoreSecond()/b.pagesPerCoreSecond(), float64(a.PeakRSS)/float64(b.PeakRSS))
	} else {
		fmt.Fprintf(w, "| pdftotext | %s | | | | | | | |\n", strings.ReplaceAll(r.Missing, "|", "/"))
	}
	fmt.Fprintf(w, " PDFium's start-up in a new worker process with an empty compilation cache (wazero compiling the module): %.2f s; with the cache under the user's cache directory: the start-up column.\n\n", r.ColdStart.Seconds())
}
