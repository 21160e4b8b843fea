package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/memagent/memagent/internal/memagent"
)

func newCL100K(t testing.TB) memagent.Tokenizer {
	t.Helper()
	tok, err := New(CL100K)
	if err != nil {
		t.Fatalf("New(%q): %v", CL100K, err)
	}
	return tok
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		wantErr bool
		want    string
	}{
		{"", false, CL100K},
		{"cl100k_base", false, CL100K},
		{"CL100K_BASE", true, ""},
		{"o200k_base", false, O200K},
		{"p50k_base", true, ""},
		{"gpt2", true, ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.name), func(t *testing.T) {
			tok, err := New(tt.name)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("New(%q) = %v, want an error", tt.name, tok)
				}
				if !strings.Contains(err.Error(), "cl100k_base") {
					t.Errorf("error %q does not list the supported names", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("New(%q): %v", tt.name, err)
			}
			if got := tok.Name(); got != tt.want {
				t.Errorf("Name() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNewLoadsOnce(t *testing.T) {
	var wg sync.WaitGroup
	toks := make([]memagent.Tokenizer, 8)
	for i := range toks {
		wg.Go(func() { toks[i] = newCL100K(t) })
	}
	wg.Wait()
	for i, tok := range toks {
		if tok != toks[0] {
			t.Errorf("New call %d returned a different instance; the vocabulary should load once", i)
		}
	}
}

// TestKnownEncodings pins a few published cl100k_base encodings.
func TestKnownEncodings(t *testing.T) {
	tok := newCL100K(t).(*bpeTokenizer)
	tests := []struct {
		text string
		want []int
	}{
		{"hello world", []int{15339, 1917}},
		{"tiktoken is great!", []int{83, 1609, 5963, 374, 2294, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			if got := tok.enc.EncodeOrdinary(tt.text); !slices.Equal(got, tt.want) {
				t.Errorf("EncodeOrdinary(%q) = %v, want %v", tt.text, got, tt.want)
			}
			if got := tok.encode(tt.text); !slices.Equal(got, tt.want) {
				t.Errorf("encode(%q) = %v, want %v", tt.text, got, tt.want)
			}
		})
	}
}

// TestMatchesLibraryEncoding checks that the encoder assembled here is the
// library's own cl100k_base. The library is configured through its global
// loader, which is acceptable inside this test binary only.
func TestMatchesLibraryEncoding(t *testing.T) {
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
	lib, err := tiktoken.GetEncoding(CL100K)
	if err != nil {
		t.Fatalf("library GetEncoding: %v", err)
	}
	tok := newCL100K(t).(*bpeTokenizer)
	text := mixedText(20 << 10)
	if got, want := tok.enc.EncodeOrdinary(text), lib.EncodeOrdinary(text); !slices.Equal(got, want) {
		t.Errorf("encodings differ from the library's cl100k_base (%d vs %d tokens)", len(got), len(want))
	}
	if got, want := tok.encode(text), lib.EncodeOrdinary(text); !slices.Equal(got, want) {
		t.Errorf("the splitter's encodings differ from the library's cl100k_base (%d vs %d tokens)", len(got), len(want))
	}
}

func TestTokenLensSumToLength(t *testing.T) {
	tok := newCL100K(t)
	tests := []struct{ name, text string }{
		{"empty", ""},
		{"ascii", "The quick brown fox jumps over the lazy dog. 1234567890 !@#$%^&*()"},
		{"cjk", "我们在阅读一篇很长的文档，每次只读一段。東京大学の図書館です。한국어 문장입니다."},
		{"emoji", "🌸🎉👍🏽👩‍👩‍👧🇫🇷 ok 😀😀😀"},
		{"mixed", mixedText(4 << 10)},
		{"whitespace", " \n\n\t  \r\n   x  \n"},
		{"combining", "e\u0301 n\u0303 \u0915\u094d\u0937"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lens := tok.TokenLens(tt.text)
			sum := 0
			for i, n := range lens {
				if n <= 0 {
					t.Fatalf("token %d has length %d", i, n)
				}
				sum += n
			}
			if sum != len(tt.text) {
				t.Errorf("token lengths sum to %d, want len(text) = %d", sum, len(tt.text))
			}
			if got := tok.Count(tt.text); got != len(lens) {
				t.Errorf("Count = %d, len(TokenLens) = %d", got, len(lens))
			}
		})
	}
}

// TestTokenLensMatchDecoding checks each length against the token's own
// decoded bytes, and that some tokens split a character, which is what
// memagent.PlanChunks must cope with.
func TestTokenLensMatchDecoding(t *testing.T) {
	tok := newCL100K(t).(*bpeTokenizer)
	text := "Emoji 🌸🦩🧬 and rare CJK 鱻龘靐 split across byte tokens."
	ids := tok.enc.EncodeOrdinary(text)
	lens := tok.TokenLens(text)
	pos, splits := 0, 0
	for i, id := range ids {
		if got, want := lens[i], len(tok.enc.Decode([]int{id})); got != want {
			t.Errorf("token %d (id %d): length %d, decoded length %d", i, id, got, want)
		}
		pos += lens[i]
		if pos < len(text) && !utf8.RuneStart(text[pos]) {
			splits++
		}
	}
	if splits == 0 {
		t.Errorf("no token of %q ends inside a character; the test text no longer exercises split characters", text)
	}
}

func TestSpecialTokenTextIsOrdinary(t *testing.T) {
	tok := newCL100K(t).(*bpeTokenizer)
	for _, text := range []string{
		"<|endoftext|>",
		"before <|endoftext|> after",
		"<|fim_prefix|><|fim_middle|><|fim_suffix|><|endofprompt|>",
	} {
		t.Run(text, func(t *testing.T) {
			ids := tok.encode(text)
			for _, id := range ids {
				if id >= 100257 {
					t.Errorf("text %q produced special token id %d", text, id)
				}
			}
			lens := tok.TokenLens(text) // must not panic
			sum := 0
			for _, n := range lens {
				sum += n
			}
			if sum != len(text) {
				t.Errorf("token lengths sum to %d, want %d", sum, len(text))
			}
			if n := tok.Count(text); n < 2 {
				t.Errorf("Count(%q) = %d; a special-token string must be several ordinary tokens", text, n)
			}
		})
	}
}

func TestConcurrentUse(t *testing.T) {
	for _, name := range []string{CL100K, Qwen} {
		t.Run(name, func(t *testing.T) {
			tok, err := New(name)
			if err != nil {
				t.Fatal(err)
			}
			texts := []string{mixedText(3000), "hello world", "東京 🌸 <|endoftext|> <|im_end|> cafe\u0301", mixedText(5000)}
			want := make([][]int, len(texts))
			for i, s := range texts {
				want[i] = tok.TokenLens(s)
			}
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					for k := range 20 {
						i := (g + k) % len(texts)
						if got := tok.TokenLens(texts[i]); !slices.Equal(got, want[i]) {
							t.Errorf("goroutine %d: TokenLens(text %d) differs from the sequential result", g, i)
							return
						}
					}
				})
			}
			wg.Wait()
		})
	}
}

// TestPlanChunksWithCL100K plans a ~200 KB mixed document with the real
// tokenizer and re-encodes every chunk on its own: the count must be close
// to the recorded one and within a few tokens of the cap.
func TestPlanChunksWithCL100K(t *testing.T) {
	if testing.Short() {
		t.Skip("tokenizes 200 KB")
	}
	tok := newCL100K(t)
	paragraphs := mixedText(200 << 10)
	docs := map[string]string{
		"paragraphs": paragraphs,
		// One 200 KB line: pieces must be cut before spaces instead.
		"one line": strings.ReplaceAll(paragraphs, "\n", " "),
	}
	const slack = 3 // tokens that may merge or split where chunks or pieces are cut
	for _, tc := range []struct {
		doc         string
		chunkTokens int
	}{{"paragraphs", 500}, {"paragraphs", 5000}, {"one line", 500}, {"one line", 5000}} {
		doc, chunkTokens := docs[tc.doc], tc.chunkTokens
		t.Run(fmt.Sprintf("%s/%d", tc.doc, chunkTokens), func(t *testing.T) {
			idx, err := memagent.PlanChunks(strings.NewReader(doc), tok, chunkTokens)
			if err != nil {
				t.Fatalf("PlanChunks: %v", err)
			}
			if idx.Bytes != int64(len(doc)) || idx.Tokenizer != CL100K {
				t.Fatalf("index header = (%d bytes, %q), want (%d, %q)", idx.Bytes, idx.Tokenizer, len(doc), CL100K)
			}
			var end, total int64
			maxDiff := 0
			for i, c := range idx.Chunks {
				if c.Start != end {
					t.Fatalf("chunk %d starts at %d, want %d", i, c.Start, end)
				}
				end = c.End
				total += int64(c.Tokens)
				text := doc[c.Start:c.End]
				if !utf8.ValidString(text) {
					t.Errorf("chunk %d [%d, %d) is not valid UTF-8 on its own", i, c.Start, c.End)
				}
				if c.Tokens > chunkTokens {
					t.Errorf("chunk %d: recorded %d tokens > chunk_tokens %d", i, c.Tokens, chunkTokens)
				}
				got := tok.Count(text)
				maxDiff = max(maxDiff, got-c.Tokens, c.Tokens-got)
				if d := got - c.Tokens; d < -slack || d > slack {
					t.Errorf("chunk %d: re-encoded alone %d tokens, recorded %d", i, got, c.Tokens)
				}
				if got > chunkTokens+slack {
					t.Errorf("chunk %d: re-encoded alone %d tokens > chunk_tokens %d + %d", i, got, chunkTokens, slack)
				}
			}
			if end != int64(len(doc)) || total != idx.Tokens {
				t.Errorf("chunks end at %d (want %d) and sum to %d tokens (index says %d)", end, len(doc), total, idx.Tokens)
			}
			whole := int64(tok.Count(doc))
			if d := idx.Tokens - whole; d < -whole/100 || d > whole/100 {
				t.Errorf("planned %d tokens, whole document encodes to %d", idx.Tokens, whole)
			}
			t.Logf("%d bytes, %d tokens (whole document: %d), %d chunks, largest re-encoding difference %d",
				idx.Bytes, idx.Tokens, whole, len(idx.Chunks), maxDiff)
		})
	}
}

func BenchmarkTokenLens(b *testing.B) {
	tok := newCL100K(b)
	text := mixedText(64 << 10)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	tokens := 0
	for b.Loop() {
		tokens += len(tok.TokenLens(text))
	}
	b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
}

// mixedText returns about n bytes of deterministic text mixing English,
// numbers, punctuation, CJK, emoji, accented words, newlines, paragraphs,
// and the occasional special-token string.
func mixedText(n int) string {
	words := []string{
		"the", "memory", "agent", "reads", "each", "chunk", "and", "rewrites", "its", "notes",
		"Athens", "1896", "3.14159", "don't", "well-known", "(see", "below)", "e.g.", "U.S.A.",
		"東京", "大学", "图书馆", "文档", "한국어", "カタカナ", "café", "Zürich", "naïve", "Ελλάδα",
		"🌸", "🎉", "👍🏽", "🇫🇷", "👩‍👩‍👧", "—", "…", "“quoted”", "x²", "<|endoftext|>",
	}
	r := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		switch k := r.IntN(40); {
		case k == 0:
			b.WriteString("\n\n")
		case k == 1:
			b.WriteString(".\n")
		case k == 2:
			b.WriteString(", ")
		default:
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// TestRunsTokenizeInLinearTime plans 1 MiB of one character repeated
// (a run the split patterns keep in one piece, which byte-pair merging
// handles in time quadratic in its length) against 1 MiB of prose, the
// way the chunk planner feeds them (64 KiB at a time): the run must take
// at most twice the prose's time, for every tokenizer. Each is timed three
// times and the fastest kept, so that a busy machine does not decide.
func TestRunsTokenizeInLinearTime(t *testing.T) {
	if testing.Short() {
		t.Skip("tokenizes megabytes")
	}
	prose := mixedText(1 << 20)
	inputs := []struct{ name, text string }{
		{"letters", strings.Repeat("a", 1<<20)},
		{"spaces", strings.Repeat(" ", 1<<20)},
		{"punctuation", strings.Repeat("!", 1<<20)},
	}
	timeIt := func(tok memagent.Tokenizer, text string) (time.Duration, int) {
		best, tokens := time.Duration(1<<62), 0
		for range 3 {
			began := time.Now()
			tokens = 0
			for off := 0; off < len(text); off += 64 << 10 {
				tokens += len(tok.TokenLens(text[off:min(off+64<<10, len(text))]))
			}
			best = min(best, time.Since(began))
		}
		return best, tokens
	}
	for _, name := range []string{CL100K, Qwen, O200K} {
		tok, err := New(name)
		if err != nil {
			t.Fatal(err)
		}
		base, _ := timeIt(tok, prose)
		for _, in := range inputs {
			took, tokens := timeIt(tok, in.text)
			t.Logf("%s, 1 MiB of %s: %v (%d tokens); 1 MiB of prose: %v", name, in.name, took, tokens, base)
			if took > 2*base+20*time.Millisecond {
				t.Errorf("%s: 1 MiB of %s took %v, over twice the %v of 1 MiB of prose", name, in.name, took, base)
			}
		}
	}
}

// TestOrdinaryTextIsNotCut: text without a run over maxRun bytes encodes
// exactly as the library encodes it.
func TestOrdinaryTextIsNotCut(t *testing.T) {
	text := mixedText(256<<10) + strings.Repeat("x", maxRun) + " " + strings.Repeat("東", maxRun/3)
	for _, name := range []string{CL100K, Qwen, O200K} {
		tok, err := New(name)
		if err != nil {
			t.Fatal(err)
		}
		bt := tok.(*bpeTokenizer)
		if got, want := len(bt.encodeOrdinary(text)), len(bt.enc.EncodeOrdinary(text)); got != want {
			t.Errorf("%s: %d tokens, the library makes %d", name, got, want)
		}
	}
}
