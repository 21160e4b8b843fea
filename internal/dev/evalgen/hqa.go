package evalgen

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
)

// RULER-HQA, as MemAgent evaluates it: a HotpotQA question's gold
// paragraphs (those its supporting facts cite), then its own distractor
// paragraphs, then paragraphs drawn from the pool of every paragraph in the
// file, until the target length; the documents are shuffled with a fixed
// seed and written "Document i:\n<title>\n<text>", separated by blank
// lines. The last distractor is cut at a word boundary to hit the length.

// HotpotQA is a HotpotQA file loaded for the hqa task: its questions in
// file order and its distinct paragraphs.
type HotpotQA struct {
	questions []hqaQuestion
	// pool holds every distinct paragraph (by title) in file order.
	pool []hqaDoc
}

// Questions returns the number of questions loaded.
func (h *HotpotQA) Questions() int { return len(h.questions) }

type hqaQuestion struct {
	id, question, answer string
	gold, own            []hqaDoc // supporting paragraphs; the others of its context
}

// hqaDoc is a paragraph: its title and its text (sentences joined).
type hqaDoc struct {
	title, text string
}

// unit is the paragraph as a document body, ending in sep.
func (d hqaDoc) unit() string { return d.title + "\n" + d.text + sep }

// hotpotItem is one question of a HotpotQA file, in its standard form.
type hotpotItem struct {
	ID              string              `json:"_id"`
	Question        string              `json:"question"`
	Answer          string              `json:"answer"`
	Context         [][]json.RawMessage `json:"context"`
	SupportingFacts [][]json.RawMessage `json:"supporting_facts"`
}

// LoadHotpotQA reads a HotpotQA file (hotpot_dev_distractor_v1.json or
// any file in that format: a JSON array of {_id, question, answer,
// context: [[title, [sentence, ...]], ...], supporting_facts: [[title,
// sentence index], ...]}). It streams the array, so the file is never held
// whole in memory.
func LoadHotpotQA(path string) (*HotpotQA, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("hotpotqa: %w", err)
	}
	defer f.Close()
	h, err := readHotpotQA(f)
	if err != nil {
		return nil, fmt.Errorf("hotpotqa %s: %w", path, err)
	}
	return h, nil
}

func readHotpotQA(r io.Reader) (*HotpotQA, error) {
	dec := json.NewDecoder(r)
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return nil, errors.New("not a JSON array of HotpotQA questions")
	}
	h := &HotpotQA{}
	seen := map[string]bool{}
	for i := 0; dec.More(); i++ {
		var it hotpotItem
		if err := dec.Decode(&it); err != nil {
			return nil, fmt.Errorf("question %d: %w", i, err)
		}
		q, docs, err := parseHotpotItem(it)
		if err != nil {
			return nil, fmt.Errorf("question %d (%q): %w", i, it.ID, err)
		}
		h.questions = append(h.questions, q)
		for _, d := range docs {
			if !seen[d.title] {
				seen[d.title] = true
				h.pool = append(h.pool, d)
			}
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("after question %d: %w", len(h.questions), err)
	}
	if len(h.questions) == 0 {
		return nil, errors.New("no questions")
	}
	return h, nil
}

// parseHotpotItem checks one question and splits its context into gold
// and other paragraphs.
func parseHotpotItem(it hotpotItem) (hqaQuestion, []hqaDoc, error) {
	q := hqaQuestion{id: it.ID, question: strings.TrimSpace(it.Question), answer: strings.TrimSpace(it.Answer)}
	switch {
	case q.id == "":
		return q, nil, errors.New(`no "_id"`)
	case q.question == "":
		return q, nil, errors.New(`no "question"`)
	case q.answer == "":
		return q, nil, errors.New(`no "answer"`)
	case len(it.Context) == 0:
		return q, nil, errors.New(`no "context" paragraphs`)
	case len(it.SupportingFacts) == 0:
		return q, nil, errors.New(`no "supporting_facts"`)
	}
	supporting := map[string]bool{}
	for _, sf := range it.SupportingFacts {
		var title string
		if len(sf) != 2 || json.Unmarshal(sf[0], &title) != nil {
			return q, nil, errors.New(`a supporting fact is not [title, sentence index]`)
		}
		supporting[title] = true
	}
	var docs []hqaDoc
	for _, c := range it.Context {
		var (
			d         hqaDoc
			sentences []string
		)
		if len(c) != 2 || json.Unmarshal(c[0], &d.title) != nil || json.Unmarshal(c[1], &sentences) != nil {
			return q, nil, errors.New(`a context entry is not [title, [sentence, ...]]`)
		}
		d.title = strings.TrimSpace(d.title)
		d.text = strings.TrimSpace(strings.Join(sentences, ""))
		if d.title == "" || d.text == "" {
			continue
		}
		docs = append(docs, d)
		if supporting[d.title] {
			q.gold = append(q.gold, d)
			delete(supporting, d.title)
		} else {
			q.own = append(q.own, d)
		}
	}
	if len(q.gold) == 0 || len(supporting) > 0 {
		return q, nil, errors.New("a supporting fact's title is not among its context paragraphs")
	}
	return q, docs, nil
}

// hqaShuffleStream is the PCG stream of the documents' shuffle. With the
// configured seed it makes RULER's fixed shuffle seed: every sample with
// the same number of documents gets the same permutation.
const hqaShuffleStream = 0x68716173687566 // "hqashuf"

// hqa generates the sample of question index at the target length.
func (g *Generator) hqa(length, index int, rng *rand.Rand) (Sample, error) {
	h := g.cfg.HotpotQA
	q := h.questions[index]
	mine := map[string]bool{}
	var golds []piece
	for _, d := range q.gold {
		mine[d.title] = true
		u := d.unit()
		golds = append(golds, piece{u, g.tok.Count(u)})
	}
	// Distractors in the order they are taken: the question's own, then
	// the pool's, each in a seeded order.
	var own []piece
	for _, i := range rng.Perm(len(q.own)) {
		d := q.own[i]
		mine[d.title] = true
		u := d.unit()
		own = append(own, piece{u, g.tok.Count(u)})
	}
	var pool []int
	for _, j := range rng.Perm(len(h.pool)) {
		if !mine[h.pool[j].title] {
			pool = append(pool, j)
		}
	}
	distractor := func(i int) (piece, bool) {
		switch {
		case i < len(own):
			return own[i], true
		case i-len(own) < len(pool):
			// Count ahead, more as the sample grows: up to as many as
			// are taken already.
			k := i - len(own)
			g.countPool(pool[k:min(len(pool), k+min(poolAhead, max(32, k)))])
			return g.poolUnit(pool[i-len(own)]), true
		}
		return piece{}, false
	}

	text, n, err := g.fit(length, func(budget int) ([]piece, error) {
		docs := append([]piece(nil), golds...)
		sum := 0
		for i, p := range docs {
			sum += g.header(i+1) + p.tokens
		}
		if sum > budget {
			return nil, fmt.Errorf("length %d is %w for the question's gold paragraphs (%d tokens): use a longer length", length, errTooShort, sum)
		}
		for i := 0; ; i++ {
			d, ok := distractor(i)
			if !ok {
				return nil, fmt.Errorf("the file's %d distinct paragraphs are too few for %d tokens: use shorter --lengths or a larger HotpotQA file", len(h.pool), length)
			}
			hd := g.header(len(docs) + 1)
			if sum+hd+d.tokens <= budget {
				docs = append(docs, d)
				sum += hd + d.tokens
				continue
			}
			if p, ok := g.truncate(d.text, titleLen(d), budget-sum-hd); ok {
				docs = append(docs, p)
				break
			}
			// Too little room for even a cut paragraph: cut the previous
			// distractor to make room for one.
			last := docs[len(docs)-1]
			if len(docs) == len(golds) || last.tokens <= hqaMinCut {
				break
			}
			l, ok := g.truncate(last.text, titleLen(last), last.tokens-(hqaMinCut-(budget-sum-hd)))
			if !ok {
				break
			}
			docs[len(docs)-1] = l
			sum -= last.tokens - l.tokens
			if p, ok := g.truncate(d.text, titleLen(d), budget-sum-hd); ok {
				docs = append(docs, p)
			}
			break
		}
		shuffle := rand.New(rand.NewPCG(g.cfg.Seed, hqaShuffleStream))
		shuffle.Shuffle(len(docs), func(i, j int) { docs[i], docs[j] = docs[j], docs[i] })
		for i, d := range docs {
			hd := fmt.Sprintf("Document %d:\n", i+1)
			docs[i] = piece{hd + d.text, g.header(i+1) + d.tokens}
		}
		return docs, nil
	})
	if err != nil {
		return Sample{}, err
	}
	return Sample{
		ID:      fmt.Sprintf("%s-%s-%s", TaskHQA, FormatLength(length), q.id),
		Context: text, Input: q.question, Answers: []string{q.answer}, Tokens: n,
	}, nil
}

// hqaMinCut is the room, in tokens, made for a cut paragraph at the end.
const hqaMinCut = 24

// titleLen is the length of the title line of a document body.
func titleLen(p piece) int { return strings.IndexByte(p.text, '\n') + 1 }

// header returns the tokens of document i's header, "Document i:\n".
func (g *Generator) header(i int) int {
	return g.count.cached(fmt.Sprintf("Document %d:\n", i))
}

// poolAhead is the most pool paragraphs countPool counts at once.
const poolAhead = 1024

// countPool counts the paragraphs of order concurrently if the first is
// not counted yet.
func (g *Generator) countPool(order []int) {
	if len(order) == 0 || g.hqaCounts[order[0]] >= 0 {
		return
	}
	var js []int
	var units []string
	for _, j := range order {
		if g.hqaCounts[j] < 0 {
			js = append(js, j)
			units = append(units, g.cfg.HotpotQA.pool[j].unit())
		}
	}
	for k, n := range countAll(g.tok, units) {
		g.hqaCounts[js[k]] = n
	}
}

// poolUnit returns pool paragraph j as a document body and its tokens.
func (g *Generator) poolUnit(j int) piece {
	u := g.cfg.HotpotQA.pool[j].unit()
	if g.hqaCounts[j] < 0 {
		g.hqaCounts[j] = g.tok.Count(u)
	}
	return piece{u, g.hqaCounts[j]}
}
