package docconv

import (
	"strings"
	"testing"
)

// printOf is the print of a body text.
func printOf(body string) msgPrint {
	var s quoteScan
	for _, l := range strings.Split(body, "\n") {
		s.line(l)
	}
	return s.print()
}

// TestQuoteScanStyles: the quoting styles the ham corpus of 2002 has
// little of (TestEmailThreadsByQuotedText holds the scan to real mail):
// an Outlook reply above its unmarked original, an HTML reply converted
// to text (an attribution, then the original without marks), a quote
// rewrapped by the replying mailer, supercite's "Name> " marks; and what
// is no quote: a list's footer after a rule of underscores, text quoted
// twice (the parent's own quote), a signature.
func TestQuoteScanStyles(t *testing.T) {
	parent := "The lease on the observatory runs until March 2031 and either party\n" +
		"may end it on ninety days notice in writing to the other.\n\n" +
		"-- \nAlice Example, Estates office\n"
	reply := "We should give notice before the summer board meeting then.\n"
	cases := []struct {
		name  string
		body  string
		match bool
	}{
		{"marked", reply + "\nOn Mon, 2 Jan 2006, Alice wrote:\n> The lease on the observatory runs until March 2031 and either party\n> may end it on ninety days notice in writing to the other.\n", true},
		{"rewrapped", reply + "\nAlice <alice@example.org> writes:\n> The lease on the observatory runs until March\n> 2031 and either party may end it on ninety\n> days notice in writing to the other.\n", true},
		{"Outlook", reply + "\n-----Original Message-----\nFrom: Alice\nSent: Monday, January 02, 2006 3:04 PM\nTo: Bob\nSubject: Lease\n\n" + parent, true},
		{"HTML converted", reply + "\nOn Mon, 2 Jan 2006 at 15:04, Alice Example <alice@example.org> wrote:\n\n" + parent, true},
		{"supercite", "Alice> The lease on the observatory runs until March 2031 and either party\nAlice> may end it on ninety days notice in writing to the other.\n\n" + reply, true},
		{"quoted twice", reply + "\n>> The lease on the observatory runs until March 2031 and either party\n>> may end it on ninety days notice in writing to the other.\n", false},
		{"footer", reply + "\n_______________________________________________\nThe lease on the observatory runs until March 2031 and either party\n", false},
		{"no quote", reply, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prints := []msgPrint{printOf(parent), printOf(tc.body)}
			all := func(int) bool { return true }
			got := quoteParents(prints, all, all)[1]
			if (got == 0) != tc.match {
				t.Errorf("parent %d, want a match %v (quoted print %v)", got, tc.match, prints[1].quoted)
			}
			if own := printOf(tc.body).own; tc.name == "Outlook" && len(own) == 0 {
				t.Errorf("the reply's own text left no print")
			}
		})
	}
	// The parent's signature is not its text: a reply quoting only the
	// signature does not match.
	sig := reply + "\n> Alice Example, Estates office of the university\n"
	if p := printOf(parent); len(p.own) == 0 {
		t.Fatal("the parent left no print")
	}
	prints := []msgPrint{printOf(parent), printOf(sig)}
	all := func(int) bool { return true }
	if got := quoteParents(prints, all, all)[1]; got != -1 {
		t.Errorf("a quote of the signature alone: parent %d, want none", got)
	}
}
