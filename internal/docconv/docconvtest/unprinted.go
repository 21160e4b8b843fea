package docconvtest

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// longWord is a word of letters alone, as UnprintedLines counts them.
var longWord = regexp.MustCompile(`\pL+`)

// UnprintedLines returns the lines of text (a converter's output) that
// hold a word of six or more letters that reference (pdftotext's text of
// the same PDF) never has, compared without case: the measure of
// characters out of order, such as two lines' glyphs interleaved
// ("astasntadnadrdar"). Shorter words are left out, as they occur by
// chance anywhere; a word split by a line-end hyphen in one text and not
// the other counts, so a manual never reaches zero.
func UnprintedLines(reference, text string) []string {
	printed := map[string]bool{}
	for _, w := range longWord.FindAllString(reference, -1) {
		printed[strings.ToLower(w)] = true
	}
	var out []string
	for _, line := range strings.Split(text, "\n") {
		for _, w := range longWord.FindAllString(line, -1) {
			if utf8.RuneCountInString(w) >= 6 && !printed[strings.ToLower(w)] {
				out = append(out, line)
				break
			}
		}
	}
	return out
}
