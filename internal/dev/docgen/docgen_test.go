package docgen

import (
	"strings"
	"testing"
)

// bytesTokenizer counts one token per four bytes, enough to size documents.
type bytesTokenizer struct{}

func (bytesTokenizer) Name() string { return "bytes/4" }
func (bytesTokenizer) TokenLens(s string) []int {
	var lens []int
	for len(s) > 0 {
		n := min(4, len(s))
		lens = append(lens, n)
		s = s[n:]
	}
	return lens
}
func (b bytesTokenizer) Count(s string) int { return len(b.TokenLens(s)) }

func TestNeedle(t *testing.T) {
	for _, tt := range []struct {
		tokens int
		depth  float64
	}{{2000, 0}, {20_000, 0.5}, {20_000, 1}} {
		doc := Needle(bytesTokenizer{}, tt.tokens, tt.depth, 1)
		if n := strings.Count(doc, Fact); n != 1 {
			t.Errorf("tokens %d depth %g: fact appears %d times, want 1", tt.tokens, tt.depth, n)
		}
		got := bytesTokenizer{}.Count(doc)
		// Paragraphs are counted one at a time, so the whole document's
		// count may differ a little at paragraph edges.
		if lo, hi := tt.tokens*98/100, tt.tokens*102/100+200; got < lo || got > hi {
			t.Errorf("tokens %d: document has %d tokens, want %d to %d", tt.tokens, got, lo, hi)
		}
		at := float64(strings.Index(doc, Fact)) / float64(len(doc))
		if at < tt.depth-0.1 || at > tt.depth+0.1 {
			t.Errorf("depth %g: fact at %.2f of the document", tt.depth, at)
		}
		if Needle(bytesTokenizer{}, tt.tokens, tt.depth, 1) != doc {
			t.Error("Needle is not deterministic in its seed")
		}
	}
	for _, w := range strings.Fields(strings.ToLower(strings.Trim(Question, "?"))) {
		for _, f := range fillerWords {
			if len(w) > 3 && w == f {
				t.Errorf("filler word %q also appears in the question", w)
			}
		}
	}
}
