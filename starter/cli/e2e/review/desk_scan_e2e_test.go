package review

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/reviewer"
	"github.com/memagent/memagent/internal/testdeps"
	"github.com/memagent/memagent/memclient"
	"github.com/memagent/memagent/starter/cli/clitest"
	"github.com/memagent/memagent/starter/cli/e2e/desktest"
	"github.com/memagent/memagent/worker/workerapp"
)

// Pages of gnuplot's manual whose answers sit near the bottom (85% and
// 89% of the page down): the scanned one and the born-digital one of the
// desk's scan test.
const (
	deskScanSourcePage    = 30  // "The gnuplot distribution contains a collection of examples in the demo directory."
	deskDigitalSourcePage = 252 // "The emf terminal generates an Enhanced Metafile Format file."
)

// deskScanQuestions are asked of the two-page PDF of deskScanPDF: the
// first is answered on its scanned page 1, the second on its born-digital
// page 2, each near the page's bottom.
var deskScanQuestions = []string{
	"What does the gnuplot distribution contain in the demo directory?",
	"Which terminal generates an Enhanced Metafile Format file?",
}

// deskScanPDF writes a two-page PDF of gnuplot's manual: page 1 a scan
// of deskScanSourcePage (pdftoppm at 300 DPI in gray, wrapped by img2pdf
// at its resolution, so the page keeps its size and has no text layer),
// page 2 deskDigitalSourcePage as it is (pdfseparate, pdfunite).
func deskScanPDF(t *testing.T, manual string) string {
	t.Helper()
	pdftoppm := testdeps.Command(t, "pdftoppm", "apt-get install poppler-utils")
	pdfseparate := testdeps.Command(t, "pdfseparate", "apt-get install poppler-utils")
	pdfunite := testdeps.Command(t, "pdfunite", "apt-get install poppler-utils")
	img2pdf := testdeps.Command(t, "img2pdf", "apt-get install img2pdf")
	testdeps.Command(t, "tesseract", "apt-get install tesseract-ocr tesseract-ocr-eng")
	dir := t.TempDir()
	cmd := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", filepath.Base(name), err, out)
		}
	}
	p := fmt.Sprint(deskScanSourcePage)
	cmd(pdftoppm, "-r", "300", "-gray", "-png", "-singlefile", "-f", p, "-l", p, manual, filepath.Join(dir, "scan"))
	cmd(img2pdf, "--imgsize", "300dpix300dpi", "-o", filepath.Join(dir, "scan.pdf"), filepath.Join(dir, "scan.png"))
	p = fmt.Sprint(deskDigitalSourcePage)
	cmd(pdfseparate, "-f", p, "-l", p, manual, filepath.Join(dir, "digital.pdf"))
	out := filepath.Join(dir, "gnuplot-scan.pdf")
	cmd(pdfunite, filepath.Join(dir, "scan.pdf"), filepath.Join(dir, "digital.pdf"), out)
	return out
}

// TestReviewDeskScannedPage is issue 49's item 5 in a real browser: a
// review of a PDF whose first page is a scan of a page of gnuplot's manual
// and whose second is a born-digital page of it, both answers near the
// bottom of their page, is opened at the review desk in headless
// Chromium. On the scan the quote is highlighted from the boxes of the
// words OCR read when the document was converted (the page has no text
// layer), and the highlight lies over the quote's characters as PDFium
// boxes them on the page the scan was made of; on both pages the
// highlight is scrolled into view, in the page's box and in the window: a
// laptop's 1500 × 800, where the page's box reaches below the window's
// bottom and the highlight would lie under it were only the box
// scrolled.
func TestReviewDeskScannedPage(t *testing.T) {
	if testing.Short() {
		t.Skip("OCR, a review and a browser; skipped in -short mode")
	}
	manual := testdeps.Manual(t, "gnuplot-doc", "usr/share/doc/gnuplot/gnuplot.pdf")
	chromium := testdeps.File(t, desktest.Chromium, "the desk cannot be checked without Chromium: apt-get install -y chromium (as root)")
	doc := deskScanPDF(t, manual)
	clitest.Stack(t)
	cfg, _ := clitest.Store(t)
	worker, err := workerapp.Start(context.Background(), cfg, workerapp.Options{Logger: clitest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { worker.Stop() })

	grid := reviewOf(t, doc, deskScanQuestions)
	subject := grid.WorkflowID
	scanned, digital := grid.Rows[0], grid.Rows[1]
	for i, want := range []int{1, 2} {
		r := grid.Rows[i]
		t.Logf("q%d: answer %q, quote %q, pages %+v", i+1, r.Answer, r.Grounding.Quote, r.Grounding.Pages)
		if !r.Grounding.Found() || r.Grounding.Pages == nil || r.Grounding.Pages.First != want {
			t.Fatalf("q%d %q is not grounded on page %d: %+v", i+1, r.Answer, want, r.Grounding)
		}
	}
	if scanned.Grounding.Pages.Scan == nil || digital.Grounding.Pages.Scan != nil {
		t.Fatalf("q1 cites %+v, q2 %+v: want the scan, then the born-digital page", scanned.Grounding.Pages, digital.Grounding.Pages)
	}

	token := "carol-token-5e1d"
	file := filepath.Join(t.TempDir(), "reviewers")
	if err := os.WriteFile(file, []byte("carol "+reviewer.HashToken(token)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(reviewer.Env, "tokens:"+file)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tc, err := workerapp.Dial(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	mc := memclient.New(tc, memclient.Options{TaskQueue: cfg.TaskQueue})
	if _, err := mc.StartSignOff(ctx, api.SignOffInput{Review: subject}); err != nil {
		t.Fatal(err)
	}
	if _, err := signOffGridAwait(ctx, mc, subject); err != nil {
		t.Fatal(err)
	}
	base := desktest.Start(t, ctx)

	br := newBrowser(t, ctx, chromium, 800, `document.getElementById("page-cite") ? document.getElementById("page-cite").textContent + " / " + document.getElementById("message").textContent : document.body.innerText`)
	bctx, do, wait, shot := br.Ctx, br.Do, br.Wait, func(name string) { br.Shot(*deskScreenshots, name) }
	pageShown := func(cell string) string {
		return `document.getElementById("cell-title").textContent.startsWith("Cell ` + cell + ` ") && document.getElementById("page-img").src.endsWith("cell=` + cell + `") && document.getElementById("page-img").complete &&
			document.getElementById("page-frame").classList.contains("loaded") && document.querySelectorAll(".hl.quote").length > 0`
	}
	// inView: where the quote's highlight is, in the page's scroll box
	// and in the window.
	type rect struct{ Top, Bottom float64 }
	type view struct {
		Box, Window, HL rect
		ScrollTop       float64
		Cite            string
	}
	inView := func(cell string) view {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[view](`(() => {
			const r = (b) => ({Top: b.top, Bottom: b.bottom});
			const hls = [...document.querySelectorAll(".hl.quote")].map((h) => h.getBoundingClientRect());
			const box = document.getElementById("page-scroll");
			return {Box: r(box.getBoundingClientRect()), Window: {Top: 0, Bottom: window.innerHeight},
				HL: {Top: Math.min(...hls.map((b) => b.top)), Bottom: Math.max(...hls.map((b) => b.bottom))},
				ScrollTop: box.scrollTop, Cite: document.getElementById("page-cite").textContent};
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: highlight %.0f–%.0f px, page box %.0f–%.0f scrolled %.0f, window %.0f–%.0f; %q", cell, v.HL.Top, v.HL.Bottom, v.Box.Top, v.Box.Bottom, v.ScrollTop, v.Window.Top, v.Window.Bottom, v.Cite)
		if v.ScrollTop <= 0 || v.HL.Top < v.Box.Top || v.HL.Bottom > v.Box.Bottom || v.HL.Top < v.Window.Top || v.HL.Bottom > v.Window.Bottom {
			t.Errorf("%s: the quote's highlight (%.0f–%.0f) is not in view: page box %.0f–%.0f scrolled %.0f, window %.0f–%.0f",
				cell, v.HL.Top, v.HL.Bottom, v.Box.Top, v.Box.Bottom, v.ScrollTop, v.Window.Top, v.Window.Bottom)
		}
		return v
	}

	do("sign in", chromedp.Navigate(base+"/login"), chromedp.WaitVisible(`input[name="token"]`),
		chromedp.SendKeys(`input[name="token"]`, token+"\r"), chromedp.WaitVisible(`b#reviewer`))
	do("open the review", chromedp.Navigate(base+"/signoff?id="+url.QueryEscape(subject)))
	wait("q1's page and its highlight", pageShown("q1"))
	v := inView("q1")
	if !strings.Contains(v.Cite, "highlighted: the quote (from the words OCR read on the scan)") {
		t.Errorf("q1's page says %q, want the quote highlighted from OCR's words", v.Cite)
	}
	// The scan is deskScanSourcePage at the same size: its characters'
	// boxes are where the scan shows them. OCR reads a letter or two of
	// the quote wrong ("{" as "f").
	checkHighlightOver(t, bctx, manual, deskScanSourcePage, scanned, 3)
	shot("desk-scan.png")

	do("next cell", chromedp.KeyEvent("j"))
	wait("q2's page and its highlight", pageShown("q2"))
	v = inView("q2")
	if !strings.Contains(v.Cite, "highlighted: the quote") || strings.Contains(v.Cite, "OCR") {
		t.Errorf("q2's page says %q, want the quote highlighted from the text layer", v.Cite)
	}
	checkHighlight(t, bctx, doc, digital)
}
