package review

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/testdeps"
	"github.com/memagent/memagent/starter/cli/clitest"
)

// TestReviewQuotesStayOnTheirPage is issue 49's done-means for quotes:
// questions whose answers sit at the top and at the bottom of pages of a
// real manual nobody here wrote (asymptote's asy-latex.pdf), asked as one
// review through the CLI, the workflow on the embedded dev clitest.Stack and the
// simulator. Each question is made of the rarest words of the first or
// last sentence of a page, so that the simulator's memory keeps that
// sentence and answers from it. Every grounding quote (every part of one
// across pages) and every evidence passage lies on the one page it cites
// (that page's converted text holds it where the occurrence is) and
// starts and ends on word boundaries.
func TestReviewQuotesStayOnTheirPage(t *testing.T) {
	path := testdeps.Manual(t, "asymptote-doc", "usr/share/doc/asymptote/asy-latex.pdf")
	var conv bytes.Buffer
	res, err := (&docconv.Converter{}).Convert(context.Background(), docconv.FormatPDF, path, &conv, nil)
	if err != nil {
		t.Fatal(err)
	}
	text := conv.String()
	questions, edges := edgeQuestions(text, res.Map)
	if len(questions) < 10 {
		t.Fatalf("%d questions from the tops and bottoms of %d pages: too few", len(questions), len(res.Map.Spans))
	}

	d := clitest.Stack(t)
	clitest.StartWorker(t)
	d.Simulator.Reset()
	dir := t.TempDir()
	type item struct {
		ID       string `json:"id"`
		Question string `json:"question"`
	}
	var items []item
	for i, q := range questions {
		items = append(items, item{ID: edges[i], Question: q})
	}
	qPath := clitest.WriteFile(t, dir, "questions.json", mustJSON(t, items))
	pdf, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, err := clitest.RunCLI(t, "review", "--doc", clitest.WriteFile(t, dir, filepath.Base(path), pdf), "--questions", qPath,
		"--chunk-tokens", "1500", "--json")
	if err != nil {
		t.Fatalf("review: %v\nstderr: %s", err, stderr)
	}
	var grid api.ReviewResult
	if err := json.Unmarshal([]byte(out), &grid); err != nil {
		t.Fatalf("review --json printed %q: %v", out, err)
	}
	// The worker read the text converted here.
	_, store := clitest.Store(t)
	loc, err := s3store.ParseURI(grid.Document)
	if err != nil {
		t.Fatal(err)
	}
	if stored, err := store.ReadAll(context.Background(), loc); err != nil || string(stored) != text {
		t.Fatalf("the worker's converted text (%v) differs from the converter's here", err)
	}

	grounded, atEdge, parts, passages := 0, 0, 0, 0
	for _, r := range grid.Rows {
		for _, e := range r.Evidence {
			if p := e.Passage; p != nil {
				passages++
				if p.Pages == nil || p.Pages.First != p.Pages.Last {
					t.Errorf("%s: passage [%d,%d) cites %v, want one page", r.ID, p.Start, p.End, p.Pages)
				} else if msg := quoteOnPage(text, spanNumbered(res.Map, p.Pages.First), text[p.Start:p.End], p.Start, p.End); msg != "" {
					t.Errorf("%s: passage %q, cited %s: %s", r.ID, text[p.Start:p.End], p.Pages, msg)
				}
			}
		}
		g := r.Grounding
		if !g.Found() {
			continue
		}
		grounded++
		s := spanNumbered(res.Map, g.Pages.First)
		if g.Start-s.Start < api.MaxGroundingQuoteBytes/2 || spanNumbered(res.Map, g.Pages.Last).End-g.End < api.MaxGroundingQuoteBytes/2 {
			atEdge++
		}
		quotes := g.QuoteParts
		if quotes == nil {
			if g.Pages.First != g.Pages.Last {
				t.Errorf("%s: answer %q on %s quoted once, %q, want a part a page", r.ID, r.Answer, g.Pages, g.Quote)
			}
			quotes = []api.QuotePart{{Text: g.Quote, Pages: g.Pages}}
		}
		for _, q := range quotes {
			parts++
			if q.Pages == nil || q.Pages.First != q.Pages.Last {
				t.Errorf("%s: quote %q cites %v, want one page", r.ID, q.Text, q.Pages)
				continue
			}
			if msg := quoteOnPage(text, spanNumbered(res.Map, q.Pages.First), q.Text, g.Start, g.End); msg != "" {
				t.Errorf("%s: answer %q, quote %q, cited %s: %s", r.ID, r.Answer, q.Text, q.Pages, msg)
			}
		}
	}
	t.Logf("%d questions, %d answers grounded, %d of them within %d bytes of a page's edge; %d quotes, %d passages checked",
		len(grid.Rows), grounded, atEdge, api.MaxGroundingQuoteBytes/2, parts, passages)
	if grounded < len(questions)/2 || atEdge < len(questions)/4 || passages == 0 {
		t.Errorf("%d of %d answers grounded, %d at a page's edge, %d passages: the test asks too little", grounded, len(questions), atEdge, passages)
	}
}

// edgeQuestions makes a question of the first and of the last sentence of
// each page of text that has both: the sentence's three rarest words of
// five letters or more (rare in the whole text), so that the simulator
// keeps that sentence and answers from its other words. It returns the
// questions and an id for each ("p3-top", "p3-bottom").
func edgeQuestions(text string, m memagent.PageMap) (questions, ids []string) {
	count := map[string]int{}
	for _, w := range strings.FieldsFunc(strings.ToLower(text), notLetter) {
		count[w]++
	}
	seen := map[string]bool{}
	for _, s := range m.Spans {
		page := text[s.Start:s.End]
		sentences := strings.SplitAfter(strings.ReplaceAll(page, "\n", " "), ". ")
		for _, e := range []struct {
			i  int
			at string
		}{{0, "top"}, {len(sentences) - 1, "bottom"}} {
			i, at := e.i, e.at
			var words []string
			for _, w := range strings.FieldsFunc(strings.ToLower(sentences[i]), notLetter) {
				if len(w) >= 5 && !seen[w] && !slices.Contains(words, w) {
					words = append(words, w)
				}
			}
			if len(words) < 5 {
				continue
			}
			sort.SliceStable(words, func(a, b int) bool { return count[words[a]] < count[words[b]] })
			words = words[:3]
			for _, w := range words {
				seen[w] = true
			}
			questions = append(questions, "What about "+strings.Join(words, " ")+"?")
			ids = append(ids, "p"+strconv.Itoa(s.Number)+"-"+at)
		}
	}
	return questions, ids
}

func notLetter(r rune) bool { return !unicode.IsLetter(r) }

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func spanNumbered(m memagent.PageMap, page int) memagent.PageSpan {
	for _, s := range m.Spans {
		if s.Number == page {
			return s
		}
	}
	return memagent.PageSpan{}
}

// quoteOnPage says what is wrong with q as a quote, on the page of span s
// of text, of the occurrence [start, end): "" when the page holds it where
// it overlaps the occurrence, starting and ending on word boundaries.
func quoteOnPage(text string, s memagent.PageSpan, q string, start, end int64) string {
	if q == "" || s.End <= s.Start {
		return "empty, or no page"
	}
	page := text[s.Start:s.End]
	for from := 0; ; {
		i := strings.Index(page[from:], q)
		if i < 0 {
			return "not on the cited page's text where the occurrence is"
		}
		i += from
		qs, qe := s.Start+int64(i), s.Start+int64(i+len(q))
		if qs < end && start < qe {
			first, _ := utf8.DecodeRuneInString(q)
			last, _ := utf8.DecodeLastRuneInString(q)
			if before, _ := utf8.DecodeLastRuneInString(page[:i]); i > 0 && isWord(before) && isWord(first) {
				return "starts inside a word"
			}
			if after, _ := utf8.DecodeRuneInString(page[i+len(q):]); i+len(q) < len(page) && isWord(after) && isWord(last) {
				return "ends inside a word"
			}
			return ""
		}
		from = i + 1
	}
}

func isWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }
