package docconv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	"github.com/memagent/memagent/internal/memagent"
)

// ocrRules names how a page's OCR becomes lines (OCRKey): changed rules
// read the pages again instead of reusing what the old ones made.
const ocrRules = "ocr1"

// ocrPageBudget is the time each page read by OCR adds to a conversion's
// Limits.Timeout, divided by the engine's slots: about ten times what
// Tesseract takes on a dense page at 300 DPI on one core.
const ocrPageBudget = 30 * time.Second

// OCRCache keeps what OCR read of a document's pages, under a key that
// names the engine, its languages and this package's rules (the caller
// keys the document version). Load and Store may fail silently: a miss
// costs a reading.
type OCRCache interface {
	Load(ctx context.Context, key string, page int) (*OCRResult, bool)
	Store(ctx context.Context, key string, page int, r *OCRResult)
}

// OCRResult is one page as OCR read it: its record, its lines and its
// words' boxes. Words is absent from pages read before it was kept (the
// desk then cannot highlight on the page).
type OCRResult struct {
	Record memagent.OCRPage `json:"record"`
	Lines  []Line           `json:"lines,omitempty"`
	Words  []WordBox        `json:"words,omitempty"`
}

// OCRKey is the cache key of pages read by engine in languages.
func OCRKey(engine, languages string) string {
	return ocrRules + "/" + engine + "/" + languages
}

// ocrJob is a page to read by OCR.
type ocrJob struct {
	Page          int
	Reason        string
	DPI           int
	Width, Height float64
}

// ocrPhase reads a PDF's scanned pages: a renderer rasterises them in
// page order into grayscale files, one at a time, and queues them for the
// engine's slots, which read them in parallel. The renderer holds a
// PDFium instance for at most ocrHoldInstance at a time, and gives it
// back whenever the queue is full (the engine is the slow part), so that
// other conversions get it while the engine reads. Blank pages and pages
// the cache holds skip the engine. Each page's result goes to a file of
// its own in dir and to the cache.
type ocrPhase struct {
	c      *Converter
	path   string
	opts   Options
	limits Limits
	jobs   []ocrJob
	dir    string

	mu      sync.Mutex
	records []memagent.OCRPage
	done    int
}

// ocrHoldInstance bounds how long the renderer keeps a PDFium instance.
const ocrHoldInstance = 2 * time.Second

// rendered is a page rasterised for the engine.
type rendered struct {
	job  ocrJob
	file string
}

// errOCRBudget is the cause of the OCR phase's context past
// Limits.OCRBudget.
var errOCRBudget = errors.New("the document's OCR budget ran out")

// run reads every job's page, or fails on the first page that cannot be
// rendered (a conversion error) or with the context. When the document's
// OCR budget (Limits.OCRBudget) runs out first, the pages not read by
// then are recorded as not read (notRead) and the conversion goes on: the
// budget bounds how long one document holds the engine's slots.
func (o *ocrPhase) run(parent context.Context) error {
	eng := o.c.OCR
	langs := o.opts.OCR.Normalized().Languages
	key := OCRKey(eng.Name(), langs)
	budget := budgetOf(parent)
	slots := eng.Slots()
	for range o.jobs {
		budget.extend(ocrPageBudget / time.Duration(slots))
	}
	o.opts.OCRProgress(0, len(o.jobs))
	octx, stop := context.WithTimeoutCause(parent, o.limits.OCRBudget, errOCRBudget)
	defer stop()
	ctx, cancel := context.WithCancel(octx)
	defer cancel()
	// outOfBudget reports whether ctx ended because the budget ran out,
	// and nothing else did.
	outOfBudget := func() bool { return parent.Err() == nil && context.Cause(octx) == errOCRBudget }

	queue := make(chan rendered, slots)
	var renderErr error
	go func() {
		defer close(queue)
		renderErr = o.render(ctx, key, queue)
		if renderErr != nil {
			cancel()
		}
	}()
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var firstErr error
	for range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range queue {
				r, err := o.read(ctx, eng, p.job, p.file, langs)
				os.Remove(p.file)
				if err != nil && outOfBudget() {
					continue // recorded as not read below
				}
				if err != nil {
					errMu.Lock()
					if firstErr == nil {
						firstErr = err
						cancel()
					}
					errMu.Unlock()
					continue
				}
				o.finish(ctx, key, p.job.Page, r, r.Record.Error == "")
			}
		}()
	}
	wg.Wait()
	// Past the budget, the renderer's error is the budget's (PDFium
	// interrupted), unless it is the document's own.
	var bad *Error
	if outOfBudget() && !errors.As(renderErr, &bad) && firstErr == nil {
		o.notRead(parent, key)
		renderErr = nil
	}
	switch {
	case renderErr != nil:
		return renderErr
	case firstErr != nil:
		return firstErr
	case ctx.Err() != nil && !outOfBudget():
		return ctx.Err()
	}
	sortRecords(o.records)
	return nil
}

// notRead records every job that has no record yet as not read, the OCR
// budget having run out: no text but a line saying so, in the page's
// place, and a record that says why (flagged for a human, as a page the
// engine failed on is). Nothing is cached: a later conversion reads them.
func (o *ocrPhase) notRead(ctx context.Context, key string) {
	o.mu.Lock()
	have := make(map[int]bool, len(o.records))
	for _, r := range o.records {
		have[r.Page] = true
	}
	o.mu.Unlock()
	eng := o.c.OCR
	for _, j := range o.jobs {
		if have[j.Page] {
			continue
		}
		msg := fmt.Sprintf("not read: the document's OCR budget (%s, MEMAGENT_OCR_BUDGET) ran out before this page", o.limits.OCRBudget)
		line := Line{Text: fmt.Sprintf("[page %d (a scan) was not read: the document's OCR budget ran out]", j.Page),
			Top: j.Height / 2, Bottom: j.Height/2 - 12, Left: 0, Right: j.Width}
		o.finish(ctx, key, j.Page, &OCRResult{
			Record: memagent.OCRPage{Page: j.Page, Reason: j.Reason, Engine: eng.Name(), Languages: o.opts.OCR.Normalized().Languages,
				DPI: j.DPI, Error: msg, NotRead: true},
			Lines: []Line{line},
		}, false)
	}
}

// render rasterises the jobs' pages in order onto queue, finishing at
// once the pages the cache holds and the blank ones.
func (o *ocrPhase) render(ctx context.Context, key string, queue chan<- rendered) error {
	next := 0
	for next < len(o.jobs) {
		var waiting *rendered
		err := o.c.renderDocument(ctx, o.path, func(r *pageRenderer) error {
			held := time.Now()
			for next < len(o.jobs) && time.Since(held) < ocrHoldInstance {
				j := o.jobs[next]
				next++
				if res, ok := o.cached(ctx, key, j); ok {
					o.finish(ctx, key, j.Page, res, false)
					continue
				}
				file := filepath.Join(o.dir, fmt.Sprintf("page-%d.pgm", j.Page))
				ink, err := r.render(j, file)
				if err != nil {
					return err
				}
				if !ink {
					os.Remove(file)
					o.finish(ctx, key, j.Page, o.blank(j), false)
					continue
				}
				select {
				case queue <- rendered{job: j, file: file}:
				default:
					// The engine is busy: the instance goes back while
					// the page waits for a slot.
					waiting = &rendered{job: j, file: file}
					return nil
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		// The instance's memory (tens of MiB, grown by the pages it
		// rendered) is garbage now: collect it before the next, rather
		// than let the heap grow by an instance a time.
		debug.FreeOSMemory()
		if waiting != nil {
			select {
			case queue <- *waiting:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// blank is the record of a page without ink: no engine ran on it.
func (o *ocrPhase) blank(j ocrJob) *OCRResult {
	return &OCRResult{Record: memagent.OCRPage{Page: j.Page, Reason: j.Reason, Engine: o.c.OCR.Name(),
		Languages: o.opts.OCR.Normalized().Languages, DPI: j.DPI, Blank: true}}
}

// read has the engine read one rendered page.
func (o *ocrPhase) read(ctx context.Context, eng *Engine, j ocrJob, file, langs string) (*OCRResult, error) {
	r := &OCRResult{Record: memagent.OCRPage{Page: j.Page, Reason: j.Reason, Engine: eng.Name(), Languages: langs, DPI: j.DPI}}
	t, err := eng.Recognize(ctx, file, j.DPI, langs)
	var pe *PageError
	switch {
	case errors.As(err, &pe):
		r.Record.Error = pe.Msg
		return r, nil
	case err != nil:
		return nil, err
	}
	r.Record.Words, r.Record.Confidence, r.Record.LowConfidenceWords = t.Stats()
	r.Record.Seconds = t.Seconds
	r.Lines = LayoutPageSize(t.Glyphs(j.DPI, j.Height), j.Width, j.Height)
	w, h := rasterSize(j.Width, j.Height, j.DPI)
	r.Words = t.WordBoxes(w, h)
	return r, nil
}

// cached is the cache's reading of a job's page, when it read it at the
// same resolution.
func (o *ocrPhase) cached(ctx context.Context, key string, j ocrJob) (*OCRResult, bool) {
	if o.opts.OCRCache == nil {
		return nil, false
	}
	r, ok := o.opts.OCRCache.Load(ctx, key, j.Page)
	if !ok || r.Record.Page != j.Page || r.Record.DPI != j.DPI || r.Record.Error != "" {
		return nil, false
	}
	r.Record.Reason, r.Record.Reused = j.Reason, true
	return r, true
}

// finish keeps a page's result: its lines in a file of dir for the
// merge, its record, and (when store) the cache's copy.
func (o *ocrPhase) finish(ctx context.Context, key string, page int, r *OCRResult, store bool) {
	data, err := json.Marshal(r.Lines)
	if err == nil {
		err = os.WriteFile(filepath.Join(o.dir, fmt.Sprintf("page-%d.json", page)), data, 0o600)
	}
	if store && o.opts.OCRCache != nil {
		o.opts.OCRCache.Store(ctx, key, page, r)
	}
	r.Lines, r.Words = nil, nil
	o.mu.Lock()
	defer o.mu.Unlock()
	o.records = append(o.records, r.Record)
	o.done++
	o.opts.OCRProgress(o.done, len(o.jobs))
	_ = err // a page whose lines were not kept reads as empty in lines
}

// lines are the lines OCR read on page.
func (o *ocrPhase) lines(page int) ([]Line, error) {
	data, err := os.ReadFile(filepath.Join(o.dir, fmt.Sprintf("page-%d.json", page)))
	if err != nil {
		return nil, fmt.Errorf("read OCR of page %d: %w", page, err)
	}
	var lines []Line
	if err := json.Unmarshal(data, &lines); err != nil {
		return nil, fmt.Errorf("read OCR of page %d: %w", page, err)
	}
	return lines, nil
}

func sortRecords(r []memagent.OCRPage) {
	for i := 1; i < len(r); i++ {
		for k := i; k > 0 && r[k].Page < r[k-1].Page; k-- {
			r[k], r[k-1] = r[k-1], r[k]
		}
	}
}

// budget is a conversion's deadline, which OCR pages extend.
type budget struct {
	mu    sync.Mutex
	left  time.Time
	timer *time.Timer
}

type budgetKey struct{}

// withBudget is context.WithTimeoutCause whose deadline extend can push
// back (budgetOf).
func withBudget(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	b := &budget{left: time.Now().Add(d)}
	b.timer = time.AfterFunc(d, func() { cancel(cause) })
	ctx = context.WithValue(ctx, budgetKey{}, b)
	return ctx, func() {
		b.timer.Stop()
		cancel(context.Canceled)
	}
}

// budgetOf is the context's budget; one that has none extends nothing.
func budgetOf(ctx context.Context) *budget {
	if b, ok := ctx.Value(budgetKey{}).(*budget); ok {
		return b
	}
	return &budget{}
}

// extend pushes the deadline back by d.
func (b *budget) extend(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.timer == nil {
		return
	}
	b.left = b.left.Add(d)
	b.timer.Reset(time.Until(b.left))
}
