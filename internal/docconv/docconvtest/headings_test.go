package docconvtest

import (
	"strings"
	"testing"
)

func TestHeadingsRunOn(t *testing.T) {
	long := "2.2.2 Working on input files LilyPond input files are similar to source files in many common programming languages."
	tests := []struct {
		name            string
		text            string
		numbered, runOn int
	}{
		{"heading on its own line", "2.2.2 Working on input files\n\nLilyPond input files are similar.", 1, 0},
		{"heading run on (the issue's)", long, 1, 1},
		{"Sphinx's trailing dot", "1.2. Installing Sphinx", 1, 0},
		{"appendix", "A.3 Copying This Manual", 1, 0},
		{"indented", "   3.1 Overview", 1, 0},
		{"chapter number alone is a list item too", "1 Introduction\n2. Second item", 0, 0},
		{"table of contents entry", "2.2.2 Working on input files . . . . . . . . . 15\n4.1 Notes .......... xii", 0, 0},
		{"table of contents run together", "6.10 Implicit scaling . . . . . . . . . 63 6.11 Functions . . . . . . . . . 64 6.12 Arrays . . . . . . . . . 71", 0, 0},
		{"a number once, run on if any line is", "2.1 Unix\n3.1 Drawing\n\n2.1 Unix is long enough to run past one hundred characters of text, as a heading run on into its first paragraph would be.\n3.1 Drawing", 2, 1},
		{"a number alone", "2.24.1\n3.5 %", 0, 0},
		{"a number inside a line", "See section 2.2.2 Working on input files, which is long enough to run past one hundred characters of text.", 0, 0},
		{"exactly the limit", "9.9 " + strings.Repeat("a", RunOnLength-4), 1, 0},
		{"one past the limit", "9.9 " + strings.Repeat("é", RunOnLength-3), 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, r := HeadingsRunOn(tt.text)
			if n != tt.numbered || r != tt.runOn {
				t.Errorf("HeadingsRunOn(%q) = %d, %d; want %d, %d", tt.text, n, r, tt.numbered, tt.runOn)
			}
		})
	}
}
