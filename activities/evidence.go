package activities

import (
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
	if s, e, ok := report.LocateChunkPassage(text, change.Added, ch.Start > 0, ch.End < docBytes); ok {
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
