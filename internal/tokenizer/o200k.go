package tokenizer

//go:generate bash geno200k.sh

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
	tiktokenassets "github.com/pkoukk/tiktoken-go-loader/assets"
)

// O200K is the name of the o200k_base encoding: the tokenizer of OpenAI's
// gpt-4o, gpt-4.1, gpt-4.5, gpt-5 and o-series (o1, o3, o4) models.
const O200K = "o200k_base"

// o200kSHA256 is the SHA-256 of o200k_base.tiktoken as OpenAI publishes
// it (the value tiktoken itself checks); the copy embedded by
// tiktoken-go-loader is checked against it when loaded.
const o200kSHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

// o200kPattern is the pre-tokenization split pattern of o200k_base, as
// published with the encoding: unlike cl100k's it keeps a word's
// upper-case start with its lower-case rest (camelCase splits at the case
// change) and lets a contraction follow any word.
var o200kPattern = strings.Join([]string{
	`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
	`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
	`\p{N}{1,3}`,
	` ?[^\s\p{L}\p{N}]+[\r\n/]*`,
	`\s*[\r\n]+`,
	`\s+(?!\S)`,
	`\s+`,
}, "|")

// loadO200K builds the o200k_base tokenizer once per process, from the
// ranks embedded by tiktoken-go-loader (checked against OpenAI's
// published hash), without touching tiktoken's process-global loader (see
// loadCL100K).
var loadO200K = sync.OnceValues(func() (*bpeTokenizer, error) {
	raw, err := tiktokenassets.Assets.ReadFile("o200k_base.tiktoken")
	if err != nil {
		return nil, fmt.Errorf("read embedded vocabulary: %w", err)
	}
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != o200kSHA256 {
		return nil, fmt.Errorf("embedded vocabulary has SHA-256 %x, want %s: the tiktoken-go-loader module is not the expected one", sum, o200kSHA256)
	}
	ranks, err := tiktokenloader.NewOfflineLoader().LoadTiktokenBpe("o200k_base.tiktoken")
	if err != nil {
		return nil, fmt.Errorf("read embedded vocabulary: %w", err)
	}
	specialIDs := map[string]int{
		tiktoken.ENDOFTEXT:   199999,
		tiktoken.ENDOFPROMPT: 200018,
	}
	return newBPE(O200K, o200kPattern, newSplitter(splitO200K, 3), ranks, specialIDs, false)
})

// ForModel returns the name of the tokenizer of an OpenAI model, from the
// model's name (a served name such as "gpt-4o-2024-11-20", or an Azure
// deployment's underlying model): [O200K] for the gpt-4o, gpt-4.1,
// gpt-4.5, gpt-5 and o1/o3/o4 families, chatgpt-4o and gpt-oss (whose
// o200k_harmony adds only special tokens); [CL100K] for gpt-4
// and gpt-3.5; "" for any other name, which says nothing about its
// tokenizer (a MemAgent model served by vLLM uses [Qwen], the default).
// A provider prefix such as "openai/" is ignored, and case does not matter.
func ForModel(model string) string {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndex(m, "/"); i >= 0 {
		m = m[i+1:]
	}
	switch {
	case strings.HasPrefix(m, "gpt-5"), // gpt-5, gpt-5-mini, gpt-5.1, ...
		hasFamily(m, "gpt-4o", "gpt-4.1", "gpt-4.5", "chatgpt-4o", "o1", "o3", "o4", "gpt-oss"):
		return O200K
	case hasFamily(m, "gpt-4", "gpt-3.5", "gpt-35"):
		return CL100K
	}
	return ""
}

// hasFamily reports whether name is one of families or starts with one
// followed by "-" (a dated or sized variant: gpt-4o-mini, o3-2025-04-16).
func hasFamily(name string, families ...string) bool {
	for _, f := range families {
		if name == f || strings.HasPrefix(name, f+"-") {
			return true
		}
	}
	return false
}
