package docconv_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/testdeps"
)

var (
	engineOnce sync.Once
	engine     *docconv.Engine
	engineErr  error
)

// ocrConverter is a converter with the real Tesseract, or skips (fails
// under MEMAGENT_CI=1) without it.
func ocrConverter(t *testing.T) *docconv.Converter {
	t.Helper()
	testdeps.Command(t, "tesseract", "apt-get install tesseract-ocr tesseract-ocr-eng")
	engineOnce.Do(func() { engine, engineErr = docconv.FindEngine(context.Background(), "") })
	if engineErr != nil {
		t.Fatal(engineErr)
	}
	return &docconv.Converter{CacheDir: docconv.DefaultCacheDir(), OCR: engine}
}

func TestOCRDecision(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mode  string
		chars int
		cover float64
		want  string
	}{
		{"a born-digital page", docconv.OCRAuto, 2400, 0, ""},
		{"a born-digital page with a full-page figure", docconv.OCRAuto, 2400, 0.9, ""},
		{"a page of a figure and its caption", docconv.OCRAuto, 400, 0.8, ""},
		{"a scan", docconv.OCRAuto, 0, 1, memagent.OCRNoTextLayer},
		{"a small scanned image alone", docconv.OCRAuto, 0, 0.05, memagent.OCRNoTextLayer},
		{"a scan with a Bates number", docconv.OCRAuto, 12, 1, memagent.OCRImagesCover},
		{"a scan at the threshold", docconv.OCRAuto, 12, docconv.OCRCoverImages, memagent.OCRImagesCover},
		{"a thin text layer over a small image", docconv.OCRAuto, 12, 0.5, ""},
		{"a blank page", docconv.OCRAuto, 0, 0, ""},
		{"the default mode is auto", "", 0, 1, memagent.OCRNoTextLayer},
		{"forced", docconv.OCRForce, 2400, 0, memagent.OCRForced},
		{"off", docconv.OCROff, 0, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := docconv.OCRDecision(tc.mode, tc.chars, tc.cover); got != tc.want {
				t.Errorf("OCRDecision(%q, %d, %.2f) = %q, want %q", tc.mode, tc.chars, tc.cover, got, tc.want)
			}
		})
	}
}

func TestCheckOCR(t *testing.T) {
	for _, tc := range []struct {
		o    docconv.OCROptions
		want string
	}{
		{docconv.OCROptions{}, ""},
		{docconv.OCROptions{Mode: "force", Languages: "eng+deu+chi_sim"}, ""},
		{docconv.OCROptions{Languages: "script/Latin"}, ""},
		{docconv.OCROptions{Mode: "always"}, `ocr "always" is not auto, force or off`},
		{docconv.OCROptions{Languages: "eng,deu"}, `"eng,deu" is not a Tesseract language code`},
		{docconv.OCROptions{Languages: "../../etc/passwd"}, "is not a Tesseract language code"},
		{docconv.OCROptions{Languages: "eng+deu+fra+ita+spa+por+nld+dan+swe"}, "names 9 languages, over the limit of 8"},
	} {
		err := docconv.CheckOCR(tc.o)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckOCR(%+v) = %v, want nil", tc.o, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckOCR(%+v) = %v, want %q", tc.o, err, tc.want)
		}
	}
}

func TestParseTSV(t *testing.T) {
	tsv := "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n" +
		"1\t1\t0\t0\t0\t0\t0\t0\t2550\t3300\t-1\t\n" +
		"4\t1\t1\t1\t1\t0\t300\t300\t600\t40\t-1\t\n" +
		"5\t1\t1\t1\t1\t1\t300\t300\t200\t40\t96.5\tHello\n" +
		"5\t1\t1\t1\t1\t2\t520\t305\t380\t30\t41.0\twörld,\n" +
		"5\t1\t1\t1\t1\t3\t920\t305\t10\t30\t95\t \n" +
		"4\t1\t1\t1\t2\t0\t300\t360\t300\t40\t-1\t\n" +
		"5\t1\t1\t1\t2\t1\t300\t360\t300\t40\t90\tagain\n"
	pt, err := docconv.ParseTSV(strings.NewReader(tsv))
	if err != nil {
		t.Fatal(err)
	}
	words, mean, low := pt.Stats()
	if words != 3 || low != 1 || fmt.Sprintf("%.4f", mean) != "0.7583" {
		t.Errorf("Stats() = %d words, mean %.4f, %d low; want 3, 0.7583, 1", words, mean, low)
	}
	// At 300 DPI on a letter page (792 points high): the first line's
	// glyphs share its middle, 320 px from the top.
	lines := docconv.LayoutPageSize(pt.Glyphs(300, 792), 612, 792)
	var got []string
	for _, l := range lines {
		got = append(got, l.Text)
	}
	if strings.Join(got, "|") != "Hello wörld,|again" {
		t.Errorf("lines %q, want [Hello wörld, again]", got)
	}
	if l := lines[0]; l.Left != 72 || fmt.Sprintf("%.1f", l.Top) != "720.0" {
		t.Errorf("first line at left %.1f, top %.1f; want 72, 720", l.Left, l.Top)
	}
	if _, err := docconv.ParseTSV(strings.NewReader("Error: no\n")); err == nil {
		t.Error("output that is not TSV parsed")
	}
}

// scanOf makes an image-only PDF of page (from 1) of pdf, as a scanner
// would: pdftoppm rasterises it at 300 DPI in gray; degraded, the image
// is rotated, resampled and noised (d); img2pdf wraps it at its
// resolution. It returns the PDF's path.
func scanOf(t *testing.T, pdf string, page int, d *docconvtest.Degradation) string {
	t.Helper()
	pdftoppm := testdeps.Command(t, "pdftoppm", "apt-get install poppler-utils")
	img2pdf := testdeps.Command(t, "img2pdf", "apt-get install img2pdf")
	dir := t.TempDir()
	base := filepath.Join(dir, "page")
	p := fmt.Sprint(page)
	if out, err := exec.Command(pdftoppm, "-r", "300", "-gray", "-png", "-singlefile", "-f", p, "-l", p, pdf, base).CombinedOutput(); err != nil {
		t.Fatalf("pdftoppm: %v\n%s", err, out)
	}
	png300 := base + ".png"
	dpi := 300
	if d != nil {
		f, err := os.Open(png300)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		out := docconvtest.Degrade(img, *d)
		var buf bytes.Buffer
		if err := png.Encode(&buf, out); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(png300, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		dpi = int(300*d.Scale + 0.5)
	}
	scan := filepath.Join(dir, "scan.pdf")
	size := fmt.Sprintf("%ddpix%ddpi", dpi, dpi)
	if out, err := exec.Command(img2pdf, "--imgsize", size, "-o", scan, png300).CombinedOutput(); err != nil {
		t.Fatalf("img2pdf: %v\n%s", err, out)
	}
	return scan
}

func TestWordAccuracy(t *testing.T) {
	ref := docconvtest.WordsOf("The quick brown fox jumps over the lazy dog.")
	for _, tc := range []struct {
		got  string
		want float64
	}{
		{"The quick brown fox jumps over the lazy dog.", 1},
		{"The quick hrown fox jumps over the lazy dog.", 8.0 / 9},
		{"The quick brown fox jumps over the lazy", 8.0 / 9},
		{"The quick brown fox jumps jumps over the lazy dog.", 8.0 / 9},
		{"", 0},
	} {
		if got := docconvtest.WordAccuracy(ref, docconvtest.WordsOf(tc.got)); fmt.Sprintf("%.4f", got) != fmt.Sprintf("%.4f", tc.want) {
			t.Errorf("docconvtest.WordAccuracy(%q) = %.4f, want %.4f", tc.got, got, tc.want)
		}
	}
	if got := docconvtest.WordsOf("copy-\nconstructors and “move”—ﬁne"); strings.Join(got, "|") != `copyconstructors|and|"move"|fine` {
		t.Errorf("wordsOf = %q", got)
	}
}

// TestOCRAccuracyOnDebianManuals reads pages of two Debian manuals
// nobody here wrote as scans: each page rasterised by pdftoppm at 300
// DPI into an image-only PDF (img2pdf), clean, and degraded (rotated
// 1.5°, resampled to 200 DPI, Gaussian noise and dust). The converter
// must find each page a scan, rasterise it at the image's own
// resolution, and read at least 98% of pdftotext's words of the original
// page right when clean, 93% when degraded. The pages are prose: code
// blocks and tables are read in other orders by the two tools (gnuplot's
// operator tables on pages 42 and 45 score 0.97 and 0.76 for that alone).
// Rasterised at 300 DPI instead of their own 200, the degraded pages
// score 0.72 (PDFium's upsampling), which is why the image's own
// resolution is kept. MEMAGENT_OCR_DUMP=dir writes both word lists.
func TestOCRAccuracyOnDebianManuals(t *testing.T) {
	c := ocrConverter(t)
	t.Cleanup(func() { c.Close() })
	pdftotext := testdeps.Command(t, "pdftotext", "apt-get install poppler-utils")
	gnuplot := testdeps.Manual(t, "gnuplot-doc", "usr/share/doc/gnuplot/gnuplot.pdf")
	cplusplus := testdeps.Manual(t, "c++-annotations-pdf", "usr/share/doc/c++-annotations/cplusplus.pdf")
	degraded := &docconvtest.Degradation{Degrees: 1.5, Scale: 2.0 / 3, Noise: 24, Speckle: 0.002, Seed: 40}
	for _, tc := range []struct {
		pdf  string
		page int
		d    *docconvtest.Degradation
		want float64
	}{
		{gnuplot, 40, nil, 0.98},
		{cplusplus, 33, nil, 0.98},
		{gnuplot, 41, degraded, 0.93},
		{cplusplus, 32, degraded, 0.93},
	} {
		kind := "clean"
		if tc.d != nil {
			kind = "degraded"
		}
		t.Run(fmt.Sprintf("%s p%d %s", filepath.Base(tc.pdf), tc.page, kind), func(t *testing.T) {
			t.Parallel()
			p := fmt.Sprint(tc.page)
			ref, err := exec.Command(pdftotext, "-enc", "UTF-8", "-f", p, "-l", p, tc.pdf, "-").Output()
			if err != nil {
				t.Fatal(err)
			}
			scan := scanOf(t, tc.pdf, tc.page, tc.d)
			text, res, err := convertFile(t, c, scan, docconv.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Map.OCR) != 1 {
				t.Fatalf("OCR records %+v, want one", res.Map.OCR)
			}
			o := res.Map.OCR[0]
			wantDPI := 300
			if tc.d != nil {
				wantDPI = 200
			}
			if o.Reason != memagent.OCRNoTextLayer || o.DPI != wantDPI || o.Engine != engine.Name() || o.Languages != "eng" || o.Words == 0 {
				t.Errorf("record %+v, want a page without a text layer read at %d DPI by %s in eng", o, wantDPI, engine.Name())
			}
			acc := docconvtest.WordAccuracy(docconvtest.WordsOf(string(ref)), docconvtest.WordsOf(text))
			if dir := os.Getenv("MEMAGENT_OCR_DUMP"); dir != "" {
				name := filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_"))
				os.WriteFile(name+".ref", []byte(strings.Join(docconvtest.WordsOf(string(ref)), "\n")+"\n"), 0o644)
				os.WriteFile(name+".ocr", []byte(strings.Join(docconvtest.WordsOf(text), "\n")+"\n"), 0o644)
			}
			t.Logf("word accuracy %.4f (%d words, confidence %.3f, %d low, %.1f s)", acc, len(docconvtest.WordsOf(string(ref))), o.Confidence, o.LowConfidenceWords, o.Seconds)
			if acc < tc.want {
				t.Errorf("word accuracy %.4f, want at least %.2f", acc, tc.want)
			}
		})
	}
}

// convertFile converts the file at path on c.
func convertFile(t *testing.T, c *docconv.Converter, path string, opts docconv.Options) (string, *docconv.Result, error) {
	t.Helper()
	var out bytes.Buffer
	res, err := c.ConvertWith(context.Background(), docconv.FormatPDF, path, &out, opts)
	return out.String(), res, err
}

// scannedBook is the typeset book with page factPage (printed 13, the
// fact's) replaced by its scan: pdftoppm's rendering at 300 DPI, as an
// image without a text layer, the book's page labels kept.
func scannedBook(t *testing.T) string {
	t.Helper()
	pdftoppm := testdeps.Command(t, "pdftoppm", "apt-get install poppler-utils")
	data, err := os.ReadFile(typesetBook(t))
	if err != nil {
		t.Fatal(err)
	}
	mixed, err := docconvtest.ScannedCopy(pdftoppm, data, factPage)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mixed.pdf")
	if err := os.WriteFile(path, mixed, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMixedPDF converts the typeset book with its fact's page scanned:
// in auto mode only that page is read by OCR (the others keep their text
// layer, unchanged), the fact is read from the scan, and a citation of it
// names the printed label and says "scan" with the page's confidence.
// With OCR off the page has no text; on a converter without an engine
// the document is refused naming the package to install.
func TestMixedPDF(t *testing.T) {
	c := ocrConverter(t)
	defer c.Close()
	path := scannedBook(t)
	text, res, err := convertFile(t, c, path, docconv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Map.OCR) != 1 || res.Map.OCR[0].Page != factPage || res.Map.OCR[0].Reason != memagent.OCRNoTextLayer {
		t.Fatalf("OCR records %+v, want page %d alone, without a text layer", res.Map.OCR, factPage)
	}
	o := res.Map.OCR[0]
	t.Logf("page %d: %d words, confidence %.3f, %d low, %d DPI, %.1f s", o.Page, o.Words, o.Confidence, o.LowConfidenceWords, o.DPI, o.Seconds)
	at := strings.Index(text, "7391-ALPHA")
	if at < 0 {
		t.Fatalf("the scanned page's fact was not read:\n%s", pageText(text, res, factPage))
	}
	ref := res.Map.Ref(int64(at), int64(at+10))
	want := fmt.Sprintf("p. 13 (PDF p. 17; scan, confidence %.2f)", o.Confidence)
	if got := ref.String(); got != want {
		t.Errorf("the fact is cited as %q, want %q", got, want)
	}
	// The other pages read as they do from the book itself.
	orig, origRes, err := convertFile(t, c, typesetBook(t), docconv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for p := 1; p <= bookPages; p++ {
		if p != factPage && pageText(text, res, p) != pageText(orig, origRes, p) {
			t.Errorf("page %d changed:\n got %q\nwant %q", p, pageText(text, res, p), pageText(orig, origRes, p))
		}
	}

	t.Run("off", func(t *testing.T) {
		text, res, err := convertFile(t, c, path, docconv.Options{OCR: docconv.OCROptions{Mode: docconv.OCROff}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Map.OCR) != 0 || strings.Contains(text, "7391-ALPHA") {
			t.Errorf("OCR off read the scan: %+v", res.Map.OCR)
		}
	})
	t.Run("no engine", func(t *testing.T) {
		_, _, err := convertFile(t, converter(t), path, docconv.Options{})
		var bad *docconv.Error
		if !errors.As(err, &bad) || !strings.Contains(bad.Msg, "needs OCR (page 17: it is a scan) and this worker has no OCR engine: install Debian's tesseract-ocr") {
			t.Errorf("err = %v, want a refusal naming the package", err)
		}
	})
	t.Run("a language the worker lacks", func(t *testing.T) {
		_, _, err := convertFile(t, c, path, docconv.Options{OCR: docconv.OCROptions{Languages: "eng+zul"}})
		var bad *docconv.Error
		if !errors.As(err, &bad) || !strings.Contains(bad.Msg, "asks for OCR in zul, which the worker's Tesseract does not have") || !strings.Contains(bad.Msg, "install tesseract-ocr-zul") {
			t.Errorf("err = %v, want a refusal naming tesseract-ocr-zul", err)
		}
	})
}

// TestOCRForced reads a born-digital PDF by OCR when asked to: every page,
// its text layer ignored, with the reason recorded; a cache keeps the
// pages, and a second conversion reads none again.
func TestOCRForced(t *testing.T) {
	c := ocrConverter(t)
	defer c.Close()
	data := docconvtest.PDF(docconvtest.PDFOptions{Pages: 2, FactPage: 2, Fact: "The access code is 7391-ALPHA.", Seed: 4})
	path := filepath.Join(t.TempDir(), "doc.pdf")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cache := &memCache{m: map[string]*docconv.OCRResult{}}
	opts := docconv.Options{OCR: docconv.OCROptions{Mode: docconv.OCRForce}, OCRCache: cache}
	var progress []string
	opts.OCRProgress = func(done, total int) { progress = append(progress, fmt.Sprintf("%d/%d", done, total)) }
	text, res, err := convertFile(t, c, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Map.OCR) != 2 || res.Map.OCR[0].Reason != memagent.OCRForced || res.Map.OCR[1].Page != 2 || res.Map.OCR[0].Reused {
		t.Fatalf("OCR records %+v, want both pages, forced", res.Map.OCR)
	}
	if !strings.Contains(text, "7391-ALPHA") {
		t.Errorf("the fact was not read:\n%s", text)
	}
	if strings.Join(progress, " ") != "0/2 1/2 2/2" || len(cache.m) != 2 {
		t.Errorf("progress %q, %d pages cached; want 0/2 1/2 2/2 and 2", progress, len(cache.m))
	}
	again, res2, err := convertFile(t, c, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if again != text || !res2.Map.OCR[0].Reused || !res2.Map.OCR[1].Reused {
		t.Errorf("the second conversion read the pages again: %+v", res2.Map.OCR)
	}
}

// memCache is an OCR cache in memory.
type memCache struct {
	mu sync.Mutex
	m  map[string]*docconv.OCRResult
}

func (c *memCache) Load(_ context.Context, key string, page int) (*docconv.OCRResult, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[fmt.Sprint(key, page)]
	if !ok {
		return nil, false
	}
	cp := *r
	return &cp, true
}

func (c *memCache) Store(_ context.Context, key string, page int, r *docconv.OCRResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cp := *r
	c.m[fmt.Sprint(key, page)] = &cp
}

// TestOCRLimits: a document with more pages to read by OCR than
// Limits.MaxOCRPages is refused before the engine reads any, naming the
// limit, its variable and what to do; a document whose OCR budget runs
// out converts with the pages not read marked in the text and in the
// page map, nothing of them cached, so a later conversion reads them.
func TestOCRLimits(t *testing.T) {
	data := docconvtest.PDF(docconvtest.PDFOptions{Pages: 3, FactPage: 2, Fact: "The access code is 7391-ALPHA.", Seed: 4})
	path := filepath.Join(t.TempDir(), "doc.pdf")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	forced := docconv.OCROptions{Mode: docconv.OCRForce}

	t.Run("max pages", func(t *testing.T) {
		c := ocrConverter(t)
		defer c.Close()
		c.Limits.MaxOCRPages = 2
		read := 0
		_, _, err := convertFile(t, c, path, docconv.Options{OCR: forced, OCRProgress: func(done, _ int) { read = done }})
		var bad *docconv.Error
		if !errors.As(err, &bad) || !strings.Contains(bad.Msg, "has more than 2 pages to read by OCR") ||
			!strings.Contains(bad.Msg, "over the converter's limit of 2 pages read by OCR per document") || !strings.Contains(bad.Msg, "raise MEMAGENT_OCR_MAX_PAGES") {
			t.Errorf("err = %v, want a refusal naming the limit and MEMAGENT_OCR_MAX_PAGES", err)
		}
		if read != 0 {
			t.Errorf("the engine read %d pages before the refusal", read)
		}
		c.Limits.MaxOCRPages = 3
		if _, _, err := convertFile(t, c, path, docconv.Options{OCR: forced}); err != nil {
			t.Errorf("3 pages within a limit of 3: %v", err)
		}
	})

	t.Run("budget", func(t *testing.T) {
		c := ocrConverter(t)
		defer c.Close()
		c.Limits.OCRBudget = time.Millisecond
		cache := &memCache{m: map[string]*docconv.OCRResult{}}
		text, res, err := convertFile(t, c, path, docconv.Options{OCR: forced, OCRCache: cache})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Map.OCR) != 3 {
			t.Fatalf("OCR records %+v, want the 3 pages", res.Map.OCR)
		}
		for _, o := range res.Map.OCR {
			if !o.NotRead || !strings.Contains(o.Error, "MEMAGENT_OCR_BUDGET") || !o.Check() {
				t.Errorf("page %d: %+v, want not read, saying MEMAGENT_OCR_BUDGET, flagged for a human", o.Page, o)
			}
			if want := fmt.Sprintf("[page %d (a scan) was not read: the document's OCR budget ran out]", o.Page); !strings.Contains(pageText(text, res, o.Page), want) {
				t.Errorf("page %d reads %q, want %q", o.Page, pageText(text, res, o.Page), want)
			}
		}
		if strings.Contains(text, "7391-ALPHA") || len(cache.m) != 0 {
			t.Errorf("pages past the budget were read or cached (%d cached)", len(cache.m))
		}
		// With the budget back, a later conversion reads every page.
		c.Limits.OCRBudget = 0
		text, res, err = convertFile(t, c, path, docconv.Options{OCR: forced, OCRCache: cache})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range res.Map.OCR {
			if o.NotRead || o.Error != "" {
				t.Errorf("page %d: %+v, want read", o.Page, o)
			}
		}
		if !strings.Contains(text, "7391-ALPHA") {
			t.Errorf("the fact was not read:\n%s", text)
		}
	})
}

// TestOCRWordBoxesOnDebianManual: a scan of a page of gnuplot's manual
// (pdftoppm at 300 DPI, img2pdf) is converted; the page's reading, as the
// cache keeps it, has its words' boxes on the page, and a sentence of the
// converted text found among them (OCRChars, FindText) stands where
// PDFium's character boxes put it on the page the scan was made of: each
// box within half a line of the text layer's box of the same line.
func TestOCRWordBoxesOnDebianManual(t *testing.T) {
	c := ocrConverter(t)
	t.Cleanup(func() { c.Close() })
	manual := testdeps.Manual(t, "gnuplot-doc", "usr/share/doc/gnuplot/gnuplot.pdf")
	const page = 30
	scan := scanOf(t, manual, page, nil)
	cache := &memCache{m: map[string]*docconv.OCRResult{}}
	text, _, err := convertFile(t, c, scan, docconv.Options{OCRCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	const sentence = "The gnuplot distribution contains a collection of examples in the demo directory."
	if !strings.Contains(text, sentence) {
		t.Fatalf("the converted scan does not hold %q:\n%s", sentence, text)
	}
	if len(cache.m) != 1 {
		t.Fatalf("%d pages kept, want 1", len(cache.m))
	}
	var words []docconv.WordBox
	for _, r := range cache.m {
		words = r.Words
	}
	if len(words) < 200 {
		t.Fatalf("%d words kept, want the page's (over 200)", len(words))
	}
	got, err := docconv.FindText(docconv.OCRChars(words), sentence)
	if err != nil {
		t.Fatalf("%q among the OCR words: %v", sentence, err)
	}
	data, err := os.ReadFile(manual)
	if err != nil {
		t.Fatal(err)
	}
	chars, err := c.CharBoxes(context.Background(), bytes.NewReader(data), int64(len(data)), page)
	if err != nil {
		t.Fatal(err)
	}
	want, err := docconv.FindText(chars, sentence)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("OCR boxes %v, text layer's %v: want as many lines", got, want)
	}
	for i := range want {
		line := want[i].Bottom - want[i].Top
		for _, d := range []float64{got[i].Left - want[i].Left, got[i].Right - want[i].Right, got[i].Top - want[i].Top, got[i].Bottom - want[i].Bottom} {
			if math.Abs(d) > line/2 {
				t.Errorf("line %d: OCR's box %+v, the text layer's %+v: more than half a line apart", i+1, got[i], want[i])
				break
			}
		}
	}
	kept, _ := json.Marshal(words)
	t.Logf("OCR boxes %v, text layer's %v; %d words kept in %d bytes of JSON", got, want, len(words), len(kept))
}
