package docgen

import (
	"math/rand/v2"
	"strings"

	"github.com/memagent/memagent/internal/memagent"
)

// PlantedFact is a sentence planted in filler, the question that asks for
// it and its answer.
type PlantedFact struct {
	Text     string `json:"text"`
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

// Placement is where MultiNeedle planted a fact: the byte range [Start,
// End) of its sentence in the document.
type Placement struct {
	PlantedFact
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// Facts returns twelve facts whose questions share no content word with
// each other, with the filler or with the other facts, so that an
// extractive reader (the simulator keeps sentences that share a word with
// the question) finds, for each question, its own fact and nothing else.
// The first is Fact.
func Facts() []PlantedFact {
	return []PlantedFact{
		{Fact, Question, Answer},
		{"The chief chemist at the Varnholt refinery is Ilse Marquardt.", "Who is the chief chemist at the Varnholt refinery?", "Ilse Marquardt"},
		{"The annual budget of the Ostrava puppet theatre is 412000 euros.", "What is the annual budget of the Ostrava puppet theatre?", "412000 euros"},
		{"The secret ingredient in Dunmore bakery rye bread is toasted caraway.", "What is the secret ingredient in Dunmore bakery rye bread?", "toasted caraway"},
		{"The maiden voyage of the airship Corvinia was in 1927.", "When was the maiden voyage of the airship Corvinia?", "1927"},
		{"The password of the Lindqvist archive terminal is OPAL-58.", "What is the password of the Lindqvist archive terminal?", "OPAL-58"},
		{"The mascot of the Ferrand chess club is a tortoise.", "What is the mascot of the Ferrand chess club?", "tortoise"},
		{"The Quennell bridge is 348 meters long.", "How long is the Quennell bridge?", "348 meters"},
		{"The head gardener of Trelowarren manor is Agnes Pym.", "Who is the head gardener of Trelowarren manor?", "Agnes Pym"},
		{"The radio callsign of the research vessel Skarholm is LX-4417.", "What is the radio callsign of the research vessel Skarholm?", "LX-4417"},
		{"The favourite dessert of Professor Okonkwo is quince tart.", "What is the favourite dessert of Professor Okonkwo?", "quince tart"},
		{"The emergency beacon on Mount Tsaravel flashes every 9 seconds.", "How frequently does the emergency beacon on Mount Tsaravel flash?", "9 seconds"},
	}
}

// MultiNeedle returns filler paragraphs of about the given number of tokens
// (counted with tok) with each fact planted once, in order, the i-th of n
// at depth (i+0.5)/n, and where each landed. Facts are whole sentences
// ending their paragraph, so a reader can check that a byte range points
// at one. It is deterministic in seed.
func MultiNeedle(tok memagent.Tokenizer, tokens int, facts []PlantedFact, seed uint64) (string, []Placement) {
	rng := rand.New(rand.NewPCG(seed, seed^0x7f4a7c159e3779b9))
	var b strings.Builder
	placed := make([]Placement, 0, len(facts))
	count := 0
	plant := func(p *strings.Builder, f PlantedFact) {
		start := int64(b.Len() + p.Len())
		p.WriteString(f.Text)
		placed = append(placed, Placement{PlantedFact: f, Start: start, End: start + int64(len(f.Text))})
	}
	for count < tokens || len(placed) < len(facts) {
		var p strings.Builder
		for s, n := 0, 4+rng.IntN(5); s < n; s++ {
			if s > 0 {
				p.WriteByte(' ')
			}
			writeFillerSentence(&p, rng)
		}
		for len(placed) < len(facts) && (count >= tokens || float64(count) >= (float64(len(placed))+0.5)/float64(len(facts))*float64(tokens)) {
			p.WriteByte(' ')
			plant(&p, facts[len(placed)])
		}
		p.WriteString("\n\n")
		count += tok.Count(p.String())
		b.WriteString(p.String())
	}
	return b.String(), placed
}

// writeFillerSentence writes one sentence of filler words, with its stop.
func writeFillerSentence(p *strings.Builder, rng *rand.Rand) {
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
	p.WriteByte('.')
}
