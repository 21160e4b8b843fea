package docconvtest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/memagent/memagent/internal/dev/docgen"
)

// Book layout of the typeset fixture (BookSource): four front-matter
// pages numbered i–iv, then body pages numbered from 1, the fact on
// physical page 17 (printed 13).
const (
	BookFrontPages = 4
	BookPages      = 24
	BookFactPage   = 17
)

// BookSource is a groff -ms book as a typesetter lays it out: roman
// front matter and /PageLabels (i–iv, then 1, 2, …), running headers that
// differ on odd and even pages and change with the chapter, the page
// number in them, and footnotes whose marks are raised digits glued to a
// word. Each page is one paragraph that starts "Page N." (N physical).
func BookSource() (src string, paragraphs []string) {
	rng := rand.New(rand.NewPCG(7, 25))
	var b strings.Builder
	b.WriteString(".pdfmark /PageLabels << /Nums [ 0 << /S /r >> 4 << /S /D >> ] >> /DOCVIEW\n")
	b.WriteString(".af PN i\n.ds CH\n.OH '''%'\n.EH '%'''\n")
	chapter := func(n int) {
		fmt.Fprintf(&b, ".OH '''Chapter %d: Rivers of the North %%'\n.EH '%%''Writing About Rivers'\n", n)
	}
	for page := 1; page <= BookPages; page++ {
		switch page {
		case BookFrontPages:
			// The page number format and count change for the next page.
			b.WriteString(".af PN 1\n.pn 1\n")
			chapter(1)
		case 14:
			chapter(2)
		}
		text := fmt.Sprintf("Page %d. %s", page, Paragraph(rng, 180))
		if page == BookFactPage {
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
		if page < BookPages {
			b.WriteString(".bp\n")
		}
	}
	return b.String(), paragraphs
}

// TypesetBook typesets BookSource with groff (the path of the groff
// command; its PDF output, gropdf, must be installed) and returns the PDF.
func TypesetBook(groff string) ([]byte, error) {
	src, _ := BookSource()
	dir, err := os.MkdirTemp("", "memagent-book-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "book.ms")
	if err := os.WriteFile(in, []byte(src), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(groff, "-Tpdf", "-ms", "-mpdfmark", in)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		return nil, fmt.Errorf("groff: %v: %s", err, stderr.String())
	}
	return out, nil
}
