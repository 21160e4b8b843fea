package activitiestest

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
