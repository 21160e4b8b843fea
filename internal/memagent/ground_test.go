package memagent

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/memagent/memagent/api"
)

// ground runs a Grounder over text written in pieces of size bytes (all
// at once for size 0).
func ground(text string, size int, answers ...string) []GroundMatch {
	g := NewGrounder(answers)
	b := []byte(text)
	if size <= 0 {
		size = len(b) + 1
	}
	for len(b) > 0 {
		n := min(size, len(b))
		g.Write(b[:n])
		b = b[n:]
	}
	g.Close()
	return g.Results()
}

func TestGrounder(t *testing.T) {
	filler := strings.Repeat("The ferry carried copper lanterns across the harbor. ", 40)
	fact := "The access code for the north gate is 7391-ALPHA."
	doc := filler + fact + "\n\n" + filler
	factAt := int64(len(filler))
	for _, tc := range []struct {
		name       string
		text       string
		answer     string
		status     string
		start, end int64
		// span, when set, is what text[start:end] must be.
		span string
	}{
		{"planted fact verbatim", doc, "7391-ALPHA", api.GroundingVerbatim, factAt + int64(strings.Index(fact, "7391")), factAt + int64(strings.Index(fact, ".")), ""},
		{"nowhere", doc, "Halvorsen", api.GroundingNotFound, 0, 0, ""},
		{"case and punctuation: normalized", "We visited the EIFFEL   Tower, in Paris.", "Eiffel tower.", api.GroundingNormalized, -1, -1, "EIFFEL   Tower,"},
		{"articles dropped: normalized", "it was given to an old Potter of Leeds", "the old potter of Leeds", api.GroundingNormalized, -1, -1, "old Potter of Leeds"},
		{"inside a word is not verbatim", "Parisian cafés line the streets of Paris.", "Paris", api.GroundingVerbatim, 36, 41, "Paris"},
		{"inside a word only: normalized finds whole words only", "Parisian cafés", "Paris", api.GroundingNotFound, 0, 0, ""},
		{"multi-byte", "Er wohnte in Zürich, nahe 東京タワー の 模型.", "東京タワー", api.GroundingVerbatim, -1, -1, "東京タワー"},
		{"multi-byte normalized", "Er wohnte in ZÜRICH!", "zürich", api.GroundingNormalized, -1, -1, "ZÜRICH!"},
		{"non-ASCII space between words", "the\u00a0Zürich\u3000Opera house", "Zürich Opera", api.GroundingNormalized, -1, -1, "Zürich\u3000Opera"},
		{"verbatim preferred over an earlier normalized", "ALPHA one. Later: alpha one", "alpha one", api.GroundingVerbatim, 18, 27, "alpha one"},
		{"answer ends the text", "the code is 7391", "7391", api.GroundingVerbatim, 12, 16, "7391"},
		{"answer is the text", "7391", "7391", api.GroundingVerbatim, 0, 4, "7391"},
		{"punctuation only", "well... ?!", "?!", api.GroundingVerbatim, 8, 10, "?!"},
		{"repeated prefix (KMP)", "a b a b a b c", "b a b c", api.GroundingVerbatim, 6, 13, "b a b c"},
		{"repeated prefix normalized", "X, Y. X. Y: x y z!", "X Y Z", api.GroundingNormalized, -1, -1, "x y z!"},
		{"invalid UTF-8 in the text", "x\xff\xfe code 7391 y", "code 7391", api.GroundingVerbatim, 4, 13, "code 7391"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var first GroundMatch
			// Every piece size, so that the match straddles a write
			// boundary at every offset, splitting runes too.
			for _, size := range []int{0, 1, 2, 3, 4, 5, 7, 11, 64, 1000} {
				got := ground(tc.text, size, tc.answer)[0]
				if size == 0 {
					first = got
				} else if got != first {
					t.Fatalf("in pieces of %d bytes: %+v; all at once: %+v", size, got, first)
				}
			}
			if first.Status != tc.status {
				t.Fatalf("status %q, want %q (%+v)", first.Status, tc.status, first)
			}
			if tc.start >= 0 && (first.Start != tc.start || first.End != tc.end) {
				t.Errorf("range [%d,%d), want [%d,%d)", first.Start, first.End, tc.start, tc.end)
			}
			if tc.span != "" {
				if got := tc.text[first.Start:first.End]; got != tc.span {
					t.Errorf("text[%d:%d] = %q, want %q", first.Start, first.End, got, tc.span)
				}
			}
		})
	}
}

// TestGrounderWindowBoundary plants an answer across the boundary of two
// large writes, as the activity reads S3 in windows.
func TestGrounderWindowBoundary(t *testing.T) {
	const window = 1 << 16
	answer := "Überprüfung der Nordtor-Zugangscodes"
	for _, cut := range []int{1, 2, 3, len(answer) / 2, len(answer) - 1} {
		pad := strings.Repeat("lorem ipsum ", window/12+1)[:window-cut]
		text := pad + " " + answer + " " + strings.Repeat("dolor ", 100)
		g := NewGrounder([]string{answer, strings.ToUpper(answer)})
		b := []byte(text)
		for len(b) > 0 {
			n := min(window, len(b))
			g.Write(b[:n])
			b = b[n:]
		}
		g.Close()
		res := g.Results()
		at := int64(len(pad) + 1)
		if res[0].Status != api.GroundingVerbatim || res[0].Start != at || res[0].End != at+int64(len(answer)) {
			t.Errorf("cut %d: %+v, want verbatim at [%d,%d)", cut, res[0], at, at+int64(len(answer)))
		}
		if res[1].Status != api.GroundingNormalized || text[res[1].Start:res[1].End] != answer {
			t.Errorf("cut %d: upper-case answer %+v, want normalized over the answer", cut, res[1])
		}
		if len(g.tail) > MaxGroundVerbatimBytes+4*utf8.UTFMax {
			t.Errorf("cut %d: the grounder holds %d bytes of text", cut, len(g.tail))
		}
	}
}

// TestGrounderSkip reads a corpus-like text with its header lines
// skipped: no match includes a skipped byte or spans the skip, and a match
// right after a skip is found where it is.
func TestGrounderSkip(t *testing.T) {
	header := "=== Document 2: b.txt ===\n\n"
	first := "notes on the gate, whose code is north"
	second := "gate code 7391 and the end"
	text := first + header + second
	for _, size := range []int{0, 1, 3, 7} {
		g := NewGrounder([]string{"north gate", "Document 2", "north === Document", "gate code", "north gate code", "end"})
		write := func(s string) {
			b := []byte(s)
			if size <= 0 {
				g.Write(b)
				return
			}
			for len(b) > 0 {
				n := min(size, len(b))
				g.Write(b[:n])
				b = b[n:]
			}
		}
		write(first)
		g.Skip(int64(len(header)))
		write(second)
		g.Close()
		res := g.Results()
		for i, want := range []string{api.GroundingNotFound, api.GroundingNotFound, api.GroundingNotFound, api.GroundingVerbatim, api.GroundingNotFound, api.GroundingVerbatim} {
			if res[i].Status != want {
				t.Errorf("size %d: answer %d: %+v, want %s", size, i, res[i], want)
			}
		}
		at := int64(len(first) + len(header))
		if res[3].Start != at || text[res[3].Start:res[3].End] != "gate code" {
			t.Errorf("size %d: the match after the skip is %+v, want at %d", size, res[3], at)
		}
		if got := text[res[5].Start:res[5].End]; got != "end" {
			t.Errorf("size %d: the last match covers %q", size, got)
		}
	}
}

func TestGrounderLimits(t *testing.T) {
	long := strings.Repeat("abcdefghij ", MaxGroundVerbatimBytes/10)
	text := "start " + strings.ToUpper(long) + "end"
	res := ground(text, 100, long, strings.Repeat("w ", MaxGroundTokens+1), "")
	if res[0].Status != api.GroundingNormalized {
		t.Errorf("an answer over %d bytes: %+v, want it searched normalised only", MaxGroundVerbatimBytes, res[0])
	}
	if res[1].Status != api.GroundingNotFound || res[2].Status != api.GroundingNotFound {
		t.Errorf("over %d words, and empty: %+v, %+v, want not_found", MaxGroundTokens, res[1], res[2])
	}
	// A whitespace-free run longer than the field bound matches nothing,
	// and does not grow the grounder.
	huge := strings.Repeat("x", 3*maxGroundField)
	g := NewGrounder([]string{"xx yy"})
	g.Write([]byte(huge + " xx yy"))
	g.Close()
	if r := g.Results()[0]; r.Status != api.GroundingVerbatim || cap(g.field) > 2*maxGroundField {
		t.Errorf("after a long run: %+v, field capacity %d", r, cap(g.field))
	}
}

func TestGrounderDone(t *testing.T) {
	g := NewGrounder([]string{"alpha", "beta"})
	g.Write([]byte("alpha and beta and more "))
	if !g.Done() {
		t.Error("both found verbatim, yet not done")
	}
	g = NewGrounder([]string{"alpha"})
	g.Write([]byte("ALPHA and more "))
	if g.Done() {
		t.Error("done on a normalised match, though a verbatim one may follow")
	}
}

func TestGroundQuote(t *testing.T) {
	text := []byte(strings.Repeat("ää ", 100) + "7391-ALPHA" + strings.Repeat(" öö", 100))
	start := int64(500)
	q := GroundQuote(text, 0, start, start+10, api.MaxGroundingQuoteBytes)
	if !strings.Contains(q, "7391-ALPHA") || len(q) > api.MaxGroundingQuoteBytes || !utf8.ValidString(q) || len(q) < api.MaxGroundingQuoteBytes-10 {
		t.Errorf("quote %q (%d bytes)", q, len(q))
	}
	// The text read from offset 100, near its start: the context moves to
	// the right.
	q = GroundQuote(text[100:], 100, start, start+10, 240)
	if !strings.Contains(q, "7391-ALPHA") || len(q) > 240 || !utf8.ValidString(q) {
		t.Errorf("quote %q", q)
	}
	q = GroundQuote([]byte("at the end: 7391"), 0, 12, 16, 240)
	if q != "at the end: 7391" {
		t.Errorf("short text quote %q", q)
	}
	long := strings.Repeat("é", 300)
	q = GroundQuote([]byte(long), 0, 0, int64(len(long)), 240)
	if len(q) != 240 || !utf8.ValidString(q) {
		t.Errorf("a match over the bound, one word: %d bytes, valid %v", len(q), utf8.ValidString(q))
	}
	long = strings.Repeat("word ", 60)
	q = GroundQuote([]byte(long), 0, 0, int64(len(long)), 240)
	if len(q) != 239 || !strings.HasSuffix(q, " word") {
		t.Errorf("a match over the bound, of words: %q (%d bytes), want it cut after its last whole word", q, len(q))
	}
	q = GroundQuote([]byte("ab\xffcd 7391 x"), 0, 6, 10, 240)
	if !utf8.ValidString(q) || !strings.Contains(q, "7391") {
		t.Errorf("invalid bytes: %q", q)
	}
}

// TestGroundQuoteWholeWords: the context around a match is cut at white
// space, never inside a word or a number, whichever way the window falls.
func TestGroundQuoteWholeWords(t *testing.T) {
	text := "Dynamic linking should be avoided in 2.85 asymptote builds; the code is 7391-ALPHA, as the manual says on page twelve."
	at := int64(strings.Index(text, "7391-ALPHA"))
	for limit := 12; limit <= len(text)+10; limit++ {
		q := GroundQuote([]byte(text), 0, at, at+10, limit)
		i := strings.Index(text, q)
		if !strings.Contains(q, "7391-ALPHA") || i < 0 || len(q) > limit {
			t.Fatalf("limit %d: quote %q is not a piece of the text holding the match within the limit", limit, q)
		}
		if (i > 0 && text[i-1] != ' ') || (i+len(q) < len(text) && text[i+len(q)] != ' ' && text[i+len(q)] != ',') ||
			strings.TrimSpace(q) != q {
			t.Errorf("limit %d: quote %q cuts a word", limit, q)
		}
	}
}

func TestGroundQuoteParts(t *testing.T) {
	page1 := "The first page ends with a sentence that says the answer begins"
	page2 := "right here at the top of the next page, and the text goes on."
	text := []byte(page1 + "\n\n" + page2 + "\n")
	pages := [][2]int64{{0, int64(len(page1))}, {int64(len(page1) + 2), int64(len(page1) + 2 + len(page2))}}
	// On one page: context from that page only.
	at := int64(len(page1) + 2)
	parts := GroundQuoteParts(text, 0, at, at+10, 240, pages[1:])
	if len(parts) != 1 || parts[0].Text != page2 {
		t.Errorf("a match at the top of page 2: %+v, want page 2's text alone", parts)
	}
	at = int64(strings.Index(page1, "answer"))
	parts = GroundQuoteParts(text, 0, at, at+6, 240, pages[:1])
	if len(parts) != 1 || parts[0].Text != page1 {
		t.Errorf("a match at the bottom of page 1: %+v, want page 1's text alone", parts)
	}
	// Across the boundary: a part a page.
	at = int64(strings.Index(page1, "begins"))
	end := int64(len(page1)+2) + int64(len("right here"))
	parts = GroundQuoteParts(text, 0, at, end, 40, pages)
	if len(parts) != 2 || !strings.HasSuffix(page1, parts[0].Text) || !strings.HasPrefix(page2, parts[1].Text) ||
		!strings.HasSuffix(parts[0].Text, "begins") || !strings.HasPrefix(parts[1].Text, "right here") ||
		parts[0].End != int64(len(page1)) || parts[1].Start != int64(len(page1)+2) {
		t.Errorf("a match across pages: %+v, want the end of page 1 and the top of page 2", parts)
	}
	// A text without pages: one part, as GroundQuote.
	if parts := GroundQuoteParts(text, 0, at, end, 240, nil); len(parts) != 1 || !strings.Contains(parts[0].Text, "begins\n\nright here") {
		t.Errorf("no pages: %+v", parts)
	}
}

func TestIsNoAnswer(t *testing.T) {
	for _, a := range []string{
		"unknown", "Unknown", "UNKNOWN.", " unknown ", `\text{unknown}`, "**Unknown**", "Unknown (the memory holds no answer)",
		"Unknown - not in the text", "N/A", "n/a", "None given", "none given.", "Not found", "Not found in the document",
		"Not mentioned", "Not mentioned in the provided text.", "not stated", "No information", "No information about the author",
		"There is no information about this", "Cannot be determined", "cannot be determined from the memory",
		"It cannot be determined.", "The question cannot be answered from the text", "Cannot be answered", "I don't know",
		"I do not know.", "The document does not mention the date", "The text doesn't state it", "The memory does not contain the answer",
		"Insufficient information", "Not enough information to answer", "unanswerable", "No answer", "Unable to determine",
		"The answer is unknown", "\"unknown\"", "(unknown)", "Not specified", "not provided", "Not available",
	} {
		if !IsNoAnswer(a) {
			t.Errorf("IsNoAnswer(%q) = false, want true", a)
		}
	}
	for _, a := range []string{
		"", "7391-ALPHA", "Unknown Pleasures", "an unknown soldier", "The Unknown Soldier", "None", "0", "No",
		"Paris, not London", "Nothing Compares 2 U", "Notting Hill", "Unclear Waters Inc", "Not Fade Away",
		"the document was signed in 1998", "Nationality unknown to the press: French", "no", "NA",
	} {
		if IsNoAnswer(a) {
			t.Errorf("IsNoAnswer(%q) = true, want false", a)
		}
	}
}
