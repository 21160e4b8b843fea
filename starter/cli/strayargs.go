package cli

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
)

// strayArgs is the error for arguments left over after the flags of a
// command that takes its document and questions as flags (ask, estimate,
// review): it says which arguments were not read and why, and gives the
// command line that does what they seem to mean. docs and questions are
// what --doc and --question read. nil when args is empty.
//
// The cases, by what the flags read:
//   - neither --doc nor --question: `starter ask FILE "QUESTION"`, the
//     document and the question written as arguments;
//   - --doc but no --question: the question written as an argument, or
//     an unquoted question without its flag;
//   - --question: an unquoted question, whose first word the flag took
//     and whose other words were left over; a first argument naming a
//     file (or s3://) while --doc is missing is the document;
//   - flags written after "--", which are read as arguments.
func strayArgs(cmd *cobra.Command, args, docs, questions []string) error {
	if len(args) == 0 {
		return nil
	}
	name := "starter " + cmd.Name()
	if dash := cmd.ArgsLenAtDash(); dash >= 0 {
		var flags []string
		for _, a := range args[dash:] {
			if len(a) > 1 && a[0] == '-' {
				flags = append(flags, a)
			}
		}
		if len(flags) > 0 {
			return badRequest(fmt.Errorf(`%s came after "--", which makes every word after it an argument, not a flag: put the flags before "--" or drop it`, quoteWords(flags)))
		}
	}
	// The document among the arguments: the first one, when --doc is
	// missing and it names a document or a question follows it.
	var doc string
	rest := args
	if len(docs) == 0 && (len(questions) == 0 && len(args) >= 2 || looksLikeDocument(args[0])) {
		doc, rest = args[0], args[1:]
	}
	fixed := func(qs []string) string {
		line := name
		switch {
		case doc != "":
			line += " --doc " + shellWord(doc)
		case len(docs) == 0:
			line += " --doc FILE"
		}
		for _, d := range docs {
			line += " --doc " + shellWord(d)
		}
		for _, q := range qs {
			line += " --question " + shellWord(q)
		}
		return line + " (and your other flags)"
	}
	joined := strings.Join(rest, " ")
	switch {
	case len(questions) == 0 && doc != "" && joined != "":
		return badRequest(fmt.Errorf("%s takes the document and the question as flags, not as the arguments %s: run %s",
			cmd.Name(), quoteWords(args), fixed([]string{joined})))
	case len(questions) == 0 && joined != "":
		return badRequest(fmt.Errorf("%s takes the question as a flag, not as the arguments %s: run %s",
			cmd.Name(), quoteWords(rest), fixed([]string{joined})))
	case len(questions) == 0:
		return badRequest(fmt.Errorf("%s takes the document as a flag, not as the argument %s, and a question: run %s",
			cmd.Name(), quoteWords(args), fixed([]string{"QUESTION"})))
	case joined == "":
		return badRequest(fmt.Errorf("%s takes the document as a flag, not as the argument %s: run %s",
			cmd.Name(), quoteWords(args), fixed(questions)))
	case len(questions) == 1:
		q := questions[0] + " " + joined
		also := ""
		if doc != "" {
			also = fmt.Sprintf(", and give the document %q with --doc", doc)
		}
		return badRequest(fmt.Errorf("--question read one word, %q, and left %s over: quote the whole question, as one argument%s: run %s",
			questions[0], quoteWords(rest), also, fixed([]string{q})))
	default:
		return badRequest(fmt.Errorf("the arguments %s were left over after the flags: quote each question, as one argument (--question \"Who may terminate?\"); the questions read were %s",
			quoteWords(rest), quoteWords(questions)))
	}
}

// looksLikeDocument says whether an argument names a document: an s3://
// URI or a file or folder that exists.
func looksLikeDocument(arg string) bool {
	if strings.HasPrefix(arg, "s3://") {
		return true
	}
	_, err := os.Stat(arg)
	return err == nil
}

// quoteWords is words quoted and joined by spaces: "a" "b".
func quoteWords(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = fmt.Sprintf("%q", w)
	}
	return strings.Join(q, " ")
}

var plainWord = regexp.MustCompile(`^[A-Za-z0-9_./:@%+=,-]+$`)

// shellWord is s written as one word of a POSIX shell command line.
func shellWord(s string) string {
	if plainWord.MatchString(s) {
		return s
	}
	if !strings.ContainsAny(s, "\"$`\\!") {
		return `"` + s + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
