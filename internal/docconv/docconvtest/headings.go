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
	// contentsEntry is a table of contents' line: dot leaders and a page
	// number.
	contentsEntry = regexp.MustCompile(`(?:\.\s*){3,}[0-9ivxlc]+$`)
)

// HeadingsRunOn counts the lines of text (a converter's output) that
// start with a section number of two parts or more, as a numbered
// heading does ("2.2.2 Working on input files"), and of those the ones
// longer than RunOnLength characters: a heading that opens its section's
// first paragraph ("2.2.2 Working on input files LilyPond input files
// are…"), the issue's measure of structure run together. A table of
// contents' entry (dot leaders, then a page number) is no heading and is
// not counted. A line of prose that happens to start with a number such
// as "3.5 million" is counted too; manuals rarely have one.
func HeadingsRunOn(text string) (numbered, runOn int) {
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if !sectionNumber.MatchString(line) || contentsEntry.MatchString(line) {
			continue
		}
		numbered++
		if utf8.RuneCountInString(line) > RunOnLength {
			runOn++
		}
	}
	return numbered, runOn
}
