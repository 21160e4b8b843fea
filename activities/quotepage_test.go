package activities

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/testdeps"
)

// TestGroundQuotesStayOnTheirPage grounds answers taken from the top and
// the bottom of pages of a real manual nobody here wrote (asymptote's
// Texinfo manual, where issue 49 found quotes starting on the page before
// and cut mid-word), and answers that run from one page's bottom onto the
// next page's top. Every quote, and every part of a quote that crosses a
// page, lies on the page it cites (the page's converted text holds it
// where the occurrence is) and starts and ends on a word boundary; an
// occurrence across pages is quoted a part a page. It also counts how
// many quotes the desk highlights on their cited page of the PDF itself
// (docconv.FindText over the page's characters), as the desk does; those
// it misses are pages whose converted text is in another order than the
// PDF's characters (figures, code), which issue 49's items 1 and 2 own.
func TestGroundQuotesStayOnTheirPage(t *testing.T) {
	path := testdeps.Manual(t, "asymptote-doc", "usr/share/doc/asymptote/asymptote.pdf")
	pdf, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, nil)
	ctx := context.Background()
	if err := f.store.Store.Put(ctx, s3store.Location{Bucket: "docs", Key: "asymptote.pdf"}, pdf, "application/pdf"); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	var conv actwire.ConvertOutput
	if err := f.exec(t, ConvertDocumentName, actwire.ConvertInput{Document: "s3://docs/asymptote.pdf"}, &conv); err != nil {
		t.Fatal(err)
	}
	t.Logf("converted in %v", time.Since(began))
	var prep actwire.PrepareOutput
	if err := f.exec(t, PrepareDocumentName, actwire.PrepareInput{Document: conv.Document, Question: testQuestion,
		Options: api.ModelOptions{ChunkTokens: 5000}, Converted: &conv}, &prep); err != nil {
		t.Fatal(err)
	}
	idx, err := f.acts.loadIndex(ctx, mustLoc(t, prep.IndexURI))
	if err != nil || idx.PageMap == nil {
		t.Fatalf("index: %v, page map %v", err, idx)
	}
	text, err := f.store.ReadAll(ctx, mustLoc(t, conv.Document))
	if err != nil {
		t.Fatal(err)
	}

	// Answers from every fifth page with text enough: its first words, its
	// last words, and its last words with the next page's first.
	spans := idx.PageMap.Spans
	var answers []actwire.GroundItem
	for i := 2; i+1 < len(spans); i += 5 {
		page, next := fields(text, spans[i]), fields(text, spans[i+1])
		if len(page) < 12 || len(next) < 4 {
			continue
		}
		for _, a := range []string{
			strings.Join(page[:4], " "),
			strings.Join(page[len(page)-4:], " "),
			strings.Join(append(page[len(page)-2:len(page):len(page)], next[:2]...), " "),
		} {
			answers = append(answers, actwire.GroundItem{Answer: a, AnswerFound: true})
		}
	}
	var out actwire.GroundOutput
	if err := f.exec(t, GroundAnswerName, actwire.GroundInput{Document: prep.Document, ETag: prep.ETag, IndexURI: prep.IndexURI,
		Answers: answers}, &out); err != nil {
		t.Fatal(err)
	}

	pageChars := map[int][]docconv.CharBox{}
	bad := map[string]int{}
	defer func() { t.Logf("quotes not on their page: %v", bad) }()
	found, across, highlighted, quotes := 0, 0, 0, 0
	for i, g := range out.Groundings {
		if !g.Found() {
			continue
		}
		found++
		parts := g.QuoteParts
		if parts == nil {
			parts = []api.QuotePart{{Text: g.Quote, Pages: g.Pages}}
			if g.Pages.First != g.Pages.Last {
				t.Errorf("answer %q on %s: one quote %q for an occurrence across pages, want a part a page", answers[i].Answer, g.Pages, g.Quote)
			}
		} else {
			across++
			if g.Quote != parts[0].Text || len(parts) != g.Pages.Last-g.Pages.First+1 {
				t.Errorf("answer %q on %s: quote %q, parts %+v, want a part a page, the first as the quote", answers[i].Answer, g.Pages, g.Quote, parts)
			}
		}
		for _, p := range parts {
			quotes++
			if p.Pages == nil || p.Pages.First != p.Pages.Last {
				t.Errorf("answer %q: part %q cites %v, want one page", answers[i].Answer, p.Text, p.Pages)
				continue
			}
			span := spanOf(idx.PageMap, p.Pages.First)
			if msg := onPage(text, span, p.Text, g.Start, g.End); msg != "" {
				bad[msg]++
				t.Errorf("answer %q: quote %q, cited %s: %s", answers[i].Answer, p.Text, p.Pages, msg)
			}
			if testing.Short() {
				continue // the PDF's pages are read one by one: not in -short
			}
			chars, ok := pageChars[p.Pages.First]
			if !ok {
				if chars, err = f.acts.documents.CharBoxes(ctx, bytes.NewReader(pdf), int64(len(pdf)), p.Pages.First); err != nil {
					t.Fatal(err)
				}
				pageChars[p.Pages.First] = chars
			}
			if _, err := docconv.FindText(chars, p.Text); err == nil {
				highlighted++
			}
		}
	}
	t.Logf("%d answers, %d found, %d across pages; %d quotes, %d of them found on their cited page of the PDF as the desk looks",
		len(answers), found, across, quotes, highlighted)
	if len(answers) < 60 || found < len(answers)*9/10 || across == 0 {
		t.Errorf("%d answers, %d found, %d across pages: the test asks too little", len(answers), found, across)
	}
}

// fields are the words of span s of text.
func fields(text []byte, s memagent.PageSpan) []string {
	return strings.Fields(string(text[s.Start:s.End]))
}

func spanOf(m *memagent.PageMap, page int) memagent.PageSpan {
	for _, s := range m.Spans {
		if s.Number == page {
			return s
		}
	}
	return memagent.PageSpan{}
}

// onPage says what is wrong with quote q as a quote on the page of span s
// of text of the occurrence [start, end): "" when the page holds it at a
// place that overlaps the occurrence, starting and ending on word
// boundaries (the page's ends are some).
func onPage(text []byte, s memagent.PageSpan, q string, start, end int64) string {
	if q == "" || s.End <= s.Start {
		return "empty quote or no page"
	}
	page := string(text[s.Start:s.End])
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
			if i > 0 {
				if before, _ := utf8.DecodeLastRuneInString(page[:i]); wordRune(before) && wordRune(first) {
					return "starts inside a word"
				}
			}
			if i+len(q) < len(page) {
				if after, _ := utf8.DecodeRuneInString(page[i+len(q):]); wordRune(after) && wordRune(last) {
					return "ends inside a word"
				}
			}
			return ""
		}
		from = i + 1
	}
}

func wordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }
