package evalgen

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/tokenizer"
)

func qwen(t testing.TB) memagent.Tokenizer {
	t.Helper()
	tok, err := tokenizer.New(tokenizer.Qwen)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func hotpot(t testing.TB) *HotpotQA {
	t.Helper()
	h, err := LoadHotpotQA("testdata/hotpot_tiny.json")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func newGen(t testing.TB, cfg Config) *Generator {
	t.Helper()
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func sample(t testing.TB, g *Generator, task string, length, index int) Sample {
	t.Helper()
	s, err := g.Sample(task, length, index)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// allTasks is a configuration with every task at small lengths.
func allTasks(t testing.TB, seed uint64) Config {
	return Config{Tasks: Tasks, Lengths: []int{512, 1024}, Samples: 2, Seed: seed, Tokenizer: qwen(t), HotpotQA: hotpot(t)}
}

func TestParseLength(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
	}{
		{"8K", 8192}, {"16k", 16384}, {"1.75M", 1835008}, {"3.5M", 3670016}, {"1M", 1 << 20},
		{"5000", 5000}, {"0.5K", 512}, {"256", 256},
	} {
		got, err := ParseLength(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseLength(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
		if back := FormatLength(got); back != tt.in && strings.ToUpper(back) != strings.ToUpper(tt.in) && tt.in != "0.5K" {
			t.Errorf("FormatLength(%d) = %q, want %q", got, back, tt.in)
		}
	}
	for _, in := range []string{"12Q", "", "K", "-8K", "8.3K", "1e4", "0x10", "255", "100M", "8 K", "NaN", "Inf", "8KK", "+8K", "1_000"} {
		if got, err := ParseLength(in); err == nil {
			t.Errorf("ParseLength(%q) = %d, want an error", in, got)
		} else if !strings.Contains(err.Error(), "K (×1024)") {
			t.Errorf("ParseLength(%q) error %q does not say how to write a length", in, err)
		}
	}
	got, err := ParseLengths("8K, 16K,1.75M")
	if want := []int{8192, 16384, 1835008}; err != nil || !slices.Equal(got, want) {
		t.Errorf("ParseLengths = %v, %v; want %v", got, err, want)
	}
}

func TestValidate(t *testing.T) {
	tok := qwen(t)
	ok := Config{Tasks: []string{TaskNIAHSingle}, Lengths: []int{8192}, Samples: 1, Tokenizer: tok}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	bad := func(f func(*Config)) Config { c := ok; f(&c); return c }
	depth := 1.5
	for name, tt := range map[string]struct {
		cfg  Config
		want string
	}{
		"unknown task":         {bad(func(c *Config) { c.Tasks = []string{"niah"} }), `unknown task "niah"`},
		"no task":              {bad(func(c *Config) { c.Tasks = nil }), "no task"},
		"hqa no file":          {bad(func(c *Config) { c.Tasks = []string{TaskHQA} }), "--hotpotqa"},
		"no samples":           {bad(func(c *Config) { c.Samples = 0 }), "--samples is 0"},
		"task twice":           {bad(func(c *Config) { c.Tasks = []string{TaskVT, TaskFWE, TaskVT} }), "task vt is given twice"},
		"length twice":         {bad(func(c *Config) { c.Lengths = []int{8192, 1024, 8192} }), "length 8K is given twice"},
		"neg samples":          {bad(func(c *Config) { c.Samples = -3 }), "--samples is -3"},
		"no lengths":           {bad(func(c *Config) { c.Lengths = nil }), "--lengths"},
		"short length":         {bad(func(c *Config) { c.Lengths = []int{100} }), "out of range"},
		"value type":           {bad(func(c *Config) { c.ValueType = "colours" }), `unknown value type "colours"`},
		"key type":             {bad(func(c *Config) { c.KeyType = "x" }), "--key-type"},
		"one key":              {bad(func(c *Config) { c.NumKeys = 1 }), "--num-keys is 1"},
		"depth":                {bad(func(c *Config) { c.Depth = &depth }), "--depth is 1.5"},
		"fwe alpha":            {bad(func(c *Config) { c.FWEAlpha = -1 }), "--fwe-alpha"},
		"vt hops":              {bad(func(c *Config) { c.VTHops = -1 }), "--vt-hops"},
		"no tokenizer":         {bad(func(c *Config) { c.Tokenizer = nil }), "tokenizer"},
		"too many hqas":        {bad(func(c *Config) { c.Tasks = []string{TaskHQA}; c.HotpotQA = hotpot(t); c.Samples = 8 }), "has 7 questions"},
		"values":               {bad(func(c *Config) { c.NumValues = 101 }), "--num-values is 101: niah_multivalue needs 2 to 100 values"},
		"queries":              {bad(func(c *Config) { c.NumQueries = 1 }), "--num-queries is 1: niah_multiquery needs 2 to 100 keys"},
		"chains":               {bad(func(c *Config) { c.VTChains = 101 }), "--vt-chains is 101: use 1 to 100"},
		"vocab":                {bad(func(c *Config) { c.FWEVocab = 3 }), "--fwe-vocab is 3: use 4 to 100000 words"},
		"big alpha":            {bad(func(c *Config) { c.FWEAlpha = 11 }), "--fwe-alpha is 11: use a positive exponent up to 10 (RULER uses 2)"},
		"long length":          {bad(func(c *Config) { c.Lengths = []int{MaxLength + 1} }), "--lengths must be between"},
		"tasks first":          {bad(func(c *Config) { c.Tasks = nil; c.Lengths = nil; c.Samples = 0 }), "no task given: --task takes one or more of "},
		"unknown before twice": {bad(func(c *Config) { c.Tasks = []string{"x", "x"} }), `unknown task "x": --task takes one or more of niah_single`},
		"lengths next":         {bad(func(c *Config) { c.Lengths = nil; c.Samples = 0; c.Tokenizer = nil }), "no length given: --lengths takes token counts such as 8K,16K,1.75M"},
		"samples next":         {bad(func(c *Config) { c.Samples = 0; c.Tokenizer = nil }), "--samples is 0: it must be at least 1"},
		"tokenizer next":       {bad(func(c *Config) { c.Tokenizer = nil; c.KeyType = "x" }), "no tokenizer"},
		"kinds next":           {bad(func(c *Config) { c.KeyType = "x"; c.NumKeys = 1 }), "unknown key type \"x\": --key-type takes numbers, words, uuids"},
		"keys before vt":       {bad(func(c *Config) { c.NumKeys = 1; c.VTHops = -1 }), "--num-keys is 1: niah_multikey needs 2 to 100 keys (the target and its distractors)"},
	} {
		err := tt.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate() = %v, want an error containing %q", name, err, tt.want)
		}
	}
}

// Same configuration, same bytes; another seed, other bytes.
func TestDeterminism(t *testing.T) {
	write := func(cfg Config) []byte {
		var b bytes.Buffer
		if _, err := newGen(t, cfg).Write(context.Background(), &b, nil); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	a, b := write(allTasks(t, 7)), write(allTasks(t, 7))
	if !bytes.Equal(a, b) {
		t.Fatal("two runs with the same configuration wrote different bytes")
	}
	c := write(allTasks(t, 8))
	if bytes.Equal(a, c) {
		t.Fatal("seeds 7 and 8 wrote the same bytes")
	}
	// Every task differs with the seed, not only some.
	var sa, sc []Sample
	if err := json.Unmarshal(a, &sa); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(c, &sc); err != nil {
		t.Fatal(err)
	}
	for i := range sa {
		if sa[i].Context == sc[i].Context {
			t.Errorf("%s: same context with seeds 7 and 8", sa[i].ID)
		}
	}
	// A sample does not depend on the rest of the set.
	cfg := allTasks(t, 7)
	cfg.Tasks, cfg.Lengths = []string{TaskVT}, []int{1024}
	one := sample(t, newGen(t, cfg), TaskVT, 1024, 1)
	if i := slices.IndexFunc(sa, func(s Sample) bool { return s.ID == one.ID }); i < 0 || sa[i].Context != one.Context {
		t.Errorf("sample %s generated alone differs from the same sample in a full set", one.ID)
	}
}

// The written set is a JSON array of objects with MemAgent's fields, in
// order, and nothing else.
func TestWriteFormat(t *testing.T) {
	cfg := allTasks(t, 1)
	cfg.Lengths = []int{1024}
	var b bytes.Buffer
	var seen []Written
	n, err := newGen(t, cfg).Write(context.Background(), &b, func(w Written) { seen = append(seen, w) })
	if err != nil {
		t.Fatal(err)
	}
	if want := len(Tasks) * 2; n != want || len(seen) != want {
		t.Fatalf("wrote %d samples, reported %d, want %d", n, len(seen), want)
	}
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal(b.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	keys := regexp.MustCompile(`"(_id|context|input|answers|length|task|tokens)":`)
	for i, obj := range raw {
		if len(obj) != 7 {
			t.Errorf("object %d has %d fields, want 7", i, len(obj))
		}
		var l, tokens int
		var task string
		if json.Unmarshal(obj["length"], &l) != nil || json.Unmarshal(obj["tokens"], &tokens) != nil || json.Unmarshal(obj["task"], &task) != nil {
			t.Errorf("object %d: length, tokens or task of the wrong type", i)
		}
		if l != 1024 || task != seen[i].Task || tokens != seen[i].Tokens {
			t.Errorf("object %d: length %d task %q tokens %d, reported %+v", i, l, task, tokens, seen[i])
		}
	}
	first := b.String()[:200]
	if got := keys.FindAllStringSubmatch(first, 1); len(got) == 0 || got[0][1] != "_id" || !strings.HasPrefix(first, "[\n{\"_id\":") {
		t.Errorf("output starts %q, want an array whose objects start with _id", first[:40])
	}
	if !strings.HasSuffix(b.String(), "}\n]\n") {
		t.Errorf("output does not end with the array's close")
	}
}

// Every sample is within 1% of its length, its tokens field is the true
// count, and every answer appears verbatim in its context.
func TestLengthsAndAnswers(t *testing.T) {
	cfg := allTasks(t, 3)
	cfg.Lengths = []int{512, 1024, 8192}
	cfg.NumKeys, cfg.VTChains = 6, 2
	g := newGen(t, cfg)
	tok := cfg.Tokenizer
	for _, task := range Tasks {
		for _, length := range cfg.Lengths {
			if task == TaskHQA && length > 1024 {
				continue // the tiny file holds too few paragraphs
			}
			for i := range 3 {
				s := sample(t, g, task, length, i)
				n := tok.Count(s.Context)
				if n != s.Tokens {
					t.Errorf("%s: tokens field %d, context has %d", s.ID, s.Tokens, n)
				}
				if abs(n-length)*100 > length {
					t.Errorf("%s: %d tokens, want %d within 1%%", s.ID, n, length)
				}
				if len(s.Answers) == 0 || s.Input == "" || s.Task != task || s.Length != length {
					t.Errorf("%s: answers %q, input %q, task %q, length %d", s.ID, s.Answers, s.Input, s.Task, s.Length)
				}
				for _, a := range s.Answers {
					if a == "yes" || a == "no" {
						continue // HotpotQA's comparison answers are not spans
					}
					if !strings.Contains(s.Context, a) {
						t.Errorf("%s: answer %q not in the context", s.ID, a)
					}
				}
			}
		}
	}
}

// A 1M-token sample is sized within 1% and takes seconds, not minutes.
func TestMillionTokens(t *testing.T) {
	const length = 1 << 20
	g := newGen(t, Config{Tasks: []string{TaskNIAHSingle}, Lengths: []int{length}, Samples: 1, Seed: 5, Tokenizer: qwen(t)})
	start := time.Now()
	s := sample(t, g, TaskNIAHSingle, length, 0)
	t.Logf("1M-token niah_single: %d tokens, %d bytes in %v", s.Tokens, len(s.Context), time.Since(start))
	if abs(s.Tokens-length)*100 > length {
		t.Errorf("%d tokens, want %d within 1%%", s.Tokens, length)
	}
	// The count is taken in blocks; one call over the whole text agrees.
	if n := g.tok.Count(s.Context); n != s.Tokens {
		t.Errorf("tokens field %d, one count of the whole context %d", s.Tokens, n)
	}
	if strings.Count(s.Context, s.Answers[0]) != 1 {
		t.Errorf("answer %q appears %d times, want once", s.Answers[0], strings.Count(s.Context, s.Answers[0]))
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("took %v", d)
	}
}

// tokenDepth is where needle sits in the context, as a fraction of tokens.
func tokenDepth(tok memagent.Tokenizer, context, needle string) float64 {
	i := strings.Index(context, needle)
	if i < 0 {
		return -1
	}
	return float64(tok.Count(context[:i])) / float64(tok.Count(context))
}

func TestDepth(t *testing.T) {
	tok := qwen(t)
	for _, want := range []float64{0, 0.25, 0.5, 1} {
		g := newGen(t, Config{Tasks: []string{TaskNIAHSingle}, Lengths: []int{8192}, Samples: 1, Tokenizer: tok, Depth: &want})
		s := sample(t, g, TaskNIAHSingle, 8192, 0)
		got := tokenDepth(tok, s.Context, s.Answers[0])
		if got < want-0.01 || got > want+0.01 {
			t.Errorf("depth %g: needle at %.3f", want, got)
		}
	}
	// Random depths are seeded per sample, and spread out.
	g := newGen(t, Config{Tasks: []string{TaskNIAHSingle}, Lengths: []int{4096}, Samples: 1, Tokenizer: tok})
	var depths []float64
	for i := range 8 {
		s := sample(t, g, TaskNIAHSingle, 4096, i)
		depths = append(depths, tokenDepth(tok, s.Context, s.Answers[0]))
	}
	slices.Sort(depths)
	if depths[0] > 0.4 || depths[len(depths)-1] < 0.6 {
		t.Errorf("8 seeded depths %.2f are not spread over the document", depths)
	}
}

var needleRE = regexp.MustCompile(`One of the special magic (\w+) for (\S+) is: (\S+)\.`)

// needles returns key → values of the needles in a context.
func needles(context string) (keys []string, values map[string][]string) {
	values = map[string][]string{}
	for _, m := range needleRE.FindAllStringSubmatch(context, -1) {
		if values[m[2]] == nil {
			keys = append(keys, m[2])
		}
		values[m[2]] = append(values[m[2]], m[3])
	}
	return keys, values
}

func TestNIAH(t *testing.T) {
	tok := qwen(t)
	g := newGen(t, Config{Tasks: Tasks[:4], Lengths: []int{4096}, Samples: 1, Seed: 11, Tokenizer: tok, NumKeys: 5, NumValues: 3, NumQueries: 4})
	t.Run("single", func(t *testing.T) {
		s := sample(t, g, TaskNIAHSingle, 4096, 0)
		keys, values := needles(s.Context)
		if len(keys) != 1 || !slices.Equal(values[keys[0]], s.Answers) || !strings.Contains(s.Input, keys[0]) {
			t.Errorf("needles %v, answers %q, question %q", values, s.Answers, s.Input)
		}
	})
	t.Run("multikey", func(t *testing.T) {
		s := sample(t, g, TaskNIAHMultiKey, 4096, 0)
		keys, values := needles(s.Context)
		if len(keys) != 5 {
			t.Fatalf("%d needle keys, want 5 (target and 4 distractors): %v", len(keys), values)
		}
		asked := 0
		for _, k := range keys {
			if len(values[k]) != 1 {
				t.Errorf("key %s has values %q, want one", k, values[k])
			}
			if strings.Contains(s.Input, k) {
				asked++
				if !slices.Equal(values[k], s.Answers) {
					t.Errorf("asked key %s has %q, answers %q", k, values[k], s.Answers)
				}
			} else if slices.Contains(s.Answers, values[k][0]) {
				t.Errorf("distractor key %s's value %s is an answer", k, values[k][0])
			}
		}
		if asked != 1 {
			t.Errorf("question %q names %d keys, want 1", s.Input, asked)
		}
	})
	t.Run("multivalue", func(t *testing.T) {
		s := sample(t, g, TaskNIAHMultiValue, 4096, 0)
		keys, values := needles(s.Context)
		if len(keys) != 1 || len(s.Answers) != 3 || !sameSet(values[keys[0]], s.Answers) || !strings.Contains(s.Input, keys[0]) {
			t.Errorf("needles %v, answers %q, question %q", values, s.Answers, s.Input)
		}
	})
	t.Run("multiquery", func(t *testing.T) {
		s := sample(t, g, TaskNIAHMultiQuery, 4096, 0)
		keys, values := needles(s.Context)
		if len(keys) != 4 || len(s.Answers) != 4 {
			t.Fatalf("needles %v, answers %q", values, s.Answers)
		}
		var want []string
		for _, k := range keys {
			if !strings.Contains(s.Input, k) {
				t.Errorf("question %q does not ask for key %s", s.Input, k)
			}
			want = append(want, values[k]...)
		}
		if !sameSet(want, s.Answers) {
			t.Errorf("answers %q, needles' values %q", s.Answers, want)
		}
	})
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestKinds(t *testing.T) {
	tok := qwen(t)
	for kind, re := range map[string]*regexp.Regexp{
		KindNumbers: regexp.MustCompile(`^[1-9][0-9]{6}$`),
		KindWords:   regexp.MustCompile(`^[a-z]+-[a-z]+$`),
		KindUUIDs:   regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`),
	} {
		g := newGen(t, Config{Tasks: []string{TaskNIAHMultiQuery}, Lengths: []int{2048}, Samples: 1, Tokenizer: tok, KeyType: kind, ValueType: kind})
		s := sample(t, g, TaskNIAHMultiQuery, 2048, 0)
		keys, _ := needles(s.Context)
		for _, v := range append(keys, s.Answers...) {
			if !re.MatchString(v) {
				t.Errorf("%s: key or value %q does not look like one", kind, v)
			}
		}
		if want := kindNames[kind][1]; !strings.Contains(s.Input, "special magic "+want+" for") {
			t.Errorf("%s: question %q does not ask for %s", kind, s.Input, want)
		}
	}
}

var assignRE = regexp.MustCompile(`VAR ([A-Z]{5}) = (VAR ([A-Z]{5})|([0-9]+))\.`)

// Following the assignments in text order gives exactly the answers for
// the asked value; every chain is in order.
func TestVTChains(t *testing.T) {
	tok := qwen(t)
	g := newGen(t, Config{Tasks: []string{TaskVT}, Lengths: []int{8192}, Samples: 1, Seed: 4, Tokenizer: tok, VTChains: 3, VTHops: 5})
	for i := range 4 {
		s := sample(t, g, TaskVT, 8192, i)
		value := map[string]string{}
		assigned := 0
		for _, m := range assignRE.FindAllStringSubmatch(s.Context, -1) {
			assigned++
			if _, dup := value[m[1]]; dup {
				t.Errorf("%s: %s assigned twice", s.ID, m[1])
			}
			if m[4] != "" {
				value[m[1]] = m[4]
				continue
			}
			v, ok := value[m[3]]
			if !ok {
				t.Errorf("%s: %s copies %s before %s is assigned", s.ID, m[1], m[3], m[3])
			}
			value[m[1]] = v
		}
		if assigned != 3*6 {
			t.Errorf("%s: %d assignments, want 18 (3 chains of 6)", s.ID, assigned)
		}
		asked := regexp.MustCompile(`value ([0-9]+)`).FindStringSubmatch(s.Input)
		if asked == nil {
			t.Fatalf("%s: question %q names no value", s.ID, s.Input)
		}
		var want []string
		for v, x := range value {
			if x == asked[1] {
				want = append(want, v)
			}
		}
		if len(s.Answers) != 6 || !sameSet(want, s.Answers) {
			t.Errorf("%s: variables with value %s are %q, answers %q", s.ID, asked[1], want, s.Answers)
		}
	}
}

// The answers are the three most frequent words, in order, each strictly
// more frequent than the next.
func TestFWE(t *testing.T) {
	tok := qwen(t)
	for _, alpha := range []float64{2, 1} {
		g := newGen(t, Config{Tasks: []string{TaskFWE}, Lengths: []int{2048, 16384}, Samples: 1, Tokenizer: tok, FWEAlpha: alpha})
		for _, length := range []int{2048, 16384} {
			s := sample(t, g, TaskFWE, length, 0)
			counts := map[string]int{}
			for _, w := range strings.Fields(s.Context) {
				counts[w]++
			}
			var words []string
			for w := range counts {
				words = append(words, w)
			}
			slices.SortFunc(words, func(a, b string) int { return counts[b] - counts[a] })
			if len(words) < 4 || !slices.Equal(words[:3], s.Answers) ||
				!(counts[words[0]] > counts[words[1]] && counts[words[1]] > counts[words[2]] && counts[words[2]] > counts[words[3]]) {
				t.Errorf("alpha %g length %d: answers %q, most frequent %q with counts %d %d %d %d", alpha, length, s.Answers, words[:min(4, len(words))],
					counts[words[0]], counts[words[1]], counts[words[2]], counts[words[3]])
			}
		}
	}
}

var docRE = regexp.MustCompile(`(?m)^Document (\d+):\n`)

func TestHQA(t *testing.T) {
	tok := qwen(t)
	h := hotpot(t)
	g := newGen(t, Config{Tasks: []string{TaskHQA}, Lengths: []int{1024}, Samples: 7, Seed: 2, Tokenizer: tok, HotpotQA: h})
	pool := map[string]string{}
	for _, d := range h.pool {
		pool[d.title] = d.text
	}
	goldFirst := 0
	for i, q := range h.questions {
		s := sample(t, g, TaskHQA, 1024, i)
		if s.ID != "hqa-1K-"+q.id || s.Input != q.question || !slices.Equal(s.Answers, []string{q.answer}) {
			t.Errorf("sample %d: id %q input %q answers %q, want question %s", i, s.ID, s.Input, s.Answers, q.id)
		}
		if !strings.HasPrefix(s.Context, "Document 1:\n") {
			t.Errorf("%s: context starts %q", s.ID, s.Context[:30])
		}
		// Documents are numbered 1..n in order, separated by blank lines,
		// each a title line and its text; no title twice.
		locs := docRE.FindAllStringSubmatchIndex(s.Context, -1)
		titles := map[string]bool{}
		for k, loc := range locs {
			if num := s.Context[loc[2]:loc[3]]; num != fmt.Sprint(k+1) {
				t.Errorf("%s: document %d is numbered %s", s.ID, k+1, num)
			}
			end := len(s.Context)
			if k+1 < len(locs) {
				end = locs[k+1][0]
				if !strings.HasSuffix(s.Context[:end], "\n\n") {
					t.Errorf("%s: document %d is not followed by a blank line", s.ID, k+1)
				}
			}
			title, text, ok := strings.Cut(strings.TrimRight(s.Context[loc[1]:end], "\n"), "\n")
			full, inPool := pool[title]
			if !ok || !inPool || !strings.HasPrefix(full, text) || titles[title] {
				t.Errorf("%s: document %d (%q) is not a pool paragraph, or a repeat", s.ID, k+1, title)
			}
			titles[title] = true
		}
		for gi, gold := range q.gold {
			want := fmt.Sprintf(":\n%s\n%s", gold.title, gold.text)
			if !strings.Contains(s.Context, want+"\n\n") && !strings.HasSuffix(s.Context, want) {
				t.Errorf("%s: gold paragraph %q missing or not whole", s.ID, gold.title)
			}
			if gi == 0 && strings.HasPrefix(s.Context, "Document 1"+want) {
				goldFirst++
			}
		}
	}
	if goldFirst == len(h.questions) {
		t.Error("the first gold paragraph is always Document 1: documents are not shuffled")
	}
	// A length the pool cannot fill is an error that says so.
	big := newGen(t, Config{Tasks: []string{TaskHQA}, Lengths: []int{65536}, Samples: 1, Tokenizer: tok, HotpotQA: h})
	if _, err := big.Sample(TaskHQA, 65536, 0); err == nil || !strings.Contains(err.Error(), "paragraphs are too few") {
		t.Errorf("64K from a tiny file: %v, want an error about too few paragraphs", err)
	}
}

func TestLoadHotpotQAErrors(t *testing.T) {
	for name, tt := range map[string]struct{ in, want string }{
		"not array":     {`{"a":1}`, "not a JSON array"},
		"empty":         {`[]`, "no questions"},
		"no answer":     {`[{"_id":"a","question":"q?","context":[["T",["x."]]],"supporting_facts":[["T",0]]}]`, `no "answer"`},
		"bad context":   {`[{"_id":"a","question":"q?","answer":"x","context":[["T"]],"supporting_facts":[["T",0]]}]`, "context entry"},
		"missing title": {`[{"_id":"a","question":"q?","answer":"x","context":[["T",["x."]]],"supporting_facts":[["U",0]]}]`, "supporting fact's title"},
		"truncated":     {`[{"_id":"a","question":"q?","answer":"x","context":[["T",["x."]]],"supporting_facts":[["T",0]]}`, "after question 1"},
	} {
		_, err := readHotpotQA(strings.NewReader(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, tt.want)
		}
	}
}

func TestEssayHaystack(t *testing.T) {
	tok := qwen(t)
	hay, err := LoadHaystackDir("testdata/essays")
	if err != nil {
		t.Fatal(err)
	}
	if len(hay.units) != 10 {
		t.Errorf("%d paragraphs, want 10", len(hay.units))
	}
	g := newGen(t, Config{Tasks: []string{TaskNIAHSingle, TaskVT}, Lengths: []int{4096}, Samples: 1, Tokenizer: tok, Haystack: hay})
	for _, task := range []string{TaskNIAHSingle, TaskVT} {
		s := sample(t, g, task, 4096, 0)
		if !strings.Contains(s.Context, "towpath") || !strings.Contains(s.Context, "first draft") {
			t.Errorf("%s: context is not made of the essays", task)
		}
		if abs(s.Tokens-4096)*100 > 4096 || !strings.Contains(s.Context, s.Answers[0]) {
			t.Errorf("%s: %d tokens, answer %q", task, s.Tokens, s.Answers[0])
		}
	}
	if _, err := LoadHaystackDir("testdata"); err == nil || !strings.Contains(err.Error(), "no .txt files") {
		t.Errorf("directory without essays: %v", err)
	}
	if _, err := LoadHaystackDir("testdata/hotpot_tiny.json"); err == nil {
		t.Error("a file as haystack directory: no error")
	}
}

func TestParagraphs(t *testing.T) {
	long := strings.Repeat("A sentence of some length goes here. ", 200)
	got := paragraphs("one\r\ntwo\n\n  \nthree\n\n\n" + long)
	if len(got) < 4 || got[0] != "one\ntwo" || got[1] != "three" {
		t.Errorf("paragraphs = %q", got[:min(3, len(got))])
	}
	for _, p := range got[2:] {
		if len(p) > maxUnitBytes || !strings.HasSuffix(p, ".") {
			t.Errorf("long paragraph split into a piece of %d bytes ending %q", len(p), p[max(0, len(p)-10):])
		}
	}
}

func TestTooShort(t *testing.T) {
	g := newGen(t, Config{Tasks: []string{TaskNIAHMultiKey}, Lengths: []int{256}, Samples: 1, Tokenizer: qwen(t), NumKeys: 40, KeyType: KindUUIDs, ValueType: KindUUIDs})
	if _, err := g.Sample(TaskNIAHMultiKey, 256, 0); !errors.Is(err, errTooShort) || !strings.Contains(err.Error(), "use a longer length") {
		t.Errorf("40 UUID needles in 256 tokens: %v, want a too-short error", err)
	}
}

// The noise haystack shares no word with keys, values or questions, so
// only needles bear on a question.
func TestNoiseSharesNoWords(t *testing.T) {
	noise := map[string]bool{}
	for _, w := range strings.Fields(strings.ToLower(strings.NewReplacer(".", "", ",", "").Replace(noiseParagraph))) {
		noise[w] = true
	}
	for _, w := range append(slices.Clone(adjectives), nouns...) {
		if noise[w] {
			t.Errorf("key word %q is in the noise paragraph", w)
		}
	}
	if len(adjectives) < 90 || len(nouns) < 90 {
		t.Errorf("%d adjectives and %d nouns, want at least 90 each", len(adjectives), len(nouns))
	}
	for _, w := range strings.Fields("special magic number numbers mentioned provided variables assigned value coded words") {
		if noise[w] {
			t.Errorf("question word %q is in the noise paragraph", w)
		}
	}
}

// Counting in blocks gives the count of the whole text, whatever the
// pieces: essays, HotpotQA documents, coded words, needles.
func TestCountText(t *testing.T) {
	tok := qwen(t)
	hay, err := LoadHaystackDir("testdata/essays")
	if err != nil {
		t.Fatal(err)
	}
	cfg := allTasks(t, 9)
	cfg.Haystack = hay
	g := newGen(t, cfg)
	var b strings.Builder
	for _, task := range Tasks {
		for i := range 3 {
			b.WriteString(sample(t, g, task, 1024, i).Context)
		}
	}
	b.WriteString("Ünïcode\u0301 text, 123456 digits\n\t tabs\n\n\n  spaces\n(brackets)\n")
	unit := b.String()
	text := strings.Repeat(unit, 3*countBlock/len(unit)+1)
	if got, want := countText(tok, text), tok.Count(text); got != want {
		t.Errorf("countText = %d, Count = %d", got, want)
	}
}

func BenchmarkNIAHSingle1M(b *testing.B) {
	g := newGen(b, Config{Tasks: []string{TaskNIAHSingle}, Lengths: []int{1 << 20}, Samples: 1, Tokenizer: qwen(b)})
	for i := 0; b.Loop(); i++ {
		sample(b, g, TaskNIAHSingle, 1<<20, i)
	}
}

// TestFWEPinned pins the bytes of frequent-words samples (a SHA-256 of each
// context, with its token count), so that a change to how lines are laid out
// shows; if one is intended, record the new sums here.
func TestFWEPinned(t *testing.T) {
	tok := qwen(t)
	want := map[string]string{
		"alpha 2 length 1024 sample 0":    "32e05eab3ccb746c 1024",
		"alpha 2 length 1024 sample 1":    "5fe967d803cc06cb 1023",
		"alpha 2 length 1024 sample 2":    "a881d706b68015e5 1023",
		"alpha 2 length 4096 sample 0":    "aa056bbbf62fea35 4096",
		"alpha 2 length 4096 sample 1":    "ccaa12a227717717 4095",
		"alpha 2 length 4096 sample 2":    "b99610853d1affa6 4095",
		"alpha 2 length 16384 sample 0":   "563f69181f230bea 16384",
		"alpha 2 length 16384 sample 1":   "6121c08a9f5d6199 16382",
		"alpha 2 length 16384 sample 2":   "e7e2e0a5e9961d60 16382",
		"alpha 1 length 1024 sample 0":    "19e0e44a4050f65a 1024",
		"alpha 1 length 1024 sample 1":    "6e1c13f154c11849 1023",
		"alpha 1 length 1024 sample 2":    "55b89fe24666358f 1024",
		"alpha 1 length 4096 sample 0":    "901772c7f54a0364 4094",
		"alpha 1 length 4096 sample 1":    "6ef7bd74cb0f6ae0 4095",
		"alpha 1 length 4096 sample 2":    "2900f1155fe5b7e4 4094",
		"alpha 1 length 16384 sample 0":   "dae01b4f592493c4 16383",
		"alpha 1 length 16384 sample 1":   "7f4667ab2ef7e4b0 16384",
		"alpha 1 length 16384 sample 2":   "a933cd06227f093f 16384",
		"alpha 0.5 length 1024 sample 0":  "error: fwe 1K sample 0: too short for strictly ordered top three words (6, 4, 3, then 3): use a longer length or a larger --fwe-alpha",
		"alpha 0.5 length 1024 sample 1":  "error: fwe 1K sample 1: too short for strictly ordered top three words (6, 4, 3, then 3): use a longer length or a larger --fwe-alpha",
		"alpha 0.5 length 1024 sample 2":  "error: fwe 1K sample 2: too short for strictly ordered top three words (6, 4, 3, then 3): use a longer length or a larger --fwe-alpha",
		"alpha 0.5 length 4096 sample 0":  "38313657f1cff87a 4094",
		"alpha 0.5 length 4096 sample 1":  "95ce792d7dee36ea 4094",
		"alpha 0.5 length 4096 sample 2":  "d00a9aadbc0c9d23 4094",
		"alpha 0.5 length 16384 sample 0": "cf6f8115b128156b 16383",
		"alpha 0.5 length 16384 sample 1": "fa5375925ca9222f 16383",
		"alpha 0.5 length 16384 sample 2": "1fad10059699bdd7 16382",
	}
	for _, alpha := range []float64{2, 1, 0.5} {
		g := newGen(t, Config{Tasks: []string{TaskFWE}, Lengths: []int{1024, 4096, 16384}, Samples: 3, Seed: 11, Tokenizer: tok, FWEAlpha: alpha})
		for _, length := range []int{1024, 4096, 16384} {
			for i := range 3 {
				s, err := g.Sample(TaskFWE, length, i)
				key := fmt.Sprintf("alpha %g length %d sample %d", alpha, length, i)
				got := ""
				if err != nil {
					got = "error: " + err.Error()
				} else {
					sum := sha256.Sum256([]byte(s.Context))
					got = fmt.Sprintf("%x %d", sum[:8], s.Tokens)
				}
				if w := want[key]; got != w {
					t.Errorf("%s: got %s, want %s", key, got, w)
				}
			}
		}
	}
}
