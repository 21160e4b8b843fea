package docconvtest

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// RunOnLength is the length, in characters, past which a line that starts
// with a section number is a heading run on into the text after it.
const RunOnLength = 100

var (
	// sectionNumber is a line's opening section number of two parts or
	// more ("2.2.2 ", "1.2. ", "A.3 ") followed by a word: a chapter's
	// lone number ("1 ") is left out, as numbered list items look the
	// same.
	sectionNumber = regexp.MustCompile(`^(?:[0-9]{1,3}|[A-Z])(?:\.[0-9]{1,3}){1,5}\.?[ \t]+[\pL"'“‘(]`)
	// dotLeaders mark a table of contents' line (or several of them run
	// together): four dots or more, spaced or not.
	dotLeaders = regexp.MustCompile(`\.{4,}|(?:\. ){3,}\.`)
)

// HeadingsRunOn counts the numbered headings of text (a converter's
// output) and of those the ones run on: a heading is a line that starts
// with a section number of two parts or more ("2.2.2 Working on input
// files"), and it ran on when the line is longer than RunOnLength
// characters, as when it opens its section's first paragraph ("2.2.2
// Working on input files LilyPond input files are…"): the issue's measure
// of structure run together. Each section number counts once (a table of
// contents without dot leaders repeats them), as run on if any of its
// lines is. A line with dot leaders is a table of contents' and is not
// counted. A line of prose that happens to start with a number such as
// "3.5 million" is counted too; manuals rarely have one.
func HeadingsRunOn(text string) (numbered, runOn int) {
	long := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if !sectionNumber.MatchString(line) || dotLeaders.MatchString(line) {
			continue
		}
		number := strings.TrimSuffix(strings.Fields(line)[0], ".")
		long[number] = long[number] || utf8.RuneCountInString(line) > RunOnLength
	}
	for _, on := range long {
		numbered++
		if on {
			runOn++
		}
	}
	return numbered, runOn
}

// RunOnHeadings returns the lines of text that HeadingsRunOn counts as run
// on, each once, in order.
func RunOnHeadings(text string) []string {
	var out []string
	seen := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if !sectionNumber.MatchString(line) || dotLeaders.MatchString(line) || utf8.RuneCountInString(line) <= RunOnLength || seen[line] {
			continue
		}
		seen[line] = true
		out = append(out, line)
	}
	return out
}
