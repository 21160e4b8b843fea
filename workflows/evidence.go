package workflows

import (
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/report"
)

// noteEvidence keeps a chunk's evidence entry, if it has one, pruned to
// MaxEvidence as a review's are.
func (st *qaState) noteEvidence(out actwire.UpdateOutput) {
	if out.Evidence == nil {
		return
	}
	st.Evidence = append(st.Evidence, *out.Evidence)
	var dropped int
	st.Evidence, dropped = report.PruneEvidence(st.Evidence, out.Memory, api.MaxEvidence)
	st.EvidenceDropped += dropped
}

// evidenceChunks are the chunks of a run's evidence entries, which its
// checkpoints keep (nil without checkpoints).
func evidenceChunks(checkpoints bool, ev []api.Evidence) []int {
	if !checkpoints || len(ev) == 0 {
		return nil
	}
	chunks := make([]int, len(ev))
	for i, e := range ev {
		chunks[i] = e.Chunk
	}
	return chunks
}
