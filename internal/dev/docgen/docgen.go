// Package docgen generates synthetic documents for the demo, the tests and
// the benchmarks: neutral filler with one planted fact. It is deterministic
// in its seed and does no I/O.
package docgen

import (
	"math/rand/v2"
	"strings"

	"github.com/memagent/memagent/internal/memagent"
)

// The planted fact, the question that asks for it and its answer. The
// fact's words appear nowhere in the filler.
const (
	Fact     = "The access code for the north gate of the Halvorsen observatory is 7391-ALPHA."
	Question = "What is the access code for the north gate of the Halvorsen observatory?"
	Answer   = "7391-ALPHA"
)

// fillerWords share nothing with Question, so only the planted
// fact is relevant to it.
var fillerWords = strings.Fields(`river harvest lantern meadow copper winter orchard valley whistle pebble
	ferry harbor candle ribbon marble thunder willow basket pigeon saddle quarry blanket compass drizzle
	ember falcon garnet hammock island jasmine kettle ladder mosaic nectar oyster paddle quiver rafter
	sparrow timber umbrella velvet wagon yarrow zephyr anchor bramble cinder dune estuary fern glacier
	hollow ivy juniper kelp lagoon mill nettle oak prairie quill reed sable thistle upland vine wharf
	baker weaver potter miller sailor farmer painter tailor cooper mason shepherd fisher merchant
	walked carried painted gathered folded traded mended counted watched planted sang measured
	quietly slowly early later often rarely together nearby beyond beneath across along around
	old green small bright heavy narrow wide warm quiet busy distant golden wooden silver crowded`)

// Needle returns filler paragraphs of about the given number of tokens
// (counted with tok) with Fact planted at depth (0 = start, 1 = end). It is
// deterministic in seed.
func Needle(tok memagent.Tokenizer, tokens int, depth float64, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var b strings.Builder
	planted := false
	count := 0
	for count < tokens {
		var p strings.Builder
		for s, n := 0, 4+rng.IntN(5); s < n; s++ {
			words := 8 + rng.IntN(9)
			for w := 0; w < words; w++ {
				word := fillerWords[rng.IntN(len(fillerWords))]
				if w == 0 {
					word = strings.ToUpper(word[:1]) + word[1:]
				} else {
					p.WriteByte(' ')
				}
				p.WriteString(word)
			}
			p.WriteString(". ")
		}
		if !planted && float64(count) >= depth*float64(tokens) {
			p.WriteString(Fact + " ")
			planted = true
		}
		para := strings.TrimSpace(p.String()) + "\n\n"
		count += tok.Count(para)
		b.WriteString(para)
	}
	if !planted {
		b.WriteString(Fact + "\n")
	}
	return b.String()
}
