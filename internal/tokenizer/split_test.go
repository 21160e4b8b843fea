package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	"golang.org/x/text/unicode/norm"

	"github.com/memagent/memagent/internal/testdeps"
)

// splitCases pairs each hand-written splitter with the pattern that
// tiktoken-go runs through regexp2 for the same tokenizer.
var splitCases = []struct {
	name    string
	pattern string
	split   func() *splitter
}{
	{CL100K, cl100kPattern, func() *splitter { return newSplitter(splitCL100K, 3) }},
	{Qwen, qwenPattern, func() *splitter { return newSplitter(splitCL100K, 1) }},
	{O200K, o200kPattern, func() *splitter { return newSplitter(splitO200K, 3) }},
}

// regexpPieces returns the pieces regexp2 finds in text, as tiktoken-go
// finds them (on the text's runes).
func regexpPieces(t testing.TB, re *regexp2.Regexp, text string) []string {
	t.Helper()
	runes := []rune(text)
	var pieces []string
	m, err := re.FindRunesMatch(runes)
	for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
		pieces = append(pieces, string(runes[m.Index:m.Index+m.Length]))
	}
	if err != nil {
		t.Fatal(err)
	}
	return pieces
}

// splitPieces returns the pieces s cuts text into.
func splitPieces(s *splitter, text string) []string {
	var pieces []string
	for i := 0; i < len(text); {
		j := s.next(text, i)
		pieces = append(pieces, text[i:j])
		i = j
	}
	return pieces
}

// checkSplit fails t unless s and re cut text into the same pieces.
func checkSplit(t testing.TB, name string, s *splitter, re *regexp2.Regexp, text string) {
	t.Helper()
	got, want := splitPieces(s, text), regexpPieces(t, re, text)
	if !slices.Equal(got, want) {
		t.Errorf("%s: %+q:\n got pieces %+q\nwant pieces %+q (regexp2)", name, text, got, want)
	}
}

// allRunes returns every rune a valid UTF-8 string can hold.
func allRunes() []rune {
	runes := make([]rune, 0, unicode.MaxRune+1)
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if utf8.ValidRune(r) {
			runes = append(runes, r)
		}
	}
	return runes
}

// TestClassesMatchRegexp2 holds the splitter's character classes to
// regexp2's, rune by rune over all of Unicode: \s is unicode.IsSpace there,
// which is not .NET's and not RE2's \s.
func TestClassesMatchRegexp2(t *testing.T) {
	runes := allRunes()
	s := newSplitter(splitCL100K, 3)
	for _, c := range []struct {
		bit   uint16
		class string
	}{
		{clsL, `\p{L}`},
		{clsN, `\p{N}`},
		{clsS, `\s`},
		{clsNL, `[\r\n]`},
		{clsU, `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`},
		{clsW, `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`},
		{clsM, `\p{M}`},
		{clsP, `[^\r\n\p{L}\p{N}]`},
		{clsO, `[^\s\p{L}\p{N}]`},
	} {
		re := regexp2.MustCompile(c.class+`+`, regexp2.None)
		in := make([]bool, len(runes))
		m, err := re.FindRunesMatch(runes)
		for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
			for i := m.Index; i < m.Index+m.Length; i++ {
				in[i] = true
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		bad := 0
		for i, r := range runes {
			enc := string(r)
			got, _ := s.at(enc, 0)
			if got&c.bit != 0 != in[i] || classOf(r)&c.bit != 0 != in[i] {
				if bad++; bad <= 10 {
					t.Errorf("%s: %U is in the class: %v, regexp2 says %v", c.class, r, got&c.bit != 0, in[i])
				}
			}
		}
		if bad > 10 {
			t.Errorf("%s: %d runes differ in all", c.class, bad)
		}
	}
}

// TestContractionsMatchRegexp2 holds the case-insensitive contractions to
// regexp2's, which compares unicode.ToLower of the text with the pattern:
// 'S and 'LL match, and for every rune r, "'"+r, "'"+r+"e", "'"+r+"l",
// "'r"+r, "'v"+r and "'l"+r match exactly where regexp2 says. (No rune
// outside ASCII lowers to one of the letters; the Kelvin sign lowers to
// k, which no contraction has, and long s 'ſ' is its own lower case.)
func TestContractionsMatchRegexp2(t *testing.T) {
	re := regexp2.MustCompile(`(?i:'s|'t|'re|'ve|'m|'ll|'d)`, regexp2.None)
	var text []rune
	for _, r := range allRunes() {
		if r == '\'' {
			continue
		}
		// A NUL ends each case, so no match can run into the next one.
		text = append(text, '\'', r, 0, '\'', r, 'e', 0, '\'', r, 'l', 0,
			'\'', 'r', r, 0, '\'', 'v', r, 0, '\'', 'l', r, 0, '\'', 'L', r, 0)
	}
	want := map[int]int{} // rune index → rune length of regexp2's match
	m, err := re.FindRunesMatch(text)
	for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
		want[m.Index] = m.Length
	}
	if err != nil {
		t.Fatal(err)
	}
	str := string(text)
	matches := 0
	for ri, bi := 0, 0; bi < len(str); ri++ {
		n := contraction(str, bi)
		if got := utf8.RuneCountInString(str[bi : bi+n]); got != want[ri] {
			t.Errorf("%+q: contraction matches %d runes, regexp2 %d", str[bi:bi+min(8, len(str)-bi)], got, want[ri])
		}
		if n > 0 {
			matches++
		}
		_, size := utf8.DecodeRuneInString(str[bi:])
		bi += size
	}
	if matches != len(want) || matches == 0 {
		t.Errorf("%d contractions found, regexp2 finds %d", matches, len(want))
	}
	for _, c := range []string{"'S", "'T", "'RE", "'rE", "'Ve", "'M", "'LL", "'lL", "'D"} {
		if contraction(c, 0) != len(c) {
			t.Errorf("%q is not a whole contraction", c)
		}
	}
	for _, c := range []string{"'\u017f", "'\u212a", "'\u0130", "'x", "'", "'r", "'l", "'lx"} {
		if n := contraction(c, 0); n != 0 {
			t.Errorf("%q: contraction of %d bytes", c, n)
		}
	}
}

// splitSeeds are strings where the patterns' alternatives meet: the
// lookahead \s+(?!\S), CR and LF among other spaces, contractions in
// any case, marks before and after letters, case changes (o200k), digits
// of every script, emoji sequences and characters outside the BMP.
var splitSeeds = []string{
	"", " ", "  ", "a", "hello world", "  hello", "hello  ", "hello   world",
	"\n", "\r\n", "\r\n\r\n", " \n ", "\t\n\t", "a\r\n  b", "a \n\n b", "x\u00a0\u00a0y", "\u3000\u3000漢字",
	" \u2028 x", "\u0085\u0085a", "\v\fz", "a\t\tb", "end \n", "trailing   ",
	"don't", "DON'T", "I'M", "we'LL", "they'Re", "you'VE", "it'S", "'s", "'S", "''s", "'sa", "a'll've",
	"O'Neill's", "'\u017f", "'\u212a", "'\u0130", "'Ll", "x'", "x'\n", "' s",
	"1", "12", "123", "1234", "12345", "３４５６", "٣٤٥٦٧", "Ⅻ½¾", "v1.2.3", "abc123def", "123abc",
	"café", "cafe\u0301", "e\u0301\u0301\u0301", "\u0301", "\u0301's", " \u0301x", "!\u0301", "\u0301\u0301A",
	"camelCaseWord", "HTTPServer", "ǅungla", "ǅ", "ABCdef", "abcDEF", "ABC's", "abc'S", "ÀÉÎ'll",
	"東京大学", "カタカナ", "한국어", "Ελλάδα", "ΣΊΣΥΦΟΣ", "ʰʲ", "ᵃbc", "ABʰ", "Aʰb", "ʰA", "ᾈᾉ",
	"🌸", "🎉🎉", "👍🏽", "🇫🇷", "👩‍👩‍👧", "a👍b", " 🌸 ", "𝐀𝐁𝐂𝐚𝐛", "𝟙𝟚𝟛𝟜", "𐐀𐐨",
	"hello!!!\n\n", "x/y//z\n", "!/\r\n/", " !!", " !\n", "(see below)", "e.g. U.S.A.",
	"<|endoftext|>", "a\x00b", "\x7f\x1b[0m", "\ufeffBOM", "\ufffd", "\U0010ffff", "\u00ad",
	"\r\r\r", "\n\n\n\n x", " \r \n ", "a\n\nb", "a \n", "\t x", "\t\tx", " \tx",
}

// TestSplitMatchesRegexp holds each splitter to regexp2 on the seeds, on
// every string of up to three runes from an alphabet that has a rune of
// every class the patterns distinguish, and on random strings of it.
func TestSplitMatchesRegexp(t *testing.T) {
	alphabet := []rune{' ', '\t', '\r', '\n', '\u00a0', '\'', '/', '!', '.', 's', 'S', 'l', 'L', 'e', 'r', 'v', 'd',
		'1', '٣', 'Ⅻ', 'ǅ', 'ʰ', '東', '\u0301', '\u0903', '🌸', '𝐀', '𝐚', '\u200d', '\x00'}
	texts := slices.Clone(splitSeeds)
	for _, a := range alphabet {
		texts = append(texts, string(a))
		for _, b := range alphabet {
			texts = append(texts, string(a)+string(b))
			for _, c := range alphabet {
				texts = append(texts, string(a)+string(b)+string(c))
			}
		}
	}
	r := rand.New(rand.NewPCG(53, 1))
	for range 20000 {
		var b strings.Builder
		for range r.IntN(14) {
			b.WriteRune(alphabet[r.IntN(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	if testing.Short() {
		texts = texts[:len(splitSeeds)+len(alphabet)*(1+len(alphabet))]
	}
	for _, c := range splitCases {
		s, re := c.split(), regexp2.MustCompile(c.pattern, regexp2.None)
		for _, text := range texts {
			checkSplit(t, c.name, s, re, text)
			if t.Failed() && testing.Verbose() {
				return
			}
		}
	}
}

// fuzzAlphabet has a rune of every class and every character the
// patterns name, so that FuzzSplitMatchesRegexp can spell any sequence of
// them with one byte a rune.
var fuzzAlphabet = []rune{' ', '\t', '\r', '\n', '\u00a0', '\u3000', '\u0085', '\'', '/', '!', '.', '-',
	's', 'S', 't', 'l', 'L', 'e', 'E', 'r', 'v', 'm', 'd', 'D', 'a', 'Z', '\u017f', '\u212a',
	'0', '1', '٣', 'Ⅻ', '½', '𝟙', 'ǅ', 'ʰ', '東', 'ー', 'À', 'é', '\u0301', '\u0903', '\u20dd',
	'🌸', '👍', '\U0001f3fd', '\u200d', '\ufe0f', '𝐀', '𝐚', '\U00020000', '\x00', '\ufffd'}

// FuzzSplitMatchesRegexp holds the three splitters to regexp2 on the
// input made valid UTF-8, and on the input read one byte a rune of
// fuzzAlphabet, where every byte string is a dense mix of the classes.
func FuzzSplitMatchesRegexp(f *testing.F) {
	for _, s := range splitSeeds {
		f.Add(s)
	}
	f.Add(mixedText(2 << 10))
	splitters := make([]*splitter, len(splitCases))
	res := make([]*regexp2.Regexp, len(splitCases))
	for i, c := range splitCases {
		splitters[i], res[i] = c.split(), regexp2.MustCompile(c.pattern, regexp2.None)
	}
	f.Fuzz(func(t *testing.T, in string) {
		// encodeInto leaves invalid UTF-8 to tiktoken-go.
		valid := strings.ToValidUTF8(in, "\ufffd")
		spelt := make([]rune, 0, len(in))
		for i := range len(in) {
			spelt = append(spelt, fuzzAlphabet[int(in[i])%len(fuzzAlphabet)])
		}
		for _, text := range []string{valid, string(spelt)} {
			for i, c := range splitCases {
				checkSplit(t, c.name, splitters[i], res[i], text)
			}
		}
	})
}

// libraryTokenLens is TokenLens as it was before the splitter: tiktoken-go's
// ids and their lengths.
func libraryTokenLens(t *bpeTokenizer, text string) []int {
	var spans []nfcSpan
	orig := text
	if t.nfc {
		text, spans = normalizeNFC(text, true)
	}
	lens := t.lens(t.libraryEncodeOrdinary(text))
	if spans != nil {
		lens = mapTokenLens(lens, spans, len(orig))
	}
	return lens
}

// checkEncode fails t unless tok encodes text as tiktoken-go's
// EncodeOrdinary does: the same ids, lengths and count.
func checkEncode(t testing.TB, tok *bpeTokenizer, name, text string) {
	t.Helper()
	norm := text
	if tok.nfc {
		norm, _ = normalizeNFC(text, false)
	}
	want := tok.libraryEncodeOrdinary(norm)
	if got := tok.encodeOrdinary(norm); !slices.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Errorf("%s: %s: ids differ from token %d of %d (got %d tokens): got %v, want %v",
			tok.Name(), name, i, len(want), len(got), got[i:min(i+8, len(got))], want[i:min(i+8, len(want))])
	}
	if got := tok.Count(text); got != len(want) {
		t.Errorf("%s: %s: Count = %d, want %d", tok.Name(), name, got, len(want))
	}
	if got, want := tok.TokenLens(text), libraryTokenLens(tok, text); !slices.Equal(got, want) {
		t.Errorf("%s: %s: TokenLens differ (%d and %d tokens)", tok.Name(), name, len(got), len(want))
	}
}

// allTokenizers returns the three tokenizers.
func allTokenizers(t testing.TB) []*bpeTokenizer {
	t.Helper()
	var toks []*bpeTokenizer
	for _, name := range []string{CL100K, Qwen, O200K} {
		tok, err := New(name)
		if err != nil {
			t.Fatal(err)
		}
		toks = append(toks, tok.(*bpeTokenizer))
	}
	return toks
}

// TestEncodeMatchesLibrary: on the seeds, on invalid UTF-8 and on text
// with runs that longRuns cuts, every tokenizer gives tiktoken-go's ids.
func TestEncodeMatchesLibrary(t *testing.T) {
	texts := append(slices.Clone(splitSeeds),
		"caf\xe9 au lait", "\xff\xfe", "ok \xc3", // invalid UTF-8: tiktoken-go's U+FFFD
		strings.Repeat("a", maxRun+1)+" tail", strings.Repeat(" ", 3*maxRun)+"x", strings.Repeat("東", maxRun),
		strings.Repeat("e\u0301", maxRun), mixedText(64<<10))
	for _, tok := range allTokenizers(t) {
		for i, text := range texts {
			checkEncode(t, tok, fmt.Sprintf("text %d", i), text)
		}
	}
}

// FuzzEncodeMatchesLibrary holds every tokenizer to tiktoken-go on any
// input, valid UTF-8 or not.
func FuzzEncodeMatchesLibrary(f *testing.F) {
	for _, s := range splitSeeds {
		f.Add(s)
	}
	f.Add("caf\xe9")
	toks := allTokenizers(f)
	f.Fuzz(func(t *testing.T, text string) {
		for _, tok := range toks {
			checkEncode(t, tok, "input", text)
		}
	})
}

// TestRunClassMatchesUnicode: longRuns classes every rune, and every
// invalid byte (as U+FFFD), from the class table exactly as it did with
// the unicode package.
func TestRunClassMatchesUnicode(t *testing.T) {
	unicodeRunClass := func(r rune) int {
		switch {
		case unicode.IsLetter(r) || unicode.IsMark(r):
			return 1
		case unicode.IsSpace(r):
			return 2
		case unicode.IsNumber(r):
			return 0
		}
		return 3
	}
	table := classTable()
	for _, r := range allRunes() {
		c, _ := classAt(table, string(r), 0)
		if got, want := runClass(c), unicodeRunClass(r); got != want {
			t.Errorf("%U: run class %d, want %d", r, got, want)
		}
	}
	for _, bad := range []string{"\xff", "\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80"} {
		c, n := classAt(table, bad, 0)
		if got, want := runClass(c), unicodeRunClass(utf8.RuneError); got != want || n != 1 {
			t.Errorf("%+q: run class %d of %d bytes, want %d of 1", bad, got, n, want)
		}
	}
}

// TestEncodeMatchesLibraryOnManuals: on real text nobody here wrote, every
// tokenizer gives tiktoken-go's ids, Count and TokenLens: the converted
// text of Debian manuals that docconv's golden test keeps, raw HTML of
// the Debian Reference and of Sphinx's changelog (typographic quotes,
// accented names), CJK prose in six encodings' test files and Python's
// Unicode tests (every script, combining marks, astral characters),
// and a mail in Latin-1 (invalid UTF-8, left to tiktoken-go whole).
func TestEncodeMatchesLibraryOnManuals(t *testing.T) {
	type doc struct{ name, text string }
	var docs []doc
	golden, err := filepath.Glob("../docconv/testdata/golden/*.txt")
	if err != nil || len(golden) == 0 {
		t.Fatalf("docconv's golden text: %v, %d files", err, len(golden))
	}
	for _, p := range golden {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, doc{filepath.Base(p), string(b)})
	}
	manuals := []struct{ pkg, rel string }{
		{"libpython3.11-testsuite", "usr/lib/python3.11/test/test_unicode.py"},
		{"libpython3.11-testsuite", "usr/lib/python3.11/test/test_unicodedata.py"},
		{"debian-reference-en", "usr/share/debian-reference/ch02.en.html"},
		{"golang-github-gatherstars-com-jwz-dev", "usr/share/gocode/src/github.com/gatherstars-com/jwz/test/testdata/ham/0627.c9ad8730dad7bda1e1169ee00c4006fc.eml"},
	}
	for _, enc := range []string{"big5", "euc_jp", "euc_kr", "gb18030", "johab", "shift_jisx0213"} {
		manuals = append(manuals, struct{ pkg, rel string }{"libpython3.11-testsuite", "usr/lib/python3.11/test/cjkencodings/" + enc + "-utf8.txt"})
	}
	if !testing.Short() {
		manuals = append(manuals, struct{ pkg, rel string }{"sphinx-doc", "usr/share/doc/sphinx-doc/html/changes.html"})
	}
	for _, m := range manuals {
		b, err := os.ReadFile(testdeps.Manual(t, m.pkg, m.rel))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, doc{filepath.Base(m.rel), string(b)})
	}
	nonASCII, invalid := 0, 0
	for _, d := range docs {
		for _, r := range d.text {
			if r >= utf8.RuneSelf {
				nonASCII++
			}
		}
		if !utf8.ValidString(d.text) {
			invalid++
		}
	}
	if nonASCII < 3000 || invalid == 0 {
		t.Fatalf("the corpus has %d non-ASCII characters and %d documents of invalid UTF-8: it no longer tests what it says", nonASCII, invalid)
	}
	for _, tok := range allTokenizers(t) {
		for _, d := range docs {
			checkEncode(t, tok, d.name, d.text)
		}
	}
}

// TestEncodeDoesNotAllocatePerPiece: tiktoken-go allocated for every
// piece (89,475 allocations for 64 KiB of mixed text); now TokenLens
// allocates little more than the slice it returns, and Count (in the
// prompt's path before every model call) nothing but what x/text's
// NFC check allocates for Qwen (one), on text in NFC without long runs.
func TestEncodeDoesNotAllocatePerPiece(t *testing.T) {
	text := mixedText(16 << 10)
	for _, tok := range allTokenizers(t) {
		if n := testing.AllocsPerRun(5, func() { tok.TokenLens(text) }); n > 8 {
			t.Errorf("%s: TokenLens of 16 KiB made %.0f allocations, want at most 8", tok.Name(), n)
		}
		want := 0.0
		if tok.nfc {
			want = testing.AllocsPerRun(5, func() { norm.NFC.IsNormalString(text) })
		}
		if n := testing.AllocsPerRun(5, func() { tok.Count(text) }); n > want {
			t.Errorf("%s: Count of 16 KiB made %.0f allocations, want at most %.0f", tok.Name(), n, want)
		}
	}
}
