package docconvtest

import (
	"fmt"
	"strings"
	"testing"
)

// TestHTMLPageLeaks: a navigation panel that names the pages around each
// page (so no two pages' panels are the same) is found by its skeleton in
// the pages' own text, on the one page whose converted text keeps it; a
// page's title, which the other pages' menus repeat, and a keyword that
// reads like a label in another case are not navigation.
func TestHTMLPageLeaks(t *testing.T) {
	const n = 8
	names := make([]string, n)
	pages := make([][]byte, n)
	texts := make([]string, n)
	words := []string{"Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot", "Golf", "Hotel"}
	prose := []string{"Apples grow on trees in autumn.", "Rivers run to the sea.", "Snow falls in winter, quietly.",
		"Bridges span wide valleys.", "Clocks measure passing hours.", "Owls hunt by night.", "Ships carry heavy cargo.",
		"Bees make honey from nectar."}
	title := func(i int) string { return "The " + words[i] + " command" }
	for i := range n {
		names[i] = fmt.Sprintf("p%d.html", i)
		var menu strings.Builder
		for j := range n {
			fmt.Fprintf(&menu, `<li><a href="p%d.html">%s</a></li>`, j, title(j))
		}
		panel := fmt.Sprintf(`<div class="nav-panel"><p>Next: <a rel="next" href="n">%s</a>, Previous: <a rel="prev" href="p">%s</a>, Up: <a rel="up" href="u">Top</a> [<a href="c">Contents</a>][<a href="i">Index</a>]</p></div>`,
			title((i+1)%n), title((i+n-1)%n))
		keyword := ""
		if i == 5 {
			keyword = "NEXT" // FETCH's keyword, not a link to the next page
		}
		body := fmt.Sprintf("<h2>%s</h2><p>%s</p><pre>%s</pre>", title(i), prose[i], keyword)
		pages[i] = []byte("<html><body>" + panel + `<ul class="menu">` + menu.String() + "</ul>" + body + "</body></html>")
		texts[i] = fmt.Sprintf("%s\n\n%s\n\n%s\n", title(i), prose[i], keyword)
	}
	if l := HTMLPageLeaks(names, pages, texts); len(l.Lines) != 0 {
		t.Errorf("leaks in clean text: %q", l.Lines)
	}
	texts[3] = fmt.Sprintf("Next: %s, Previous: %s, Up: Top [Contents][Index]\n\n", title(4), title(2)) + texts[3]
	l := HTMLPageLeaks(names, pages, texts)
	want := fmt.Sprintf("p3.html: %q", maskCase(fmt.Sprintf("Next: %s, Previous: %s, Up: Top [Contents][Index]", title(4), title(2))))
	if len(l.Lines) != 1 || l.Lines[0] != want {
		t.Errorf("leaks %q, want [%s]", l.Lines, want)
	}
	if l.Pages != n {
		t.Errorf("%d pages, want %d", l.Pages, n)
	}
	// Repetition among the converted texts alone sees no panel: each is
	// another page's.
	if l := HTMLLeaks(names, texts); len(l.Lines) != 0 {
		t.Errorf("HTMLLeaks: %q", l.Lines)
	}
}
