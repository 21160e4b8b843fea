// Package validate holds the end-to-end test of a validation (issue 51):
// a batch on the embedded stack, validated by blind decisions from the
// review desk in headless Chromium and from the starter.
package validate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/memagent/memagent/desk/deskapp"
	"github.com/memagent/memagent/starter/cli"
	"github.com/memagent/memagent/starter/cli/clitest"
)

// TestMain runs this package's end-to-end tests on a dev stack of its own
// (clitest), driving the CLI through its exported Run.
func TestMain(m *testing.M) {
	clitest.Main(m, func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		return cli.Run(ctx, args, stdout, stderr)
	}, cli.ExitCode)
}

// chromiumPath is Debian's chromium; scripts/ui-check.sh installs it.
const chromiumPath = "/usr/bin/chromium"

// startDesk runs the review desk (command desk, in process) on a free
// loopback port and returns its URL.
func startDesk(t *testing.T, ctx context.Context) string {
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

// deskClient is a reviewer signed in at the desk from Go.
type deskClient struct {
	base, csrf string
	c          *http.Client
}

func newDeskClient(t *testing.T, base, token string) *deskClient {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.PostForm(base+"/login", url.Values{"token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="csrf-token" content="([^"]+)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("signed in, the page has no CSRF token: %s", page)
	}
	return &deskClient{base: base, csrf: string(m[1]), c: c}
}

// get decodes the JSON the desk answers at path into v.
func (d *deskClient) get(t *testing.T, path string, v any) {
	t.Helper()
	resp, err := d.c.Get(d.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// expect posts body to path and checks the answer's status and message.
func (d *deskClient) expect(t *testing.T, what, path, body string, status int, msg string) {
	t.Helper()
	u, _ := url.Parse(d.base)
	req, _ := http.NewRequest(http.MethodPost, d.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-CSRF-Token", d.csrf)
	req.Header.Set("Origin", "http://"+u.Host)
	resp, err := d.c.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e struct{ Error string }
	if json.Unmarshal(got, &e) == nil && e.Error != "" {
		got = []byte(e.Error)
	}
	if resp.StatusCode != status || !strings.Contains(string(got), msg) {
		t.Errorf("%s: %d %s, want %d and %q", what, resp.StatusCode, got, status, msg)
	}
}

// browser is the headless Chromium the test drives, closed when the test
// ends.
type browser struct {
	t   *testing.T
	ctx context.Context
}

func newBrowser(t *testing.T, ctx context.Context, chromium string, height int) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true), chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1500, height))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	return &browser{t: t, ctx: bctx}
}

// do runs steps, failing the test with what on an error.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("browser: %s: %v", what, err)
	}
}

// wait polls expr until it holds, for up to 60 seconds.
func (b *browser) wait(what, expr string) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[any](expr, chromedp.WithPollingTimeout(60*time.Second), chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		msg, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`(document.getElementById("message") || document.body).textContent`))
		b.t.Fatalf("browser: waiting for %s: %v (page says %q)", what, err, msg)
	}
}

// eval is expr's value.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("browser: %s: %v", expr, err)
	}
	return v
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
