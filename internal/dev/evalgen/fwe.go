package evalgen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// Frequent words extraction, after RULER: a text of coded words (random
// five-letter strings) whose frequencies follow a Zipf-like law, word r
// (from 1) appearing in proportion to 1/r^alpha; the answer is the three
// most frequent words, most frequent first. Counts are set exactly, not
// sampled, so the three are strictly the most frequent and in strict order.

// fweWordsPerLine is how many coded words go on one line of the text.
const fweWordsPerLine = 16

// fweQuestion is the input of every fwe sample.
const fweQuestion = "The text is made of coded words. Which three coded words appear most often in it? " +
	"Answer with the three words, the most frequent first."

// fwe generates one frequent-words sample.
func (g *Generator) fwe(length int, rng *rand.Rand) (Sample, error) {
	v := g.cfg.FWEVocab
	words := make([]string, 0, v)
	used := map[string]bool{}
	for len(words) < v {
		b := make([]byte, 5)
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		if w := string(b); !used[w] {
			used[w] = true
			words = append(words, w)
		}
	}
	fw := fweWords{
		words:  words,
		weight: make([]float64, v),
		space:  make([]int, v),
		start:  make([]int, v),
		nl:     g.count.cached("\n"),
	}
	for r, w := range words {
		fw.weight[r] = 1 / math.Pow(float64(r+1), g.cfg.FWEAlpha)
		fw.space[r] = g.tok.Count(" " + w)
		fw.start[r] = g.tok.Count(w)
	}
	seed := rng.Uint64()
	text, n, err := g.fit(length, func(budget int) ([]piece, error) {
		return fw.lines(budget, rand.New(rand.NewPCG(seed, 0)))
	})
	if err != nil {
		return Sample{}, err
	}
	return Sample{Context: text, Input: fweQuestion, Answers: words[:3:3], Tokens: n}, nil
}

// fweWords is the vocabulary of one sample: the words by rank, their
// relative frequencies, and their token counts after a space (inside a
// line) and alone (at the start of a line).
type fweWords struct {
	words  []string
	weight []float64
	space  []int
	start  []int
	nl     int // tokens of a line break
}

// cost is the tokens of word rank r at position pos of the text.
func (fw *fweWords) cost(pos int, r int32) int {
	if pos%fweWordsPerLine == 0 {
		return fw.start[r]
	}
	return fw.space[r]
}

// lines lays out about budget tokens of coded words (within a word).
func (fw *fweWords) lines(budget int, rng *rand.Rand) ([]piece, error) {
	counts, perWord, err := fw.counts(budget)
	if err != nil {
		return nil, err
	}
	var seq []int32
	for r, c := range counts {
		for range c {
			seq = append(seq, int32(r))
		}
	}
	rng.Shuffle(len(seq), func(i, j int) { seq[i], seq[j] = seq[j], seq[i] })

	tokens := fw.total(seq)
	// The shuffle decides which words start lines, so the total is off by
	// a little. Spread rare words through the text (or take some out)
	// until it is within a few words, then add or remove the last few at
	// the end.
	for range 8 {
		d := budget - tokens
		k := int(float64(abs(d)) / perWord)
		if k < 2 {
			break
		}
		if d > 0 {
			if seq, err = spreadRare(seq, counts, k, rng); err != nil {
				return nil, err
			}
		} else {
			seq = dropCommon(seq, counts, k, rng)
		}
		tokens = fw.total(seq)
	}
	if seq, err = fw.fill(seq, counts, tokens, budget, rng); err != nil {
		return nil, err
	}
	if !topThree(counts) {
		return nil, fmt.Errorf("%w for strictly ordered top three words: use a longer length", errTooShort)
	}
	return fw.render(seq), nil
}

// counts is how often each word appears in about budget tokens, in
// proportion to its weight, and the mean tokens a word costs with its share
// of line breaks.
func (fw *fweWords) counts(budget int) ([]int, float64, error) {
	sumW, perWord := 0.0, 0.0
	for r, w := range fw.weight {
		sumW += w
		perWord += w * float64(fw.space[r])
	}
	perWord /= sumW
	perWord += float64(fw.nl) / fweWordsPerLine
	n := float64(budget) / perWord
	counts := make([]int, len(fw.words))
	for r, w := range fw.weight {
		counts[r] = int(math.Round(n * w / sumW))
	}
	if !topThree(counts) {
		return nil, 0, fmt.Errorf("%w for strictly ordered top three words (%d, %d, %d, then %d): use a longer length or a larger --fwe-alpha", errTooShort, counts[0], counts[1], counts[2], counts[3])
	}
	return counts, perWord, nil
}

// spreadRare inserts k rare words at random places in seq.
func spreadRare(seq []int32, counts []int, k int, rng *rand.Rand) ([]int32, error) {
	at := make([]int, k)
	add := make([]int32, k)
	for i := range k {
		r, err := pickRare(counts, rng)
		if err != nil {
			return nil, err
		}
		counts[r]++
		at[i], add[i] = rng.IntN(len(seq)+1), r
	}
	slices.Sort(at)
	grown := make([]int32, 0, len(seq)+k)
	prev := 0
	for i, p := range at {
		grown = append(append(grown, seq[prev:p]...), add[i])
		prev = p
	}
	return append(grown, seq[prev:]...), nil
}

// dropCommon takes up to k words out of seq at random, never one of the
// three most frequent.
func dropCommon(seq []int32, counts []int, k int, rng *rand.Rand) []int32 {
	drop := make([]bool, len(seq))
	for tries := 0; k > 0 && tries < 100*len(seq); tries++ {
		if i := rng.IntN(len(seq)); !drop[i] && seq[i] >= 3 {
			drop[i] = true
			counts[seq[i]]--
			k--
		}
	}
	kept := seq[:0]
	for i, r := range seq {
		if !drop[i] {
			kept = append(kept, r)
		}
	}
	return kept
}

// fill brings seq, of tokens tokens, to within a word of budget: rare words
// added at the end, or the last words that are not among the three most
// frequent taken out.
func (fw *fweWords) fill(seq []int32, counts []int, tokens, budget int, rng *rand.Rand) ([]int32, error) {
	for tokens < budget {
		r, err := pickRare(counts, rng)
		if err != nil {
			return nil, err
		}
		counts[r]++
		pos := len(seq)
		seq = append(seq, r)
		tokens += fw.cost(pos, r)
		if pos%fweWordsPerLine == 0 {
			tokens += fw.nl
		}
	}
	for tokens > budget {
		k := len(seq) - 1
		for k >= 0 && seq[k] < 3 {
			k--
		}
		if k < 0 {
			return nil, fmt.Errorf("%w for its three most frequent words", errTooShort)
		}
		last := len(seq) - 1
		tokens += fw.cost(k, seq[last]) + fw.cost(last, seq[k]) - fw.cost(k, seq[k]) - fw.cost(last, seq[last])
		seq[k], seq[last] = seq[last], seq[k]
		counts[seq[last]]--
		tokens -= fw.cost(last, seq[last])
		if last%fweWordsPerLine == 0 {
			tokens -= fw.nl
		}
		seq = seq[:last]
	}
	return seq, nil
}

// render writes seq as lines of fweWordsPerLine words, each a piece with its
// tokens.
func (fw *fweWords) render(seq []int32) []piece {
	var pieces []piece
	var b strings.Builder
	for at := 0; at < len(seq); at += fweWordsPerLine {
		b.Reset()
		t := fw.nl
		for pos := at; pos < min(at+fweWordsPerLine, len(seq)); pos++ {
			if pos > at {
				b.WriteByte(' ')
			}
			b.WriteString(fw.words[seq[pos]])
			t += fw.cost(pos, seq[pos])
		}
		b.WriteByte('\n')
		pieces = append(pieces, piece{b.String(), t})
	}
	return pieces
}

// total is the tokens of the text of seq.
func (fw *fweWords) total(seq []int32) int {
	t := 0
	for pos, r := range seq {
		t += fw.cost(pos, r)
		if pos%fweWordsPerLine == 0 {
			t += fw.nl
		}
	}
	return t
}

// pickRare returns a random word below the top three that can appear once
// more and stay less frequent than the third.
func pickRare(counts []int, rng *rand.Rand) (int32, error) {
	r := 3 + rng.IntN(len(counts)-3)
	for tries := 0; counts[r]+1 >= counts[2]; tries++ {
		if tries == len(counts) {
			return 0, fmt.Errorf("%w to pad without changing the three most frequent words: use a larger --fwe-vocab", errTooShort)
		}
		if r++; r == len(counts) {
			r = 3
		}
	}
	return int32(r), nil
}

// topThree reports whether the first three counts are strictly decreasing
// and each above every other count.
func topThree(counts []int) bool {
	rest := 0
	for _, c := range counts[3:] {
		rest = max(rest, c)
	}
	return counts[0] > counts[1] && counts[1] > counts[2] && counts[2] > rest
}
