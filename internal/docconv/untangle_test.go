package docconv

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readRowGlyphs reads a row's glyphs as testdata/rows keeps them: one a
// line, `'r' i=INDEX sp=BOOL L=x R=x B=y T=y`, after a comment naming the
// manual and page they were read from.
func readRowGlyphs(t *testing.T, name string) []Glyph {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "rows", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var gs []Glyph
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		var g Glyph
		if _, err := fmt.Sscanf(line, "  '%c' i=%d sp=%t L=%f R=%f B=%f T=%f", &g.R, &g.Index, &g.SpaceBefore, &g.Left, &g.Right, &g.Bottom, &g.Top); err != nil {
			t.Fatalf("%s: %q: %v", name, line, err)
		}
		gs = append(gs, g)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return gs
}

// TestCellsDrawnOverEachOtherKeptApart reads table rows of dblatex's whose
// cells run on under the next: their glyphs, put left to right,
// interleaved ("ssh-askpassa(1sk)s user", "full-upgradedist-uppgarckaadgees")
// and the converted text held words the page does not show.
func TestCellsDrawnOverEachOtherKeptApart(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"dblatex-overrun.txt", "ssh-askpass(1) asks user for a pass phrase for ssh-add (plain X)"},
		{"dblatex-overdrawn.txt", "full-upgrade dist-upgrade packages if needed"},
	} {
		lines := LayoutPage(readRowGlyphs(t, c.file), 595)
		var got []string
		for _, l := range lines {
			got = append(got, l.Text)
		}
		text := strings.Join(got, " | ")
		if !strings.Contains(text, c.want) {
			t.Errorf("%s: %q, want it to hold %q", c.file, text, c.want)
		}
	}
}

// TestTightWordSpaceOfAJustifiedLine reads a line of groff's whose word
// space between "any" and "jobs" is narrower than a fifth of the line's
// height and has no space in the text stream: the line's other word
// spaces say it is one.
func TestTightWordSpaceOfAJustifiedLine(t *testing.T) {
	lines := LayoutPage(readRowGlyphs(t, "groff-tight-space.txt"), 612)
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1", len(lines))
	}
	if want := "If any jobs are running"; !strings.Contains(lines[0].Text, want) {
		t.Errorf("%q, want it to hold %q", lines[0].Text, want)
	}
}

// TestUntangleLeavesSideBySideRunsAlone: a row drawn in an order other
// than left to right, its pieces side by side (a right-aligned page number
// drawn first), reads as before.
func TestUntangleLeavesSideBySideRunsAlone(t *testing.T) {
	var gs []Glyph
	add := func(s string, left float64, index int) {
		for i, r := range s {
			gs = append(gs, Glyph{R: r, Left: left + float64(i)*5, Right: left + float64(i+1)*5, Bottom: 100, Top: 110, Index: index + i})
		}
	}
	add("page", 300, 1)
	add("Chapter", 50, 10)
	rows := groupRows(gs)
	if len(rows) != 1 {
		t.Fatalf("%d rows", len(rows))
	}
	if got := rows[0].text(nil); got != "Chapter page" {
		t.Errorf("%q, want %q", got, "Chapter page")
	}
}

// TestGlyphsPastThePageEdgeDropped reads a line of dblatex's whose path
// runs past the page's right edge: the page shows "~/.local/share/keyr",
// and so does the text, as pdftotext's; the glyphs beyond are not
// printed ("keyrings" was a word the page does not show).
func TestGlyphsPastThePageEdgeDropped(t *testing.T) {
	gs := Visible(readRowGlyphs(t, "dblatex-past-edge.txt"), PageBox{Right: 595.28, Top: 841.89})
	lines := LayoutPageSize(gs, 595.28, 841.89)
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1", len(lines))
	}
	got := lines[0].Text
	if !strings.HasSuffix(got, "in the keyring ~/.local/share/keyr") {
		t.Errorf("%q, want it to end with the page's edge, %q", got, "in the keyring ~/.local/share/keyr")
	}
	// A glyph astride the edge is shown in part and kept; an unknown box
	// keeps every glyph.
	if n := len(Visible([]Glyph{{R: 'a', Left: 590, Right: 600, Bottom: 10, Top: 20}}, PageBox{Right: 595, Top: 842})); n != 1 {
		t.Errorf("a glyph astride the edge: %d kept, want 1", n)
	}
	if n := len(Visible(readRowGlyphs(t, "dblatex-past-edge.txt"), PageBox{})); n != 109 {
		t.Errorf("no box: %d glyphs kept, want all 109", n)
	}
}

// TestKernedSpaceIsNoWordBreak reads a justified line of Ghostscript's
// whose "Nevertheless" holds the PDF's own space, with the "e" after it
// drawn back over the "v": the page shows one word.
func TestKernedSpaceIsNoWordBreak(t *testing.T) {
	lines := LayoutPage(readRowGlyphs(t, "groff-kern-space.txt"), 595)
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1", len(lines))
	}
	if want := "issues automatically. Nevertheless, the pdfmark macro"; !strings.Contains(lines[0].Text, want) {
		t.Errorf("%q, want it to hold %q", lines[0].Text, want)
	}
}
