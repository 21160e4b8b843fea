package docconv

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unicode"

	"github.com/klippa-app/go-pdfium"
	"github.com/klippa-app/go-pdfium/enums"
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
}

func (c *Converter) convertPDF(ctx context.Context, path string, w io.Writer, progress Progress, limits Limits) (_ *Result, err error) {
	pool, err := c.start()
	if err != nil {
		return nil, err
	}
	inst, err := pool.GetInstanceWithContext(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("pdfium instance: %w", err)
	}
	// A conversion that ends (canceled, timed out) while PDFium works
	// stops it at once: Kill interrupts the WebAssembly code and drops
	// the instance. One that failed inside PDFium (out of its memory, say)
	// drops it too, rather than hand a damaged instance to the next.
	stop := context.AfterFunc(ctx, func() { _ = inst.Kill() })
	defer func() {
		if !stop() || err != nil {
			_ = inst.Kill()
			return
		}
		_ = inst.Close()
	}()

	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	doc, err := inst.OpenDocument(&requests.OpenDocument{FileReader: f, FileReaderSize: st.Size()})
	switch {
	case errors.Is(err, pdfiumerrors.ErrPassword):
		return nil, badf("is an encrypted PDF that needs a password to open: save an unprotected copy (e.g. qpdf --decrypt --password=PASSWORD in.pdf out.pdf) and ask about that")
	case errors.Is(err, pdfiumerrors.ErrSecurity):
		return nil, badf("is encrypted with a security handler PDFium does not support: save an unprotected copy and ask about that")
	case errors.Is(err, pdfiumerrors.ErrFormat), errors.Is(err, pdfiumerrors.ErrFile), errors.Is(err, pdfiumerrors.ErrUnknown):
		return nil, badf("is not a readable PDF (corrupt or truncated): check the file opens in a PDF viewer, or export it to PDF again")
	case err != nil:
		return nil, fmt.Errorf("open pdf: %w", err)
	}
	defer inst.FPDF_CloseDocument(&requests.FPDF_CloseDocument{Document: doc.Document})
	count, err := inst.FPDF_GetPageCount(&requests.FPDF_GetPageCount{Document: doc.Document})
	if err != nil {
		return nil, badf("is not a readable PDF (its page tree is broken): export it to PDF again")
	}
	pages := count.PageCount
	maxPages := c.MaxPages
	if maxPages <= 0 {
		maxPages = DefaultMaxPages
	}
	if pages > maxPages {
		return nil, badf("has %d pages, over the limit of %d: split it", pages, maxPages)
	}

	// Pass 1: lay out every page and spool its lines, counting the lines
	// at the pages' top and bottom edges. Pass 2 drops those that repeat
	// (running headers and footers) and writes the text.
	spool, err := os.CreateTemp("", "memagent-pdf-*.jsonl")
	if err != nil {
		return nil, err
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	sw := bufio.NewWriterSize(spool, 64<<10)
	enc := json.NewEncoder(sw)
	var edges EdgeCounter
	var scanned []int
	var chars int64
	for i := 0; i < pages; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p, n, err := readPDFPage(ctx, inst, doc.Document, i, limits)
		if err != nil {
			return nil, err
		}
		if chars += int64(n); chars > limits.MaxTextBytes {
			return nil, overLimit(fmt.Sprintf("has more than %d characters of text", limits.MaxTextBytes), limits.MaxTextBytes, "characters", "MEMAGENT_MAX_CONVERTED_MB")
		}
		p.Label = pageLabel(inst, doc.Document, i)
		if p.Images {
			scanned = append(scanned, i+1)
		}
		edges.Add(p.Lines)
		if err := enc.Encode(p); err != nil {
			return nil, fmt.Errorf("spool page %d: %w", i+1, err)
		}
		progress(int64(i+1), int64(pages))
	}
	if len(scanned) > max(1, pages/10) || (len(scanned) > 0 && len(scanned) == pages) {
		return nil, badf("has no text layer on %s of its %d pages (only images: a scan): run OCR first (e.g. ocrmypdf) and ask about the PDF it makes", pageRanges(scanned), pages)
	}
	if err := sw.Flush(); err != nil {
		return nil, err
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	if spoolCopyTo != "" {
		if err := copySpool(spool, spoolCopyTo); err != nil {
			return nil, err
		}
	}
	return renderPages(bufio.NewReaderSize(spool, 64<<10), pages, &edges, w, limits.MaxTextBytes)
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
		for _, para := range Paragraphs(kept) {
			if err := tw.paragraph(para); err != nil {
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
func readPDFPage(ctx context.Context, inst pdfium.Pdfium, doc references.FPDF_DOCUMENT, i int, limits Limits) (pdfPage, int, error) {
	p, n, err := layOutPDFPage(inst, doc, i, limits)
	if err != nil && ctx.Err() != nil {
		// The instance was killed under the call: say why, not how.
		return p, n, ctx.Err()
	}
	return p, n, err
}

func layOutPDFPage(inst pdfium.Pdfium, doc references.FPDF_DOCUMENT, i int, limits Limits) (pdfPage, int, error) {
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
	glyphs := make([]Glyph, 0, n.Count)
	space := false // a space (the PDF's, or one PDFium made) since the last glyph
	for k := 0; k < n.Count; k++ {
		u, err := inst.FPDFText_GetUnicode(&requests.FPDFText_GetUnicode{TextPage: text.TextPage, Index: k})
		if err != nil {
			return p, 0, fmt.Errorf("page %d char %d: %w", i+1, k, err)
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
		box, err := inst.FPDFText_GetLooseCharBox(&requests.FPDFText_GetLooseCharBox{TextPage: text.TextPage, Index: k})
		if err != nil {
			continue // a generated character has no box
		}
		b := box.Rect
		gl := Glyph{R: r, Left: float64(b.Left), Bottom: float64(b.Bottom), Right: float64(b.Right), Top: float64(b.Top),
			Index: k + 1, SpaceBefore: space}
		space = false
		glyphs = append(glyphs, gl)
	}
	// Font size and baseline tell a footnote mark (a raised, smaller
	// digit) from the word it is glued to: they are read for digits and
	// the glyphs on either side of them only, as each costs PDFium a call.
	for j := range glyphs {
		if !unicode.IsDigit(glyphs[j].R) {
			continue
		}
		for _, k := range []int{j - 1, j, j + 1} {
			if k < 0 || k >= len(glyphs) || glyphs[k].Size > 0 {
				continue
			}
			g := &glyphs[k]
			fs, err := inst.FPDFText_GetFontSize(&requests.FPDFText_GetFontSize{TextPage: text.TextPage, Index: g.Index - 1})
			if err != nil {
				continue
			}
			o, err := inst.FPDFText_GetCharOrigin(&requests.FPDFText_GetCharOrigin{TextPage: text.TextPage, Index: g.Index - 1})
			if err != nil {
				continue
			}
			g.Size, g.Baseline = fs.FontSize, o.Y
		}
	}
	p.Lines = LayoutPageSize(glyphs, width.Width, height.Height)
	if len(p.Lines) == 0 {
		objs, err := inst.FPDFPage_CountObjects(&requests.FPDFPage_CountObjects{Page: ref})
		if err == nil {
			for k := 0; k < objs.Count && !p.Images; k++ {
				obj, err := inst.FPDFPage_GetObject(&requests.FPDFPage_GetObject{Page: ref, Index: k})
				if err != nil {
					continue
				}
				t, err := inst.FPDFPageObj_GetType(&requests.FPDFPageObj_GetType{PageObject: obj.PageObject})
				p.Images = err == nil && t.Type == enums.FPDF_PAGEOBJ_IMAGE
			}
		}
	}
	return p, n.Count, nil
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
