package documents

import (
	"encoding/json"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/report"
	"github.com/memagent/memagent/internal/testdeps"
	"github.com/memagent/memagent/starter/cli/clitest"
)

// citedJSON is the part of `starter ask --json` the citation test reads.
type citedJSON struct {
	Answer         string          `json:"answer"`
	AnswerFound    bool            `json:"answer_found"`
	Grounding      *api.Grounding  `json:"grounding"`
	AnswerPages    string          `json:"answer_pages"`
	ContextPages   string          `json:"context_pages"`
	AnswerSources  []api.SourceRef `json:"answer_sources"`
	ContextSources []api.SourceRef `json:"context_sources"`
}

// citedPages are the physical pages a citation such as "pp. 6 (PDF p.
// 30), i (PDF p. 3), 17" names.
func citedPages(t *testing.T, cite string) []int {
	t.Helper()
	body := strings.TrimPrefix(strings.TrimPrefix(cite, "pp. "), "p. ")
	var pages []int
	for _, item := range strings.Split(body, ", ") {
		if m := regexp.MustCompile(`\(PDF p\. (\d+)\)$`).FindStringSubmatch(item); m != nil {
			item = m[1]
		}
		n, err := strconv.Atoi(item)
		if err != nil {
			t.Fatalf("citation %q: item %q is not a page", cite, item)
		}
		pages = append(pages, n)
	}
	return pages
}

// TestCitationsOnRealManual is issue 38's done-means on a real manual:
// questions like the two the issue asked of c++-annotations' cplusplus.pdf
// (1,151 pages, labels i–xxiv then 1–1,127, a label printed twice), and
// one asked of a corpus of PostgreSQL's psql page and gnuplot's PDF. The
// page each answer is grounded on holds the answer's text as pdftotext
// reads that page of the PDF; Found on leads with it and names no page
// whose text lacks the answer's words; the corpus's quote stays inside
// one document.
func TestCitationsOnRealManual(t *testing.T) {
	pdftotext := testdeps.Command(t, "pdftotext", "apt-get install poppler-utils")
	manual := testdeps.Manual(t, "c++-annotations-pdf", "usr/share/doc/c++-annotations/cplusplus.pdf")
	psql := testdeps.Manual(t, "postgresql-doc-15", "usr/share/doc/postgresql-doc-15/html/app-psql.html")
	gnuplot := testdeps.Manual(t, "gnuplot-doc", "usr/share/doc/gnuplot/gnuplot.pdf")
	clitest.Stack(t)
	clitest.StartWorker(t)
	pageText := func(n int) string {
		out, err := exec.Command(pdftotext, "-enc", "UTF-8", "-f", strconv.Itoa(n), "-l", strconv.Itoa(n), manual, "-").Output()
		if err != nil {
			t.Fatalf("pdftotext page %d: %v", n, err)
		}
		// A word broken at a line's end reads whole.
		return strings.ReplaceAll(string(out), "-\n", "")
	}
	ask := func(args ...string) citedJSON {
		t.Helper()
		// The first question converts the 600-page manual.
		out, stderr, err := clitest.RunCLIWithin(t, 6*time.Minute, append(append([]string{"ask"}, args...), "--json")...)
		if err != nil {
			t.Fatalf("ask %q: %v\n%s", args, err, stderr)
		}
		var res citedJSON
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("ask --json printed %q: %v", out, err)
		}
		return res
	}
	for _, q := range []string{
		"In major version four, what did Frank do besides converting the document from SGML to yodl?",
		"Which languages with a C-like grammar, besides C, are mentioned for knowledgeable users?",
	} {
		res := ask("--doc", manual, "--question", q)
		g := res.Grounding
		t.Logf("%q: answer %q, grounding %s, found on %q, context %q", q, res.Answer, g, res.AnswerPages, res.ContextPages)
		if !res.AnswerFound || !g.Found() || g.Pages == nil || g.Pages.First != g.Pages.Last {
			t.Errorf("%q: answer %q, grounding %+v: want an answer grounded on one page", q, res.Answer, g)
			continue
		}
		if g.FoundIn != api.GroundingInPassage && g.FoundIn != api.GroundingInChunk {
			t.Errorf("%q: grounded in %q, want where the memory took it from (its evidence)", q, g.FoundIn)
		}
		if !strings.Contains(memagent.Normalize(pageText(g.Pages.First)), memagent.Normalize(res.Answer)) {
			t.Errorf("%q: grounded on PDF page %d, whose text lacks %q", q, g.Pages.First, res.Answer)
		}
		if !strings.HasPrefix(res.AnswerPages, "p") || citedPages(t, res.AnswerPages)[0] != g.Pages.First ||
			!strings.HasPrefix(strings.TrimPrefix(strings.TrimPrefix(res.AnswerPages, "pp. "), "p. "), strings.TrimPrefix(g.Pages.String(), "p. ")) {
			t.Errorf("%q: found on %q does not lead with the grounded %s", q, res.AnswerPages, g.Pages)
		}
		words := report.AnswerWords(res.Answer)
		for _, p := range citedPages(t, res.AnswerPages) {
			if !report.HoldsWords(pageText(p), words) {
				t.Errorf("%q: found on %q names PDF page %d, which lacks the answer's words %q", q, res.AnswerPages, p, words)
			}
		}
	}

	// A corpus: grounded in the psql page, not in its navigation, and the
	// quote does not run into gnuplot's document.
	res := ask("--doc", psql, "--doc", gnuplot, "--question", "Which database system is psql a terminal-based front-end to?")
	g := res.Grounding
	t.Logf("corpus: answer %q, grounding %s, found on %+v", res.Answer, g, res.AnswerSources)
	switch {
	case !g.Found() || !strings.HasSuffix(g.Document, "/app-psql.html"):
		t.Errorf("corpus: grounding %+v, want it in app-psql.html", g)
	case strings.Contains(g.Quote, "=== Document") || strings.Contains(g.Quote, "gnuplot") || strings.Contains(g.Quote, "Prev"):
		t.Errorf("corpus: quote %q crosses into another document or navigation", g.Quote)
	case len(res.AnswerSources) == 0 || res.AnswerSources[0].String() != (api.SourceRef{Name: "app-psql.html", Pages: g.Pages}).String():
		t.Errorf("corpus: found on %q does not lead with the grounded place %s", api.CiteSources(res.AnswerSources), g)
	}
}
