package main

import (
	"fmt"
	"testing"
)

// validTokenizer is the smallest tokenizer.json check accepts: the layout
// package tokenizer implements, wantVocabSize tokens, merges in id order.
func validTokenizer() *tokenizerJSON {
	var tj tokenizerJSON
	tj.Normalizer.Type = "NFC"
	tj.PreTokenizer.Type = "Sequence"
	tj.PreTokenizer.Pretokenizers = make([]preTokenizerStep, 2)
	split, bl := &tj.PreTokenizer.Pretokenizers[0], &tj.PreTokenizer.Pretokenizers[1]
	split.Type, split.Behavior, split.Pattern.Regex = "Split", "Isolated", wantPattern
	bl.Type = "ByteLevel"
	tj.Model.Type = "BPE"
	tj.Model.Vocab = make(map[string]int, wantVocabSize)
	for c := range 256 {
		tj.Model.Vocab[fmt.Sprintf("b%d", c)] = c
	}
	for i := range wantVocabSize - 256 {
		tj.Model.Vocab[fmt.Sprintf("m%d", i)] = 256 + i
		tj.Model.Merges = append(tj.Model.Merges, [2]string{"m", fmt.Sprint(i)})
	}
	return &tj
}

func TestCheck(t *testing.T) {
	if err := check(validTokenizer()); err != nil {
		t.Fatalf("check(valid) = %v", err)
	}
	tests := []struct {
		name  string
		spoil func(*tokenizerJSON)
		want  string
	}{
		{"normalizer", func(tj *tokenizerJSON) { tj.Normalizer.Type = "NFKC" }, `normalizer is "NFKC", want NFC`},
		{"pre-tokenizer type", func(tj *tokenizerJSON) { tj.PreTokenizer.Type = "ByteLevel" }, `pre_tokenizer is "ByteLevel" with 2 steps, want Sequence of Split and ByteLevel`},
		{"pre-tokenizer steps", func(tj *tokenizerJSON) { tj.PreTokenizer.Pretokenizers = tj.PreTokenizer.Pretokenizers[:1] }, `pre_tokenizer is "Sequence" with 1 steps, want Sequence of Split and ByteLevel`},
		{"split pattern", func(tj *tokenizerJSON) { tj.PreTokenizer.Pretokenizers[0].Pattern.Regex = `\s+` },
			`first pre-tokenizer step is Split/Isolated/invert=false with pattern "\\s+", want Split/Isolated with "` + quoteInner(wantPattern) + `"`},
		{"split inverted", func(tj *tokenizerJSON) { tj.PreTokenizer.Pretokenizers[0].Invert = true },
			`first pre-tokenizer step is Split/Isolated/invert=true with pattern "` + quoteInner(wantPattern) + `", want Split/Isolated with "` + quoteInner(wantPattern) + `"`},
		{"byte level regex", func(tj *tokenizerJSON) { tj.PreTokenizer.Pretokenizers[1].UseRegex = true },
			"second pre-tokenizer step is ByteLevel add_prefix_space=false use_regex=true, want ByteLevel without either"},
		{"byte level prefix", func(tj *tokenizerJSON) { tj.PreTokenizer.Pretokenizers[1].AddPrefixSpace = true },
			"second pre-tokenizer step is ByteLevel add_prefix_space=true use_regex=false, want ByteLevel without either"},
		{"model type", func(tj *tokenizerJSON) { tj.Model.Type = "Unigram" }, "model is not a plain BPE (byte_fallback, ignore_merges, prefixes or suffixes set)"},
		{"byte fallback", func(tj *tokenizerJSON) { tj.Model.ByteFallback = true }, "model is not a plain BPE (byte_fallback, ignore_merges, prefixes or suffixes set)"},
		{"ignore merges", func(tj *tokenizerJSON) { tj.Model.IgnoreMerges = true }, "model is not a plain BPE (byte_fallback, ignore_merges, prefixes or suffixes set)"},
		{"prefix", func(tj *tokenizerJSON) { tj.Model.ContinuingSubwordPrefix = "##" }, "model is not a plain BPE (byte_fallback, ignore_merges, prefixes or suffixes set)"},
		{"suffix", func(tj *tokenizerJSON) { tj.Model.EndOfWordSuffix = "</w>" }, "model is not a plain BPE (byte_fallback, ignore_merges, prefixes or suffixes set)"},
		{"vocabulary size", func(tj *tokenizerJSON) { tj.Model.Vocab["extra"] = wantVocabSize }, "vocabulary has 151644 tokens, want 151643"},
		{"merge count", func(tj *tokenizerJSON) { tj.Model.Merges = tj.Model.Merges[:10] }, "10 merges for 151643 tokens, want 151387"},
		{"merge order", func(tj *tokenizerJSON) {
			m := tj.Model.Merges
			m[3], m[4] = m[4], m[3]
		}, `merge 3 ("m" "4") produces id 260, want 259: ranks would not equal ids`},
		{"merge unknown", func(tj *tokenizerJSON) { tj.Model.Merges[0] = [2]string{"x", "y"} }, `merge 0 ("x" "y") produces id 0, want 256: ranks would not equal ids`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tj := validTokenizer()
			tt.spoil(tj)
			err := check(tj)
			if err == nil || err.Error() != tt.want {
				t.Errorf("check = %v\nwant %s", err, tt.want)
			}
		})
	}
}

// quoteInner is s as %q writes it, without the quotes.
func quoteInner(s string) string { q := fmt.Sprintf("%q", s); return q[1 : len(q)-1] }
