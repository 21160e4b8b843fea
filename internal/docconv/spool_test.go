package docconv

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/memagent/memagent/internal/docconv/docconvtest"
)

// TestSpoolFile converts the PDF named by MEMAGENT_SPOOL_PDF and keeps its
// spooled pages (the layout before running headers are dropped) at
// MEMAGENT_SPOOL; TestRenderSpool renders such a file again, to
// MEMAGENT_CONVERT_OUT, in a fraction of PDFium's time: the way to work on
// the header, footer and paragraph rules against a real manual. Without
// the variables they do nothing.
func TestSpoolFile(t *testing.T) {
	in, spool := os.Getenv("MEMAGENT_SPOOL_PDF"), os.Getenv("MEMAGENT_SPOOL")
	if in == "" || spool == "" {
		t.Skip("set MEMAGENT_SPOOL_PDF and MEMAGENT_SPOOL to spool a PDF's pages")
	}
	spoolCopyTo = spool
	defer func() { spoolCopyTo = "" }()
	c := &Converter{CacheDir: DefaultCacheDir()}
	defer c.Close()
	if _, err := c.Convert(context.Background(), FormatPDF, in, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
}

func TestRenderSpool(t *testing.T) {
	spool, out := os.Getenv("MEMAGENT_SPOOL"), os.Getenv("MEMAGENT_CONVERT_OUT")
	if spool == "" || out == "" || os.Getenv("MEMAGENT_SPOOL_PDF") != "" {
		t.Skip("set MEMAGENT_SPOOL and MEMAGENT_CONVERT_OUT to render spooled pages")
	}
	res, err := RenderSpoolFile(spool, out)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(res.Map)
	if err := os.WriteFile(out+".pages.json", raw, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d pages, %d bytes, %d edge lines dropped", res.Map.Pages, res.Bytes, res.Dropped)
}

// RenderSpoolFile renders spooled pages at spool as text to out.
func RenderSpoolFile(spool, out string) (*Result, error) {
	f, err := os.Open(spool)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var edges EdgeCounter
	pages := 0
	dec := json.NewDecoder(bufio.NewReader(f))
	for {
		var p pdfPage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		edges.Add(p.Lines)
		pages++
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	w, err := os.Create(out)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	return renderPages(bufio.NewReader(f), pages, &edges, w, Limits{}.withDefaults().MaxTextBytes)
}

// TestSpoolLeaks renders the spooled pages at MEMAGENT_SPOOL and measures
// their leaked running lines against pdftotext's text of the same PDF at
// MEMAGENT_PDFTOTEXT (docconvtest.PDFLeaks), listing them with -v.
func TestSpoolLeaks(t *testing.T) {
	spool, truth := os.Getenv("MEMAGENT_SPOOL"), os.Getenv("MEMAGENT_PDFTOTEXT")
	if spool == "" || truth == "" {
		t.Skip("set MEMAGENT_SPOOL and MEMAGENT_PDFTOTEXT to measure leaks")
	}
	out := filepath.Join(t.TempDir(), "text.txt")
	if o := os.Getenv("MEMAGENT_CONVERT_OUT"); o != "" {
		out = o
	}
	res, err := RenderSpoolFile(spool, out)
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(truth)
	if err != nil {
		t.Fatal(err)
	}
	l := docconvtest.PDFLeaks(string(raw), string(text), res.Map)
	for _, line := range l.Lines {
		t.Log(line)
	}
	t.Logf("%d pages, %d header-bearing, %d leaked (%.2f%%), %d edge lines dropped", l.Pages, l.Bearing, len(l.Lines), 100*l.Rate(), res.Dropped)
}
