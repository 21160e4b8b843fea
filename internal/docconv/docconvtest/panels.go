package docconvtest

import (
	"regexp"
	"strings"
)

var (
	// panelStart opens a Texinfo HTML navigation panel's line.
	panelStart = regexp.MustCompile(`^(?:Next|Previous|Prev|Up|Forward|Back): \S`)
	// panelMore is what else such a line holds: another of the panel's
	// links, or its [Contents] and [Index] buttons.
	panelMore = regexp.MustCompile(`, (?:Next|Previous|Prev|Up): \S|\[(?:Contents|Index)\]`)
)

// TexinfoPanels returns the lines of text (a converter's output of HTML)
// that are a Texinfo navigation panel, as makeinfo writes one at the top
// (and bottom) of each node: "Next: Ranges, Previous: Arrays, Up: Top
// [Contents][Index]". HTMLLeaks finds navigation by repetition across a
// manual's files, which misses these: each panel names its own
// neighbours, and a manual in one file repeats them within it. A line
// counts when it starts with one of the panel's labels and holds another
// label or a [Contents] or [Index] button, so a sentence that starts
// "Next: " does not.
func TexinfoPanels(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if panelStart.MatchString(line) && panelMore.MatchString(line) {
			out = append(out, line)
		}
	}
	return out
}
