package memagent

import (
	"strconv"
	"strings"
	"unicode"
)

// PaperScores are one answer's scores as the MemAgent paper's evaluation
// scripts compute them (its RULER-HQA tables report SubEM). Each is in
// [0, 1]: EM and SubEM are 0 or 1, F1 is rounded to two decimals, as the
// scripts round every item's metrics before averaging.
type PaperScores struct {
	// EM is 1 when the normalised prediction equals the normalised gold.
	EM float64 `json:"em"`
	// SubEM is 1 when either normalised string contains the other. An
	// empty normalised string is contained in any string, so a prediction
	// that normalises to "" (say "The.") scores 1 against every gold.
	SubEM float64 `json:"sub_em"`
	// F1 is the token F1 of the normalised strings, with no credit between
	// a yes/no/noanswer and anything else.
	F1 float64 `json:"f1"`
}

// ScorePaper scores prediction against one gold answer the way the
// MemAgent evaluation scripts do, which differs from [Score] in three
// ways: there is one gold answer (the scripts take answers[0]), the
// normalisation is Python's to the character ([NormalizePaper]), and
// empty strings count: a prediction or gold that normalises to "" is a
// substring of the other (Python's "" in s), and two such are an exact
// match. A prediction that is empty before normalisation (no answer was
// extracted) scores 0 everywhere, as the scripts skip scoring it.
func ScorePaper(prediction, gold string) PaperScores {
	if prediction == "" {
		return PaperScores{}
	}
	p, g := NormalizePaper(prediction), NormalizePaper(gold)
	out := PaperScores{F1: roundHalfEven2(tokenF1(p, g))}
	if p == g {
		out.EM = 1
	}
	if strings.Contains(g, p) || strings.Contains(p, g) {
		out.SubEM = 1
	}
	return out
}

// PaperF1 is ScorePaper's F1 before the scripts' rounding to two
// decimals: 4/7 rather than 0.57.
func PaperF1(prediction, gold string) float64 {
	if prediction == "" {
		return 0
	}
	return tokenF1(NormalizePaper(prediction), NormalizePaper(gold))
}

// NormalizePaper is the SQuAD normalize_answer of the MemAgent evaluation
// scripts, with Python 3's string semantics: str.lower() (full case
// mapping, so "İ" becomes "i̇" and a word-final "Σ" becomes "ς"), deletion
// of string.punctuation (ASCII only), re.sub(r"\b(a|an|the)\b", " ")
// (Unicode word boundaries), then " ".join(s.split()), where split()
// breaks at Python's whitespace, which includes U+001C–U+001F.
//
// It differs from [Normalize], the default protocol's, only in those
// Python details (lower-casing of U+0130 and final sigma, and the four
// separator controls).
func NormalizePaper(s string) string {
	s = pythonLower(s)
	s = strings.Map(func(r rune) rune {
		if r < 0x80 && strings.IndexByte(asciiPunctuation, byte(r)) >= 0 {
			return -1
		}
		return r
	}, s)
	s = dropArticles(s)
	return strings.Join(strings.FieldsFunc(s, pythonSpace), " ")
}

// pythonSpace reports whether Python's str.split() splits at r: Go's
// Unicode White_Space plus the information separators U+001C–U+001F,
// which Python counts as whitespace (bidirectional class B or S).
func pythonSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// pythonLower is Python 3's str.lower(): the simple lowercase mapping,
// except the two full mappings Python applies beyond it: U+0130 (capital
// I with dot above) becomes "i" + U+0307, and a capital sigma in final
// position becomes U+03C2.
func pythonLower(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return unicode.ToLower(r) != r }) {
		return s
	}
	rs := []rune(s)
	var b strings.Builder
	b.Grow(len(s) + 2)
	for i, r := range rs {
		switch r {
		case 'İ':
			b.WriteString("i\u0307")
		case 'Σ':
			if finalSigma(rs, i) {
				b.WriteRune('ς')
			} else {
				b.WriteRune('σ')
			}
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// finalSigma reports whether the capital sigma at rs[i] is in Unicode's
// Final_Sigma context, as Python tests it: preceded by a cased letter
// (skipping case-ignorable characters) and not followed by one.
func finalSigma(rs []rune, i int) bool {
	j := i - 1
	for j >= 0 && caseIgnorable(rs[j]) {
		j--
	}
	if j < 0 || !cased(rs[j]) {
		return false
	}
	for j = i + 1; j < len(rs) && caseIgnorable(rs[j]); j++ {
	}
	return j == len(rs) || !cased(rs[j])
}

// cased is Unicode's Cased property: Lowercase, Uppercase or Lt.
func cased(r rune) bool {
	return unicode.IsLower(r) || unicode.IsUpper(r) || unicode.IsTitle(r) ||
		unicode.Is(unicode.Other_Lowercase, r) || unicode.Is(unicode.Other_Uppercase, r)
}

// caseIgnorable is Unicode's Case_Ignorable property: general categories
// Mn, Me, Cf, Lm and Sk, and the word-break classes MidLetter, MidNumLet
// and Single_Quote (listed here as Unicode 15 has them; Go has no
// word-break tables).
func caseIgnorable(r rune) bool {
	switch r {
	case '\'', '.', ':', 0x00B7, 0x0387, 0x055F, 0x05F4, 0x2018, 0x2019, 0x2024, 0x2027,
		0xFE13, 0xFE52, 0xFE55, 0xFF07, 0xFF0E, 0xFF1A:
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}

// roundHalfEven2 is Python's round(x, 2): the float nearest to x's exact
// value rounded to two decimals, ties to even (so 0.125 gives 0.12).
func roundHalfEven2(x float64) float64 {
	v, err := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 2, 64), 64)
	if err != nil {
		return x
	}
	return v
}
