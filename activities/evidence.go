package activities

import (
	"unicode"
	"unicode/utf8"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/report"
)

// evidenceOf is a chunk's evidence entry when it changed the memory
// materially: the chunk, its pages, and the sentence the change came
// from with that sentence's pages.
// docBytes is the length of the whole text: a chunk that starts after 0 or
// ends before docBytes may cut a word, which a passage leaves out.
func evidenceOf(in actwire.UpdateInput, ch memagent.Chunk, pm *memagent.PageMap, pages *api.PageRef, memory string, text []byte, docBytes int64) *api.Evidence {
	change := report.MaterialChange(in.Memory, memory)
	if !change.Material {
		return nil
	}
	ev := &api.Evidence{Chunk: in.Chunk, Start: ch.Start, End: ch.End, Added: change.Added, Pages: pages}
	s, e, ok := report.LocatePassage(text, change.Added)
	if ok {
		s, e = wholeWordsAtCuts(text, s, e, ch.Start > 0, ch.End < docBytes)
	}
	if ok && s < e {
		start, end := ch.Start+int64(s), ch.Start+int64(e)
		ev.Passage = &api.EvidencePassage{Start: start, End: end, Pages: pm.Ref(start, end)}
	}
	return ev
}

// markEvidence sets SupportsAnswer on each entry whose words the final
// memory still holds and cites the pages of those entries.
func markEvidence(ev []api.Evidence, memory string) string {
	var refs []*api.PageRef
	for i := range ev {
		ev[i].SupportsAnswer = report.EvidenceSupports(ev[i].Added, memory)
		if !ev[i].SupportsAnswer {
			continue
		}
		if p := ev[i].Passage; p != nil && p.Pages != nil {
			refs = append(refs, p.Pages)
		} else if ev[i].Pages != nil {
			refs = append(refs, ev[i].Pages)
		}
	}
	return memagent.JoinPageRefs(refs)
}

// wholeWordsAtCuts narrows the passage [s, e) of a chunk's text so that it
// neither starts nor ends inside a word the chunk's edges cut: the chunk
// planner cuts between tokens, which may fall inside a word ("…1.9" and
// "9 | Asymptote…"). cutStart and cutEnd say whether the chunk's start and
// end are inside the text rather than its ends. The passage may come out
// empty (s >= e).
func wholeWordsAtCuts(text []byte, s, e int, cutStart, cutEnd bool) (int, int) {
	isWord := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
	if r, _ := utf8.DecodeRune(text[s:]); cutStart && s == 0 && isWord(r) {
		for s < e && !unicode.IsSpace(rune(text[s])) {
			s++
		}
		for s < e && unicode.IsSpace(rune(text[s])) {
			s++
		}
	}
	if r, _ := utf8.DecodeLastRune(text[:e]); cutEnd && e == len(text) && e > s && isWord(r) {
		for e > s && !unicode.IsSpace(rune(text[e-1])) {
			e--
		}
		for e > s && unicode.IsSpace(rune(text[e-1])) {
			e--
		}
	}
	return s, e
}
