package evalgen

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// Variable tracking, after RULER: a chain "VAR A = 12345.", "VAR B = VAR
// A.", "VAR C = VAR B." ... hidden in the haystack in order; the question
// gives the value and asks for every variable that holds it. Other chains,
// with other values, are distractors.

// vt generates one variable-tracking sample.
func (g *Generator) vt(length int, rng *rand.Rand) (Sample, error) {
	usedNames := map[string]bool{}
	name := func() string {
		for {
			b := make([]byte, 5)
			for i := range b {
				b[i] = byte('A' + rng.IntN(26))
			}
			if s := string(b); !usedNames[s] && s != "VAR" {
				usedNames[s] = true
				return s
			}
		}
	}
	usedValues := map[int]bool{}
	var (
		ins     []placed
		answers []string
		asked   int
	)
	for c := range g.cfg.VTChains {
		value := 10_000 + rng.IntN(90_000)
		for usedValues[value] {
			value = 10_000 + rng.IntN(90_000)
		}
		usedValues[value] = true
		names := make([]string, g.cfg.VTHops+1)
		for i := range names {
			names[i] = name()
		}
		depths := make([]float64, len(names))
		for i := range depths {
			depths[i] = rng.Float64()
		}
		slices.Sort(depths)
		for i, n := range names {
			text := fmt.Sprintf("VAR %s = %d.", n, value)
			if i > 0 {
				text = fmt.Sprintf("VAR %s = VAR %s.", n, names[i-1])
			}
			text += sep
			ins = append(ins, placed{depths[i], piece{text, g.tok.Count(text)}})
		}
		if c == 0 {
			answers, asked = names, value
		}
	}
	question := fmt.Sprintf("Which variables are assigned the value %d in the text, either directly or through a chain of assignments? List the names of all of them.", asked)
	start := rng.IntN(len(g.hay.units))
	text, n, err := g.haystackSample(length, start, ins)
	if err != nil {
		return Sample{}, err
	}
	return Sample{Context: text, Input: question, Answers: answers, Tokens: n}, nil
}
