package desk

import (
	"bytes"
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memagent/memagent/internal/docconv"
)

// Defaults of a desk's page rendering.
const (
	// DefaultRenderTimeout bounds PDFium's work on one page (a page image
	// or a page's character boxes): a hostile page of a few KB can keep
	// PDFium compositing for minutes.
	DefaultRenderTimeout = 10 * time.Second
	// DefaultRenderInstances is the PDFium instances a desk renders in at
	// once, so that one slow page does not hold up every reviewer.
	DefaultRenderInstances = 2
	// DefaultPageCacheBytes bounds the rendered pages (and character
	// boxes) a desk keeps.
	DefaultPageCacheBytes = 64 << 20
	// slowPageTTL is how long a page that ran out of time is answered
	// from the cache, without PDFium, before it may be tried again.
	slowPageTTL = 10 * time.Minute
	// stuckGrace is how long after its deadline a render may take to
	// notice it was killed before the whole PDFium runtime is replaced.
	stuckGrace = 2 * time.Second
)

// Errors of the renderer; the desk answers them 504 and 503.
var (
	errRenderTimeout = errors.New("took too long to render")
	errRenderBusy    = errors.New("the desk's page renderers are all busy")
	// errSlowAgain is a page that ran out of time within slowPageTTL,
	// answered from the cache.
	errSlowAgain = fmt.Errorf("%w within the last %v", errRenderTimeout, slowPageTTL)
)

// renderer runs the desk's PDFium work: each job under a deadline, at
// most `instances` at once, in a Converter it replaces when a killed job
// does not stop. A job past its deadline is answered at once; its
// instance is killed (its context is canceled, and the Converter's
// runtime closes a module whose context is done).
type renderer struct {
	timeout time.Duration
	// grace is how long a killed job may take to stop (stuckGrace).
	grace  time.Duration
	slots  chan struct{}
	logger *slog.Logger
	cache  *lru

	// stop cancels every job, at Close.
	base context.Context
	stop context.CancelFunc

	mu        sync.Mutex
	conv      *docconv.Converter
	instances int
	closed    bool

	// flights are the pages and character boxes being made, by cache
	// key: a second request for one joins the first (a page rendered
	// ahead and then asked for is rendered once).
	fmu     sync.Mutex
	flights map[string]*flight
	// ahead is the one slot rendering ahead takes at most, so that pages
	// asked for keep the others.
	ahead chan struct{}

	// jobs counts the jobs run (not answered from the cache), replaced
	// the Converters replaced.
	jobs, replaced atomic.Int64
}

// flight is a page (or its character boxes) being made.
type flight struct {
	done chan struct{}
	v    any
	err  error
}

func newRenderer(timeout time.Duration, instances int, cacheBytes int64, logger *slog.Logger) *renderer {
	base, stop := context.WithCancel(context.Background())
	return &renderer{
		timeout: timeout, grace: stuckGrace, slots: make(chan struct{}, instances), logger: logger,
		cache: newLRU(cacheBytes), conv: newConverter(instances), instances: instances,
		base: base, stop: stop, flights: map[string]*flight{}, ahead: make(chan struct{}, 1),
	}
}

// warm starts PDFium's runtime now, not on the first page asked for: it
// compiles the module (seconds without wazero's cache) and a page asked
// for meanwhile waits for that one start, not for another.
func (r *renderer) warm() error {
	conv, err := r.converter()
	if err != nil {
		return err
	}
	return conv.Warm()
}

// newConverter is a Converter of n instances that keeps wazero's
// compiled PDFium where the worker does, so that a replacement (and the
// desk's first page) starts in a fraction of the time.
func newConverter(n int) *docconv.Converter {
	return &docconv.Converter{Instances: n, CacheDir: docconv.DefaultCacheDir()}
}

// converter is the current Converter.
func (r *renderer) converter() (*docconv.Converter, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("the desk is closing")
	}
	return r.conv, nil
}

// replace closes old, if it is still the current Converter, and makes a
// fresh one: a job that outlived its kill holds an instance of it.
func (r *renderer) replace(old *docconv.Converter) {
	r.mu.Lock()
	if r.closed || r.conv != old {
		r.mu.Unlock()
		return
	}
	r.conv = newConverter(r.instances)
	conv := r.conv
	r.mu.Unlock()
	go func() { _ = conv.Warm() }()
	r.replaced.Add(1)
	r.logger.Warn("a page render did not stop at its deadline: PDFium replaced")
	go old.Close()
}

// Close kills the jobs running, waits (at most r.grace) for them to end,
// and stops PDFium: go-pdfium's pool must not close an instance that a
// job is killing.
func (r *renderer) Close() error {
	r.mu.Lock()
	r.closed = true
	conv := r.conv
	r.mu.Unlock()
	r.stop()
	wait := time.NewTimer(r.grace)
	defer wait.Stop()
	for range cap(r.slots) {
		select {
		case r.slots <- struct{}{}:
		case <-wait.C:
			return conv.Close()
		}
	}
	return conv.Close()
}

// run runs job under r's deadline in one of its slots, and returns what
// it returns. It returns errRenderBusy when no slot frees within the
// deadline and errRenderTimeout when job is still running at it; it does
// not wait for such a job, whose slot stays taken until it ends (or,
// r.grace later, its Converter is replaced).
func run[T any](ctx context.Context, r *renderer, job func(context.Context, *docconv.Converter) (T, error)) (T, error) {
	var zero T
	wait := time.NewTimer(r.timeout)
	defer wait.Stop()
	select {
	case r.slots <- struct{}{}:
	case <-wait.C:
		return zero, errRenderBusy
	case <-ctx.Done():
		return zero, ctx.Err()
	}
	conv, err := r.converter()
	if err != nil {
		<-r.slots
		return zero, err
	}
	r.jobs.Add(1)
	jctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer context.AfterFunc(r.base, cancel)()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := job(jctx, conv)
		done <- result{v, err}
	}()
	select {
	case res := <-done:
		cancel()
		<-r.slots
		if res.err != nil && errors.Is(jctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return zero, errRenderTimeout
		}
		return res.v, res.err
	case <-jctx.Done():
	}
	cancel()
	go func() {
		defer func() { <-r.slots }()
		grace := time.NewTimer(r.grace)
		defer grace.Stop()
		select {
		case <-done:
		case <-grace.C:
			r.replace(conv)
		}
	}()
	switch {
	case ctx.Err() != nil:
		return zero, ctx.Err()
	case r.base.Err() != nil:
		return zero, errors.New("the desk is closing")
	}
	return zero, errRenderTimeout
}

// page is the PNG of page (from 1) of the PDF data at dpi, from the
// cache or rendered; key names the document's version (URI@ETag).
func (r *renderer) page(ctx context.Context, key string, data []byte, page, dpi int) ([]byte, error) {
	ck := fmt.Sprintf("png %s#%d@%d", key, page, dpi)
	return shared(ctx, r, ck, func(ctx context.Context) ([]byte, int64, error) {
		png, err := run(ctx, r, func(ctx context.Context, c *docconv.Converter) ([]byte, error) {
			img, err := c.RenderPage(ctx, bytes.NewReader(data), int64(len(data)), page, dpi)
			if err != nil {
				return nil, err
			}
			return img.PNG, nil
		})
		return png, int64(len(png)), err
	})
}

// charBoxes is page's characters and their boxes, from the cache or
// PDFium.
func (r *renderer) charBoxes(ctx context.Context, key string, data []byte, page int) ([]docconv.CharBox, error) {
	ck := fmt.Sprintf("chars %s#%d", key, page)
	return shared(ctx, r, ck, func(ctx context.Context) ([]docconv.CharBox, int64, error) {
		chars, err := run(ctx, r, func(ctx context.Context, c *docconv.Converter) ([]docconv.CharBox, error) {
			return c.CharBoxes(ctx, bytes.NewReader(data), int64(len(data)), page)
		})
		return chars, int64(len(chars)) * 40, err
	})
}

// shared answers the cache's entry ck, or joins the job making it, or
// makes it with make (of a value and its size) and remembers it. A
// joiner whose leader was canceled (its reviewer left) makes it itself.
func shared[T any](ctx context.Context, r *renderer, ck string, job func(context.Context) (T, int64, error)) (T, error) {
	var zero T
	for {
		if v, ok := r.cache.get(ck); ok {
			return cached[T](v)
		}
		r.fmu.Lock()
		f, ok := r.flights[ck]
		if !ok {
			f = &flight{done: make(chan struct{})}
			r.flights[ck] = f
			r.fmu.Unlock()
			v, size, err := job(ctx)
			r.remember(ck, v, size, err)
			f.v, f.err = v, err
			r.fmu.Lock()
			delete(r.flights, ck)
			r.fmu.Unlock()
			close(f.done)
			return v, err
		}
		r.fmu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return zero, ctx.Err()
		}
		if f.err == nil {
			return f.v.(T), nil
		}
		if !errors.Is(f.err, context.Canceled) && !errors.Is(f.err, context.DeadlineExceeded) {
			return zero, f.err
		}
	}
}

// renderAhead makes page's character boxes and its image at dpi in the
// background, in the one slot rendering ahead may take, for a reviewer
// about to ask for them: the first cells of a grid just opened, the cell
// after the one shown. Its errors are the page's to tell when asked.
func (r *renderer) renderAhead(key string, data []byte, page, dpi int) {
	go func() {
		select {
		case r.ahead <- struct{}{}:
		case <-r.base.Done():
			return
		}
		defer func() { <-r.ahead }()
		if _, err := r.charBoxes(r.base, key, data, page); err != nil {
			return
		}
		_, _ = r.page(r.base, key, data, page, dpi)
	}()
}

// slowPage is a cached errRenderTimeout, until expires.
type slowPage struct{ expires time.Time }

// remember caches a job's result, or that it ran out of time (so that a
// hostile page costs PDFium its deadline once, not on every request).
func (r *renderer) remember(key string, v any, size int64, err error) {
	switch {
	case err == nil:
		r.cache.put(key, v, size+int64(len(key)))
	case errors.Is(err, errRenderTimeout):
		r.cache.put(key, slowPage{expires: time.Now().Add(slowPageTTL)}, int64(len(key))+64)
	}
}

// cached is a cache entry as a result.
func cached[T any](v any) (T, error) {
	var zero T
	if _, ok := v.(slowPage); ok {
		return zero, errSlowAgain
	}
	return v.(T), nil
}

// lru is a cache bounded by the bytes of its values, least recently used
// first out.
type lru struct {
	mu    sync.Mutex
	max   int64
	size  int64
	order *list.List // front: most recent
	items map[string]*list.Element
}

type lruItem struct {
	key  string
	val  any
	size int64
}

func newLRU(max int64) *lru {
	return &lru{max: max, order: list.New(), items: map[string]*list.Element{}}
}

// get returns the value under key; a slowPage past its time is dropped
// and not returned.
func (c *lru) get(key string) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[key]
	if !ok {
		return nil, false
	}
	it := e.Value.(*lruItem)
	if s, slow := it.val.(slowPage); slow && time.Now().After(s.expires) {
		c.remove(e)
		return nil, false
	}
	c.order.MoveToFront(e)
	return it.val, true
}

// put keeps val under key; a value larger than the whole cache is not
// kept.
func (c *lru) put(key string, val any, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		c.remove(e)
	}
	if size > c.max {
		return
	}
	c.items[key] = c.order.PushFront(&lruItem{key: key, val: val, size: size})
	c.size += size
	for c.size > c.max {
		c.remove(c.order.Back())
	}
}

func (c *lru) remove(e *list.Element) {
	it := e.Value.(*lruItem)
	c.order.Remove(e)
	delete(c.items, it.key)
	c.size -= it.size
}
