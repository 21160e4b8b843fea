package tokenizer

import (
	"fmt"
	"sync"
	"unicode/utf8"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/memagent/memagent/internal/memagent"
)

// CL100K is the name of the cl100k_base encoding, the default.
const CL100K = "cl100k_base"

// supportedNames lists the names New accepts, for error messages.
const supportedNames = CL100K + ` (or "" for the default), ` + Qwen + ` (or "qwen", "qwen3"), ` + O200K + ` (or "o200k")`

// New returns the tokenizer called name: "" or [CL100K] for cl100k_base,
// [Qwen] (or "qwen", "qwen3") for the Qwen2.5 / Qwen3 tokenizer, [O200K]
// (or "o200k") for OpenAI's gpt-4o and newer models (see [ForModel]). The
// vocabularies are embedded in the binary, so New never touches the
// network. Each is loaded on first use and shared by every caller in the
// process; the returned tokenizer is safe for concurrent use.
func New(name string) (memagent.Tokenizer, error) {
	switch name {
	case "", CL100K:
		t, err := loadCL100K()
		if err != nil {
			return nil, fmt.Errorf("tokenizer: load %s: %w", CL100K, err)
		}
		return t, nil
	case O200K, "o200k":
		t, err := loadO200K()
		if err != nil {
			return nil, fmt.Errorf("tokenizer: load %s: %w", O200K, err)
		}
		return t, nil
	case Qwen, "qwen", "qwen3":
		t, err := loadQwen()
		if err != nil {
			return nil, fmt.Errorf("tokenizer: load %s: %w", Qwen, err)
		}
		return t, nil
	default:
		return nil, fmt.Errorf("tokenizer: unknown tokenizer %q: supported: %s", name, supportedNames)
	}
}

// cl100kPattern is the pre-tokenization split pattern of cl100k_base, as
// published with the encoding.
const cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// loadCL100K builds the cl100k_base tokenizer once per process; it takes
// about a tenth of a second and tens of megabytes.
//
// It deliberately does not use tiktoken.SetBpeLoader + GetEncoding: the
// loader set there is process-global (and written without
// synchronisation), so setting it would change how every other user of
// tiktoken-go in the process loads vocabularies. Instead the embedded
// vocabulary is read through the offline loader directly and the encoder is
// assembled with the library's exported constructors.
var loadCL100K = sync.OnceValues(func() (*bpeTokenizer, error) {
	ranks, err := tiktokenloader.NewOfflineLoader().LoadTiktokenBpe("cl100k_base.tiktoken")
	if err != nil {
		return nil, fmt.Errorf("read embedded vocabulary: %w", err)
	}
	// The special tokens are part of the encoding's definition but are
	// never produced for document text (see bpeTokenizer.TokenLens).
	specialIDs := map[string]int{
		tiktoken.ENDOFTEXT:   100257,
		tiktoken.FIM_PREFIX:  100258,
		tiktoken.FIM_MIDDLE:  100259,
		tiktoken.FIM_SUFFIX:  100260,
		tiktoken.ENDOFPROMPT: 100276,
	}
	return newBPE(CL100K, cl100kPattern, newSplitter(splitCL100K, 3), ranks, specialIDs, false)
})

// tokenLens returns a table of token byte lengths indexed by id, so
// TokenLens needs no decoding per call.
func tokenLens(ranks map[string]int) []int {
	maxID := 0
	for _, id := range ranks {
		maxID = max(maxID, id)
	}
	tokenLen := make([]int, maxID+1)
	for b, id := range ranks {
		tokenLen[id] = len(b)
	}
	return tokenLen
}

// bpeTokenizer adapts a tiktoken encoding to memagent.Tokenizer. It is
// immutable after construction, its splitter and tiktoken's encoder only
// read their tables, and tiktoken's regexps are goroutine-safe, so it is
// safe for concurrent use.
type bpeTokenizer struct {
	name     string
	enc      *tiktoken.Tiktoken
	tokenLen []int
	// ranks are the merge ranks enc was built from, each token's rank
	// being its id.
	ranks map[string]int
	pairs *pairRanks
	// split cuts valid UTF-8 into the pieces enc's pattern matches (see
	// split.go); nil for a pattern without a hand-written splitter, which
	// enc then encodes.
	split *splitter
	// nfc makes the tokenizer normalise text to NFC before encoding, as
	// Qwen's does.
	nfc bool
}

// Name returns the encoding name, e.g. "cl100k_base".
func (t *bpeTokenizer) Name() string { return t.name }

// encode returns the token ids of text encoded as ordinary text, after
// normalisation if the tokenizer normalises.
func (t *bpeTokenizer) encode(text string) []int {
	if t.nfc {
		text, _ = normalizeNFC(text, false)
	}
	return t.encodeOrdinary(text)
}

// Byte-pair merging is quadratic in the length of a pre-tokenized piece,
// and the split patterns make one piece of a whole run of letters, of
// spaces or of punctuation: a megabyte of "aaaa…" took minutes. A run of
// one class of characters longer than maxRun bytes is therefore encoded in
// pieces of runPiece bytes, which keeps encoding linear whatever the input.
// Text without such runs (every ordinary text: words, CJK sentences,
// which punctuation breaks, URLs) is encoded exactly as before; within a
// cut run a token cannot span a cut, which changes its count by at most
// one a cut.
const (
	maxRun   = 1 << 10
	runPiece = 32
)

// encodeOrdinary is EncodeOrdinary in linear time: see maxRun.
func (t *bpeTokenizer) encodeOrdinary(text string) []int {
	s := tokenSink{wantIDs: true}
	t.encodeInto(text, &s)
	return s.ids
}

// encodeInto encodes text as encodeOrdinary does into s. Valid UTF-8 goes
// through t.split and bytePairMerge; anything else through tiktoken-go,
// which decodes invalid bytes as U+FFFD and encodes those.
func (t *bpeTokenizer) encodeInto(text string, s *tokenSink) {
	if t.split == nil || !utf8.ValidString(text) {
		ids := t.libraryEncodeOrdinary(text)
		s.count += len(ids)
		if s.wantIDs {
			s.ids = append(s.ids, ids...)
		}
		if s.wantLens {
			s.lens = append(s.lens, t.lens(ids)...)
		}
		return
	}
	start := 0
	for _, r := range longRuns(text) {
		t.splitInto(text[start:r[0]], s)
		for p := r[0]; p < r[1]; {
			q := min(p+runPiece, r[1])
			for q < r[1] && !utf8.RuneStart(text[q]) {
				q++
			}
			t.splitInto(text[p:q], s)
			p = q
		}
		start = r[1]
	}
	t.splitInto(text[start:], s)
}

// libraryEncodeOrdinary is encodeOrdinary by tiktoken-go alone, with its
// regexp2 pre-tokenizer: the reference the tests hold encodeOrdinary to.
func (t *bpeTokenizer) libraryEncodeOrdinary(text string) []int {
	runs := longRuns(text)
	if runs == nil {
		return t.enc.EncodeOrdinary(text)
	}
	var ids []int
	start := 0
	for _, r := range runs {
		ids = append(ids, t.enc.EncodeOrdinary(text[start:r[0]])...)
		for p := r[0]; p < r[1]; {
			q := min(p+runPiece, r[1])
			for q < r[1] && !utf8.RuneStart(text[q]) {
				q++
			}
			ids = append(ids, t.enc.EncodeOrdinary(text[p:q])...)
			p = q
		}
		start = r[1]
	}
	return append(ids, t.enc.EncodeOrdinary(text[start:])...)
}

// runClass is the class of character whose runs the split patterns keep
// in one piece, from the character's class bits (see classOf): letters
// (and their marks, unicode.IsLetter or unicode.IsMark), white space
// (unicode.IsSpace), and other symbols. Digits (unicode.IsNumber) are
// split in threes by the patterns already.
func runClass(c uint16) int {
	switch {
	case c&(clsL|clsM) != 0:
		return 1
	case c&clsS != 0:
		return 2
	case c&clsN != 0:
		return 0
	}
	return 3
}

// longRuns returns the byte ranges of runs of one class (not digits)
// longer than maxRun, or nil.
func longRuns(text string) [][2]int {
	var runs [][2]int
	table := classTable()
	class, start := -1, 0
	end := func(at int) {
		if class > 0 && at-start > maxRun {
			runs = append(runs, [2]int{start, at})
		}
	}
	for i := 0; i < len(text); {
		cls, n := table[text[i]&0x7f], 1
		if text[i] >= utf8.RuneSelf {
			cls, n = classAt(table, text, i)
		}
		if c := runClass(cls); c != class {
			end(i)
			class, start = c, i
		}
		i += n
	}
	end(len(text))
	return runs
}

// TokenLens returns the byte length of each token of text. Text must be
// valid UTF-8. Special-token strings such as "<|endoftext|>" are encoded as
// ordinary text.
//
// For a normalising tokenizer the tokens are those of the normalised text;
// when normalisation changes the text, their lengths are mapped back onto
// the original bytes (see mapTokenLens), so they still sum to len(text).
func (t *bpeTokenizer) TokenLens(text string) []int {
	var spans []nfcSpan
	orig := text
	if t.nfc {
		text, spans = normalizeNFC(text, true)
	}
	s := tokenSink{wantLens: true, lens: make([]int, 0, len(text)/4+1)}
	t.encodeInto(text, &s)
	lens := s.lens
	if spans != nil {
		lens = mapTokenLens(lens, spans, len(orig))
	}
	return lens
}

// lens returns the byte length of each token in ids.
func (t *bpeTokenizer) lens(ids []int) []int {
	lens := make([]int, len(ids))
	for i, id := range ids {
		if id >= 0 && id < len(t.tokenLen) && t.tokenLen[id] > 0 {
			lens[i] = t.tokenLen[id]
		} else {
			lens[i] = len(t.enc.Decode(ids[i : i+1]))
		}
	}
	return lens
}

// Count returns the number of tokens in text, encoded as ordinary text
// (after normalisation if the tokenizer normalises).
func (t *bpeTokenizer) Count(text string) int {
	if t.nfc {
		text, _ = normalizeNFC(text, false)
	}
	var s tokenSink
	t.encodeInto(text, &s)
	return s.count
}

// newBPE builds a byte-level BPE tokenizer from merge ranks, special token
// ids and a pre-tokenization pattern. Special tokens are registered only so
// that the library knows them; documents are always encoded as ordinary
// text. nfc normalises text before encoding.
func newBPE(name, pattern string, split *splitter, ranks map[string]int, specialIDs map[string]int, nfc bool) (*bpeTokenizer, error) {
	core, err := tiktoken.NewCoreBPE(ranks, specialIDs, pattern)
	if err != nil {
		return nil, fmt.Errorf("build encoder: %w", err)
	}
	special := make(map[string]any, len(specialIDs))
	for s := range specialIDs {
		special[s] = true
	}
	enc := tiktoken.NewTiktoken(core, &tiktoken.Encoding{
		Name:           name,
		PatStr:         pattern,
		MergeableRanks: ranks,
		SpecialTokens:  specialIDs,
	}, special)
	return &bpeTokenizer{name: name, enc: enc, tokenLen: tokenLens(ranks), ranks: ranks, pairs: newPairRanks(ranks), split: split, nfc: nfc}, nil
}
