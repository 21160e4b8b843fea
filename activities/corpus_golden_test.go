package activities

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/docconv/docconvtest"
)

// TestAssembleCorpusGolden pins what assembleCorpus writes, logs and
// returns, in order: a corpus of a text ending in a newline, a converted
// PDF (its page map shifted into the stream) and a text without a final
// newline; the same corpus again (reused); a document with invalid UTF-8
// replaced; and the error of each refused input. Run with -update to
// rewrite the file.
func TestAssembleCorpusGolden(t *testing.T) {
	f := newFixture(t, []byte(makeDoc(2)))
	// docconvtest.PDF's bytes vary from run to run; a PDF it made once
	// keeps the keys and ETags below fixed.
	pdf := filepath.Join("testdata", "corpus", "contract.pdf")
	if _, err := os.Stat(pdf); errors.Is(err, fs.ErrNotExist) && *updateGolden {
		if err := os.WriteFile(pdf, docconvtest.PDF(docconvtest.PDFOptions{Pages: 3, FactPage: 2, Fact: docgen.Fact, Seed: 5}), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(pdf)
	if err != nil {
		t.Fatal(err)
	}
	putObject(t, f.store.Store, "s3://docs/contract.pdf", raw)
	putObject(t, f.store.Store, "s3://docs/tail.txt", []byte("The last line has no newline."))
	putObject(t, f.store.Store, "s3://docs/bad.txt", []byte("bad \xff\xfe bytes\n"))
	putObject(t, f.store.Store, "s3://docs/empty.txt", nil)
	store := &recordingStore{Store: f.store.Store}
	f.acts.Store = store
	f.acts.Logger = goldenLog(store)
	f.acts.ReadPrefixes = []string{"s3://docs/"}
	corpus := []string{testDocURI, "s3://docs/contract.pdf", "s3://docs/tail.txt"}
	steps := []struct {
		name   string
		in     actwire.CorpusInput
		limits Limits
	}{
		{name: "new", in: actwire.CorpusInput{Documents: corpus}},
		{name: "reused", in: actwire.CorpusInput{Documents: corpus}},
		{name: "replaced", in: actwire.CorpusInput{Documents: []string{"s3://docs/tail.txt", "s3://docs/bad.txt"}, InvalidUTF8: api.InvalidUTF8Replace}},
		{name: "invalid utf-8", in: actwire.CorpusInput{Documents: []string{testDocURI, "s3://docs/bad.txt"}}},
		{name: "no documents", in: actwire.CorpusInput{}},
		{name: "outside read prefixes", in: actwire.CorpusInput{Documents: []string{testDocURI, "s3://elsewhere/x.txt"}}},
		{name: "missing", in: actwire.CorpusInput{Documents: []string{testDocURI, "s3://docs/none.txt"}}},
		{name: "empty", in: actwire.CorpusInput{Documents: []string{testDocURI, "s3://docs/empty.txt"}}},
		{name: "too large", in: actwire.CorpusInput{Documents: []string{"s3://docs/tail.txt", testDocURI}}, limits: Limits{MaxDocumentBytes: 1400}},
	}
	for _, s := range steps {
		f.acts.Limits = s.limits
		fmt.Fprintf(&store.transcript, "=== step %s\n", s.name)
		out, err := f.acts.assembleCorpus(context.Background(), s.in)
		recordOutcome(t, &store.transcript, out, err)
	}
	// The conversion's time is the one value not a function of the input.
	got := regexp.MustCompile(`"converted_at": "[^"]*"`).ReplaceAll(store.transcript.Bytes(), []byte(`"converted_at": "CONVERTED_AT"`))
	checkGolden(t, "corpus/steps.golden", got)
}
