package docconvtest

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// sectionNumber matches a line that starts with a section number of two
// levels or more and then a word ("2.2.2 Working on input files", "4.1.
// Overview", "A.3 Index"): a numbered section heading, or a line of a
// table of contents. A number of one level ("3 Installation") is left
// out: a numbered list's item or a table's row starts so as often.
var sectionNumber = regexp.MustCompile(`^(?:\d{1,3}|[A-Z])(?:\.\d{1,3}){1,6}\.?[ \t]+\pL`)

// tocLeader matches a table of contents' dot leader and page number at
// a line's end, which HeadingsRunOn leaves out of an entry's length.
var tocLeader = regexp.MustCompile(`\s*(?:\.\s?){4,}\s*\|?\s*(?:\d+|[ivxlcdm]+)$`)

// RunOnLength is the length, in characters, past which a numbered
// heading's line has run on into the text after it.
const RunOnLength = 100

// NumberedHeadings returns the lines of text (a converter's output) that
// start with a section number (see HeadingsRunOn).
func NumberedHeadings(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if sectionNumber.MatchString(strings.TrimSpace(line)) {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// HeadingsRunOn counts the lines of text (a converter's output) that
// start with a section number of two levels or more followed by a word
// ("2.2.2 Working on input files"), and those of them longer than
// RunOnLength characters: the measure of headings that open the
// paragraph below them ("2.2.2 Working on input files LilyPond input
// files are…") instead of standing on their own line. A long heading
// counts as run on too, so a faithful manual rarely reaches zero; a table
// of contents' entry is measured without its dot leader and page number.
func HeadingsRunOn(text string) (numbered, runOn int) {
	headings := NumberedHeadings(text)
	return len(headings), len(runningOn(headings))
}

// RunOnHeadings returns the numbered headings of text that run on (see
// HeadingsRunOn).
func RunOnHeadings(text string) []string {
	return runningOn(NumberedHeadings(text))
}

func runningOn(headings []string) []string {
	var out []string
	for _, l := range headings {
		if utf8.RuneCountInString(tocLeader.ReplaceAllString(l, "")) > RunOnLength {
			out = append(out, l)
		}
	}
	return out
}
