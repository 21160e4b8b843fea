package evalgen

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/memagent/memagent/internal/memagent"
)

// Contexts are sized without re-tokenizing them as they grow. A context is
// a list of pieces, each counted once on its own (repeated pieces are
// counted once per generator). Every piece ends in a line break and starts
// with a non-space character, so, with byte-level BPE and the tokenizers'
// split patterns, a pre-token never straddles two pieces and the counts
// add up; fit measures the assembled text once anyway and corrects the
// budget if they did not.

// sep ends every paragraph-like piece: haystack units, needles, documents.
const sep = "\n\n"

// piece is a stretch of context and its token count, measured on its own.
type piece struct {
	text   string
	tokens int
}

// counter counts tokens, caching the counts of short strings that recur
// (line breaks, document headers).
type counter struct {
	tok   memagent.Tokenizer
	cache map[string]int
}

func newCounter(tok memagent.Tokenizer) counter {
	return counter{tok: tok, cache: map[string]int{}}
}

// cached counts s once per generator; use it for short recurring strings.
func (c counter) cached(s string) int {
	if n, ok := c.cache[s]; ok {
		return n
	}
	n := c.tok.Count(s)
	c.cache[s] = n
	return n
}

// fit assembles the pieces build returns for a token budget and measures
// the text. If it is more than 0.1% off target it rebuilds with the budget
// corrected by the difference, a few times, and keeps the closest text; it
// fails if that is more than 1% off. The first build is usually exact, or
// a word short where the last filler was cut. build must be deterministic:
// it is called again with other budgets.
func (g *Generator) fit(target int, build func(budget int) ([]piece, error)) (string, int, error) {
	var (
		best  string
		bestN = -1
	)
	budget := target
	for range 4 {
		pieces, err := build(budget)
		if err != nil {
			return "", 0, err
		}
		text := join(pieces)
		n := countText(g.tok, text)
		if bestN < 0 || abs(n-target) < abs(bestN-target) {
			best, bestN = text, n
		}
		if abs(n-target)*1000 <= target {
			break
		}
		budget += target - n
	}
	if abs(bestN-target)*100 > target {
		return "", 0, fmt.Errorf("context has %d tokens, more than 1%% off its target %d", bestN, target)
	}
	return best, bestN, nil
}

// countBlock is the size of the blocks countText counts at once.
const countBlock = 1 << 20

// countText returns the number of tokens in text, as tok.Count would, but
// counts blocks of about countBlock bytes concurrently, which takes a
// fraction of the time and memory of one call on a multi-megabyte text.
// A block ends after a line break followed by a printable ASCII character;
// no pre-token of either tokenizer spans such a boundary, so the counts
// add up exactly.
func countText(tok memagent.Tokenizer, text string) int {
	var blocks []string
	for len(text) > 2*countBlock {
		i := countBlock
		for i < len(text) && !(text[i-1] == '\n' && text[i] > ' ' && text[i] < 0x7f) {
			i++
		}
		blocks = append(blocks, text[:i])
		text = text[i:]
	}
	blocks = append(blocks, text)
	if len(blocks) == 1 {
		return tok.Count(text)
	}
	n := 0
	for _, c := range countAll(tok, blocks) {
		n += c
	}
	return n
}

// countAll counts each of texts, concurrently.
func countAll(tok memagent.Tokenizer, texts []string) []int {
	counts := make([]int, len(texts))
	next := make(chan int, len(texts))
	for i := range texts {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(texts)) {
		wg.Go(func() {
			for i := range next {
				counts[i] = tok.Count(texts[i])
			}
		})
	}
	wg.Wait()
	return counts
}

// join concatenates pieces. The text keeps its last piece's line break:
// trimming it would change the count at the end.
func join(pieces []piece) string {
	size := 0
	for _, p := range pieces {
		size += len(p.text)
	}
	var b strings.Builder
	b.Grow(size)
	for _, p := range pieces {
		b.WriteString(p.text)
	}
	return b.String()
}

func abs(x int) int { return max(x, -x) }

// total is the sum of the pieces' token counts.
func total(pieces []piece) int {
	n := 0
	for _, p := range pieces {
		n += p.tokens
	}
	return n
}

// Haystack is filler text for the needle and variable-tracking tasks: a
// cycle of paragraphs that needles are placed between.
type Haystack struct {
	units []string // each ends in sep
}

// noiseHaystack is the default haystack: the noise paragraph, repeated.
func noiseHaystack() *Haystack {
	return &Haystack{units: []string{noiseParagraph + sep}}
}

// maxUnitBytes bounds a haystack paragraph, so that needles can sit at
// fine-grained depths even in essays with long paragraphs.
const maxUnitBytes = 2000

// LoadHaystackDir reads the haystack from the .txt files in dir (not its
// subdirectories), in name order: the essays RULER uses, or any other
// plain text. Paragraphs are separated by blank lines; long ones are
// split at sentence ends. The haystack repeats when a context needs more.
func LoadHaystackDir(dir string) (*Haystack, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, fmt.Errorf("haystack %s: %w", dir, err)
	}
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("haystack: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("haystack: %s is not a directory: --haystack-dir takes a directory of .txt files", dir)
	}
	slices.Sort(names)
	h := &Haystack{}
	size := 0
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("haystack: %w", err)
		}
		if !utf8.Valid(b) {
			return nil, fmt.Errorf("haystack: %s is not UTF-8 text", name)
		}
		for _, para := range paragraphs(string(b)) {
			h.units = append(h.units, para+sep)
			size += len(para)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("haystack: no .txt files in %s", dir)
	}
	if size < 1000 {
		return nil, fmt.Errorf("haystack: the .txt files in %s hold only %d bytes of text; give it at least a few essays", dir, size)
	}
	return h, nil
}

// paragraphs splits text at blank lines, trims each paragraph and splits
// those longer than maxUnitBytes at sentence ends (or, failing that, at
// spaces).
func paragraphs(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	var out []string
	var cur []string
	flush := func() {
		p := strings.TrimSpace(strings.Join(cur, "\n"))
		cur = cur[:0]
		for len(p) > maxUnitBytes {
			cut := strings.LastIndex(p[:maxUnitBytes], ". ")
			if cut > 0 {
				cut++ // keep the full stop
			} else if cut = strings.LastIndexAny(p[:maxUnitBytes], " \n"); cut <= 0 {
				break
			}
			out = append(out, strings.TrimSpace(p[:cut]))
			p = strings.TrimSpace(p[cut:])
		}
		if p != "" {
			out = append(out, p)
		}
	}
	for line := range strings.SplitSeq(text, "\n") {
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return out
}

// unit returns haystack unit i (cyclically) and its token count.
func (g *Generator) unit(i int) piece {
	i %= len(g.hay.units)
	if g.hayCounts[i] < 0 {
		g.hayCounts[i] = g.tok.Count(g.hay.units[i])
	}
	return piece{g.hay.units[i], g.hayCounts[i]}
}

// fill returns haystack units from unit start on, totalling budget tokens
// or at most a few fewer: the last unit is cut at a word boundary to fit.
func (g *Generator) fill(start, budget int) []piece {
	var out []piece
	sum := 0
	for i := start; sum < budget; i++ {
		u := g.unit(i)
		if sum+u.tokens <= budget {
			out = append(out, u)
			sum += u.tokens
			continue
		}
		if p, ok := g.truncate(u.text, 0, budget-sum); ok {
			out = append(out, p)
		}
		break
	}
	return out
}

// truncate cuts the paragraph text (ending in sep) at a word boundary so
// that it, with its sep, has at most k tokens, keeping at least its first
// keep bytes. It reports false if no such cut exists.
func (g *Generator) truncate(text string, keep, k int) (piece, bool) {
	body := strings.TrimSuffix(text, sep)
	cut := 0
	for i, l := range g.tok.TokenLens(body) {
		if i >= k {
			break
		}
		cut += l
	}
	if cut >= len(body) || body[cut] != ' ' && body[cut] != '\n' {
		cut = strings.LastIndexAny(body[:cut], " \n")
	}
	for ; cut > keep; cut = strings.LastIndexAny(body[:cut], " \n") {
		t := strings.TrimRight(body[:cut], " \n,;:") + sep
		if n := g.tok.Count(t); n <= k {
			return piece{t, n}, true
		}
	}
	return piece{}, false
}

// placed is a piece to put at a depth of the filler, 0 (start) to 1 (end).
type placed struct {
	depth float64
	p     piece
}

// place inserts each piece at the filler boundary nearest its depth,
// measured in tokens. Pieces at the same boundary keep their order in ins,
// so a chain given in order stays in order if its depths ascend.
func place(filler []piece, ins []placed) []piece {
	cum := make([]int, len(filler)+1)
	for i, p := range filler {
		cum[i+1] = cum[i] + p.tokens
	}
	type at struct {
		j int
		p piece
	}
	ats := make([]at, len(ins))
	for i, in := range ins {
		pos := int(in.depth * float64(cum[len(filler)]))
		j := sort.SearchInts(cum, pos)
		if j > 0 && (j == len(cum) || pos-cum[j-1] < cum[j]-pos) {
			j--
		}
		ats[i] = at{j, in.p}
	}
	slices.SortStableFunc(ats, func(a, b at) int { return cmp.Compare(a.j, b.j) })
	out := make([]piece, 0, len(filler)+len(ins))
	k := 0
	for j := 0; j <= len(filler); j++ {
		for ; k < len(ats) && ats[k].j == j; k++ {
			out = append(out, ats[k].p)
		}
		if j < len(filler) {
			out = append(out, filler[j])
		}
	}
	return out
}

// errTooShort says that a length cannot hold what a sample must contain.
var errTooShort = errors.New("too short")

// haystackSample fits the haystack around the pieces in ins to length
// tokens, starting the haystack at unit start.
func (g *Generator) haystackSample(length, start int, ins []placed) (string, int, error) {
	fixed := 0
	for _, in := range ins {
		fixed += in.p.tokens
	}
	return g.fit(length, func(budget int) ([]piece, error) {
		if budget < fixed {
			return nil, fmt.Errorf("length %d is %w for its %d needle tokens: use a longer length", length, errTooShort, fixed)
		}
		return place(g.fill(start, budget-fixed), ins), nil
	})
}
