package cli

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestStrayArgs: arguments left over after ask's, estimate's and review's
// flags get a message that says what was not read and the command line
// that reads it, never "quote the question" when no question was given.
func TestStrayArgs(t *testing.T) {
	page := writeFile(t, t.TempDir(), "page.txt", []byte("Either party may terminate.\n"))
	for _, tc := range []struct {
		name    string
		args    []string
		want    []string
		notWant string
	}{
		{"document and question as arguments", []string{"ask", page, "Who may terminate?"},
			[]string{"ask takes the document and the question as flags, not as the arguments " + `"` + page + `" "Who may terminate?"`,
				"run starter ask --doc " + page + ` --question "Who may terminate?"`}, "quote"},
		{"a missing document as an argument", []string{"ask", "contract.txt", "Who may terminate?"},
			[]string{`--doc contract.txt --question "Who may terminate?"`}, "quote"},
		{"s3 document as an argument", []string{"ask", "s3://b/k.txt", "--question", "Who?"},
			[]string{`takes the document as a flag, not as the argument "s3://b/k.txt"`, `run starter ask --doc s3://b/k.txt --question "Who?"`}, "quote"},
		{"document as an argument, flags after it", []string{"ask", page, "--question", "Who may terminate?"},
			[]string{"takes the document as a flag", "--doc " + page + ` --question "Who may terminate?"`}, "quote"},
		{"question without its flag", []string{"ask", "--doc", page, "Who may terminate?"},
			[]string{`ask takes the question as a flag, not as the arguments "Who may terminate?"`, `--doc ` + page + ` --question "Who may terminate?"`}, "quote"},
		{"question alone", []string{"ask", "Who may terminate?"},
			[]string{`takes the question as a flag`, `run starter ask --doc FILE --question "Who may terminate?"`}, ""},
		{"unquoted question", []string{"ask", "--doc", page, "--question", "Who", "may", "terminate?"},
			[]string{`--question read one word, "Who", and left "may" "terminate?" over: quote the whole question`, `--question "Who may terminate?"`}, ""},
		{"document as an argument, unquoted question", []string{"ask", page, "--question", "Who", "may"},
			[]string{`--question read one word, "Who", and left "may" over: quote the whole question, as one argument, and give the document "` + page + `" with --doc`,
				"run starter ask --doc " + page + ` --question "Who may"`}, ""},
		{"flags after --", []string{"ask", "--doc", page, "--", "--question", "Who?"},
			[]string{`"--question" came after "--"`, `put the flags before "--"`}, ""},
		{"estimate: document and question as arguments", []string{"estimate", page, "How much?"},
			[]string{"estimate takes the document and the question as flags", `--question "How much?"`}, "quote"},
		{"review: unquoted question among several", []string{"review", "--doc", page, "--question", "Who", "may", "terminate?", "--question", "Which law?"},
			[]string{`the arguments "may" "terminate?" were left over after the flags: quote each question`, `"Who" "Which law?"`}, ""},
		{"review: questions file and an argument", []string{"review", "--questions", filepath.Join(t.TempDir(), "q.txt"), page},
			[]string{`the arguments "` + page + `" were left over`, "--questions", "--doc FILE"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), tc.args, io.Discard, io.Discard)
			if exitCode(err) != ExitBadInput {
				t.Fatalf("starter %q: %v (exit %d), want exit %d", tc.args, err, exitCode(err), ExitBadInput)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("starter %q:\n got %s\nwant it to contain %s", tc.args, err, w)
				}
			}
			if tc.notWant != "" && strings.Contains(err.Error(), tc.notWant) {
				t.Errorf("starter %q: %s\nsays %q", tc.args, err, tc.notWant)
			}
		})
	}
}

// TestImageDocumentAdvice: a local image given to ask or review is refused
// before anything is connected, with the img2pdf command for the path as
// given, not with the advice to run another OCR tool first.
func TestImageDocumentAdvice(t *testing.T) {
	dir := t.TempDir()
	png := writeFile(t, dir, "page.png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x00\x00\x00\x00"))
	t.Setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1")
	for _, args := range [][]string{
		{"ask", "--doc", png, "--question", "What does the page say?"},
		{"review", "--doc", png, "--question", "What does the page say?"},
	} {
		err := run(context.Background(), args, io.Discard, io.Discard)
		want := "document " + png + " is an image, which memagent does not read as it is: wrap it in a PDF (img2pdf " + png + " -o " +
			filepath.Join(dir, "page.pdf") + ") and ask about the PDF; memagent reads its page by OCR (--ocr auto, the default)"
		if exitCode(err) != ExitBadInput || err.Error() != want {
			t.Errorf("starter %s:\n got %v (exit %d)\nwant %s (exit %d)", args[0], err, exitCode(err), want, ExitBadInput)
		}
	}
}
