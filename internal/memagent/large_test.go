package memagent

import (
	"io"
	"runtime"
	"testing"
	"time"
)

// fixedTokenizer counts one token per 4 bytes (the last may be shorter):
// cheap enough to push gigabytes through the planner.
type fixedTokenizer struct{}

func (fixedTokenizer) Name() string { return "fixed4" }
func (fixedTokenizer) TokenLens(s string) []int {
	lens := make([]int, 0, len(s)/4+1)
	for len(s) > 0 {
		n := min(4, len(s))
		lens = append(lens, n)
		s = s[n:]
	}
	return lens
}
func (f fixedTokenizer) Count(s string) int { return (len(s) + 3) / 4 }

// textStream yields n bytes of ASCII text without holding them.
type textStream struct{ left int64 }

func (r *textStream) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), r.left)
	const line = "All work and no play makes a long document.\n"
	for i := range n {
		p[i] = line[i%int64(len(line))]
	}
	r.left -= n
	return int(n), nil
}

// TestPlanChunksTwoGigabytes streams a 2 GiB document through the planner
// and checks that it is never held in memory: the heap stays far below the
// document's size.
func TestPlanChunksTwoGigabytes(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 2 GiB")
	}
	const size = 2 << 30
	var peak uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	idx, err := PlanChunks(&textStream{left: size}, fixedTokenizer{}, 50_000)
	close(done)
	<-sampled
	if err != nil {
		t.Fatal(err)
	}
	if idx.Bytes != size || idx.Chunks[len(idx.Chunks)-1].End != size {
		t.Fatalf("index covers %d bytes, want %d", idx.Bytes, size)
	}
	if peak > 256<<20 {
		t.Errorf("heap in use peaked at %d MiB for a 2048 MiB document", peak>>20)
	}
	t.Logf("2 GiB: %d chunks, heap in use peaked at %d MiB", len(idx.Chunks), peak>>20)
}
