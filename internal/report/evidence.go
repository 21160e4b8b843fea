package report

import (
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/memagent/memagent/api"
)

// EvidenceRule names the rule by which MaterialChange decides
// that a memory changed materially. Grids record it, so that a reader knows
// which rule produced their evidence; a different rule gets a new name.
const EvidenceRule = "content-words/v1"

// EvidenceMaxAdded bounds EvidenceChange.Added: the words kept as an evidence
// entry's fingerprint.
const EvidenceMaxAdded = 8

// EvidenceMaxPassageBytes bounds a passage found by LocatePassage.
const EvidenceMaxPassageBytes = 1024

// EvidenceChange is how a memory changed over one chunk.
type EvidenceChange struct {
	// Material reports a change that brought something new into the
	// memory, rather than rewording it.
	Material bool
	// Added are content words of the new memory that the old one lacks,
	// distinct and lowercased: the distinctive ones (with a digit, or
	// capitalised inside a sentence) first, then the others, each group in
	// order of appearance; at most EvidenceMaxAdded.
	Added []string
	// AddedTotal counts all of them.
	AddedTotal int
}

// MaterialChange decides, from the memory before and after a chunk,
// whether the chunk changed the memory materially (rule
// EvidenceRule). Only content words count: stopwords and the words
// memories use to say that nothing is known yet ("No previous memory", "no
// relevant information so far") do not, nor do case, punctuation,
// whitespace or order. The change is material when at least two new
// content words appeared, or one that is distinctive: a number or code
// (it has a digit) or a name (capitalised inside a sentence). A model that
// rewords its memory with one new common word has not read anything new;
// one that adds a sentence, a figure or a name has.
func MaterialChange(before, after string) EvidenceChange {
	old := reviewWordSet(before)
	seen := map[string]bool{}
	var distinctive, plain []string
	for _, w := range reviewWords(after) {
		if !w.content || old[w.text] || seen[w.text] {
			continue
		}
		seen[w.text] = true
		if w.distinctive() {
			distinctive = append(distinctive, w.text)
		} else {
			plain = append(plain, w.text)
		}
	}
	ch := EvidenceChange{AddedTotal: len(distinctive) + len(plain)}
	ch.Material = ch.AddedTotal >= 2 || len(distinctive) > 0
	added := append(distinctive, plain...)
	if len(added) > EvidenceMaxAdded {
		added = added[:EvidenceMaxAdded]
	}
	if len(added) > 0 {
		ch.Added = added
	}
	return ch
}

// EvidenceSupport is the share of added (an evidence entry's fingerprint)
// that memory still holds, in [0, 1]: 0 when added is empty. An entry
// whose words survive into the final memory shaped the answer.
func EvidenceSupport(added []string, memory string) float64 {
	if len(added) == 0 {
		return 0
	}
	words := reviewWordSet(memory)
	n := 0
	for _, a := range added {
		if words[a] {
			n++
		}
	}
	return float64(n) / float64(len(added))
}

// EvidenceSupports reports whether an evidence entry shaped memory: at least
// half of its fingerprint is still there.
func EvidenceSupports(added []string, memory string) bool {
	return EvidenceSupport(added, memory) >= 0.5
}

// PruneEvidence bounds a question's evidence to max entries: while
// there are more, it drops the entry whose fingerprint the current memory
// holds least (the oldest on a tie), since what the memory has since
// forgotten shaped nothing that remains. It returns the entries kept, in
// their order, and how many it dropped. It does not modify ev.
func PruneEvidence(ev []api.Evidence, memory string, max int) ([]api.Evidence, int) {
	if max < 0 {
		max = 0
	}
	if len(ev) <= max {
		return ev, 0
	}
	kept := append([]api.Evidence(nil), ev...)
	support := make([]float64, len(kept))
	for i, e := range kept {
		support[i] = EvidenceSupport(e.Added, memory)
	}
	dropped := 0
	for len(kept) > max {
		worst := 0
		for i := 1; i < len(kept); i++ {
			if support[i] < support[worst] {
				worst = i
			}
		}
		kept = append(kept[:worst], kept[worst+1:]...)
		support = append(support[:worst], support[worst+1:]...)
		dropped++
	}
	return kept, dropped
}

// LocatePassage finds, in a chunk's text, the sentence that holds the
// most of added (a EvidenceChange's words), the first on a tie, and returns
// its byte range within text. A sentence ends at a line break, or after
// '.', '!' or '?' followed by white space. A sentence longer than
// EvidenceMaxPassageBytes is narrowed to a window around its first match. ok
// is false when no sentence holds any of the words (a model that reworded
// rather than quoted).
func LocatePassage(text []byte, added []string) (start, end int, ok bool) {
	if len(added) == 0 {
		return 0, 0, false
	}
	want := make(map[string]bool, len(added))
	for _, a := range added {
		want[a] = true
	}
	var best passageMatch
	reviewSentences(text, func(s, e int) {
		if m := matchPassage(text, s, e, want); m.words > best.words {
			best = m
		}
	})
	if best.words == 0 {
		return 0, 0, false
	}
	if best.end-best.start > EvidenceMaxPassageBytes {
		best.narrow(text)
	}
	return best.start, best.end, true
}

// LocateChunkPassage is LocatePassage on a chunk of a longer text whose
// start (cutStart) or end (cutEnd) lies inside that text: the chunk
// planner cuts between tokens, which may fall inside a word ("…1.9" and
// "9 | Asymptote…"), so a word at a cut edge is left out before the
// sentences are read, and no passage starts or ends inside a word.
func LocateChunkPassage(text []byte, added []string, cutStart, cutEnd bool) (start, end int, ok bool) {
	lo, hi := 0, len(text)
	if r, _ := utf8.DecodeRune(text); cutStart && isWordRune(r) {
		for lo < hi && !isSpaceByte(text[lo]) {
			lo++
		}
	}
	if r, _ := utf8.DecodeLastRune(text[lo:]); cutEnd && isWordRune(r) {
		for hi > lo && !isSpaceByte(text[hi-1]) {
			hi--
		}
	}
	s, e, ok := LocatePassage(text[lo:hi], added)
	return lo + s, lo + e, ok
}

// isWordRune reports whether r is a letter or a digit.
func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// passageMatch is a sentence's byte range, how many distinct wanted words it
// holds, and where the first of them starts.
type passageMatch struct {
	words, start, end, first int
}

// reviewSentences calls f with the byte range of each sentence of text, in
// order: a sentence ends at a line break, or after '.', '!' or '?' followed
// by white space (or the end).
func reviewSentences(text []byte, f func(s, e int)) {
	from := 0
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '\n':
			f(from, i)
			from = i + 1
		case '.', '!', '?':
			if i+1 == len(text) || isSpaceByte(text[i+1]) {
				f(from, i+1)
				from = i + 1
			}
		}
	}
	f(from, len(text))
}

// matchPassage counts the wanted words in text[s:e] trimmed of white space.
func matchPassage(text []byte, s, e int, want map[string]bool) passageMatch {
	for s < e && isSpaceByte(text[s]) {
		s++
	}
	for e > s && isSpaceByte(text[e-1]) {
		e--
	}
	m := passageMatch{start: s, end: e, first: -1}
	if s == e {
		return m
	}
	found := map[string]bool{}
	for _, w := range reviewWords(string(text[s:e])) {
		if want[w.text] && !found[w.text] {
			found[w.text] = true
			if m.first < 0 {
				m.first = s + w.start
			}
		}
	}
	m.words = len(found)
	return m
}

// narrow shrinks the range to at most EvidenceMaxPassageBytes around its first
// match, on white space (no word cut, the first match kept whole), else on
// rune boundaries.
func (m *passageMatch) narrow(text []byte) {
	s := max(m.start, m.first-EvidenceMaxPassageBytes/4)
	e := min(m.end, s+EvidenceMaxPassageBytes)
	if s > m.start && !isSpaceByte(text[s-1]) {
		for s < m.first && !isSpaceByte(text[s]) {
			s++
		}
	}
	for s < m.first && isSpaceByte(text[s]) {
		s++
	}
	if e < m.end && !isSpaceByte(text[e]) {
		w := e
		for w > m.first && !isSpaceByte(text[w-1]) {
			w--
		}
		if w > m.first {
			e = w
		}
	}
	for e > m.first+1 && isSpaceByte(text[e-1]) {
		e--
	}
	for s < e && !utf8.RuneStart(text[s]) {
		s++
	}
	for e > s && e < len(text) && !utf8.RuneStart(text[e]) {
		e--
	}
	m.start, m.end = s, e
}

func isSpaceByte(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\f' || b == '\v'
}

// reviewWord is one word of a text: a maximal run of letters and digits,
// lowercased.
type reviewWord struct {
	text string
	// start and end are the word's byte range in the text.
	start, end int
	// content is false for stopwords, memory placeholder words and single
	// letters.
	content bool
	// digit: the word has a digit; name: it is capitalised and not the
	// first word of a sentence.
	digit, name bool
}

func (w reviewWord) distinctive() bool { return w.digit || w.name }

// reviewWords splits s into words, in order.
func reviewWords(s string) []reviewWord {
	var out []reviewWord
	sentenceStart := true
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			if r == '.' || r == '!' || r == '?' || r == '\n' || r == ':' {
				sentenceStart = true
			}
			i += size
			continue
		}
		start := i
		var upper, digit bool
		for i < len(s) {
			r, size = utf8.DecodeRuneInString(s[i:])
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				break
			}
			upper = upper || unicode.IsUpper(r)
			digit = digit || unicode.IsDigit(r)
			i += size
		}
		text := strings.ToLower(s[start:i])
		w := reviewWord{text: text, start: start, end: i, digit: digit, name: upper && !sentenceStart}
		w.content = !reviewStopwords[text] && !reviewPlaceholderWords[text] && (digit || utf8.RuneCountInString(text) > 1)
		out = append(out, w)
		sentenceStart = false
	}
	return out
}

// reviewWordSet is the set of content words of s.
func reviewWordSet(s string) map[string]bool {
	set := map[string]bool{}
	for _, w := range reviewWords(s) {
		if w.content {
			set[w.text] = true
		}
	}
	return set
}

func reviewSet(words string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.Fields(words) {
		set[w] = true
	}
	return set
}

// reviewStopwords carry no content of their own.
var reviewStopwords = reviewSet(`a an the and or but nor if then else so as than that this these those
of in on at to from by for with without within about into onto over under between among through
during before after above below up down out off again further once here there
is are was were be been being am do does did doing done have has had having
it its itself he him his she her hers they them their theirs we us our ours you your yours i me my mine
what which who whom whose when where why how
not no yes can could would should will shall may might must also just only very too
any all some each every both either neither other another such more most much many few own same
s t d ll re ve`)

// reviewPlaceholderWords are what memories say when they know nothing yet
// ("No previous memory", "No relevant information so far", "The section
// does not mention the question"): a memory that changes only in these
// has learned nothing.
var reviewPlaceholderWords = reviewSet(`previous memory memories relevant information info yet far still
currently current nothing none unknown available mentioned mention mentions provided given found
section sections document documents text context problem question questions answer answers
known unclear unable determine determined related regarding`)

// AnswerSources cites, by document, the corpus evidence that supports an
// answer (SupportsAnswer set), in stream order, the passage's pages before
// the chunk's; nil for a single document, whose entries name none.
func AnswerSources(ev []api.Evidence) []api.SourceRef {
	var refs []api.SourceRef
	for _, e := range ev {
		if !e.SupportsAnswer || e.Document == "" {
			continue
		}
		pages := e.Pages
		if e.Passage != nil && e.Passage.Pages != nil {
			pages = e.Passage.Pages
		}
		r := api.SourceRef{Document: e.Document, Name: path.Base(e.Document), Pages: pages}
		if n := len(refs); n > 0 && refs[n-1].String() == r.String() {
			continue
		}
		refs = append(refs, r)
	}
	return refs
}
