package api

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/memagent/memagent/internal/contract"
)

// Defaults of ModelOptions, as in the MemAgent paper's setup.
const (
	DefaultChunkTokens     = 5000
	DefaultMemoryMaxTokens = 1024
	DefaultAnswerMaxTokens = 1024
	DefaultTemperature     = 0.7
	DefaultTopP            = 0.95
	// DefaultTokenizer is Qwen2.5's: the published MemAgent models are
	// Qwen2.5 models and the paper's chunk sizes are Qwen tokens.
	DefaultTokenizer = "qwen2.5"
)

// MaxQuestionBytes bounds a question; it is part of every prompt, so a long
// one eats the chunk budget.
const MaxQuestionBytes = 16 << 10

// CheckQuestion reports a question that can never be asked.
func CheckQuestion(q string) error {
	switch {
	case strings.TrimSpace(q) == "":
		return errors.New("question is empty: set question")
	case len(q) > MaxQuestionBytes:
		return fmt.Errorf("question is %d bytes, over the limit of %d: shorten it", len(q), MaxQuestionBytes)
	}
	return nil
}

// ModelOptions are the per-request knobs. Zero values mean the defaults; the
// pointers tell "not set" from an explicit zero.
type ModelOptions struct {
	// Model is the served model name; empty means the worker's default.
	Model string `json:"model,omitempty" contract:"maxlen=256"`
	// Tokenizer counts chunk tokens: "qwen2.5" (the default; also "qwen",
	// "qwen3"), "cl100k_base" (gpt-4, gpt-3.5) or "o200k_base" (gpt-4o,
	// gpt-4.1, gpt-5, the o-series).
	Tokenizer string `json:"tokenizer,omitempty"`
	// ChunkTokens is the size of one chunk in tokens; default 5000, at
	// least 64.
	ChunkTokens int `json:"chunk_tokens,omitempty" contract:"min=64,zero,max=1000000"`
	// MemoryMaxTokens bounds the memory (the update's max_tokens); default
	// 1024, at least 16.
	MemoryMaxTokens int `json:"memory_max_tokens,omitempty" contract:"min=16,zero,max=65536"`
	// AnswerMaxTokens is the final answer's max_tokens; default 1024.
	AnswerMaxTokens int `json:"answer_max_tokens,omitempty" contract:"min=0,max=65536"`
	// Temperature is the sampling temperature, within [0, 2]; default 0.7.
	Temperature *float32 `json:"temperature,omitempty" contract:"min=0,max=2"`
	// TopP is nucleus sampling's top_p, within (0, 1]; default 0.95.
	TopP *float32 `json:"top_p,omitempty" contract:"min=0,max=1"`
	// InvalidUTF8 is the policy for bytes that are not UTF-8: "reject"
	// (the default) fails the run before any model call; "replace" indexes
	// a copy with each invalid byte replaced by U+FFFD, and reports how many.
	InvalidUTF8 string `json:"invalid_utf8,omitempty" contract:"enum=reject|replace"`
	// OCR says which pages of a PDF are read by OCR (Tesseract on the
	// worker): "auto" (the default) reads the scanned pages, those without
	// a text layer or mostly covered by images under a few words of text,
	// and keeps the text layer of every other page; "force" reads every
	// page by OCR, its text layer ignored; "off" reads none (a scanned
	// page then has no text). docs/DOCUMENTS.md has the thresholds.
	OCR string `json:"ocr,omitempty" contract:"enum=auto|force|off"`
	// OCRLanguages are the languages OCR reads, Tesseract's codes joined
	// by "+" ("eng+deu"), at most 8; default "eng". The worker must have
	// each installed (Debian's tesseract-ocr-<code>).
	OCRLanguages string `json:"ocr_languages,omitempty" contract:"maxlen=200"`
}

// Modes of ModelOptions.OCR.
const (
	OCRAuto  = "auto"
	OCRForce = "force"
	OCROff   = "off"
)

// DefaultOCRLanguages are the languages OCR reads unless told others.
const DefaultOCRLanguages = "eng"

// MaxOCRLanguages bounds the languages of ModelOptions.OCRLanguages.
const MaxOCRLanguages = 8

// CheckOCRLanguages reports languages that are not Tesseract language
// codes joined by "+": three lowercase letters and optional "_variant"
// parts ("eng", "chi_sim", "deu_latf"), or a script ("script/Latin").
func CheckOCRLanguages(langs string) error {
	if langs == "" {
		return nil
	}
	parts := strings.Split(langs, "+")
	if len(parts) > MaxOCRLanguages {
		return fmt.Errorf("options.ocr_languages %q names %d languages, over the limit of %d", langs, len(parts), MaxOCRLanguages)
	}
	for _, l := range parts {
		if !ocrLanguageCode(l) {
			return fmt.Errorf("options.ocr_languages %q: %q is not a Tesseract language code (such as eng, deu or chi_sim; join several with +)", langs, l)
		}
	}
	return nil
}

func ocrLanguageCode(l string) bool {
	lower := func(s string) bool {
		for _, r := range s {
			if r < 'a' || r > 'z' {
				return false
			}
		}
		return s != ""
	}
	if rest, ok := strings.CutPrefix(l, "script/"); ok {
		if rest == "" || rest[0] < 'A' || rest[0] > 'Z' {
			return false
		}
		for _, r := range rest {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_') {
				return false
			}
		}
		return true
	}
	parts := strings.Split(l, "_")
	if len(parts[0]) != 3 || !lower(parts[0]) {
		return false
	}
	for _, p := range parts[1:] {
		if !lower(p) {
			return false
		}
	}
	return true
}

// Policies for ModelOptions.InvalidUTF8.
const (
	InvalidUTF8Reject  = "reject"
	InvalidUTF8Replace = "replace"
)

// WithDefaults fills every unset field. It is deterministic and safe to call
// from workflow code.
func (o ModelOptions) WithDefaults() ModelOptions {
	if o.Tokenizer == "" {
		o.Tokenizer = DefaultTokenizer
	}
	if o.ChunkTokens == 0 {
		o.ChunkTokens = DefaultChunkTokens
	}
	if o.MemoryMaxTokens == 0 {
		o.MemoryMaxTokens = DefaultMemoryMaxTokens
	}
	if o.AnswerMaxTokens == 0 {
		o.AnswerMaxTokens = DefaultAnswerMaxTokens
	}
	if o.Temperature == nil {
		t := float32(DefaultTemperature)
		o.Temperature = &t
	}
	if o.TopP == nil {
		p := float32(DefaultTopP)
		o.TopP = &p
	}
	return o
}

// Validate reports the first option out of range, phrased as what to
// change: the ranges of the fields' contract tags (the schema's), then
// what the tags cannot say.
func (o ModelOptions) Validate() error {
	// workflowcheck flags the reflection contract.CheckIn walks the
	// options with; the check is a pure function of them.
	//workflowcheck:ignore
	if err := contract.CheckIn("options", o); err != nil {
		return err
	}
	if err := CheckModelName(o.Model); err != nil {
		return fmt.Errorf("options.model: %w: name a model the server lists", err)
	}
	switch {
	case o.ChunkTokens < 0 || (o.ChunkTokens > 0 && o.ChunkTokens < 64):
		return fmt.Errorf("options.chunk_tokens (%d) must be at least 64: raise options.chunk_tokens", o.ChunkTokens)
	case o.MemoryMaxTokens < 0 || (o.MemoryMaxTokens > 0 && o.MemoryMaxTokens < 16):
		return fmt.Errorf("options.memory_max_tokens (%d) must be at least 16: raise options.memory_max_tokens", o.MemoryMaxTokens)
	case o.AnswerMaxTokens < 0:
		return fmt.Errorf("options.answer_max_tokens (%d) must be positive: raise options.answer_max_tokens", o.AnswerMaxTokens)
	case o.Temperature != nil && (*o.Temperature < 0 || *o.Temperature > 2):
		return fmt.Errorf("options.temperature (%g) must be within [0, 2]: set options.temperature within it, or leave it unset for %g", *o.Temperature, DefaultTemperature)
	case o.InvalidUTF8 != "" && o.InvalidUTF8 != InvalidUTF8Reject && o.InvalidUTF8 != InvalidUTF8Replace:
		return fmt.Errorf("options.invalid_utf8 (%q) must be %q or %q", o.InvalidUTF8, InvalidUTF8Reject, InvalidUTF8Replace)
	case o.TopP != nil && (*o.TopP <= 0 || *o.TopP > 1):
		return fmt.Errorf("options.top_p (%g) must be within (0, 1]: set options.top_p within it, or leave it unset for %g", *o.TopP, DefaultTopP)
	case o.OCR != "" && o.OCR != OCRAuto && o.OCR != OCRForce && o.OCR != OCROff:
		return fmt.Errorf("options.ocr (%q) must be %q, %q or %q", o.OCR, OCRAuto, OCRForce, OCROff)
	}
	return CheckOCRLanguages(o.OCRLanguages)
}

// Usage sums the tokens the model server reported.
type Usage struct {
	Calls            int   `json:"calls"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	CachedTokens     int64 `json:"cached_tokens,omitempty"`
	// RepeatedCalls counts the calls (within Calls) that repeated one
	// already made: a retry whose earlier attempt's completion was lost
	// before it could be kept.
	RepeatedCalls int `json:"repeated_calls,omitempty"`
}

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		Calls:            u.Calls + v.Calls,
		PromptTokens:     u.PromptTokens + v.PromptTokens,
		CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		CachedTokens:     u.CachedTokens + v.CachedTokens,
		RepeatedCalls:    u.RepeatedCalls + v.RepeatedCalls,
	}
}

// MaxModelNameBytes bounds a served model name.
const MaxModelNameBytes = 256

// CheckModelName reports a model name no server could serve: over
// MaxModelNameBytes, or with a control character.
func CheckModelName(name string) error {
	switch {
	case len(name) > MaxModelNameBytes:
		return fmt.Errorf("model name is %d bytes, over the limit of %d", len(name), MaxModelNameBytes)
	case strings.ContainsFunc(name, unicode.IsControl):
		return fmt.Errorf("model name %q has a control character", name)
	}
	return nil
}
