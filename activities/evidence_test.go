package activities

import "testing"

// TestPassageLeavesOutWordsCutByTheChunk: a chunk cut between the tokens
// of a word ("…1.9" | "9 | Asymptote…") starts or ends inside it; its
// passage starts and ends on whole words, unless the chunk's edge is the
// text's own.
func TestPassageLeavesOutWordsCutByTheChunk(t *testing.T) {
	text := []byte("9 | Asymptote graphics, which requires the attach")
	for _, tc := range []struct {
		cutStart, cutEnd bool
		want             string
	}{
		{true, true, "| Asymptote graphics, which requires the"},
		{false, true, "9 | Asymptote graphics, which requires the"},
		{true, false, "| Asymptote graphics, which requires the attach"},
		{false, false, string(text)},
	} {
		s, e := wholeWordsAtCuts(text, 0, len(text), tc.cutStart, tc.cutEnd)
		if got := string(text[s:e]); got != tc.want {
			t.Errorf("cut start %v, end %v: %q, want %q", tc.cutStart, tc.cutEnd, got, tc.want)
		}
	}
	if s, e := wholeWordsAtCuts([]byte("word"), 0, 4, true, false); s < e {
		t.Errorf("a chunk of one cut word: passage %d..%d, want none", s, e)
	}
}
