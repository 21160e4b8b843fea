package documents

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/testdeps"
	"github.com/memagent/memagent/starter/cli"
	"github.com/memagent/memagent/starter/cli/clitest"
)

// mixedBook writes the typeset book of docconvtest with the page of its
// fact (physical 17, printed 13) replaced by a 300 DPI scan of it: text
// pages with a scanned page between them.
func mixedBook(t *testing.T) string {
	t.Helper()
	groff := testdeps.Command(t, "groff", "apt-get install groff")
	testdeps.Command(t, "gropdf", "apt-get install groff")
	pdftoppm := testdeps.Command(t, "pdftoppm", "apt-get install poppler-utils")
	testdeps.Command(t, "tesseract", "apt-get install tesseract-ocr tesseract-ocr-eng")
	book, err := docconvtest.TypesetBook(groff)
	if err != nil {
		t.Fatal(err)
	}
	mixed, err := docconvtest.ScannedCopy(pdftoppm, book, docconvtest.BookFactPage)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "exhibit-scan.pdf")
	if err := os.WriteFile(path, mixed, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestScannedPageAnswered is issue 40's mixed PDF as a user meets it: a
// book whose fact is only on a scanned page between text pages. estimate
// counts the page to read by OCR without reading it; ask answers from the
// scan and cites the page by its printed label, "scan" and its confidence;
// estimate then finds the page read; a language the worker lacks fails
// before any model call (exit 2) naming the package to install.
func TestScannedPageAnswered(t *testing.T) {
	path := mixedBook(t)
	clitest.Stack(t)
	clitest.StartWorker(t)

	estimate := func() api.Estimate {
		t.Helper()
		out, stderr, err := clitest.RunCLI(t, "estimate", "--doc", path, "--question", docgen.Question, "--json")
		if err != nil {
			t.Fatalf("estimate: %v\n%s", err, stderr)
		}
		var e api.Estimate
		if err := json.Unmarshal([]byte(out), &e); err != nil {
			t.Fatalf("estimate --json printed %q: %v", out, err)
		}
		return e
	}
	e := estimate()
	t.Logf("estimate before: %d OCR pages, %d pending, %.1f s expected, %d tokens (approximate %v)", e.OCRPages, e.OCRPagesPending, e.OCRSecondsExpected, e.Tokens, e.TokensApproximate)
	if e.OCRPages != 1 || e.OCRPagesPending != 1 || e.OCRSecondsExpected <= 0 || !e.TokensApproximate {
		t.Errorf("estimate: %d OCR pages, %d pending, %.1f s, approximate %v; want 1, 1, some time, approximate", e.OCRPages, e.OCRPagesPending, e.OCRSecondsExpected, e.TokensApproximate)
	}

	out, stderr, err := clitest.RunCLI(t, "ask", "--doc", path, "--question", docgen.Question, "--json")
	if err != nil {
		t.Fatalf("ask: %v\n%s", err, stderr)
	}
	var res citedJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("ask --json printed %q: %v", out, err)
	}
	g := res.Grounding
	t.Logf("answer %q, grounding %s, found on %q", res.Answer, g, res.AnswerPages)
	if !strings.Contains(res.Answer, "7391-ALPHA") || !g.Found() || g.Pages == nil || g.Pages.First != docconvtest.BookFactPage || g.Pages.Scan == nil {
		t.Fatalf("answer %q grounded %+v: want 7391-ALPHA from the scanned page %d", res.Answer, g, docconvtest.BookFactPage)
	}
	if want := fmt.Sprintf("p. 13 (PDF p. 17; scan, confidence %.2f)", g.Pages.Scan.Confidence); res.AnswerPages != want {
		t.Errorf("found on %q, want %q", res.AnswerPages, want)
	}

	if e := estimate(); e.OCRPages != 1 || e.OCRPagesPending != 0 || e.TokensApproximate {
		t.Errorf("estimate after: %d OCR pages, %d pending, approximate %v; want 1, 0, exact", e.OCRPages, e.OCRPagesPending, e.TokensApproximate)
	}

	_, stderr, err = clitest.RunCLI(t, "ask", "--doc", path, "--question", docgen.Question, "--ocr-lang", "eng+zul")
	if cli.ExitCode(err) != cli.ExitBadInput || !strings.Contains(err.Error()+stderr, "install tesseract-ocr-zul on the worker") {
		t.Errorf("--ocr-lang eng+zul: %v (%s), want exit 2 naming tesseract-ocr-zul", err, stderr)
	}
}
