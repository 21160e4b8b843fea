package docgen

import (
	"strings"
	"testing"
	"unicode"
)

// factsStopwords are the words an extractive reader ignores; the rest must
// tie each question to its own fact only.
var factsStopwords = func() map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.Fields(`a an the and or of in on at to for is was what who when how does do be by it its`) {
		set[w] = true
	}
	return set
}()

func factsWords(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if !factsStopwords[w] && len(w) > 1 {
			out = append(out, w)
		}
	}
	return out
}

func TestFactsAreIndependent(t *testing.T) {
	facts := Facts()
	filler := map[string]bool{}
	for _, w := range fillerWords {
		filler[w] = true
	}
	for i, f := range facts {
		if !strings.Contains(f.Text, f.Answer) {
			t.Errorf("fact %d %q does not hold its answer %q", i, f.Text, f.Answer)
		}
		for _, w := range factsWords(f.Question) {
			if filler[w] {
				t.Errorf("question %d shares %q with the filler", i, w)
			}
			for j, g := range facts {
				if j != i && strings.Contains(" "+strings.Join(factsWords(g.Text), " ")+" ", " "+w+" ") {
					t.Errorf("question %d shares %q with fact %d", i, w, j)
				}
			}
		}
	}
}

func TestMultiNeedle(t *testing.T) {
	facts := Facts()[:10]
	const tokens = 50_000
	doc, placed := MultiNeedle(bytesTokenizer{}, tokens, facts, 7)
	if len(placed) != len(facts) {
		t.Fatalf("placed %d facts, want %d", len(placed), len(facts))
	}
	if again, _ := MultiNeedle(bytesTokenizer{}, tokens, facts, 7); again != doc {
		t.Error("the same seed gave another document")
	}
	if got := (bytesTokenizer{}).Count(doc); got < tokens*98/100 || got > tokens*102/100+200 {
		t.Errorf("document has %d tokens, want about %d", got, tokens)
	}
	for i, p := range placed {
		if p.Text != facts[i].Text || doc[p.Start:p.End] != p.Text {
			t.Errorf("fact %d: bytes [%d,%d) hold %q, want %q", i, p.Start, p.End, doc[p.Start:p.End], facts[i].Text)
		}
		if n := strings.Count(doc, p.Text); n != 1 {
			t.Errorf("fact %d appears %d times", i, n)
		}
		want := (float64(i) + 0.5) / float64(len(facts))
		if at := float64(p.Start) / float64(len(doc)); at < want-0.03 || at > want+0.03 {
			t.Errorf("fact %d at depth %.3f, want about %.3f", i, at, want)
		}
		// A whole sentence: its own paragraph's end follows.
		if !strings.HasPrefix(doc[p.End:], "\n\n") {
			t.Errorf("fact %d is not followed by a paragraph break", i)
		}
	}
	t.Run("short documents still hold every fact", func(t *testing.T) {
		doc, placed := MultiNeedle(bytesTokenizer{}, 10, facts, 1)
		if len(placed) != len(facts) || !strings.Contains(doc, facts[9].Text) {
			t.Errorf("placed %d of %d facts", len(placed), len(facts))
		}
	})
}
