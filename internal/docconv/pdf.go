package docconv

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode"

	"github.com/klippa-app/go-pdfium"
	pdfiumerrors "github.com/klippa-app/go-pdfium/errors"
	"github.com/klippa-app/go-pdfium/references"
	"github.com/klippa-app/go-pdfium/requests"
	"github.com/klippa-app/go-pdfium/webassembly"
	"github.com/tetratelabs/wazero"
	wazeroapi "github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/memagent"
)

// DefaultInstances bounds the PDF conversions a Converter runs at once.
const DefaultInstances = 2

// DefaultMaxPages bounds a PDF's page count.
const DefaultMaxPages = 100_000

// Converter converts documents. Its zero value works; it starts PDFium's
// WebAssembly runtime on the first PDF, which takes a few seconds (less
// with CacheDir), and keeps it for the life of the process: share one
// Converter per worker and Close it at the end.
type Converter struct {
	// Instances bounds concurrent PDF conversions: each holds a PDFium
	// instance, tens of MiB of WebAssembly memory. Default DefaultInstances;
	// a conversion over the bound waits for one to finish.
	Instances int
	// CacheDir keeps wazero's compiled PDFium between processes, so that
	// a restarted worker starts it in a fraction of the time; "" compiles
	// it anew in each process.
	CacheDir string
	// MaxPages bounds a PDF's page count; default DefaultMaxPages.
	MaxPages int
	// Limits bound each conversion; zero fields mean the defaults.
	Limits Limits
	// OCR reads scanned pages; nil (no engine on the worker) fails a
	// conversion that has a page to read by OCR.
	OCR *Engine

	once sync.Once
	pool pdfium.Pool
	err  error
	mu   sync.Mutex
}

// start starts the runtime once.
func (c *Converter) start() (pdfium.Pool, error) {
	c.once.Do(func() {
		n := c.Instances
		if n <= 0 {
			n = DefaultInstances
		}
		// Each instance's memory is bounded (a page whose layout needs more
		// fails), and a canceled conversion stops the WebAssembly code it
		// is running (Kill cancels the instance's context).
		pages := uint32(min(c.Limits.withDefaults().PDFMemoryBytes>>16, 65536))
		rc := wazero.NewRuntimeConfig().WithCoreFeatures(wazeroapi.CoreFeaturesV2 | experimental.CoreFeaturesExceptionHandling).
			WithMemoryLimitPages(pages).WithCloseOnContextDone(true)
		if c.CacheDir != "" {
			if cache, err := wazero.NewCompilationCacheWithDir(c.CacheDir); err == nil {
				rc = rc.WithCompilationCache(cache)
			}
		}
		c.pool, c.err = webassembly.Init(webassembly.Config{
			// An instance is not reused: its memory, grown by the
			// largest page it laid out, goes back when its conversion
			// ends. A new one costs a few milliseconds (the module is
			// compiled once).
			MinIdle: 0, MaxIdle: n, MaxTotal: n, ReuseWorkers: false,
			RuntimeConfig: rc,
			// PDFium reads through the Go reader handed to it: no file
			// system of the host is mounted.
			FSConfig: wazero.NewFSConfig(),
			Stdout:   io.Discard, Stderr: io.Discard,
		})
		if c.err != nil {
			c.err = fmt.Errorf("start pdfium: %w", c.err)
		}
	})
	return c.pool, c.err
}

// Close stops the PDFium runtime, if it was started.
func (c *Converter) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	c.once.Do(func() { c.err = errors.New("converter closed") })
	if c.pool != nil {
		err = c.pool.Close()
		c.pool = nil
	}
	return err
}

// Warm starts the PDFium runtime now rather than on the first PDF.
func (c *Converter) Warm() error {
	_, err := c.start()
	return err
}

// pdfPage is one page as spooled between the two passes.
type pdfPage struct {
	Lines []Line `json:"l,omitempty"`
	// Images is set on a page without text that draws images: a scan.
	Images bool `json:"i,omitempty"`
	// Label is the page's label (/PageLabels), when the PDF has them.
	Label string `json:"p,omitempty"`
	// OCR is why OCR reads the page (memagent.OCRNoTextLayer, ...), ""
	// when its text layer is kept.
	OCR string `json:"ocr,omitempty"`

	// The page's size in points and its images, for the OCR decision.
	width, height float64
	images        pageImages
}

func (c *Converter) convertPDF(ctx context.Context, path string, w io.Writer, opts Options, limits Limits) (_ *Result, err error) {
	spool, err := os.CreateTemp("", "memagent-pdf-*.jsonl")
	if err != nil {
		return nil, err
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	pages, jobs, err := c.readPDF(ctx, path, spool, opts, limits)
	if err != nil {
		return nil, err
	}
	var ocr *ocrPhase
	if len(jobs) > 0 && opts.Survey {
		// A survey reads no page: unless the cache holds them all, the
		// scanned pages stay empty, and are counted.
		if cached := c.cachedOCR(ctx, jobs, opts); cached < len(jobs) {
			res, err := renderSpool(spool, pages, w, limits)
			if err != nil {
				return nil, err
			}
			res.OCRPending, res.OCRCached = len(jobs), cached
			return res, nil
		}
	}
	if len(jobs) > 0 {
		ocr = &ocrPhase{c: c, path: path, opts: opts, limits: limits, jobs: jobs}
		dir, err := os.MkdirTemp("", "memagent-ocr-*")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		ocr.dir = dir
		if err := ocr.run(ctx); err != nil {
			return nil, err
		}
	}
	return renderMerged(spool, pages, ocr, w, limits)
}

// cachedOCR counts the pages of jobs whose OCR the cache holds.
func (c *Converter) cachedOCR(ctx context.Context, jobs []ocrJob, opts Options) int {
	cached := 0
	if opts.OCRCache != nil && c.OCR != nil {
		key := OCRKey(c.OCR.Name(), opts.OCR.Normalized().Languages)
		for _, j := range jobs {
			if _, ok := opts.OCRCache.Load(ctx, key, j.Page); ok {
				cached++
			}
		}
	}
	return cached
}

// renderMerged renders the spooled pages, with ocr's pages (if any) in
// the place of theirs.
func renderMerged(spool *os.File, pages int, ocr *ocrPhase, w io.Writer, limits Limits) (_ *Result, err error) {
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	// With pages read by OCR, their lines go into the spool in their
	// place, and the running headers are counted over all pages in order.
	merged := spool
	var edges EdgeCounter
	if ocr != nil {
		if merged, err = os.CreateTemp("", "memagent-pdf-*.jsonl"); err != nil {
			return nil, err
		}
		defer os.Remove(merged.Name())
		defer merged.Close()
	}
	if err := countEdges(bufio.NewReaderSize(spool, 64<<10), pages, &edges, ocr, merged); err != nil {
		return nil, err
	}
	if _, err := merged.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	if spoolCopyTo != "" {
		if err := copySpool(merged, spoolCopyTo); err != nil {
			return nil, err
		}
	}
	res, err := renderPages(bufio.NewReaderSize(merged, 64<<10), pages, &edges, w, limits.MaxTextBytes)
	if err != nil {
		return nil, err
	}
	if ocr != nil {
		res.Map.OCR = ocr.records
	}
	return res, nil
}

// renderSpool renders the spooled pages as they are (a survey's).
func renderSpool(spool *os.File, pages int, w io.Writer, limits Limits) (*Result, error) {
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	var edges EdgeCounter
	if err := countEdges(bufio.NewReaderSize(spool, 64<<10), pages, &edges, nil, nil); err != nil {
		return nil, err
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return renderPages(bufio.NewReaderSize(spool, 64<<10), pages, &edges, w, limits.MaxTextBytes)
}

// countEdges reads the spooled pages in order and counts their edge
// lines. With ocr, it takes each OCR page's lines from the OCR and
// writes every page to merged.
func countEdges(spool io.Reader, pages int, edges *EdgeCounter, ocr *ocrPhase, merged *os.File) error {
	dec := json.NewDecoder(spool)
	var enc *json.Encoder
	var mw *bufio.Writer
	if ocr != nil {
		mw = bufio.NewWriterSize(merged, 64<<10)
		enc = json.NewEncoder(mw)
	}
	for i := 0; i < pages; i++ {
		var p pdfPage
		if err := dec.Decode(&p); err != nil {
			return fmt.Errorf("read spooled page %d: %w", i+1, err)
		}
		if p.OCR != "" && ocr != nil {
			lines, err := ocr.lines(i + 1)
			if err != nil {
				return err
			}
			p.Lines = lines
		}
		edges.Add(p.Lines)
		if enc != nil {
			if err := enc.Encode(p); err != nil {
				return fmt.Errorf("spool page %d: %w", i+1, err)
			}
		}
	}
	if mw != nil {
		return mw.Flush()
	}
	return nil
}

// readPDF is the first pass: it lays out every page, spools its lines
// and decides which pages OCR reads (returned as jobs, in page order).
func (c *Converter) readPDF(ctx context.Context, path string, spool io.Writer, opts Options, limits Limits) (pages int, jobs []ocrJob, err error) {
	// The converter reads the file's objects too, for the content
	// streams that repairTJShifts needs: nil (no repair) if it cannot.
	var src *pdfFile
	if f, err := os.Open(path); err == nil {
		defer f.Close()
		if fi, err := f.Stat(); err == nil {
			src, _ = openPDFFile(f, fi.Size())
		}
	}
	err = c.withDocument(ctx, path, func(inst pdfium.Pdfium, doc references.FPDF_DOCUMENT) error {
		pages, jobs, err = c.readPages(ctx, inst, doc, src, spool, opts, limits)
		return err
	})
	return pages, jobs, err
}

// readPages is readPDF's pass over the pages of doc, open in inst.
func (c *Converter) readPages(ctx context.Context, inst pdfium.Pdfium, doc references.FPDF_DOCUMENT, src *pdfFile, spool io.Writer, opts Options, limits Limits) (pages int, jobs []ocrJob, err error) {
	count, err := inst.FPDF_GetPageCount(&requests.FPDF_GetPageCount{Document: doc})
	if err != nil {
		return 0, nil, badf("is not a readable PDF (its page tree is broken): export it to PDF again")
	}
	pages = count.PageCount
	if src != nil && len(src.pageRefs()) != pages {
		src = nil // its page tree is not PDFium's: no page is repaired
	}
	maxPages := c.MaxPages
	if maxPages <= 0 {
		maxPages = DefaultMaxPages
	}
	if pages > maxPages {
		return 0, nil, badf("has %d pages, over the limit of %d: split it", pages, maxPages)
	}
	ocrOpts := opts.OCR.Normalized()
	sw := bufio.NewWriterSize(spool, 64<<10)
	enc := json.NewEncoder(sw)
	var scanned []int
	var chars int64
	for i := 0; i < pages; i++ {
		if err := ctx.Err(); err != nil {
			return 0, nil, err
		}
		p, n, err := readPDFPage(ctx, inst, doc, src, i, ocrOpts.Mode, limits)
		if err != nil {
			return 0, nil, err
		}
		p.Label = pageLabel(inst, doc, i)
		if p.OCR != "" {
			// A page image's size is checked before anything decodes it:
			// a bomb of billions of pixels is a few MB deflated.
			if p.images.MaxPixels > limits.MaxImagePixels {
				return 0, nil, overLimit(fmt.Sprintf("has a page (%d) to read by OCR with an image of %d pixels", i+1, p.images.MaxPixels), limits.MaxImagePixels, "pixels", "")
			}
			if err := c.canOCR(ocrOpts, i+1, p.OCR); err != nil {
				return 0, nil, err
			}
			if len(jobs) >= limits.MaxOCRPages {
				return 0, nil, badf("has more than %d pages to read by OCR (of its %d pages, page %d is one more), over the converter's limit of %d pages read by OCR per document: split the document, ask with ocr off (its scanned pages then have no text), or raise MEMAGENT_OCR_MAX_PAGES on the worker",
					limits.MaxOCRPages, pages, i+1, limits.MaxOCRPages)
			}
			dpi, ok := ocrDPI(p.images.DPI, p.width, p.height)
			if !ok {
				return 0, nil, badf("has a page (%d) of %.0f × %.0f points, too large to rasterise for OCR: split or shrink it", i+1, p.width, p.height)
			}
			jobs = append(jobs, ocrJob{Page: i + 1, Reason: p.OCR, DPI: dpi, Width: p.width, Height: p.height})
			// Its text layer is replaced by what OCR reads.
			p.Lines = nil
		} else if chars += int64(n); chars > limits.MaxTextBytes {
			return 0, nil, overLimit(fmt.Sprintf("has more than %d characters of text", limits.MaxTextBytes), limits.MaxTextBytes, "characters", "MEMAGENT_MAX_CONVERTED_MB")
		}
		if p.Images {
			scanned = append(scanned, i+1)
		}
		if err := enc.Encode(p); err != nil {
			return 0, nil, fmt.Errorf("spool page %d: %w", i+1, err)
		}
		opts.Progress(int64(i+1), int64(pages))
	}
	if len(scanned) > max(1, pages/10) || (len(scanned) > 0 && len(scanned) == pages) {
		return 0, nil, badf("has no text layer on %s of its %d pages (only images: a scan), and OCR is off: ask with ocr auto (--ocr auto) to read them", pageRanges(scanned), pages)
	}
	return pages, jobs, sw.Flush()
}

// withInstance hands fn a PDFium instance of its own and gives the
// instance back after. A call that ends (canceled, timed out) while PDFium
// works stops it at once: Kill interrupts the WebAssembly code and drops
// the instance. One that failed inside PDFium (out of its memory, say)
// drops it too, rather than hand a damaged instance to the next.
func (c *Converter) withInstance(ctx context.Context, fn func(pdfium.Pdfium) error) (err error) {
	pool, err := c.start()
	if err != nil {
		return err
	}
	inst, err := pool.GetInstanceWithContext(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("pdfium instance: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = inst.Kill() })
	defer func() {
		if !stop() || err != nil {
			_ = inst.Kill()
			return
		}
		_ = inst.Close()
	}()
	return fn(inst)
}

// withDocument opens the PDF at path for fn in a PDFium instance of its
// own (withInstance).
func (c *Converter) withDocument(ctx context.Context, path string, fn func(pdfium.Pdfium, references.FPDF_DOCUMENT) error) error {
	return c.withInstance(ctx, func(inst pdfium.Pdfium) error {
		doc, closeDoc, err := openPDF(inst, path)
		if err != nil {
			return err
		}
		defer closeDoc()
		err = fn(inst, doc)
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	})
}

// canOCR says why a page that OCR must read cannot be: no engine on the
// worker, or not the languages asked for.
func (c *Converter) canOCR(o OCROptions, page int, reason string) error {
	if c.OCR == nil {
		why := "it is a scan"
		if reason == memagent.OCRForced {
			why = "OCR is forced"
		}
		return badf("needs OCR (page %d: %s) and this worker has no OCR engine: install Debian's %s (and %s-<lang> for each language other than English) on the worker, or ask with ocr off (--ocr off) to read the text layer alone",
			page, why, EnginePackage, EnginePackage)
	}
	return c.OCR.Check(o.Languages)
}

// openPDF opens the PDF at path in inst; closeDoc closes it and the
// file PDFium reads it through.
func openPDF(inst pdfium.Pdfium, path string) (_ references.FPDF_DOCUMENT, closeDoc func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil, err
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return "", nil, err
	}
	doc, err := inst.OpenDocument(&requests.OpenDocument{FileReader: f, FileReaderSize: st.Size()})
	switch {
	case errors.Is(err, pdfiumerrors.ErrPassword):
		return "", nil, badf("is an encrypted PDF that needs a password to open: save an unprotected copy (e.g. qpdf --decrypt --password=PASSWORD in.pdf out.pdf) and ask about that")
	case errors.Is(err, pdfiumerrors.ErrSecurity):
		return "", nil, badf("is encrypted with a security handler PDFium does not support: save an unprotected copy and ask about that")
	case errors.Is(err, pdfiumerrors.ErrFormat), errors.Is(err, pdfiumerrors.ErrFile), errors.Is(err, pdfiumerrors.ErrUnknown):
		return "", nil, badf("is not a readable PDF (corrupt or truncated): check the file opens in a PDF viewer, or export it to PDF again")
	case err != nil:
		return "", nil, fmt.Errorf("open pdf: %w", err)
	}
	return doc.Document, func() {
		inst.FPDF_CloseDocument(&requests.FPDF_CloseDocument{Document: doc.Document})
		f.Close()
	}, nil
}

// spoolCopyTo, when a test sets it, is where convertPDF copies its spooled
// pages: the layout before any line is dropped, which RenderSpool renders
// again in a fraction of the time PDFium takes.
var spoolCopyTo string

func copySpool(spool *os.File, to string) error {
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, spool); err != nil {
		out.Close()
		return err
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// renderPages is the second pass over a PDF's spooled pages (JSON lines
// of pdfPage): it drops the running headers and footers edges found and
// writes each page's paragraphs, with the page map.
func renderPages(spool io.Reader, pages int, edges *EdgeCounter, w io.Writer, maxBytes int64) (*Result, error) {
	res := &Result{Map: memagent.PageMap{Format: FormatPDF, Unit: api.UnitPage, Pages: pages}}
	tw := newTextWriter(w, maxBytes)
	dec := json.NewDecoder(spool)
	for i := 0; i < pages; i++ {
		var p pdfPage
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("read spooled page %d: %w", i+1, err)
		}
		drop := edges.Drops(p.Lines, i+1, p.Label)
		kept := p.Lines[:0]
		for k, l := range p.Lines {
			if drop[k] {
				res.Dropped++
				continue
			}
			kept = append(kept, l)
		}
		tw.begin(i+1, "")
		tw.spans[len(tw.spans)-1].PageLabel = p.Label
		for _, b := range pageBlocks(kept) {
			write := tw.paragraph
			if b.pre {
				write = tw.preformatted
			}
			if err := write(b.text); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.finish(); err != nil {
		return nil, err
	}
	res.Bytes, res.Map.Spans = tw.n, tw.spans
	return res, nil
}

// readPDFPage lays out page i (from 0) of doc, and says how many
// characters it has.
func readPDFPage(ctx context.Context, inst pdfium.Pdfium, doc references.FPDF_DOCUMENT, src *pdfFile, i int, mode string, limits Limits) (pdfPage, int, error) {
	p, n, err := layOutPDFPage(inst, doc, src, i, mode, limits)
	if err != nil && ctx.Err() != nil {
		// The instance was killed under the call: say why, not how.
		return p, n, ctx.Err()
	}
	return p, n, err
}

func layOutPDFPage(inst pdfium.Pdfium, doc references.FPDF_DOCUMENT, src *pdfFile, i int, mode string, limits Limits) (pdfPage, int, error) {
	var p pdfPage
	page, err := inst.FPDF_LoadPage(&requests.FPDF_LoadPage{Document: doc, Index: i})
	if err != nil {
		return p, 0, badf("is not a readable PDF: page %d cannot be loaded (corrupt, or its content needs more than the converter's %d MiB; raise MEMAGENT_PDF_MEMORY_MB on the worker): export it to PDF again", i+1, limits.PDFMemoryBytes>>20)
	}
	defer inst.FPDF_ClosePage(&requests.FPDF_ClosePage{Page: page.Page})
	ref := requests.Page{ByReference: &page.Page}
	width, err := inst.FPDF_GetPageWidth(&requests.FPDF_GetPageWidth{Page: ref})
	if err != nil {
		return p, 0, fmt.Errorf("page %d width: %w", i+1, err)
	}
	height, err := inst.FPDF_GetPageHeight(&requests.FPDF_GetPageHeight{Page: ref})
	if err != nil {
		return p, 0, fmt.Errorf("page %d height: %w", i+1, err)
	}
	text, err := inst.FPDFText_LoadPage(&requests.FPDFText_LoadPage{Page: ref})
	if err != nil {
		// PDFium builds a page's text in its own memory: a page that
		// draws millions of characters fails here, at the memory limit.
		return p, 0, overLimit(fmt.Sprintf("has a page (%d) whose text PDFium cannot lay out in its memory", i+1), limits.PDFMemoryBytes>>20, "MiB", "MEMAGENT_PDF_MEMORY_MB")
	}
	defer inst.FPDFText_ClosePage(&requests.FPDFText_ClosePage{TextPage: text.TextPage})
	n, err := inst.FPDFText_CountChars(&requests.FPDFText_CountChars{TextPage: text.TextPage})
	if err != nil {
		return p, 0, fmt.Errorf("page %d chars: %w", i+1, err)
	}
	if n.Count > limits.MaxPageChars {
		return p, 0, overLimit(fmt.Sprintf("has a page (%d) of %d characters", i+1, n.Count), int64(limits.MaxPageChars), "characters a page", "")
	}
	glyphs, err := pageGlyphs(inst, text.TextPage, n.Count, i)
	if err != nil {
		return p, 0, err
	}
	repairTJShifts(inst, src, page.Page, text.TextPage, i, glyphs)
	// What lies outside the page's box is not shown: its glyphs go.
	if bb, err := inst.FPDF_GetPageBoundingBox(&requests.FPDF_GetPageBoundingBox{Page: ref}); err == nil {
		r := bb.Rect
		glyphs = Visible(glyphs, PageBox{Left: float64(r.Left), Bottom: float64(r.Bottom), Right: float64(r.Right), Top: float64(r.Top)})
	}
	readMarkFonts(inst, text.TextPage, glyphs)
	p.Lines = LayoutPageSize(glyphs, width.Width, height.Height)
	readLineFonts(inst, text.TextPage, p.Lines)
	p.width, p.height = width.Width, height.Height
	// The page's images are looked at when they may make it a scan: with
	// OCR forced, or a thin text layer (a page of more text is
	// born-digital whatever its images).
	if mode == OCRForce || len(glyphs) < OCRThinTextChars {
		p.images = imagesOf(inst, page.Page, width.Width, height.Height)
	}
	p.OCR = OCRDecision(mode, len(glyphs), p.images.Cover)
	p.Images = mode == OCROff && len(p.Lines) == 0 && p.images.Cover > 0
	return p, n.Count, nil
}

// pageGlyphs reads the count characters of text page tp (of page i,
// from 0): its glyphs, each with its box and whether a space came before
// it. Spaces, controls and characters without a box are left out.
func pageGlyphs(inst pdfium.Pdfium, tp references.FPDF_TEXTPAGE, count, i int) ([]Glyph, error) {
	glyphs := make([]Glyph, 0, count)
	space := false // a space (the PDF's, or one PDFium made) since the last glyph
	for k := 0; k < count; k++ {
		u, err := inst.FPDFText_GetUnicode(&requests.FPDFText_GetUnicode{TextPage: tp, Index: k})
		if err != nil {
			return nil, fmt.Errorf("page %d char %d: %w", i+1, k, err)
		}
		r := rune(u.Unicode)
		if r == 2 {
			// PDFium's mark for a hyphen that breaks a word at a
			// line's end: a hyphen, for Paragraphs to join the halves.
			r = '-'
		}
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if r == 0 || r == 0xFFFE || r == 0xFFFF || unicode.IsControl(r) {
			continue
		}
		box, err := inst.FPDFText_GetLooseCharBox(&requests.FPDFText_GetLooseCharBox{TextPage: tp, Index: k})
		if err != nil {
			continue // a generated character has no box
		}
		b := box.Rect
		gl := Glyph{R: r, Left: float64(b.Left), Bottom: float64(b.Bottom), Right: float64(b.Right), Top: float64(b.Top),
			Index: k + 1, SpaceBefore: space}
		space = false
		glyphs = append(glyphs, gl)
	}
	return glyphs, nil
}

// readMarkFonts reads the font size and baseline that tell a footnote
// mark (a raised, smaller digit) from the word it is glued to: for digits
// and the glyphs on either side of them only, as each costs PDFium a
// call.
func readMarkFonts(inst pdfium.Pdfium, tp references.FPDF_TEXTPAGE, glyphs []Glyph) {
	for j := range glyphs {
		if !unicode.IsDigit(glyphs[j].R) {
			continue
		}
		for _, k := range []int{j - 1, j, j + 1} {
			if k < 0 || k >= len(glyphs) || glyphs[k].Size > 0 {
				continue
			}
			g := &glyphs[k]
			fs, err := inst.FPDFText_GetFontSize(&requests.FPDFText_GetFontSize{TextPage: tp, Index: g.Index - 1})
			if err != nil {
				continue
			}
			o, err := inst.FPDFText_GetCharOrigin(&requests.FPDFText_GetCharOrigin{TextPage: tp, Index: g.Index - 1})
			if err != nil {
				continue
			}
			g.Size, g.Baseline = fs.FontSize, o.Y
		}
	}
}

// readLineFonts reads the font of each line's sampled glyphs (its
// first, middle and last): its size, and whether it is bold or
// monospaced (see Line). The first glyph's font, and the others' only as
// far as they can change the line's (a line of prose costs one font and
// one size), rather than every glyph's, keep the cost to a few PDFium
// calls a line.
func readLineFonts(inst pdfium.Pdfium, tp references.FPDF_TEXTPAGE, lines []Line) {
	type font struct {
		size       float64
		bold, mono bool
	}
	readSize := func(index int) (float64, bool) {
		fs, err := inst.FPDFText_GetFontSize(&requests.FPDFText_GetFontSize{TextPage: tp, Index: index - 1})
		if err != nil {
			return 0, false
		}
		return fs.FontSize, true
	}
	read := func(index int) (font, bool) {
		fi, err := inst.FPDFText_GetFontInfo(&requests.FPDFText_GetFontInfo{TextPage: tp, Index: index - 1})
		if err != nil {
			return font{}, false
		}
		fs, err := inst.FPDFText_GetFontSize(&requests.FPDFText_GetFontSize{TextPage: tp, Index: index - 1})
		if err != nil {
			return font{}, false
		}
		return font{size: fs.FontSize, bold: boldFont(fi.FontName, fi.Flags), mono: monoFont(fi.FontName, fi.Flags)}, true
	}
	for i := range lines {
		l := &lines[i]
		first, mid, last := l.samples[0], l.samples[1], l.samples[2]
		if first <= 0 || last <= 0 {
			continue
		}
		a, ok := read(first)
		if !ok {
			continue
		}
		size, bold, mono := a.size, a.bold, a.mono
		switch {
		case last == first:
		case !bold && !mono:
			// The line is neither bold nor monospaced whatever its
			// other glyphs: only their size is read, the middle's
			// where the ends disagree.
			z, ok := readSize(last)
			if !ok {
				continue
			}
			if !sameSize(size, z) && mid > 0 && mid != first && mid != last {
				m, ok := readSize(mid)
				if !ok {
					continue
				}
				sizes := []float64{size, m, z}
				sort.Float64s(sizes)
				size = sizes[1]
			}
		default:
			z, ok := read(last)
			if !ok {
				continue
			}
			bold, mono = bold && z.bold, mono && z.mono
			// The middle glyph decides only where the ends agree on
			// a weight, a pitch or a size.
			if mid > 0 && mid != first && mid != last && (bold || mono || !sameSize(a.size, z.size)) {
				m, ok := read(mid)
				if !ok {
					continue
				}
				sizes := []float64{a.size, m.size, z.size}
				sort.Float64s(sizes)
				size, bold, mono = sizes[1], bold && m.bold, mono && m.mono
			}
		}
		l.Size = math.Round(size*100) / 100
		l.Bold, l.Mono = bold, mono && l.even
		if l.Mono {
			l.Pitch = l.width
		}
	}
}

// boldFont and monoFont tell a bold and a monospaced font by the font
// descriptor's flags (ForceBold, FixedPitch) or by its name, as TeX's
// fonts (CMBX12, CMTT10) and most others (Times-Bold, NimbusMonL-Regu,
// LiberationMono) spell it.
func boldFont(name string, flags int) bool {
	n := fontName(name)
	return flags&0x40000 != 0 || boldName.MatchString(n)
}

func monoFont(name string, flags int) bool {
	n := fontName(name)
	return flags&1 != 0 || monoName.MatchString(n)
}

var (
	boldName = regexp.MustCompile(`bold|black|heavy|semibold|demi|^cmb|^cmssb|^sfbx|^sfsx|^lmroman.*-?bold|-bd$|\bbd\b`)
	monoName = regexp.MustCompile(`mono|courier|^cmtt|^cmsltt|^cmitt|^sftt|^sfst|^sfit|typewriter|consol|menlo|inconsolata|^txtt|^nimbusmon|fixed`)
)

// fontName is a font's name without its subset prefix ("ABCDEF+"),
// lowercase.
func fontName(name string) string {
	if i := strings.IndexByte(name, '+'); i == 6 {
		name = name[i+1:]
	}
	return strings.ToLower(name)
}

// pageLabel returns the label of page i (from 0), as /PageLabels gives
// it ("xii", "13", "A-3"), or "" when the PDF has none.
func pageLabel(inst pdfium.Pdfium, doc references.FPDF_DOCUMENT, i int) string {
	l, err := inst.FPDF_GetPageLabel(&requests.FPDF_GetPageLabel{Document: doc, Page: i})
	if err != nil {
		return ""
	}
	return clipLabel(strings.TrimSpace(l.Label))
}

// pageRanges renders sorted page numbers as "page 3", "pages 3–40" or
// "pages 2, 5–9".
func pageRanges(pages []int) string {
	var parts []string
	for i := 0; i < len(pages); {
		j := i
		for j+1 < len(pages) && pages[j+1] == pages[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d–%d", pages[i], pages[j]))
		} else {
			parts = append(parts, fmt.Sprint(pages[i]))
		}
		i = j + 1
	}
	if len(pages) == 1 {
		return "page " + parts[0]
	}
	return "pages " + strings.Join(parts, ", ")
}

// DefaultCacheDir is where a worker keeps wazero's compiled PDFium: the
// user's cache directory, or "" when there is none.
func DefaultCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "memagent", "wazero")
}
