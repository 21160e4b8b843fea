package evalgen

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Needles follow RULER's form: "One of the special magic numbers for
// <key> is: <value>." The question names the key; the values are the
// answers.

// kindNames are the singular and plural names of each kind of value, as
// the needles and questions say them.
var kindNames = map[string][2]string{
	KindNumbers: {"number", "numbers"},
	KindWords:   {"word", "words"},
	KindUUIDs:   {"UUID", "UUIDs"},
}

// drawer draws keys and values, never the same string twice in a sample.
type drawer struct {
	rng  *rand.Rand
	used map[string]bool
}

func newDrawer(rng *rand.Rand) *drawer { return &drawer{rng: rng, used: map[string]bool{}} }

// draw returns a new string of the kind.
func (d *drawer) draw(kind string) string {
	for {
		var s string
		switch kind {
		case KindNumbers:
			s = fmt.Sprint(1_000_000 + d.rng.IntN(9_000_000))
		case KindWords:
			s = adjectives[d.rng.IntN(len(adjectives))] + "-" + nouns[d.rng.IntN(len(nouns))]
		case KindUUIDs:
			var b [16]byte
			for i := range b {
				b[i] = byte(d.rng.Uint32())
			}
			b[6] = b[6]&0x0f | 0x40 // version 4
			b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
			s = fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
		default:
			panic("evalgen: unknown kind " + kind)
		}
		if !d.used[s] {
			d.used[s] = true
			return s
		}
	}
}

// needle returns the piece that says key's value is value.
func (g *Generator) needle(key, value string) piece {
	text := fmt.Sprintf("One of the special magic %s for %s is: %s.", kindNames[g.cfg.ValueType][1], key, value) + sep
	return piece{text, g.tok.Count(text)}
}

// niah generates the four needle-in-a-haystack tasks.
func (g *Generator) niah(task string, length int, rng *rand.Rand) (Sample, error) {
	d := newDrawer(rng)
	one, many := kindNames[g.cfg.ValueType][0], kindNames[g.cfg.ValueType][1]
	depth := func(fixable bool) float64 {
		if fixable && g.cfg.Depth != nil {
			return *g.cfg.Depth
		}
		return rng.Float64()
	}
	var (
		ins      []placed
		answers  []string
		question string
	)
	switch task {
	case TaskNIAHSingle, TaskNIAHMultiKey:
		key, value := d.draw(g.cfg.KeyType), d.draw(g.cfg.ValueType)
		ins = append(ins, placed{depth(true), g.needle(key, value)})
		answers = []string{value}
		question = fmt.Sprintf("What is the special magic %s for %s mentioned in the provided text?", one, key)
		if task == TaskNIAHMultiKey {
			for range g.cfg.NumKeys - 1 {
				ins = append(ins, placed{depth(false), g.needle(d.draw(g.cfg.KeyType), d.draw(g.cfg.ValueType))})
			}
		}
	case TaskNIAHMultiValue:
		key := d.draw(g.cfg.KeyType)
		for range g.cfg.NumValues {
			value := d.draw(g.cfg.ValueType)
			ins = append(ins, placed{depth(false), g.needle(key, value)})
			answers = append(answers, value)
		}
		question = fmt.Sprintf("What are all the special magic %s for %s mentioned in the provided text?", many, key)
	case TaskNIAHMultiQuery:
		var keys []string
		for range g.cfg.NumQueries {
			key, value := d.draw(g.cfg.KeyType), d.draw(g.cfg.ValueType)
			ins = append(ins, placed{depth(false), g.needle(key, value)})
			keys = append(keys, key)
			answers = append(answers, value)
		}
		question = fmt.Sprintf("What are all the special magic %s for %s mentioned in the provided text?", many, list(keys))
	}
	start := rng.IntN(len(g.hay.units))
	text, n, err := g.haystackSample(length, start, ins)
	if err != nil {
		return Sample{}, err
	}
	return Sample{Context: text, Input: question, Answers: answers, Tokens: n}, nil
}

// list writes "a, b and c".
func list(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
