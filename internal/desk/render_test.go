package desk

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
)

// waitFor waits for cond, failing the test after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testDesk is a desk that only renders pages.
func testDesk(t *testing.T, timeout time.Duration, instances int) *Desk {
	t.Helper()
	d := &Desk{cfg: Config{RenderTimeout: timeout, RenderInstances: instances}}
	d.pages = newRenderer(timeout, instances, DefaultPageCacheBytes, discard())
	t.Cleanup(func() { d.Close() })
	// PDFium's module compiles on first use: not on the clock below.
	conv, _ := d.pages.converter()
	if err := conv.Warm(); err != nil {
		t.Fatal(err)
	}
	return d
}

// get serves page of data through writePage.
func get(d *Desk, key string, data []byte, page int) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	d.writePage(w, httptest.NewRequest("GET", "/page.png", nil), key, data, page)
	return w
}

// TestSlowPage is the review's slow page: a 3 KB PDF of nested
// transparency groups that keeps PDFium compositing for minutes. Another
// page of the same document is served while it is pending, the slow one
// fails at the deadline with a 504 that says why (its instance killed,
// its slot back), the desk keeps rendering afterwards, and the slow page
// asked again fails at once from the cache without PDFium.
func TestSlowPage(t *testing.T) {
	const timeout = 4 * time.Second
	d := testDesk(t, timeout, DefaultRenderInstances)
	pdf := docconvtest.NestedGroupsPDF(8)
	if len(pdf) > 3000 {
		t.Fatalf("the hostile PDF is %d bytes", len(pdf))
	}
	const key = "s3://docs/hostile.pdf@etag1"

	start := time.Now()
	slow := make(chan *httptest.ResponseRecorder, 1)
	go func() { slow <- get(d, key, pdf, 1) }()
	waitFor(t, time.Second, "the slow page starts rendering", func() bool { return d.pages.jobs.Load() == 1 })

	t0 := time.Now()
	w := get(d, key, pdf, 2)
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "image/png" {
		t.Fatalf("the other page, while the slow one renders: %d %s", w.Code, w.Body)
	}
	if took := time.Since(t0); took > timeout*3/4 {
		t.Errorf("the other page took %v behind the slow one", took)
	}
	select {
	case <-slow:
		t.Fatal("the slow page ended before the other page was served: the test shows nothing")
	default:
	}

	w = <-slow
	took := time.Since(start)
	if w.Code != http.StatusGatewayTimeout {
		t.Fatalf("slow page: %d %s, want 504", w.Code, w.Body)
	}
	if took < timeout || took > timeout+2*time.Second {
		t.Errorf("slow page answered after %v, want at its deadline %v", took, timeout)
	}
	var body struct{ Error string }
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || !strings.Contains(body.Error, "page 1 took longer than 4s to render") {
		t.Errorf("slow page's answer: %q (%v)", w.Body, err)
	}
	// The killed instance stops and frees its slot; PDFium needs no
	// replacing.
	waitFor(t, 2*time.Second, "the killed render ends", func() bool { return len(d.pages.slots) == 0 })
	if n := d.pages.replaced.Load(); n != 0 {
		t.Errorf("PDFium replaced %d times: the kill did not stop the render", n)
	}

	// The desk keeps rendering: the other page at another resolution.
	jobs := d.pages.jobs.Load()
	if png, err := d.pages.page(context.Background(), key, pdf, 2, 72); err != nil || len(png) == 0 {
		t.Fatalf("a page after the slow one: %v", err)
	}
	if got := d.pages.jobs.Load(); got != jobs+1 {
		t.Errorf("renders: %d, want %d", got, jobs+1)
	}
	// The slow page again: refused at once, without PDFium.
	t0 = time.Now()
	w = get(d, key, pdf, 1)
	if w.Code != http.StatusGatewayTimeout || time.Since(t0) > time.Second || !strings.Contains(w.Body.String(), "not tried again") {
		t.Errorf("the slow page again: %d after %v: %s", w.Code, time.Since(t0), w.Body)
	}
	if got := d.pages.jobs.Load(); got != jobs+1 {
		t.Errorf("the slow page again ran PDFium: %d renders, want %d", got, jobs+1)
	}
}

// TestPageCache: a page asked again is served from the cache without
// rendering; another version of the document (another ETag) is rendered.
func TestPageCache(t *testing.T) {
	d := testDesk(t, 30*time.Second, 1)
	pdf := docconvtest.NestedGroupsPDF(2)
	first := get(d, "s3://docs/a.pdf@e1", pdf, 2)
	if first.Code != http.StatusOK {
		t.Fatalf("%d %s", first.Code, first.Body)
	}
	for range 3 {
		if w := get(d, "s3://docs/a.pdf@e1", pdf, 2); w.Code != http.StatusOK || w.Body.String() != first.Body.String() {
			t.Fatalf("cached page: %d", w.Code)
		}
	}
	if n := d.pages.jobs.Load(); n != 1 {
		t.Errorf("renders of one page asked 4 times: %d, want 1", n)
	}
	if w := get(d, "s3://docs/a.pdf@e2", pdf, 2); w.Code != http.StatusOK {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	if n := d.pages.jobs.Load(); n != 2 {
		t.Errorf("renders after a new version: %d, want 2", n)
	}
	// Character boxes are cached beside the images.
	for range 2 {
		chars, err := d.pages.charBoxes(context.Background(), "s3://docs/a.pdf@e1", pdf, 2)
		if err != nil || len(chars) == 0 {
			t.Fatalf("char boxes: %d, %v", len(chars), err)
		}
	}
	if n := d.pages.jobs.Load(); n != 3 {
		t.Errorf("renders after char boxes twice: %d, want 3", n)
	}
}

// TestStuckRender: a job that does not stop when it is killed (PDFium
// ignoring its canceled context) is answered at the deadline, and a
// moment later the whole Converter is replaced and its slot freed, so
// that the desk keeps serving.
func TestStuckRender(t *testing.T) {
	r := newRenderer(100*time.Millisecond, 1, 1<<20, discard())
	r.grace = 100 * time.Millisecond
	defer r.Close()
	old, _ := r.converter()
	release := make(chan struct{})
	defer close(release)
	_, err := run(context.Background(), r, func(context.Context, *docconv.Converter) (bool, error) {
		<-release
		return true, nil
	})
	if !errors.Is(err, errRenderTimeout) {
		t.Fatalf("stuck job: %v, want errRenderTimeout", err)
	}
	waitFor(t, 2*time.Second, "the Converter is replaced", func() bool { return r.replaced.Load() == 1 })
	if now, _ := r.converter(); now == old {
		t.Error("the Converter of the stuck job is still in use")
	}
	if ran, err := run(context.Background(), r, func(ctx context.Context, c *docconv.Converter) (bool, error) { return true, nil }); err != nil || !ran {
		t.Errorf("after the replacement: %v, ran %v", err, ran)
	}
}

// TestRenderBusy: with every instance taken, a page waits at most the
// deadline and fails 503 with Retry-After.
func TestRenderBusy(t *testing.T) {
	d := &Desk{cfg: Config{RenderTimeout: 200 * time.Millisecond}}
	d.pages = newRenderer(200*time.Millisecond, 1, 1<<20, discard())
	d.pages.slots <- struct{}{} // a page rendering
	w := get(d, "k", []byte("%PDF"), 1)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "busy") {
		t.Errorf("busy: %d %q %s", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
}

// TestLRU: the cache keeps at most its bytes, the least recently used
// out first.
func TestLRU(t *testing.T) {
	c := newLRU(100)
	c.put("a", 1, 40)
	c.put("b", 2, 40)
	c.get("a")
	c.put("c", 3, 40) // evicts b, the least recently used
	for key, want := range map[string]bool{"a": true, "b": false, "c": true} {
		if _, ok := c.get(key); ok != want {
			t.Errorf("%s kept: %v, want %v", key, ok, want)
		}
	}
	c.put("big", 4, 101)
	if _, ok := c.get("big"); ok || c.size != 80 {
		t.Errorf("a value over the bound: kept %v, size %d", ok, c.size)
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestCloseWhileRendering: closing the desk kills a page being rendered
// and waits for it before PDFium stops (go-pdfium's pool closing an
// instance that is being killed is a data race: go test -race).
func TestCloseWhileRendering(t *testing.T) {
	r := newRenderer(time.Minute, 2, 1<<20, discard())
	conv, _ := r.converter()
	if err := conv.Warm(); err != nil {
		t.Fatal(err)
	}
	pdf := docconvtest.NestedGroupsPDF(8)
	ended := make(chan error, 1)
	go func() {
		_, err := r.page(context.Background(), "k", pdf, 1, 110)
		ended <- err
	}()
	waitFor(t, 5*time.Second, "the page starts rendering", func() bool { return r.jobs.Load() == 1 })
	start := time.Now()
	if err := r.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if took := time.Since(start); took > 2*stuckGrace {
		t.Errorf("close took %v", took)
	}
	select {
	case err := <-ended:
		if err == nil || errors.Is(err, errRenderTimeout) {
			t.Errorf("the page being rendered at close: %v, want the desk closing", err)
		}
	case <-time.After(stuckGrace):
		t.Error("the page being rendered did not end at close")
	}
}
