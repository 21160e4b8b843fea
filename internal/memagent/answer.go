package memagent

import "strings"

// Answer extraction methods reported in [Answer.Method].
const (
	MethodBoxed    = "boxed"
	MethodAnswerIs = "answer_is"
)

// Answer is what [ExtractAnswer] found in a completion.
type Answer struct {
	// Text is the extracted answer, trimmed of surrounding whitespace.
	Text string `json:"text"`
	// Found reports whether any rule produced a non-empty answer.
	Found bool `json:"found"`
	// Method names the rule that fired: "boxed", "answer_is", or "" when
	// nothing was found.
	Method string `json:"method"`
}

const (
	thinkClose   = "</think>"
	boxedOpen    = `\boxed{`
	answerIsCue  = "the answer is"
	answerIsTrim = " \t"
)

// ExtractAnswer pulls the final answer out of a model completion. It never
// fails: when no rule applies it returns Answer{Found: false}.
//
// Rules, in order:
//   - If the completion contains "</think>", only the text after the last
//     "</think>" is considered (reasoning models think before answering).
//   - The content of the last \boxed{...} whose braces balance, so
//     \boxed{\frac{1}{2}} gives \frac{1}{2}. A backslash escapes the next
//     character, so \{ and \} do not count as braces. An unclosed or empty
//     box is skipped in favour of an earlier complete one.
//   - Otherwise the rest of the line after the last "the answer is" (ASCII
//     case-insensitive), with a leading colon, surrounding spaces and one
//     final period removed.
func ExtractAnswer(completion string) Answer {
	text := completion
	if i := strings.LastIndex(text, thinkClose); i >= 0 {
		text = text[i+len(thinkClose):]
	}
	if s, ok := lastBoxed(text); ok {
		return Answer{Text: s, Found: true, Method: MethodBoxed}
	}
	if s, ok := afterAnswerIs(text); ok {
		return Answer{Text: s, Found: true, Method: MethodAnswerIs}
	}
	return Answer{}
}

// lastBoxed returns the trimmed content of the last complete, non-empty
// \boxed{...} in text.
func lastBoxed(text string) (string, bool) {
	end := len(text)
	for {
		i := strings.LastIndex(text[:end], boxedOpen)
		if i < 0 {
			return "", false
		}
		if content, ok := balancedContent(text[i+len(boxedOpen):]); ok {
			if content = strings.TrimSpace(content); content != "" {
				return content, true
			}
		}
		end = i
	}
}

// balancedContent returns the text before the brace that closes an already
// opened brace, or false if it is never closed.
func balancedContent(s string) (string, bool) {
	depth := 1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++ // the escaped character is literal
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return s[:i], true
			}
		}
	}
	return "", false
}

// afterAnswerIs returns the rest of the line after the last "the answer is".
func afterAnswerIs(text string) (string, bool) {
	i := strings.LastIndex(asciiLower(text), answerIsCue)
	if i < 0 {
		return "", false
	}
	rest := text[i+len(answerIsCue):]
	if nl := strings.IndexAny(rest, "\r\n"); nl >= 0 {
		rest = rest[:nl]
	}
	rest = strings.TrimLeft(rest, answerIsTrim)
	rest = strings.TrimPrefix(rest, ":")
	rest = strings.TrimSpace(rest)
	rest = strings.TrimSuffix(rest, ".")
	rest = strings.TrimSpace(rest)
	return rest, rest != ""
}

// asciiLower lowercases ASCII letters only, so byte offsets are preserved.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}
