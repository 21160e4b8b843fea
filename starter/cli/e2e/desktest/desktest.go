// Package desktest runs the review desk in process and drives it in
// headless Chromium, for the end-to-end tests under starter/cli/e2e that
// meet it as a reviewer does.
package desktest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/memagent/memagent/desk/deskapp"
)

// Chromium is Debian's chromium, which scripts/test-deps.sh installs.
const Chromium = "/usr/bin/chromium"

// Start runs the review desk (command desk, in process) on a free
// loopback port with the environment's configuration and returns its
// URL; it stops when the test ends, failing it if the desk failed.
func Start(t testing.TB, ctx context.Context) string {
	t.Helper()
	r, w := io.Pipe()
	dctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		var stderr bytes.Buffer
		err := deskapp.Run(dctx, []string{"--addr", "127.0.0.1:0"}, w, &stderr)
		if err != nil {
			err = fmt.Errorf("%w: %s", err, stderr.String())
		}
		w.CloseWithError(io.EOF)
		done <- err
	}()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("desk: %v", err)
		}
	})
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatalf("desk printed %q: %v", line, err)
	}
	go io.Copy(io.Discard, r)
	m := regexp.MustCompile(`http://[^ /]+`).FindString(line)
	if m == "" {
		t.Fatalf("desk printed %q", line)
	}
	return m
}

// Browser is a headless Chromium a test drives, closed when the test
// ends.
type Browser struct {
	t testing.TB
	// Ctx is the browser's context, for chromedp calls of a test's own.
	Ctx context.Context
	// Says is a JavaScript expression of the page whose value a failed
	// Wait reports.
	Says string
	// Timeout bounds a Wait.
	Timeout time.Duration
}

// NewBrowser starts chromium in a window 1500 pixels wide and height
// high; a Wait polls for up to timeout.
func NewBrowser(t testing.TB, ctx context.Context, chromium string, height int, says string, timeout time.Duration) *Browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1500, height))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	return &Browser{t: t, Ctx: bctx, Says: says, Timeout: timeout}
}

// Do runs steps, failing the test with what on an error.
func (b *Browser) Do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.Ctx, steps...); err != nil {
		b.t.Fatalf("browser: %s: %v", what, err)
	}
}

// Wait polls expr until it holds, for up to b.Timeout.
func (b *Browser) Wait(what, expr string) {
	b.t.Helper()
	if _, err := chromedp.Run(b.Ctx, chromedp.Poll[any](expr, chromedp.WithPollingTimeout(b.Timeout), chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		msg, _ := chromedp.Run(b.Ctx, chromedp.Evaluate[string](b.Says))
		b.t.Fatalf("browser: waiting for %s: %v (page says %q)", what, err, msg)
	}
}

// Shot saves a screenshot of the window as name in dir; with dir empty
// (the tests' -desk-screenshots unset) it does nothing.
func (b *Browser) Shot(dir, name string) {
	b.t.Helper()
	if dir == "" {
		return
	}
	png, err := chromedp.Run(b.Ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// Eval is expr's value in the page.
func Eval[T any](b *Browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.Ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("browser: %s: %v", expr, err)
	}
	return v
}
