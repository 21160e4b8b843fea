package evalgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/memagent/memagent/internal/memagent"
)

// Task names, as written in each sample's "task" field.
const (
	TaskNIAHSingle     = "niah_single"
	TaskNIAHMultiKey   = "niah_multikey"
	TaskNIAHMultiValue = "niah_multivalue"
	TaskNIAHMultiQuery = "niah_multiquery"
	TaskVT             = "vt"
	TaskFWE            = "fwe"
	TaskHQA            = "hqa"
)

// Tasks lists every task, in the order they are documented.
var Tasks = []string{TaskNIAHSingle, TaskNIAHMultiKey, TaskNIAHMultiValue, TaskNIAHMultiQuery, TaskVT, TaskFWE, TaskHQA}

// Kinds of needle keys and values (Config.KeyType, Config.ValueType).
const (
	KindNumbers = "numbers" // seven-digit numbers
	KindWords   = "words"   // adjective-noun pairs such as "tangible-grape"
	KindUUIDs   = "uuids"   // random version-4 UUIDs
)

// Length bounds: shorter contexts cannot hold the tasks' needles and
// chains; longer ones are almost certainly a typo (3500M for 3.5M).
const (
	MinLength = 256
	MaxLength = 32 << 20
)

// Sample is one evaluation item in MemAgent's format. Field order and names
// are the wire format.
type Sample struct {
	ID      string   `json:"_id"`
	Context string   `json:"context"`
	Input   string   `json:"input"`
	Answers []string `json:"answers"`
	// Length is the target length in tokens; Tokens is the context's
	// actual count with the configured tokenizer.
	Length int    `json:"length"`
	Task   string `json:"task"`
	Tokens int    `json:"tokens"`
}

// Config says what to generate. The zero values of the optional fields
// take the defaults documented on each.
type Config struct {
	// Tasks to generate, in output order; Lengths (target token counts) for
	// each task, in output order; Samples per task and length.
	Tasks   []string
	Lengths []int
	Samples int
	// Seed makes the set reproducible: the same Config writes the same bytes.
	Seed uint64
	// Tokenizer measures lengths. Required.
	Tokenizer memagent.Tokenizer

	// KeyType and ValueType are the kinds of needle keys (default
	// KindWords) and values (default KindNumbers).
	KeyType, ValueType string
	// NumKeys is the number of keys in niah_multikey, the target's and its
	// distractors' (default 4); NumValues the values of niah_multivalue's
	// one key (default 4); NumQueries the keys asked at once by
	// niah_multiquery (default 4).
	NumKeys, NumValues, NumQueries int
	// Depth, if not nil, fixes where niah_single's needle (and
	// niah_multikey's target) sits: 0 (start) to 1 (end). Nil means a
	// seeded random depth per sample. Other needles always get seeded
	// random depths.
	Depth *float64

	// Haystack is the filler of the niah and vt tasks; nil means the
	// repeated noise paragraph.
	Haystack *Haystack

	// VTChains is the number of assignment chains in vt (the first is
	// asked about, the others are distractors; default 1); VTHops the
	// assignments after the first in each chain (default 4).
	VTChains, VTHops int

	// FWEAlpha is the exponent of fwe's Zipf-like word frequencies (default
	// 2); FWEVocab the number of distinct coded words (default 1000).
	FWEAlpha float64
	FWEVocab int

	// HotpotQA holds the questions and paragraphs of hqa; required for it.
	HotpotQA *HotpotQA
}

// withDefaults fills the zero optional fields.
func (c Config) withDefaults() Config {
	if c.KeyType == "" {
		c.KeyType = KindWords
	}
	if c.ValueType == "" {
		c.ValueType = KindNumbers
	}
	for _, p := range []*int{&c.NumKeys, &c.NumValues, &c.NumQueries} {
		if *p == 0 {
			*p = 4
		}
	}
	if c.VTChains == 0 {
		c.VTChains = 1
	}
	if c.VTHops == 0 {
		c.VTHops = 4
	}
	if c.FWEAlpha == 0 {
		c.FWEAlpha = 2
	}
	if c.FWEVocab == 0 {
		c.FWEVocab = 1000
	}
	return c
}

// Validate reports the first problem with c, in terms of the starter's
// flags, after defaults are applied.
func (c Config) Validate() error {
	c = c.withDefaults()
	for _, check := range []func() error{c.validateTasks, c.validateLengths, c.validateKinds, c.validateSizes} {
		if err := check(); err != nil {
			return err
		}
	}
	if c.HotpotQA != nil && slices.Contains(c.Tasks, TaskHQA) && c.Samples > len(c.HotpotQA.questions) {
		return fmt.Errorf("--samples is %d but the HotpotQA file has %d questions: lower --samples", c.Samples, len(c.HotpotQA.questions))
	}
	return nil
}

func (c Config) validateTasks() error {
	if len(c.Tasks) == 0 {
		return errors.New("no task given: --task takes one or more of " + strings.Join(Tasks, ", "))
	}
	for i, t := range c.Tasks {
		if slices.Contains(c.Tasks[:i], t) {
			return fmt.Errorf("task %s is given twice in --task", t)
		}
		if !slices.Contains(Tasks, t) {
			return fmt.Errorf("unknown task %q: --task takes one or more of %s, comma-separated", t, strings.Join(Tasks, ", "))
		}
		if t == TaskHQA && c.HotpotQA == nil {
			return errors.New("task hqa needs HotpotQA data: --hotpotqa PATH (hotpot_dev_distractor_v1.json or a file in its format)")
		}
	}
	return nil
}

func (c Config) validateLengths() error {
	if len(c.Lengths) == 0 {
		return errors.New("no length given: --lengths takes token counts such as 8K,16K,1.75M")
	}
	for i, l := range c.Lengths {
		if slices.Contains(c.Lengths[:i], l) {
			return fmt.Errorf("length %s is given twice in --lengths", FormatLength(l))
		}
		if l < MinLength || l > MaxLength {
			return fmt.Errorf("length %d is out of range: --lengths must be between %s and %s tokens", l, FormatLength(MinLength), FormatLength(MaxLength))
		}
	}
	return nil
}

// validateKinds checks the sample count, the tokenizer and the kinds of
// keys and values.
func (c Config) validateKinds() error {
	if c.Samples <= 0 {
		return fmt.Errorf("--samples is %d: it must be at least 1", c.Samples)
	}
	if c.Tokenizer == nil {
		return errors.New("no tokenizer")
	}
	kinds := []string{KindNumbers, KindWords, KindUUIDs}
	if !slices.Contains(kinds, c.KeyType) {
		return fmt.Errorf("unknown key type %q: --key-type takes %s", c.KeyType, strings.Join(kinds, ", "))
	}
	if !slices.Contains(kinds, c.ValueType) {
		return fmt.Errorf("unknown value type %q: --value-type takes %s", c.ValueType, strings.Join(kinds, ", "))
	}
	return nil
}

// validateSizes checks the tasks' numeric knobs.
func (c Config) validateSizes() error {
	switch {
	case c.NumKeys < 2 || c.NumKeys > 100:
		return fmt.Errorf("--num-keys is %d: niah_multikey needs 2 to 100 keys (the target and its distractors)", c.NumKeys)
	case c.NumValues < 2 || c.NumValues > 100:
		return fmt.Errorf("--num-values is %d: niah_multivalue needs 2 to 100 values", c.NumValues)
	case c.NumQueries < 2 || c.NumQueries > 100:
		return fmt.Errorf("--num-queries is %d: niah_multiquery needs 2 to 100 keys", c.NumQueries)
	case c.Depth != nil && !(*c.Depth >= 0 && *c.Depth <= 1):
		return fmt.Errorf("--depth is %g: use 0 (start) to 1 (end), or -1 for a seeded random depth", *c.Depth)
	case c.VTChains < 1 || c.VTChains > 100:
		return fmt.Errorf("--vt-chains is %d: use 1 to 100", c.VTChains)
	case c.VTHops < 1 || c.VTHops > 100:
		return fmt.Errorf("--vt-hops is %d: use 1 to 100", c.VTHops)
	case !(c.FWEAlpha > 0 && c.FWEAlpha <= 10):
		return fmt.Errorf("--fwe-alpha is %g: use a positive exponent up to 10 (RULER uses 2)", c.FWEAlpha)
	case c.FWEVocab < 4 || c.FWEVocab > 100_000:
		return fmt.Errorf("--fwe-vocab is %d: use 4 to 100000 words", c.FWEVocab)
	}
	return nil
}

// Generator writes evaluation sets. It is not safe for concurrent use.
type Generator struct {
	cfg   Config
	tok   memagent.Tokenizer
	count counter
	hay   *Haystack
	// hayCounts caches the token count of each haystack unit; -1 until
	// counted.
	hayCounts []int
	// hqaCounts caches the token count of each HotpotQA pool paragraph;
	// -1 until counted.
	hqaCounts []int
}

// New checks cfg and returns a generator for it.
func New(cfg Config) (*Generator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	hay := cfg.Haystack
	if hay == nil {
		hay = noiseHaystack()
	}
	g := &Generator{cfg: cfg, tok: cfg.Tokenizer, count: newCounter(cfg.Tokenizer), hay: hay, hayCounts: unknown(len(hay.units))}
	if cfg.HotpotQA != nil {
		g.hqaCounts = unknown(len(cfg.HotpotQA.pool))
	}
	return g, nil
}

// unknown returns n counts of -1.
func unknown(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = -1
	}
	return s
}

// Written describes a sample once it is written.
type Written struct {
	Task          string
	Length, Index int
	Tokens        int
}

// Write writes the whole set to w as a JSON array, one sample at a time,
// tasks in order, then lengths, then samples; it calls onSample (if not
// nil) after each. It returns the number of samples written.
func (g *Generator) Write(ctx context.Context, w io.Writer, onSample func(Written)) (int, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if _, err := bw.WriteString("["); err != nil {
		return 0, err
	}
	n := 0
	for _, task := range g.cfg.Tasks {
		for _, length := range g.cfg.Lengths {
			for i := range g.cfg.Samples {
				if err := ctx.Err(); err != nil {
					return n, err
				}
				s, err := g.Sample(task, length, i)
				if err != nil {
					return n, err
				}
				buf.Reset()
				if n > 0 {
					buf.WriteString(",")
				}
				buf.WriteString("\n")
				if err := enc.Encode(s); err != nil {
					return n, fmt.Errorf("encode %s: %w", s.ID, err)
				}
				buf.Truncate(buf.Len() - 1) // Encode's newline
				if _, err := bw.Write(buf.Bytes()); err != nil {
					return n, err
				}
				n++
				if onSample != nil {
					onSample(Written{Task: task, Length: length, Index: i, Tokens: s.Tokens})
				}
			}
		}
	}
	if _, err := bw.WriteString("\n]\n"); err != nil {
		return n, err
	}
	return n, bw.Flush()
}

// Sample returns sample index of task at the target length. It depends
// only on the configuration and its arguments, not on which other samples
// were generated.
func (g *Generator) Sample(task string, length, index int) (Sample, error) {
	rng := rand.New(rand.NewPCG(g.cfg.Seed, streamID(task, length, index)))
	var (
		s   Sample
		err error
	)
	switch task {
	case TaskNIAHSingle, TaskNIAHMultiKey, TaskNIAHMultiValue, TaskNIAHMultiQuery:
		s, err = g.niah(task, length, rng)
	case TaskVT:
		s, err = g.vt(length, rng)
	case TaskFWE:
		s, err = g.fwe(length, rng)
	case TaskHQA:
		s, err = g.hqa(length, index, rng)
	default:
		err = fmt.Errorf("unknown task %q", task)
	}
	if err != nil {
		return Sample{}, fmt.Errorf("%s %s sample %d: %w", task, FormatLength(length), index, err)
	}
	if s.ID == "" {
		s.ID = fmt.Sprintf("%s-%s-%d", task, FormatLength(length), index)
	}
	s.Task, s.Length = task, length
	return s, nil
}

// streamID derives a sample's PCG stream from its task, length and index,
// so a sample does not depend on the others in the set.
func streamID(task string, length, index int) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%d\x00%d", task, length, index)
	return h.Sum64()
}

// ParseLengths parses a comma-separated list of token counts, each a
// number with an optional K (×1024) or M (×1024×1024) suffix, as in
// RULER's and MemAgent's tables (8K = 8192, 1.75M = 1835008). Fractions
// are allowed when the result is a whole number of tokens.
func ParseLengths(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		n, err := ParseLength(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// ParseLength parses one length; see ParseLengths.
func ParseLength(s string) (int, error) {
	bad := func(why string) error {
		return fmt.Errorf("length %q %s: use a number of tokens with an optional K (×1024) or M (×1048576) suffix, e.g. 8K,16K,1.75M,3.5M", s, why)
	}
	num, mult := s, 1.0
	switch {
	case strings.HasSuffix(s, "K") || strings.HasSuffix(s, "k"):
		num, mult = s[:len(s)-1], 1<<10
	case strings.HasSuffix(s, "M") || strings.HasSuffix(s, "m"):
		num, mult = s[:len(s)-1], 1<<20
	}
	if num == "" || strings.ContainsAny(num, "eE+-_xXpP") {
		return 0, bad("is not a length")
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, bad("is not a length")
	}
	tokens := v * mult
	if tokens != math.Trunc(tokens) {
		return 0, bad("is not a whole number of tokens")
	}
	if tokens < MinLength || tokens > MaxLength {
		return 0, bad(fmt.Sprintf("is out of range (%s to %s tokens)", FormatLength(MinLength), FormatLength(MaxLength)))
	}
	return int(tokens), nil
}

// FormatLength writes a token count the way ParseLength reads it: 8192 as
// "8K", 1835008 as "1.75M", 5000 as "5000".
func FormatLength(n int) string {
	if n >= 1<<20 {
		s := strconv.FormatFloat(float64(n)/(1<<20), 'f', -1, 64)
		if len(s) <= 5 {
			return s + "M"
		}
	}
	if n >= 1<<10 && n%(1<<10) == 0 {
		return strconv.Itoa(n>>10) + "K"
	}
	return strconv.Itoa(n)
}
