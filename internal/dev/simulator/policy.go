package simulator

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sort"
	"strings"
	"unicode"
)

// initialMemory is the memory of the first update call; it matches
// memagent.InitialMemory.
const initialMemory = "No previous memory"

// noInformation is the memory the simulator writes when the first chunks
// hold nothing relevant to the question.
const noInformation = "No relevant information yet."

// unknownAnswer is what goes in \boxed{} when the memory holds no answer.
const unknownAnswer = "unknown"

// prompt is a MemAgent prompt taken apart.
type prompt struct {
	question   string
	memory     string
	section    string
	hasSection bool
}

var errNoProblem = errors.New("prompt has no <problem>...</problem> block: the simulator only answers MemAgent prompts")

// parsePrompt finds the <problem>, <memory> and <section> blocks, which the
// templates put in that order. Instruction text before the blocks may
// mention the tags, and the section is a document that may contain any
// text, so the blocks are found from the end: the section ends at the last
// </section>; the memory is the last complete block before that; the
// section starts at the first <section> after the memory; the problem is the
// last complete block before the memory.
func parsePrompt(p string) (prompt, error) {
	var out prompt
	end := len(p) // everything before end may hold the memory and problem
	if sClose := strings.LastIndex(p, "</section>"); sClose >= 0 {
		memOpen, memClose, ok := lastBlock(p[:sClose], "memory")
		from := 0
		if ok {
			from = memClose + len("</memory>")
		}
		if rel := strings.Index(p[from:sClose], "<section>"); rel >= 0 {
			sOpen := from + rel
			out.section = trimOneNewline(p[sOpen+len("<section>") : sClose])
			out.hasSection = true
			end = sOpen
			if ok {
				end = memOpen
				out.memory = strings.TrimSpace(p[memOpen+len("<memory>") : memClose])
			}
		}
	}
	if !out.hasSection {
		if memOpen, memClose, ok := lastBlock(p, "memory"); ok {
			out.memory = strings.TrimSpace(p[memOpen+len("<memory>") : memClose])
			end = memOpen
		}
	}
	pOpen, pClose, ok := lastBlock(p[:end], "problem")
	if !ok {
		// A template with another order: take the problem from anywhere.
		if pOpen, pClose, ok = lastBlock(p, "problem"); !ok {
			return prompt{}, errNoProblem
		}
	}
	out.question = strings.TrimSpace(p[pOpen+len("<problem>") : pClose])
	return out, nil
}

// lastBlock returns the offsets of the opening and closing tags of the last
// complete <tag>...</tag> block in s.
func lastBlock(s, tag string) (open, close int, ok bool) {
	close = strings.LastIndex(s, "</"+tag+">")
	if close < 0 {
		return 0, 0, false
	}
	open = strings.LastIndex(s[:close], "<"+tag+">")
	if open < 0 {
		return 0, 0, false
	}
	return open, close, true
}

// trimOneNewline removes the one line break that templates put after an
// opening tag and before a closing tag, and nothing more, so that the
// section's hash is the hash of the chunk itself.
func trimOneNewline(s string) string {
	s = strings.TrimPrefix(s, "\r\n")
	s = strings.TrimPrefix(s, "\n")
	if t, ok := strings.CutSuffix(s, "\r\n"); ok {
		return t
	}
	return strings.TrimSuffix(s, "\n")
}

// stopwords are left out when comparing a sentence with the question, and
// never form part of an answer. The list is deliberately short and plain.
var stopwords = makeSet(`a an the and or but nor if then else so as than that this these those
of in on at to from by for with without within about into onto over under between among through
during before after above below up down out off again further once here there
is are was were be been being am do does did doing done have has had having
it its itself he him his she her hers they them their theirs we us our ours you your yours i me my mine
what which who whom whose when where why how
not no yes can could would should will shall may might must also just only very too
any all some each every both either neither other another such more most much many few own same
please according named called known`)

func makeSet(words string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.Fields(words) {
		set[w] = true
	}
	return set
}

// words splits s into lowercase runs of letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// contentWords returns the distinct words of s that carry meaning: not
// stopwords, and not single letters.
func contentWords(s string) map[string]bool {
	set := map[string]bool{}
	for _, w := range words(s) {
		if stopwords[w] || (len([]rune(w)) == 1 && !unicode.IsDigit([]rune(w)[0])) {
			continue
		}
		set[w] = true
	}
	return set
}

// score counts the distinct content words of sentence that are in question.
func score(sentence string, question map[string]bool) int {
	n := 0
	for w := range contentWords(sentence) {
		if question[w] {
			n++
		}
	}
	return n
}

// sentences splits text at line breaks and after '.', '!' or '?' followed
// by white space. Pieces are trimmed; empty ones are dropped.
func sentences(text string) []string {
	var out []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	start := 0
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '\n':
			add(text[start:i])
			start = i + 1
		case '.', '!', '?':
			if i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\t' || text[i+1] == '\n' || text[i+1] == '\r' {
				add(text[start : i+1])
				start = i + 1
			}
		}
	}
	add(text[start:])
	return out
}

// isPlaceholder reports whether memory says that nothing is known yet.
func isPlaceholder(memory string) bool {
	m := strings.TrimSuffix(strings.TrimSpace(memory), ".")
	return m == "" || strings.EqualFold(m, initialMemory) || strings.EqualFold(m, strings.TrimSuffix(noInformation, "."))
}

// counter counts tokens.
type counter func(string) int

// updateMemory is the extractive update policy: keep the sentences of the
// old memory and the section that share content words with the question,
// best first, as many as fit in budget tokens, in their original order
// (old memory first). When none is relevant the old memory stays, or
// noInformation replaces the initial memory. The result never exceeds
// budget; truncated reports whether it had to be cut to fit.
func updateMemory(question, memory, section string, budget int, count counter) (out string, truncated bool) {
	q := contentWords(question)
	type candidate struct {
		text  string
		score int
		order int
	}
	var cands []candidate
	seen := map[string]bool{}
	consider := func(text string) {
		for _, s := range sentences(text) {
			if seen[s] {
				continue
			}
			seen[s] = true
			if sc := score(s, q); sc > 0 {
				cands = append(cands, candidate{text: s, score: sc, order: len(seen)})
			}
		}
	}
	if !isPlaceholder(memory) {
		consider(memory)
	}
	consider(section)

	byRank := append([]candidate(nil), cands...)
	sort.SliceStable(byRank, func(i, j int) bool { return byRank[i].score > byRank[j].score })
	keep := map[int]bool{}
	join := func() string {
		var kept []string
		for _, c := range cands {
			if keep[c.order] {
				kept = append(kept, c.text)
			}
		}
		return strings.Join(kept, "\n")
	}
	for _, c := range byRank {
		keep[c.order] = true
		if count(join()) > budget {
			delete(keep, c.order)
		}
	}
	if len(keep) > 0 {
		return join(), false
	}
	if isPlaceholder(memory) {
		return fitBudget(noInformation, budget, count)
	}
	return fitBudget(strings.TrimSpace(memory), budget, count)
}

// fitBudget returns s, or its longest prefix of whole words that fits in
// budget tokens.
func fitBudget(s string, budget int, count counter) (string, bool) {
	if count(s) <= budget {
		return s, false
	}
	fields := strings.Fields(s)
	// The longest prefix of n words that fits; counts grow with n.
	n := sort.Search(len(fields)+1, func(n int) bool {
		return count(strings.Join(fields[:n], " ")) > budget
	}) - 1
	return strings.Join(fields[:max(n, 0)], " "), true
}

// answerFrom is the final-answer policy: in the memory sentence that shares
// most content words with the question (the first such on a tie), the
// answer is the longest run of words that are neither in the question nor
// stopwords, the first such on a tie unless it opens the sentence: in "One
// of the numbers for X is: 645" the opening word is the subject, not the
// value. A comma, semicolon, colon or bracket ends a run. It returns
// unknownAnswer when no sentence shares a word with the question.
func answerFrom(question, memory string) string {
	if isPlaceholder(memory) {
		return unknownAnswer
	}
	q := contentWords(question)
	best, bestScore := "", 0
	for _, s := range sentences(memory) {
		if sc := score(s, q); sc > bestScore {
			best, bestScore = s, sc
		}
	}
	if bestScore == 0 {
		return unknownAnswer
	}
	asked := map[string]bool{}
	for _, w := range words(question) {
		asked[w] = true
	}
	var run, longest []string
	runStart, longestStart := 0, 0
	flush := func() {
		if len(run) > len(longest) || (len(run) > 0 && len(run) == len(longest) && longestStart == 0) {
			longest, longestStart = run, runStart
		}
		run = nil
	}
	for i, field := range strings.Fields(best) {
		if strings.HasPrefix(field, "(") || strings.HasPrefix(field, "[") {
			flush()
		}
		if isFiller(field, asked) {
			flush()
			continue
		}
		if len(run) == 0 {
			runStart = i
		}
		run = append(run, field)
		if strings.ContainsAny(field[len(field)-1:], ",;:)]") {
			flush()
		}
	}
	flush()
	answer := strings.Trim(strings.Join(longest, " "), ".,;:!?\"'`()[]<>«»“”‘’")
	answer = strings.NewReplacer("{", "", "}", "").Replace(answer)
	if answer == "" {
		return unknownAnswer
	}
	return answer
}

// isFiller reports whether every word in field is a stopword or was asked
// (a plural counting as its singular).
func isFiller(field string, asked map[string]bool) bool {
	for _, w := range words(field) {
		if !stopwords[w] && !asked[w] && !asked[strings.TrimSuffix(w, "s")] {
			return false
		}
	}
	return true
}

// finalReply wraps an answer the way MemAgent prompts ask for it.
func finalReply(answer string) string {
	if answer == unknownAnswer {
		return `The memory does not hold the answer to the problem, so the answer is \boxed{unknown}.`
	}
	return `After reviewing the memory, the answer is \boxed{` + answer + `}.`
}

// Policies (Options.Policy).
const (
	// PolicyExtractive keeps the sentences that share words with the
	// question (updateMemory) and answers from them (answerFrom).
	PolicyExtractive = "extractive"
	// PolicyChain makes each memory a hash of the question, the memory
	// before and the chunk, and answers with the memory: the answer
	// depends on every chunk read, in order, and on nothing else. It is
	// deterministic, so two readings agree exactly when they read the same
	// chunks in the same order from the same start: what a test of
	// checkpoint reuse compares.
	PolicyChain = "chain"
)

// chainMemory is PolicyChain's memory after a chunk.
func chainMemory(question, memory, section string) string {
	h := sha256.New()
	for _, s := range []string{question, memory, section} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return "chain-" + hex.EncodeToString(h.Sum(nil)[:16])
}
