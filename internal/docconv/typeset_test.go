package docconv_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/testdeps"
)

// Book layout of the typeset fixture: four front-matter pages numbered
// i–iv, then body pages numbered from 1, the fact on physical page 17
// (printed 13).
const (
	frontPages = 4
	bookPages  = 24
	factPage   = 17
)

// bookSource is a groff -ms book as a typesetter lays it out: roman
// front matter and /PageLabels (i–iv, then 1, 2, …), running headers that
// differ on odd and even pages and change with the chapter, the page
// number in them, and footnotes whose marks are raised digits glued to a
// word. Each page is one paragraph that starts "Page N." (N physical).
func bookSource() (src string, paragraphs []string) {
	rng := rand.New(rand.NewPCG(7, 25))
	var b strings.Builder
	b.WriteString(".pdfmark /PageLabels << /Nums [ 0 << /S /r >> 4 << /S /D >> ] >> /DOCVIEW\n")
	b.WriteString(".af PN i\n.ds CH\n.OH '''%'\n.EH '%'''\n")
	chapter := func(n int) {
		fmt.Fprintf(&b, ".OH '''Chapter %d: Rivers of the North %%'\n.EH '%%''Writing About Rivers'\n", n)
	}
	for page := 1; page <= bookPages; page++ {
		switch page {
		case frontPages:
			// The page number format and count change for the next page.
			b.WriteString(".af PN 1\n.pn 1\n")
			chapter(1)
		case 14:
			chapter(2)
		}
		text := fmt.Sprintf("Page %d. %s", page, docconvtest.Paragraph(rng, 180))
		if page == factPage {
			text += " " + docgen.Fact
		}
		paragraphs = append(paragraphs, text)
		b.WriteString(".LP\n" + text)
		if page%3 == 0 {
			// A footnote mark glued to the word before it.
			b.WriteString(" The harbor kept a ledger\\**.\n.FS\nThe ledger is lost.\n.FE\n")
			paragraphs[len(paragraphs)-1] += " The harbor kept a ledger."
		}
		b.WriteString("\n")
		if page < bookPages {
			b.WriteString(".bp\n")
		}
	}
	return b.String(), paragraphs
}

// typesetBook typesets bookSource with groff's PDF output (gropdf).
func typesetBook(t *testing.T) string {
	t.Helper()
	groff := testdeps.Command(t, "groff", "install Debian's groff package (apt-get install groff)")
	testdeps.Command(t, "gropdf", "install Debian's groff package (apt-get install groff; groff-base has no PDF output)")
	src, _ := bookSource()
	dir := t.TempDir()
	in := filepath.Join(dir, "book.ms")
	if err := os.WriteFile(in, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(groff, "-Tpdf", "-ms", "-mpdfmark", in)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("groff: %v: %s", err, stderr.String())
	}
	if keep := os.Getenv("MEMAGENT_KEEP_BOOK"); keep != "" {
		_ = os.WriteFile(keep, out, 0o600)
	}
	path := filepath.Join(dir, "book.pdf")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTypesetBook converts a book typeset by a real typesetter: running
// headers and page numbers go, footnote marks come off the words they are
// glued to, no body text is lost, and pages carry their printed labels.
func TestTypesetBook(t *testing.T) {
	path := typesetBook(t)
	var out strings.Builder
	res, err := converter(t).Convert(context.Background(), docconv.FormatPDF, path, &out, nil)
	if err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if res.Map.Pages != bookPages {
		t.Fatalf("pages = %d, want %d", res.Map.Pages, bookPages)
	}

	t.Run("running headers", func(t *testing.T) {
		for _, h := range []string{"Rivers of the North", "Writing About Rivers"} {
			if n := strings.Count(text, h); n > 0 {
				t.Errorf("running header %q kept %d times", h, n)
			}
		}
		if m := regexp.MustCompile(`(?m)^([0-9]+|[ivx]+)$`).FindAllString(text, -1); len(m) > 0 {
			t.Errorf("page numbers kept as paragraphs: %q", m)
		}
	})

	t.Run("footnote marks", func(t *testing.T) {
		if n, want := strings.Count(text, "kept a ledger."), bookPages/3; n != want {
			t.Errorf(`"kept a ledger." %d times, want %d (marks glued: %d)`, n, want, len(regexp.MustCompile(`ledger[0-9]`).FindAllString(text, -1)))
		}
	})

	t.Run("body text", func(t *testing.T) {
		_, paragraphs := bookSource()
		for i, p := range paragraphs {
			if !strings.Contains(strings.Join(strings.Fields(text), " "), p) {
				t.Errorf("page %d's paragraph is not in the text whole", i+1)
			}
		}
		at := strings.Index(text, docgen.Fact)
		if at < 0 {
			t.Fatal("fact not in the text")
		}
		ref := res.Map.Ref(int64(at), int64(at+len(docgen.Fact)))
		if got, want := ref.String(), "p. 13 (PDF p. 17)"; got != want {
			t.Errorf("fact cited as %q, want %q", got, want)
		}
		if ref.First != factPage || ref.FirstLabel != "13" {
			t.Errorf("ref = %+v, want physical page %d labelled 13", ref, factPage)
		}
	})

	t.Run("page labels", func(t *testing.T) {
		want := map[int]string{1: "i", 4: "iv", 5: "1", 17: "13", 24: "20"}
		for _, s := range res.Map.Spans {
			if w, ok := want[s.Number]; ok && s.PageLabel != w {
				t.Errorf("page %d labelled %q, want %q", s.Number, s.PageLabel, w)
			}
		}
	})
}
