package tokenizer

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"sync"

	"golang.org/x/text/unicode/norm"
)

//go:generate bash genqwen.sh

// Qwen is the name of the Qwen2.5 / Qwen3 tokenizer. New also accepts
// "qwen" and "qwen3" for it; the tokenizer's Name is always Qwen.
const Qwen = "qwen2.5"

// qwenVocab is the Qwen byte-level BPE vocabulary: gzip-compressed text
// with one token per line, standard base64 of the token's bytes, in id
// order. A token's id is also its merge rank. See qwen/README.md for its
// provenance and genqwen.sh for how it is made.
//
//go:embed qwen/vocab.b64.gz
var qwenVocab []byte

const (
	// qwenVocabSHA256 is the SHA-256 of qwenVocab after decompression,
	// as printed by internal/genqwen.
	qwenVocabSHA256 = "1bbcd297bb6cc8d5976d05a60b5fd22b854bdaab09ccc9649419a0ea49dc0d20"
	// qwenVocabSize is the number of regular tokens; ids from here on are
	// special tokens.
	qwenVocabSize = 151643
)

// qwenPattern is Qwen's pre-tokenization split pattern. It is cl100k's
// except that numbers are split into single digits (\p{N}, not
// \p{N}{1,3}). internal/genqwen checks it against the upstream
// tokenizer.json.
const qwenPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// loadQwen builds the Qwen tokenizer once per process.
var loadQwen = sync.OnceValues(func() (*bpeTokenizer, error) {
	ranks, err := readQwenVocab(qwenVocab)
	if err != nil {
		return nil, fmt.Errorf("read embedded vocabulary: %w", err)
	}
	// The special tokens are part of the encoding's definition but are
	// never produced for document text (see bpeTokenizer.TokenLens).
	specialIDs := map[string]int{
		"<|endoftext|>": 151643,
		"<|im_start|>":  151644,
		"<|im_end|>":    151645,
	}
	return newBPE(Qwen, qwenPattern, newSplitter(splitCL100K, 1), ranks, specialIDs, true)
})

// readQwenVocab decompresses and verifies the vocabulary and returns its
// merge ranks keyed by token bytes.
func readQwenVocab(gz []byte) (map[string]int, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	text, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	if sum := sha256.Sum256(text); hex.EncodeToString(sum[:]) != qwenVocabSHA256 {
		return nil, fmt.Errorf("SHA-256 is %x, want %s: the file does not match the code; regenerate it with genqwen.sh", sum, qwenVocabSHA256)
	}
	ranks := make(map[string]int, qwenVocabSize)
	sc := bufio.NewScanner(bytes.NewReader(text))
	for id := 0; sc.Scan(); id++ {
		tok, err := base64.StdEncoding.DecodeString(sc.Text())
		if err != nil || len(tok) == 0 {
			return nil, fmt.Errorf("line %d: bad token %q", id+1, sc.Text())
		}
		if _, dup := ranks[string(tok)]; dup {
			return nil, fmt.Errorf("line %d: token %q repeats an earlier one", id+1, tok)
		}
		ranks[string(tok)] = id
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(ranks) != qwenVocabSize {
		return nil, fmt.Errorf("%d tokens, want %d", len(ranks), qwenVocabSize)
	}
	// tiktoken's BPE treats a missing byte as id 0 rather than failing.
	for c := range 256 {
		if _, ok := ranks[string([]byte{byte(c)})]; !ok {
			return nil, fmt.Errorf("byte %#02x has no token", c)
		}
	}
	return ranks, nil
}

// cgj is U+034F COMBINING GRAPHEME JOINER, which x/text's normaliser
// inserts after 30 consecutive non-starters (the Unicode Stream-Safe Text
// Format). Qwen's normaliser does not.
const cgj = "\u034f"

// nfcSpan pairs an offset in the original text with the matching offset in
// its NFC form.
type nfcSpan struct{ orig, norm int }

// normalizeNFC returns text in NFC as Qwen's normaliser produces it. If
// bounds is true and the text changes, it also returns the boundaries of
// the normalisation segments: bounds[0] = {0, 0}, the last is {len(text),
// len(nfc)}, and the bytes between two consecutive boundaries of the one
// text normalise to those of the other. Runs of segments whose length does
// not change are merged into one. Every original boundary is on a
// character boundary.
//
// Unlike Qwen, x/text stops reordering combining marks after 30 in a row,
// so text with such runs (e.g. "Zalgo" text whose marks are not in
// canonical order) may normalise slightly differently; the CGJs x/text
// would add there are removed.
func normalizeNFC(text string, bounds bool) (string, []nfcSpan) {
	if norm.NFC.IsNormalString(text) {
		return text, nil
	}
	var (
		it       norm.Iter
		b        strings.Builder
		spans    []nfcSpan
		prevSame bool
	)
	b.Grow(len(text) + len(text)/16)
	if bounds {
		spans = append(spans, nfcSpan{})
	}
	it.InitString(norm.NFC, text)
	for !it.Done() {
		start := it.Pos()
		seg := it.Next()
		// A segment starts with an inserted CGJ only after an overflow,
		// and then the input there is a non-starter, never a CGJ.
		if bytes.HasPrefix(seg, []byte(cgj)) && !strings.HasPrefix(text[start:], cgj) {
			seg = seg[len(cgj):]
		}
		b.Write(seg)
		if !bounds {
			continue
		}
		end := it.Pos()
		same := end-start == len(seg)
		if same && prevSame {
			spans[len(spans)-1] = nfcSpan{end, b.Len()}
		} else {
			spans = append(spans, nfcSpan{end, b.Len()})
		}
		prevSame = same
	}
	return b.String(), spans
}

// mapTokenLens turns the byte lengths of the tokens of an NFC text into
// lengths over the original text, given the segment boundaries from
// normalizeNFC; origLen is len(original text).
//
// Each token boundary is carried into the original proportionally within
// its segment: a boundary on a segment edge lands exactly on the matching
// edge (a character boundary of the original), and one inside a segment
// the original changed lands at the same fraction of that segment's
// original bytes. Where normalisation did not change a segment the mapping
// is exact. The result is an approximation only inside changed segments
// (usually a single accented letter), and its lengths still sum to
// origLen.
//
// Lengths are kept positive by nudging boundaries that collide, which is
// needed only where NFC lengthens a segment. In the pathological case of
// more tokens than original bytes (text made almost entirely of characters
// that NFC expands) it returns origLen one-byte tokens, so len(result)
// undercounts; Count stays exact.
func mapTokenLens(normLens []int, spans []nfcSpan, origLen int) []int {
	n := len(normLens)
	if n > origLen {
		lens := make([]int, origLen)
		for i := range lens {
			lens[i] = 1
		}
		return lens
	}
	// cuts[i] is the end of token i in the original; cuts[n-1] = origLen.
	cuts := make([]int, n)
	pos, k := 0, 0
	for i, l := range normLens[:max(n-1, 0)] {
		pos += l
		for k+1 < len(spans)-1 && spans[k+1].norm <= pos {
			k++
		}
		s, e := spans[k], spans[k+1]
		cuts[i] = s.orig + (pos-s.norm)*(e.orig-s.orig)/(e.norm-s.norm)
	}
	if n > 0 {
		cuts[n-1] = origLen
	}
	// Backwards, cap each cut one byte before the next; since n <= origLen
	// this also keeps it at least one byte after the previous one.
	for i := n - 2; i >= 0; i-- {
		cuts[i] = max(min(cuts[i], cuts[i+1]-1), i+1)
	}
	lens := make([]int, n)
	prev := 0
	for i, c := range cuts {
		lens[i] = c - prev
		prev = c
	}
	return lens
}
