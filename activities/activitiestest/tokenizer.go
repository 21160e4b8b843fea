package activitiestest

import (
	"fmt"
	"strings"
)

// WordTokenizer counts one token per word with its trailing whitespace, so
// chunk sizes and prompt budgets in tests are easy to compute by hand. It
// satisfies memagent.Tokenizer.
type WordTokenizer struct{}

// Name implements memagent.Tokenizer.
func (WordTokenizer) Name() string { return "words" }

// TokenLens implements memagent.Tokenizer.
func (WordTokenizer) TokenLens(s string) []int {
	var lens []int
	start := 0
	for i := 0; i < len(s); i++ {
		space := s[i] == ' ' || s[i] == '\n'
		if space && (i+1 == len(s) || (s[i+1] != ' ' && s[i+1] != '\n')) {
			lens = append(lens, i+1-start)
			start = i + 1
		}
	}
	if start < len(s) {
		lens = append(lens, len(s)-start)
	}
	return lens
}

// Count implements memagent.Tokenizer.
func (w WordTokenizer) Count(s string) int { return len(w.TokenLens(s)) }

// LineDoc returns lines of 100 words each, "wNNN" then filler: with
// WordTokenizer and chunk_tokens 100, line N is chunk N and starts with its
// marker.
func LineDoc(lines int) string {
	var b strings.Builder
	for i := 0; i < lines; i++ {
		fmt.Fprintf(&b, "w%03d", i)
		for j := 0; j < 99; j++ {
			b.WriteString(" filler")
		}
		b.WriteString("\n")
	}
	return b.String()
}
