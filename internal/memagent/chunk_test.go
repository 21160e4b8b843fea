package memagent

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode"
	"unicode/utf8"
)

// byteTokenizer makes one token per byte, so every multi-byte character is
// split across tokens.
type byteTokenizer struct{}

func (byteTokenizer) Name() string { return "fake-bytes" }
func (byteTokenizer) TokenLens(text string) []int {
	lens := make([]int, len(text))
	for i := range lens {
		lens[i] = 1
	}
	return lens
}
func (byteTokenizer) Count(text string) int { return len(text) }

// runeTokenizer makes one token per character.
type runeTokenizer struct{}

func (runeTokenizer) Name() string { return "fake-runes" }
func (runeTokenizer) TokenLens(text string) []int {
	var lens []int
	for _, r := range text {
		lens = append(lens, utf8.RuneLen(r))
	}
	return lens
}
func (runeTokenizer) Count(text string) int { return utf8.RuneCountInString(text) }

// wordTokenizer makes a token of each run of whitespace and of each run of
// other bytes, cutting runs longer than 3 bytes into 3-byte tokens without
// regard for character boundaries, as byte-level BPE may.
type wordTokenizer struct{}

func (wordTokenizer) Name() string { return "fake-words" }
func (wordTokenizer) TokenLens(text string) []int {
	var lens []int
	for i := 0; i < len(text); {
		space := isSpaceByte(text[i])
		j := i
		for j < len(text) && isSpaceByte(text[j]) == space && j-i < 3 {
			j++
		}
		lens = append(lens, j-i)
		i = j
	}
	return lens
}
func (w wordTokenizer) Count(text string) int { return len(w.TokenLens(text)) }

func isSpaceByte(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// lyingTokenizer returns lengths that do not add up.
type lyingTokenizer struct{}

func (lyingTokenizer) Name() string                { return "fake-liar" }
func (lyingTokenizer) TokenLens(text string) []int { return []int{len(text) + 1} }
func (lyingTokenizer) Count(string) int            { return 1 }

var fakeTokenizers = []Tokenizer{byteTokenizer{}, runeTokenizer{}, wordTokenizer{}}

// checkIndex verifies every invariant PlanChunks promises for doc.
func checkIndex(t *testing.T, doc []byte, tok Tokenizer, chunkTokens int, idx *ChunkIndex) {
	t.Helper()
	sum := sha256.Sum256(doc)
	if got, want := idx.SHA256, hex.EncodeToString(sum[:]); got != want {
		t.Errorf("SHA256 = %s, want %s", got, want)
	}
	if idx.Version != ChunkIndexVersion || idx.Tokenizer != tok.Name() || idx.ChunkTokens != chunkTokens {
		t.Errorf("header = (version %d, tokenizer %q, chunk_tokens %d), want (%d, %q, %d)",
			idx.Version, idx.Tokenizer, idx.ChunkTokens, ChunkIndexVersion, tok.Name(), chunkTokens)
	}
	if got, want := idx.Bytes, int64(len(doc)); got != want {
		t.Errorf("Bytes = %d, want %d", got, want)
	}
	checkChains(t, string(doc), idx)
	if len(idx.Chunks) == 0 {
		t.Fatalf("no chunks for a %d-byte document", len(doc))
	}
	var prevEnd, tokens int64
	for i, c := range idx.Chunks {
		if c.Index != i {
			t.Errorf("chunk %d: Index = %d", i, c.Index)
		}
		if c.Start != prevEnd {
			t.Errorf("chunk %d: Start = %d, want %d (end of previous chunk)", i, c.Start, prevEnd)
		}
		if c.End <= c.Start || c.End > int64(len(doc)) {
			t.Fatalf("chunk %d: bad range [%d, %d) in %d bytes", i, c.Start, c.End, len(doc))
		}
		if c.End < int64(len(doc)) && !utf8.RuneStart(doc[c.End]) {
			t.Errorf("chunk %d: End %d falls inside a UTF-8 character", i, c.End)
		}
		if c.Tokens <= 0 {
			t.Errorf("chunk %d: Tokens = %d, want > 0", i, c.Tokens)
		}
		text := string(doc[c.Start:c.End])
		if c.Tokens > chunkTokens && !singleUnit(tok, text) {
			t.Errorf("chunk %d: %d tokens > chunk_tokens %d in a chunk of several units (%q)",
				i, c.Tokens, chunkTokens, text)
		}
		// The fakes are context free, so a chunk re-counted alone must
		// give the same count, except that wordTokenizer runs may be cut
		// differently where pieces were cut.
		if _, ok := tok.(wordTokenizer); !ok {
			if got := tok.Count(text); got != c.Tokens {
				t.Errorf("chunk %d: Tokens = %d, re-counted %d", i, c.Tokens, got)
			}
		}
		prevEnd = c.End
		tokens += int64(c.Tokens)
	}
	if prevEnd != int64(len(doc)) {
		t.Errorf("last chunk ends at %d, want %d", prevEnd, len(doc))
	}
	if tokens != idx.Tokens {
		t.Errorf("chunk tokens sum to %d, index Tokens = %d", tokens, idx.Tokens)
	}
}

// singleUnit reports whether no token of text but the last ends on a
// character boundary, so text could not have been cut into smaller chunks.
func singleUnit(tok Tokenizer, text string) bool {
	lens := tok.TokenLens(text)
	pos := 0
	for _, n := range lens[:len(lens)-1] {
		pos += n
		if utf8.RuneStart(text[pos]) {
			return false
		}
	}
	return true
}

// sampleDocs covers ASCII, CJK, emoji, combining marks and paragraphs.
func sampleDocs() map[string]string {
	var long strings.Builder
	for i := range 300 {
		fmt.Fprintf(&long, "Paragraph %d says 東京 is 🌸 far from café Zürich.\n", i)
		if i%7 == 0 {
			long.WriteString("\n")
		}
	}
	return map[string]string{
		"one char":   "x",
		"ascii":      "The quick brown fox jumps over the lazy dog.",
		"cjk":        "我们在阅读一篇很长的文档，每次只读一段。",
		"emoji":      "👍🏽🎉🇫🇷👩‍👩‍👧 ok",
		"combining":  "e\u0301e\u0301 n\u0303",
		"paragraphs": "first para\n\nsecond para\n\n\nthird\n",
		"no spaces":  strings.Repeat("漢字かな", 100),
		"mixed long": long.String(),
		"leading ws": "   \n\n  text after space",
	}
}

func TestPlanChunksInvariants(t *testing.T) {
	sizes := []struct{ block, piece int }{
		{planBlockSize, planMaxPiece},
		{7, 16},
		{1, 4},
		{64, 5},
	}
	for name, doc := range sampleDocs() {
		for _, tok := range fakeTokenizers {
			for _, chunkTokens := range []int{1, 3, 4, 10, 100, 1 << 20} {
				for _, sz := range sizes {
					t.Run(fmt.Sprintf("%s/%s/%d/%d-%d", name, tok.Name(), chunkTokens, sz.block, sz.piece), func(t *testing.T) {
						idx, err := planChunks(strings.NewReader(doc), tok, chunkTokens, sz.block, sz.piece)
						if err != nil {
							t.Fatalf("planChunks: %v", err)
						}
						checkIndex(t, []byte(doc), tok, chunkTokens, idx)
						if got, want := idx.Tokens, int64(tok.Count(doc)); tok.Name() != "fake-words" && got != want {
							t.Errorf("Tokens = %d, want %d", got, want)
						}
					})
				}
			}
		}
	}
}

// TestPlanChunksGreedy checks that chunks are filled as far as the cap
// allows: with one token per byte, a chunk ends only where the next
// character would not fit.
func TestPlanChunksGreedy(t *testing.T) {
	doc := sampleDocs()["mixed long"]
	for _, chunkTokens := range []int{4, 17, 100, 5000} {
		t.Run(fmt.Sprint(chunkTokens), func(t *testing.T) {
			idx, err := planChunks(iotest.HalfReader(strings.NewReader(doc)), byteTokenizer{}, chunkTokens, 333, 100)
			if err != nil {
				t.Fatalf("planChunks: %v", err)
			}
			for i, c := range idx.Chunks[:len(idx.Chunks)-1] {
				_, next := utf8.DecodeRuneInString(doc[c.End:])
				if c.Tokens+next <= chunkTokens {
					t.Errorf("chunk %d has %d tokens and the next character (%d tokens) would fit under %d",
						i, c.Tokens, next, chunkTokens)
				}
			}
		})
	}
}

func TestPlanChunksExact(t *testing.T) {
	tests := []struct {
		name        string
		doc         string
		tok         Tokenizer
		chunkTokens int
		want        []Chunk
	}{
		{
			name: "words", doc: "aaa bb cc dd", tok: wordTokenizer{}, chunkTokens: 3,
			// tokens: "aaa" " " "bb" | " " "cc" " " | "dd"
			want: []Chunk{{0, 0, 6, 3, ""}, {1, 6, 10, 3, ""}, {2, 10, 12, 1, ""}},
		},
		{
			name: "split character stays whole", doc: "aé", tok: byteTokenizer{}, chunkTokens: 2,
			// "é" is two byte tokens and does not fit after "a".
			want: []Chunk{{0, 0, 1, 1, ""}, {1, 1, 3, 2, ""}},
		},
		{
			name: "oversized character alone", doc: "a😀b", tok: byteTokenizer{}, chunkTokens: 2,
			want: []Chunk{{0, 0, 1, 1, ""}, {1, 1, 5, 4, ""}, {2, 5, 6, 1, ""}},
		},
		{
			name: "single chunk", doc: "hello world", tok: runeTokenizer{}, chunkTokens: 5000,
			want: []Chunk{{0, 0, 11, 11, ""}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx, err := PlanChunks(strings.NewReader(tt.doc), tt.tok, tt.chunkTokens)
			if err != nil {
				t.Fatalf("PlanChunks: %v", err)
			}
			checkChains(t, tt.doc, idx)
			for i := range idx.Chunks {
				idx.Chunks[i].Chain = ""
			}
			if fmt.Sprint(idx.Chunks) != fmt.Sprint(tt.want) {
				t.Errorf("chunks = %v, want %v", idx.Chunks, tt.want)
			}
		})
	}
}

// checkChains checks each chunk's Chain against one computed from the
// chunk's bytes of doc.
func checkChains(t *testing.T, doc string, idx *ChunkIndex) {
	t.Helper()
	var link []byte
	for _, c := range idx.Chunks {
		link = ChainNext(link, sha256.Sum256([]byte(doc[c.Start:c.End])))
		if want := hex.EncodeToString(link); c.Chain != want {
			t.Fatalf("chunk %d: chain %s, want %s", c.Index, c.Chain, want)
		}
	}
}

// TestPlanChunksChain checks the hash chain that memory checkpoints are
// keyed by: right at every block and piece size, equal for the chunks an
// appended text leaves as they were, different from the first chunk an
// edit touches on.
func TestPlanChunksChain(t *testing.T) {
	var b strings.Builder
	for i := range 400 {
		fmt.Fprintf(&b, "Sentence %d of the first document says something.\n", i)
		if i%7 == 0 {
			b.WriteString("\n")
		}
	}
	doc := b.String()
	for _, sizes := range [][2]int{{1 << 20, 64 << 10}, {100, 37}, {4096, 512}} {
		idx, err := planChunks(strings.NewReader(doc), wordTokenizer{}, 50, sizes[0], sizes[1])
		if err != nil {
			t.Fatal(err)
		}
		checkChains(t, doc, idx)
	}
	plan := func(text string) *ChunkIndex {
		t.Helper()
		idx, err := PlanChunks(strings.NewReader(text), wordTokenizer{}, 50)
		if err != nil {
			t.Fatal(err)
		}
		return idx
	}
	base := plan(doc)
	grown := plan(doc + "\n\n=== Document 2: b.txt ===\n\nMore text arrives.\n")
	n := len(base.Chunks)
	for i := 0; i < n-1; i++ {
		if base.Chunks[i].Chain != grown.Chunks[i].Chain {
			t.Fatalf("appended text changed chunk %d's chain", i)
		}
	}
	mid := strings.Index(doc, "Sentence 200 ")
	edited := plan(doc[:mid] + "Sentence two hundred" + doc[mid+len("Sentence 200"):])
	first := -1
	for i, c := range base.Chunks {
		if c.Start <= int64(mid) && int64(mid) < c.End {
			first = i
		}
	}
	for i := range base.Chunks {
		same := base.Chunks[i].Chain == edited.Chunks[i].Chain
		if same != (i < first) {
			t.Fatalf("chunk %d (edit in chunk %d): same chain %v", i, first, same)
		}
	}
}

// firstInvalid is a reference for the offset of the first invalid byte.
func firstInvalid(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

func TestPlanChunksInvalidUTF8(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want int64
	}{
		{"lone continuation", "abc\x80def", 3},
		{"bad first byte", "\xffabc", 0},
		{"truncated at end", "abc\xe6\x97", 3},
		{"truncated mid text", "ab\xe6\x97c", 2},
		{"surrogate", "ok \xed\xa0\x80", 3},
		{"overlong", "ok \xc0\xaf", 3},
		{"after valid multibyte", "東京\xfe", 6},
		{"late", strings.Repeat("é", 1000) + "\xc3", 2000},
	}
	readers := map[string]func(string) io.Reader{
		"whole":    func(s string) io.Reader { return strings.NewReader(s) },
		"one byte": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"half":     func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
	}
	for _, tt := range tests {
		if got := firstInvalid([]byte(tt.doc)); int64(got) != tt.want {
			t.Fatalf("%s: test case is wrong: first invalid byte at %d, want %d", tt.name, got, tt.want)
		}
		for rname, newReader := range readers {
			for _, block := range []int{1, 2, 3, 5, planBlockSize} {
				t.Run(fmt.Sprintf("%s/%s/%d", tt.name, rname, block), func(t *testing.T) {
					_, err := planChunks(newReader(tt.doc), byteTokenizer{}, 10, block, 16)
					var invalid *InvalidUTF8Error
					if !errors.As(err, &invalid) {
						t.Fatalf("err = %v, want *InvalidUTF8Error", err)
					}
					if invalid.Offset != tt.want {
						t.Errorf("Offset = %d, want %d", invalid.Offset, tt.want)
					}
				})
			}
		}
	}
}

// TestPlanChunksSplitCharacterAcrossBlocks reads valid text whose
// multi-byte characters straddle every possible block boundary.
func TestPlanChunksSplitCharacterAcrossBlocks(t *testing.T) {
	doc := "a東😀é" + strings.Repeat("京🌸", 20)
	for block := 1; block <= 9; block++ {
		t.Run(fmt.Sprint(block), func(t *testing.T) {
			idx, err := planChunks(strings.NewReader(doc), runeTokenizer{}, 3, block, 4)
			if err != nil {
				t.Fatalf("planChunks: %v", err)
			}
			checkIndex(t, []byte(doc), runeTokenizer{}, 3, idx)
		})
	}
}

func TestPlanChunksEmpty(t *testing.T) {
	for _, doc := range []string{"", " ", "\n\n\n", " \t\r\n ", "\u3000\u00a0 ", strings.Repeat(" ", 100000)} {
		t.Run(fmt.Sprintf("%q", doc[:min(len(doc), 10)]), func(t *testing.T) {
			_, err := PlanChunks(strings.NewReader(doc), byteTokenizer{}, 10)
			if !errors.Is(err, ErrEmptyDocument) {
				t.Errorf("err = %v, want ErrEmptyDocument", err)
			}
		})
	}
}

func TestPlanChunksErrors(t *testing.T) {
	readErr := errors.New("connection reset")
	tests := []struct {
		name        string
		r           io.Reader
		tok         Tokenizer
		chunkTokens int
		wantIs      error
		wantText    string
	}{
		{"zero chunk tokens", strings.NewReader("x"), byteTokenizer{}, 0, nil, "chunk_tokens must be positive"},
		{"negative chunk tokens", strings.NewReader("x"), byteTokenizer{}, -5, nil, "chunk_tokens must be positive"},
		{"nil tokenizer", strings.NewReader("x"), nil, 10, nil, "tokenizer is nil"},
		{"read error", io.MultiReader(strings.NewReader("some text"), iotest.ErrReader(readErr)), byteTokenizer{}, 10, readErr, "read document"},
		{"bad tokenizer", strings.NewReader("some text"), lyingTokenizer{}, 10, nil, "sum to 10 for a piece of 9 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx, err := PlanChunks(tt.r, tt.tok, tt.chunkTokens)
			if err == nil {
				t.Fatalf("PlanChunks = %+v, want an error", idx)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("err = %v, want it to wrap %v", err, tt.wantIs)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("err = %q, want it to mention %q", err, tt.wantText)
			}
		})
	}
}

func TestPieceEnd(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		maxPiece int
		final    bool
		want     int
	}{
		{"final fits", "abc def", 10, true, 7},
		{"paragraph", "ab\n\ncd\nef gh", 10, false, 4},
		{"paragraph takes following newlines", "ab\n\n\n\ncd", 4, false, 6},
		{"newline", "ab\ncd ef gh", 10, false, 3},
		{"before space", "abc def ghi", 10, false, 7},
		{"leading space only", " abcdefghij", 10, false, 10},
		{"character boundary", "ab東京", 6, false, 5},
		{"ascii run", "abcdefghij", 4, false, 4},
		{"exactly max, not final", "ab東", 5, false, 5},
		{"final too long", "abcdefgh", 4, true, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pieceEnd([]byte(tt.text), tt.maxPiece, tt.final); got != tt.want {
				t.Errorf("pieceEnd(%q, %d, %v) = %d, want %d", tt.text, tt.maxPiece, tt.final, got, tt.want)
			}
		})
	}
}

// TestPlanChunksLargeDocument streams a multi-block document through the
// default sizes and checks the hash and coverage.
func TestPlanChunksLargeDocument(t *testing.T) {
	if testing.Short() {
		t.Skip("large document")
	}
	var b bytes.Buffer
	for b.Len() < 3*planBlockSize {
		fmt.Fprintf(&b, "Line %d: ünïcödé 漢字 and 🌸 emoji, then some ASCII words to pad it out.\n", b.Len())
		if b.Len()%5 == 0 {
			b.WriteString("\n")
		}
	}
	b.WriteString(strings.Repeat("x", 200<<10)) // one huge word, no whitespace
	doc := b.Bytes()
	idx, err := PlanChunks(bytes.NewReader(doc), byteTokenizer{}, 5000)
	if err != nil {
		t.Fatalf("PlanChunks: %v", err)
	}
	checkIndex(t, doc, byteTokenizer{}, 5000, idx)
}

func FuzzPlanChunks(f *testing.F) {
	f.Add([]byte("hello world"), uint8(3), uint8(4), uint8(0))
	f.Add([]byte("東京 🌸\n\nparagraph"), uint8(1), uint8(1), uint8(1))
	f.Add([]byte("ab\xe6\x97c"), uint8(2), uint8(2), uint8(2))
	f.Add([]byte("   \n"), uint8(5), uint8(9), uint8(0))
	f.Fuzz(func(t *testing.T, doc []byte, chunkTokens, block, tokKind uint8) {
		tok := fakeTokenizers[int(tokKind)%len(fakeTokenizers)]
		ct := int(chunkTokens)%64 + 1
		bs := int(block)%32 + 1
		idx, err := planChunks(iotest.HalfReader(bytes.NewReader(doc)), tok, ct, bs, 4+bs%8)
		if bad := firstInvalid(doc); bad >= 0 {
			var invalid *InvalidUTF8Error
			if !errors.As(err, &invalid) || invalid.Offset != int64(bad) {
				t.Fatalf("err = %v, want InvalidUTF8Error at %d", err, bad)
			}
			return
		}
		if strings.TrimFunc(string(doc), unicode.IsSpace) == "" {
			if !errors.Is(err, ErrEmptyDocument) {
				t.Fatalf("err = %v, want ErrEmptyDocument", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("planChunks: %v", err)
		}
		checkIndex(t, doc, tok, ct, idx)
	})
}
