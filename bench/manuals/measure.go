package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/memagent/memagent/internal/dev/procstat"
	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/memagent"
)

// Environment of the converting child: the bench re-executes itself with
// childEnv naming a file or a directory of HTML pages, so that the CPU
// time and peak memory it reports are one conversion's alone, as `go run
// ./bench -only convert` measures (bench/convert.go).
const (
	childEnv    = "MEMAGENT_MANUALS_CONVERT"
	childOutEnv = "MEMAGENT_MANUALS_OUT" // directory for the texts and page maps
	childOCREnv = "MEMAGENT_MANUALS_OCR" // "1": the converter must have the OCR engine (a scan)
)

// timeCommand is GNU time: pdftotext runs under `/usr/bin/time -v`, as
// its users would measure it.
const timeCommand = procstat.TimeCommand

// childReport is what the converting child prints.
type childReport struct {
	// Pages is the pages (PDF), sections (DOCX, one HTML file) or files
	// (a directory of HTML) converted.
	Pages int `json:"pages"`
	Files int `json:"files"`
	// OCRPages counts the pages read by OCR.
	OCRPages int `json:"ocr_pages"`
	// CPUNanos is user+system time of the conversions, the engine
	// processes' included (OCR), after PDFium started.
	CPUNanos  int64 `json:"cpu_ns"`
	WallNanos int64 `json:"wall_ns"`
	// PeakRSS is the child's own peak resident set (VmHWM), bytes.
	PeakRSS int64 `json:"peak_rss"`
}

// runChild converts what childEnv names with one PDFium instance, writes
// each file's text and page map under childOutEnv (N.txt, N.json, N in
// the order of htmlFiles) and prints a childReport.
func runChild(path string) error {
	c := &docconv.Converter{Instances: 1, CacheDir: docconv.DefaultCacheDir()}
	// The OCR engine, where installed, as on a worker: a page of a born
	// digital manual may need it too (debian-reference's cover).
	e, err := docconv.FindEngine(context.Background(), "")
	if err != nil && os.Getenv(childOCREnv) == "1" {
		return err
	}
	if err == nil {
		c.OCR = e
	}
	defer c.Close()
	if err := c.Warm(); err != nil {
		return err
	}
	files := []string{path}
	if st, err := os.Stat(path); err != nil {
		return err
	} else if st.IsDir() {
		if files, err = htmlFiles(path); err != nil {
			return err
		}
	}
	out := os.Getenv(childOutEnv)
	var rep childReport
	maps := make([]memagent.PageMap, len(files))
	cpu0, began := procstat.CPUTime(true), time.Now()
	for i, f := range files {
		res, err := convertFile(c, f, filepath.Join(out, fmt.Sprintf("%d.txt", i)))
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		maps[i] = res.Map
		rep.Pages += res.Map.Pages
		rep.OCRPages += len(res.Map.OCR)
	}
	rep.CPUNanos, rep.WallNanos = (procstat.CPUTime(true) - cpu0).Nanoseconds(), time.Since(began).Nanoseconds()
	rep.PeakRSS, rep.Files = procstat.PeakRSS(), len(files)
	if len(files) > 1 {
		rep.Pages = len(files)
	}
	for i, m := range maps {
		data, err := json.Marshal(m)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, fmt.Sprintf("%d.json", i)), data, 0o600); err != nil {
			return err
		}
	}
	return json.NewEncoder(os.Stdout).Encode(rep)
}

// convertFile converts path, of the format its first bytes say (as the
// worker detects it), to the text file out.
func convertFile(c *docconv.Converter, path, out string) (*docconv.Result, error) {
	head := make([]byte, docconv.SniffBytes)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	n, _ := io.ReadFull(f, head)
	f.Close()
	w, err := os.Create(out)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	return c.ConvertWith(context.Background(), docconv.Detect(head[:n]), path, w, docconv.Options{})
}

// htmlFiles lists an HTML manual's pages, sorted, leaving out
// directories whose name starts with "_" (Sphinx's sources and assets).
func htmlFiles(dir string) ([]string, error) {
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
	sort.Strings(files)
	return files, err
}

// conversion is one tool's conversion of a manual.
type conversion struct {
	Pages, Files, OCRPages int
	CPU, Wall              time.Duration
	PeakRSS                int64
	// Texts and Maps are memagent's text and page map of each file.
	Texts []string
	Maps  []memagent.PageMap
	// Text is pdftotext's.
	Text string
}

func (c conversion) pagesPerCoreSecond() float64 { return float64(c.Pages) / c.CPU.Seconds() }

// convertInChild runs the converting child on path and reads back what it
// wrote.
func convertInChild(ctx context.Context, path string, ocr bool) (conversion, error) {
	self, err := os.Executable()
	if err != nil {
		return conversion{}, err
	}
	dir, err := os.MkdirTemp("", "memagent-manuals-")
	if err != nil {
		return conversion{}, err
	}
	defer os.RemoveAll(dir)
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), childEnv+"="+path, childOutEnv+"="+dir)
	if ocr {
		cmd.Env = append(cmd.Env, childOCREnv+"=1")
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return conversion{}, fmt.Errorf("converting process: %w: %s", err, stderr.String())
	}
	var rep childReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return conversion{}, fmt.Errorf("converting process printed %q: %w", stdout.String(), err)
	}
	c := conversion{Pages: rep.Pages, Files: rep.Files, OCRPages: rep.OCRPages, CPU: time.Duration(rep.CPUNanos), Wall: time.Duration(rep.WallNanos), PeakRSS: rep.PeakRSS}
	for i := 0; i < rep.Files; i++ {
		text, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.txt", i)))
		if err != nil {
			return conversion{}, err
		}
		data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.json", i)))
		if err != nil {
			return conversion{}, err
		}
		var m memagent.PageMap
		if err := json.Unmarshal(data, &m); err != nil {
			return conversion{}, err
		}
		c.Texts, c.Maps = append(c.Texts, string(text)), append(c.Maps, m)
	}
	return c, nil
}

// pdftotext runs `/usr/bin/time -v pdftotext -enc UTF-8 pdf out` and reads
// its text and GNU time's figures: user+system time and the maximum
// resident set, pdftotext's own (time is a small program that forks it).
func pdftotext(ctx context.Context, pdf string, pages int) (conversion, error) {
	out, err := os.CreateTemp("", "memagent-manuals-pdftotext-*")
	if err != nil {
		return conversion{}, err
	}
	out.Close()
	defer os.Remove(out.Name())
	cmd := exec.CommandContext(ctx, timeCommand, "-v", "pdftotext", "-enc", "UTF-8", pdf, out.Name())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	began := time.Now()
	if err := cmd.Run(); err != nil {
		return conversion{}, fmt.Errorf("%s -v pdftotext (apt-get install poppler-utils time): %w: %s", timeCommand, err, stderr.String())
	}
	wall := time.Since(began)
	text, err := os.ReadFile(out.Name())
	if err != nil {
		return conversion{}, err
	}
	tv, err := procstat.ParseTimeV(stderr.String())
	if err != nil {
		return conversion{}, err
	}
	return conversion{Pages: pages, Files: 1, CPU: tv.CPU, Wall: wall, PeakRSS: tv.MaxRSS, Text: string(text)}, nil
}

// pdfPages is a PDF's page count, as pdfinfo reads it.
func pdfPages(ctx context.Context, pdf string) (int, error) {
	out, err := exec.CommandContext(ctx, "pdfinfo", pdf).Output()
	if err != nil {
		return 0, fmt.Errorf("pdfinfo %s (apt-get install poppler-utils): %w", pdf, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "Pages:"); ok {
			return strconv.Atoi(strings.TrimSpace(rest))
		}
	}
	return 0, fmt.Errorf("pdfinfo %s: no page count", pdf)
}

// scan rasterises pages first..last of pdf at 300 DPI in gray (pdftoppm)
// and wraps them into an image-only PDF (img2pdf) in dir, as BENCHMARKS.md's
// OCR section scans; it returns the scan and pdftotext's text of the
// original pages, the reference OCR is held to.
func scan(ctx context.Context, pdf string, first, last int, dir string) (string, string, error) {
	f, l := strconv.Itoa(first), strconv.Itoa(last)
	if out, err := exec.CommandContext(ctx, "pdftoppm", "-r", "300", "-gray", "-png", "-f", f, "-l", l, pdf, filepath.Join(dir, "p")).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("pdftoppm (apt-get install poppler-utils): %v: %s", err, out)
	}
	pngs, _ := filepath.Glob(filepath.Join(dir, "p-*.png"))
	sort.Strings(pngs)
	path := filepath.Join(dir, "scan.pdf")
	if out, err := exec.CommandContext(ctx, "img2pdf", append(pngs, "-o", path)...).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("img2pdf (apt-get install img2pdf): %v: %s", err, out)
	}
	ref, err := exec.CommandContext(ctx, "pdftotext", "-enc", "UTF-8", "-f", f, "-l", l, pdf, "-").Output()
	if err != nil {
		return "", "", fmt.Errorf("pdftotext: %w", err)
	}
	return path, string(ref), nil
}
