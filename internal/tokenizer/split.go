package tokenizer

import (
	"sync"
	"unicode"
	"unicode/utf8"
)

// The pre-tokenization patterns (cl100kPattern, qwenPattern, o200kPattern)
// are run by tiktoken-go with github.com/dlclark/regexp2, a backtracking
// engine with .NET semantics that allocates per match and per piece. The
// splitter below cuts text into exactly the pieces regexp2 finds with
// those patterns, on valid UTF-8, by following the order in which regexp2
// tries the alternatives and backtracks within each. Its character classes
// are regexp2's: \p{..} are Go's unicode tables, \s is unicode.IsSpace,
// and (?i:'s|...) compares unicode.ToLower of the text's characters.
// split_test.go checks it against regexp2 itself, exhaustively for the
// character classes and by fuzzing and real text for the pieces.

// Character class bits of a rune.
const (
	clsL  uint16 = 1 << iota // \p{L}
	clsN                     // \p{N}
	clsS                     // \s (unicode.IsSpace)
	clsNL                    // \r or \n
	clsU                     // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] (o200k)
	clsW                     // [\p{Ll}\p{Lm}\p{Lo}\p{M}] (o200k)
	clsM                     // \p{M} (runClass)
	clsP                     // [^\r\n\p{L}\p{N}]: the optional first character of a word
	clsO                     // [^\s\p{L}\p{N}]: punctuation and symbols
)

// classOf returns the class bits of r from Go's Unicode tables, as
// regexp2 tests them.
func classOf(r rune) uint16 {
	var c uint16
	if unicode.Is(unicode.L, r) {
		c |= clsL
	}
	if unicode.Is(unicode.N, r) {
		c |= clsN
	}
	if unicode.IsSpace(r) {
		c |= clsS
	}
	if r == '\r' || r == '\n' {
		c |= clsNL
	}
	isM := unicode.Is(unicode.M, r)
	if isM {
		c |= clsM
	}
	lm, lo := unicode.Is(unicode.Lm, r), unicode.Is(unicode.Lo, r)
	if unicode.Is(unicode.Lu, r) || unicode.Is(unicode.Lt, r) || lm || lo || isM {
		c |= clsU
	}
	if unicode.Is(unicode.Ll, r) || lm || lo || isM {
		c |= clsW
	}
	if c&(clsNL|clsL|clsN) == 0 {
		c |= clsP
	}
	if c&(clsS|clsL|clsN) == 0 {
		c |= clsO
	}
	return c
}

// classTableSize is the number of runes whose classes are tabulated: the
// Basic Multilingual Plane and the Supplementary Multilingual Plane (emoji,
// mathematical letters); runes above it (rare CJK) are looked up each
// time. Tabulating takes about 15 ms once per process, and 256 KiB.
const classTableSize = 0x20000

// classTable holds classOf for every rune below classTableSize.
var classTable = sync.OnceValue(func() *[classTableSize]uint16 {
	var t [classTableSize]uint16
	for r := range t {
		t[r] = classOf(rune(r))
	}
	return &t
})

// classAt returns the class bits and the byte length of the rune at
// text[i], from table. Invalid UTF-8 is classed as U+FFFD, one byte at a
// time, as utf8.DecodeRuneInString decodes it.
func classAt(table *[classTableSize]uint16, text string, i int) (uint16, int) {
	if b := text[i]; b < utf8.RuneSelf {
		return table[b], 1
	}
	r, n := utf8.DecodeRuneInString(text[i:])
	if r < classTableSize {
		return table[r], n
	}
	return classOf(r), n
}

// Split pattern kinds.
const (
	splitCL100K = iota // cl100kPattern; qwenPattern with maxDigits 1
	splitO200K         // o200kPattern
)

// splitter finds the pieces of one split pattern.
type splitter struct {
	kind int
	// maxDigits is the most digits a piece of digits holds: 3 for
	// \p{N}{1,3}, 1 for Qwen's \p{N}.
	maxDigits int
	cls       *[classTableSize]uint16
}

func newSplitter(kind, maxDigits int) *splitter {
	return &splitter{kind: kind, maxDigits: maxDigits, cls: classTable()}
}

// at returns the class bits and the byte length of the rune at text[i].
func (s *splitter) at(text string, i int) (uint16, int) {
	if b := text[i]; b < utf8.RuneSelf {
		return s.cls[b], 1
	}
	return classAt(s.cls, text, i)
}

// run returns the end of the run of runes from i whose class has a bit of
// mask.
func (s *splitter) run(text string, i int, mask uint16) int {
	for i < len(text) {
		c, n := s.at(text, i)
		if c&mask == 0 {
			break
		}
		i += n
	}
	return i
}

// contraction returns the length of the (?i:'s|'t|'re|'ve|'m|'ll|'d) that
// starts at text[i], or 0. regexp2 compares unicode.ToLower of each text
// character with the pattern's.
func contraction(text string, i int) int {
	if i+1 >= len(text) || text[i] != '\'' {
		return 0
	}
	r1, n1 := lowerAt(text, i+1)
	switch r1 {
	case 's', 't', 'm', 'd':
		return 1 + n1
	case 'r', 'v', 'l':
		if j := i + 1 + n1; j < len(text) {
			r2, n2 := lowerAt(text, j)
			if r2 == 'e' && r1 != 'l' || r2 == 'l' && r1 == 'l' {
				return 1 + n1 + n2
			}
		}
	}
	return 0
}

// lowerAt returns unicode.ToLower of the rune at text[i] and its length.
func lowerAt(text string, i int) (rune, int) {
	if b := text[i]; b < utf8.RuneSelf {
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		return rune(b), 1
	}
	r, n := utf8.DecodeRuneInString(text[i:])
	return unicode.ToLower(r), n
}

// next returns the end of the piece that starts at text[i], i <
// len(text). Text must be valid UTF-8.
func (s *splitter) next(text string, i int) int {
	if s.kind == splitO200K {
		return s.nextO200K(text, i)
	}
	c0, n0 := s.at(text, i)
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if text[i] == '\'' {
		if n := contraction(text, i); n > 0 {
			return i + n
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if c0&clsL != 0 {
		return s.run(text, i+n0, clsL)
	}
	if c0&clsP != 0 && i+n0 < len(text) {
		if c1, n1 := s.at(text, i+n0); c1&clsL != 0 {
			return s.run(text, i+n0+n1, clsL)
		}
	}
	if c0&clsN != 0 {
		return s.digits(text, i, n0)
	}
	return s.rest(text, i, c0, n0)
}

// digits matches \p{N}{1,maxDigits} at text[i], whose first rune (n0
// bytes) is a number.
func (s *splitter) digits(text string, i, n0 int) int {
	j := i + n0
	for k := 1; k < s.maxDigits && j < len(text); k++ {
		c, n := s.at(text, j)
		if c&clsN == 0 {
			break
		}
		j += n
	}
	return j
}

// rest matches the alternatives that all patterns end with, at text[i]
// whose rune (n0 bytes, class c0) is neither a letter nor a number, nor
// started an earlier alternative:
//
//	 ?[^\s\p{L}\p{N}]+[\r\n]*   ([\r\n/]* for o200k)
//	\s*[\r\n]+
//	\s+(?!\S)
//	\s+
func (s *splitter) rest(text string, i int, c0 uint16, n0 int) int {
	start := -1
	if c0&clsO != 0 {
		start = i
	} else if text[i] == ' ' && i+1 < len(text) {
		if c1, _ := s.at(text, i+1); c1&clsO != 0 {
			start = i + 1
		}
	}
	if start >= 0 {
		j := s.run(text, start, clsO)
		for j < len(text) && (text[j] == '\r' || text[j] == '\n' || text[j] == '/' && s.kind == splitO200K) {
			j++
		}
		return j
	}
	// text[i] is white space: \s* takes the whole run, then gives back
	// up to its last \r or \n for [\r\n]+.
	lastNL, last, j := -1, i, i
	for j < len(text) {
		c, n := s.at(text, j)
		if c&clsS == 0 {
			break
		}
		if c&clsNL != 0 {
			lastNL = j
		}
		last = j
		j += n
	}
	switch {
	case lastNL >= 0: // \s*[\r\n]+
		return lastNL + 1
	case j == len(text): // \s+(?!\S) at the end
		return j
	case last > i: // \s+(?!\S), leaving the last space to the next piece
		return last
	}
	return j // \s+
}

// nextO200K is next for o200kPattern, whose first two alternatives are
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//
// (U*W+ and U+W*, where U and W share Lm, Lo and M), followed by
// \p{N}{1,3} and the alternatives of rest. regexp2 tries the optional
// first character taken, then not taken, in each alternative.
func (s *splitter) nextO200K(text string, i int) int {
	c0, n0 := s.at(text, i)
	starts := [2]int{-1, i}
	if c0&clsP != 0 && i+n0 < len(text) {
		starts[0] = i + n0
	}
	// U*W+: U* takes the whole run of U, then gives back one rune at a
	// time until W+ can match; W+ then runs on greedily.
	for _, st := range starts {
		if st < 0 {
			continue
		}
		u, lastW := st, -1
		for u < len(text) {
			c, n := s.at(text, u)
			if c&clsU == 0 {
				break
			}
			if c&clsW != 0 {
				lastW = u + n
			}
			u += n
		}
		if u < len(text) {
			if c, _ := s.at(text, u); c&clsW != 0 {
				end := s.run(text, u, clsW)
				return end + contraction(text, end)
			}
		}
		if lastW >= 0 {
			// W+ matches the last W rune of the run alone: every rune
			// after it up to u is not W.
			return lastW + contraction(text, lastW)
		}
	}
	// U+W*
	for _, st := range starts {
		if st < 0 {
			continue
		}
		if c, _ := s.at(text, st); c&clsU != 0 {
			end := s.run(text, s.run(text, st, clsU), clsW)
			return end + contraction(text, end)
		}
	}
	if c0&clsN != 0 {
		return s.digits(text, i, n0)
	}
	return s.rest(text, i, c0, n0)
}
