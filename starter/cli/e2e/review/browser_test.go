package review

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browser is the headless Chromium the desk's tests drive, closed when the
// test ends.
type browser struct {
	t   *testing.T
	ctx context.Context
	// says is a JavaScript expression of the page whose value a failed
	// wait reports.
	says string
}

// newBrowser starts chromium in a window 1500 pixels wide and height
// high.
func newBrowser(t *testing.T, ctx context.Context, chromium string, height int, says string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1500, height))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	return &browser{t: t, ctx: bctx, says: says}
}

// do runs steps, failing the test with what on an error.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("browser: %s: %v", what, err)
	}
}

// wait polls expr until it holds, for up to 90 seconds.
func (b *browser) wait(what, expr string) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[any](expr, chromedp.WithPollingTimeout(90*time.Second), chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		msg, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](b.says))
		b.t.Fatalf("browser: waiting for %s: %v (page says %q)", what, err, msg)
	}
}

// shot saves a screenshot as name in -desk-screenshots, if set.
func (b *browser) shot(name string) {
	b.t.Helper()
	if *deskScreenshots == "" {
		return
	}
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join(*deskScreenshots, name), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}
