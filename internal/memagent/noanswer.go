package memagent

import (
	"strings"
	"unicode"
)

// IsNoAnswer reports whether an extracted answer says that the question
// cannot be answered rather than answering it: "unknown", "Not mentioned
// in the text.", "N/A", "The document does not state the date", "cannot
// be determined". Such an answer is no answer (answer_found false, no
// citations, scored as empty).
//
// The rule, case-insensitive, after dropping surrounding whitespace,
// quotes, brackets, asterisks and a \text{...} wrapper:
//   - The whole answer is one of the short forms (noAnswerWhole: unknown,
//     none given, n/a, not found, no answer, unanswerable, ...), or starts
//     with one followed by punctuation ("Unknown (the memory is empty)"),
//     never by a word: "Unknown Pleasures" is an answer.
//   - Or its words start with one of the clear phrases (noAnswerLeading:
//     "not mentioned", "not stated", "no information", "cannot be
//     determined", "i don't know", "the text does not mention", ...),
//     whatever follows.
//
// A word such as "unknown" inside an answer ("an unknown soldier") is not
// enough.
func IsNoAnswer(answer string) bool {
	s := strings.ToLower(strings.TrimSpace(answer))
	for {
		t := strings.TrimSpace(s)
		if in, ok := strings.CutPrefix(t, `\text{`); ok && strings.HasSuffix(in, "}") {
			t = strings.TrimSuffix(in, "}")
		}
		t = strings.Trim(t, " \t\r\n\"'“”‘’`*_()[]<>")
		if t == s {
			break
		}
		s = t
	}
	if s == "" {
		return false
	}
	for _, w := range noAnswerWhole {
		rest, ok := strings.CutPrefix(s, w)
		if !ok {
			continue
		}
		rest = strings.TrimLeft(rest, " \t")
		if rest == "" {
			return true
		}
		if r := []rune(rest)[0]; unicode.IsPunct(r) || unicode.IsSymbol(r) {
			return true
		}
	}
	words := " " + strings.Join(strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }), " ") + " "
	for _, p := range noAnswerLeading {
		if strings.HasPrefix(words, " "+p+" ") {
			return true
		}
	}
	return false
}

// noAnswerWhole are the short forms that are no answer as the whole
// answer, or followed by punctuation.
var noAnswerWhole = []string{
	"unknown", "not known", "n/a", "n.a.", "none given", "none found", "none stated", "none mentioned",
	"none provided", "none specified", "not found", "no answer", "no answer found", "unanswerable",
	"not answerable", "not available", "not applicable", "not specified", "not provided", "not given",
	"not stated", "not mentioned", "not determinable", "undetermined", "indeterminate", "no data",
	"unclear", "not clear", "no idea", "nothing found",
}

// noAnswerLeading are the phrases, as lowercase words separated by single
// spaces (punctuation dropped: "don't" is "don t"), that are no answer
// at the start of an answer whatever follows.
var noAnswerLeading = func() []string {
	p := []string{
		"not mentioned", "not stated", "not specified", "not provided", "not given", "not found in",
		"not available in", "not in the text", "not in the document", "not in the memory", "not in the provided", "not known", "not explicitly", "not enough information",
		"no information", "no relevant information", "no mention", "no answer",
		"insufficient information", "there is no information", "there is no mention", "there is not enough",
		"there is insufficient", "there is no answer", "there is no data",
		"cannot be determined", "can not be determined", "can t be determined", "cannot determine",
		"cannot be answered", "can t be answered", "cannot answer", "cannot be found", "could not be determined",
		"could not be found", "it cannot be determined", "it is not possible to determine", "it is unclear",
		"it is not mentioned", "it is not stated", "it is unknown", "unable to determine", "unable to answer",
		"unable to find", "i cannot", "i can t", "i don t know", "i do not know", "i am unable", "i m unable",
		"i could not", "i couldn t", "the answer is unknown", "the answer cannot",
		"the question cannot", "unknown from the", "unknown based on", "unknown according to",
	}
	for _, subject := range []string{"the document", "the text", "the memory", "the context", "the passage",
		"the provided text", "the provided document", "the provided information", "the information provided",
		"the given text", "the source", "the article", "the records", "the record"} {
		for _, neg := range []string{"does not", "doesn t", "did not", "do not"} {
			for _, verb := range []string{"mention", "say", "state", "specify", "contain", "provide", "include",
				"give", "indicate", "reveal", "hold", "have", "list", "name", "identify", "tell"} {
				p = append(p, subject+" "+neg+" "+verb)
			}
		}
	}
	return p
}()
