package docconv_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/docconv"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
	"github.com/memagent/memagent/internal/testdeps"
)

// Book layout of the typeset fixture (docconvtest.BookSource).
const (
	frontPages = docconvtest.BookFrontPages
	bookPages  = docconvtest.BookPages
	factPage   = docconvtest.BookFactPage
)

func bookSource() (string, []string) { return docconvtest.BookSource() }

// typesetBook typesets docconvtest.BookSource with groff's PDF output
// (gropdf).
func typesetBook(t *testing.T) string {
	t.Helper()
	groff := testdeps.Command(t, "groff", "install Debian's groff package (apt-get install groff)")
	testdeps.Command(t, "gropdf", "install Debian's groff package (apt-get install groff; groff-base has no PDF output)")
	out, err := docconvtest.TypesetBook(groff)
	if err != nil {
		t.Fatal(err)
	}
	if keep := os.Getenv("MEMAGENT_KEEP_BOOK"); keep != "" {
		_ = os.WriteFile(keep, out, 0o600)
	}
	path := filepath.Join(t.TempDir(), "book.pdf")
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
