package memagent

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/memagent/memagent/api"
)

// Normalize prepares an answer for comparison the way SQuAD-style
// evaluations do: lowercase, delete ASCII punctuation, drop the words "a",
// "an" and "the", and collapse runs of whitespace to single spaces.
func Normalize(s string) string {
	s = strings.ToLower(s)
	s = strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf && strings.IndexByte(asciiPunctuation, byte(r)) >= 0 {
			return -1
		}
		return r
	}, s)
	s = dropArticles(s)
	return strings.Join(strings.Fields(s), " ")
}

// asciiPunctuation is the set deleted by [Normalize] (Python's
// string.punctuation).
const asciiPunctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// dropArticles replaces every maximal run of word characters that is
// exactly "a", "an" or "the" with a space, matching the regular expression
// \b(a|an|the)\b on Unicode text.
func dropArticles(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	start := -1 // start of the current word run, or -1
	flush := func(end int) {
		switch w := s[start:end]; w {
		case "a", "an", "the":
			b.WriteByte(' ')
		default:
			b.WriteString(w)
		}
		start = -1
	}
	for i, r := range s {
		if isWordRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			flush(i)
		}
		b.WriteRune(r)
	}
	if start >= 0 {
		flush(len(s))
	}
	return b.String()
}

func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)
}

// Score compares prediction with each of golds: it keeps the best of exact
// match, substring match and F1, and counts for Recall the golds the
// prediction contains. An empty (after normalization) prediction scores zero
// everywhere; so does an empty list of golds.
func Score(prediction string, golds []string) api.Scores {
	var best api.Scores
	var bestKey goldRank
	first := true
	pred := Normalize(prediction)
	distinct := make(map[string]bool, len(golds))
	found := 0
	for _, gold := range golds {
		g := Normalize(gold)
		if g != "" && !distinct[g] {
			distinct[g] = true
			if pred != "" && strings.Contains(pred, g) {
				found++
			}
		}
		em := pred != "" && pred == g
		sub := pred != "" && g != "" && (strings.Contains(pred, g) || strings.Contains(g, pred))
		f1 := tokenF1(pred, g)

		best.ExactMatch = best.ExactMatch || em
		best.SubstringMatch = best.SubstringMatch || sub
		best.F1 = max(best.F1, f1)

		if key := (goldRank{em: em, f1: f1, sub: sub}); first || key.better(bestKey) {
			first = false
			bestKey = key
			best.BestGold = gold
		}
	}
	if len(distinct) > 0 {
		best.Recall = float64(found) / float64(len(distinct))
	}
	return best
}

// goldRank orders references for [Scores.BestGold]: exact match first, then
// F1, then substring match.
type goldRank struct {
	em  bool
	f1  float64
	sub bool
}

func (a goldRank) better(b goldRank) bool {
	if a.em != b.em {
		return a.em
	}
	if a.f1 != b.f1 {
		return a.f1 > b.f1
	}
	return a.sub && !b.sub
}

// tokenF1 is the harmonic mean of token precision and recall between two
// normalized strings. Yes/no/no-answer questions get no partial credit: if
// either side is exactly "yes", "no" or "noanswer" and they differ, F1 is 0.
func tokenF1(pred, gold string) float64 {
	if pred != gold && (isClosedAnswer(pred) || isClosedAnswer(gold)) {
		return 0
	}
	predToks := strings.Fields(pred)
	goldToks := strings.Fields(gold)
	if len(predToks) == 0 || len(goldToks) == 0 {
		return 0
	}
	counts := make(map[string]int, len(goldToks))
	for _, t := range goldToks {
		counts[t]++
	}
	same := 0
	for _, t := range predToks {
		if counts[t] > 0 {
			counts[t]--
			same++
		}
	}
	if same == 0 {
		return 0
	}
	precision := float64(same) / float64(len(predToks))
	recall := float64(same) / float64(len(goldToks))
	return 2 * precision * recall / (precision + recall)
}

func isClosedAnswer(s string) bool {
	return s == "yes" || s == "no" || s == "noanswer"
}
