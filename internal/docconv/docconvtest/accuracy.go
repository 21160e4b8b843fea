package docconvtest

import (
	"regexp"
	"slices"
	"strings"
)

// WordsOf splits text into the words OCR accuracy is counted in: white
// space apart, typographic quotes, dashes and ligatures as ASCII, and a
// word broken at a line's end by a hyphen joined again (pdftotext keeps
// the break; the converter joins it), hyphens dropped (both sides then
// read "copy-constructors" and "copyconstructors" alike), and a table's
// cell separator (a bar on its own) left out.
func WordsOf(text string) []string {
	text = regexp.MustCompile(`(\pL)-\n(\pL)`).ReplaceAllString(text, "$1$2")
	text = strings.NewReplacer("‘", "'", "’", "'", "“", `"`, "”", `"`, "`", "'", "–", " ", "—", " ", "−", "",
		"ﬁ", "fi", "ﬂ", "fl", "ﬀ", "ff", "ﬃ", "ffi", "ﬄ", "ffl", "•", " ", "-", "").Replace(text)
	// A bar on its own is the converter's cell separator (" | "), no word.
	return slices.DeleteFunc(strings.Fields(text), func(w string) bool { return w == "|" })
}

// WordAccuracy is the share of the reference's words the OCR read right:
// 1 - (word-level edit distance) / (reference words), at least 0.
func WordAccuracy(ref, got []string) float64 {
	if len(ref) == 0 {
		return 0
	}
	prev := make([]int, len(got)+1)
	cur := make([]int, len(got)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ref); i++ {
		cur[0] = i
		for j := 1; j <= len(got); j++ {
			cost := 1
			if ref[i-1] == got[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return max(0, 1-float64(prev[len(got)])/float64(len(ref)))
}
