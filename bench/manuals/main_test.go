package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/testdeps"
)

// TestMain lets the test binary be the converting child, as the command
// is.
func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		if err := runChild(path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestMeasurePDF measures a generated 20-page PDF as a manual: both tools
// convert it in processes of their own, each reports its pages, CPU time
// and a peak of its own (pdftotext's tens of MB at most, not the test
// binary's), and the converter's text holds no word pdftotext lacks and
// no running line.
func TestMeasurePDF(t *testing.T) {
	testdeps.Command(t, "pdftotext", "apt-get install -y poppler-utils")
	testdeps.File(t, timeCommand, "apt-get install -y time")
	path := filepath.Join(t.TempDir(), "small.pdf")
	if err := os.WriteFile(path, docconvtest.PDF(docconvtest.PDFOptions{Pages: 20, FactPage: 7, Fact: docgen.Fact, Seed: 1}), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := measureManual(context.Background(), path, manual{Name: "small.pdf", Path: "small.pdf"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.mem.Pages != 20 || r.pdf.Pages != 20 {
		t.Errorf("pages: memagent %d, pdftotext %d; want 20 each", r.mem.Pages, r.pdf.Pages)
	}
	if r.mem.CPU <= 0 || r.pdf.CPU < 0 || r.mem.PeakRSS <= 0 || r.pdf.PeakRSS <= 0 || r.pdf.PeakRSS > 64<<20 {
		t.Errorf("figures: memagent %v CPU, %d bytes peak; pdftotext %v, %d bytes", r.mem.CPU, r.mem.PeakRSS, r.pdf.CPU, r.pdf.PeakRSS)
	}
	if !r.hasReference || len(r.unprinted) > 0 || r.lines == 0 {
		t.Errorf("unprinted lines %q of %d (reference %v); want none of some", r.unprinted, r.lines, r.hasReference)
	}
	if r.joined != 0 {
		t.Errorf("%d page breaks inside a paragraph; want none (each page's text is paragraphs of its own)", r.joined)
	}
	if !r.hasLeaks || r.leaks.Bearing != 20 || len(r.leaks.Lines) > 0 {
		t.Errorf("leaks %+v; want 20 header-bearing pages, no line left", r.leaks)
	}
}

func TestHyphenPieces(t *testing.T) {
	reference := "The file's group has execute/search permissions.\nAn assignment statements.\n"
	unprinted := []string{
		"group_exec 0010 S_IXGRP The file’s group has execute/search permis-", // the converter kept the hyphen's halves
		"signment statements or unset.",
		"ssh-askpass a-sgknsousmeer (f1o)r a pass phrase", // interleaved
		"permis- and managementsuch",                      // one piece, one glued
	}
	if got := hyphenPieces(reference, unprinted); got != 2 {
		t.Errorf("hyphenPieces = %d, want 2 (the first two lines)", got)
	}
}

func TestMedians(t *testing.T) {
	runs := []conversion{{Pages: 9, CPU: 3, PeakRSS: 10}, {Pages: 9, CPU: 1, PeakRSS: 30}, {Pages: 9, CPU: 2, PeakRSS: 20}}
	if got := medians(runs); got.CPU != 2 || got.PeakRSS != 20 || got.Pages != 9 {
		t.Errorf("medians = %+v; want CPU 2, peak 20, pages 9", got)
	}
	if got := medians(nil); got.Pages != 0 {
		t.Errorf("medians(nil) = %+v; want the zero conversion", got)
	}
}

// TestByTextLayer: the lines of a page OCR read in a born-digital PDF
// are set apart from the compared text (pdftotext prints nothing for a
// page without a text layer); a scan's are all compared.
func TestByTextLayer(t *testing.T) {
	text := "page one words\n\nscanned table gunzip\n\npage three words\n"
	m := memagent.PageMap{Spans: []memagent.PageSpan{{Number: 1, Start: 0, End: 14}, {Number: 2, Start: 16, End: 36}, {Number: 3, Start: 38, End: 54}},
		OCR: []memagent.OCRPage{{Page: 2}}}
	layer, ocr := byTextLayer(text, m, false)
	if layer != "page one words\n\n\n\npage three words\n" || ocr != "scanned table gunzip\n\n" {
		t.Errorf("layer %q, ocr %q; want page 2 apart", layer, ocr)
	}
	if n := nonEmptyLines(ocr); n != 1 {
		t.Errorf("%d OCR lines, want 1", n)
	}
	if layer, ocr := byTextLayer(text, m, true); layer != text || ocr != "" {
		t.Errorf("scan: layer %q, ocr %q; want all compared", layer, ocr)
	}
}
