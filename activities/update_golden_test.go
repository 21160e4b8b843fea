package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/s3store"
)

// failingStore is a recordingStore whose Put of a key containing failKey
// fails once. failKey is read and cleared under the recording store's mu:
// the trace and the checkpoint are put at once.
type failingStore struct {
	*recordingStore
	failKey string
}

func (s *failingStore) Put(ctx context.Context, loc s3store.Location, data []byte, contentType string) error {
	s.mu.Lock()
	fail := s.failKey != "" && strings.Contains(loc.Key, s.failKey)
	if fail {
		s.failKey = ""
	}
	s.mu.Unlock()
	if fail {
		return errors.New("put refused by the test")
	}
	return s.recordingStore.Put(ctx, loc, data, contentType)
}

var goldenStamp = regexp.MustCompile(`"20\d\d-\d\d-\d\dT[0-9:.]+Z"`)

// sortedTranscript returns the writes of a transcript ordered by key (the
// trace and the checkpoint are written at once, in either order), with
// the wall-clock times replaced by TIME.
func sortedTranscript(b []byte) []byte {
	var writes []string
	for _, p := range strings.Split(string(b), "=== put ") {
		if p != "" {
			writes = append(writes, "=== put "+p)
		}
	}
	sort.Strings(writes)
	return goldenStamp.ReplaceAll([]byte(strings.Join(writes, "")), []byte(`"TIME"`))
}

// TestUpdateMemoryGolden pins what UpdateMemory writes (the chunk's trace
// and its checkpoint, byte for byte but the times), its output, the
// model calls it pays, and its errors: a chunk read with a checkpoint; a
// retry after the checkpoint write failed, which reuses the completion
// the worker kept rather than paying again and still counts its usage; a
// chunk out of range and a bad trace prefix, which fail before any call.
// Run with -update to rewrite the file.
func TestUpdateMemoryGolden(t *testing.T) {
	f := newFixture(t, []byte(makeDoc(4)))
	p := f.prepare(t, api.ModelOptions{ChunkTokens: 100})
	rec := &recordingStore{Store: f.store.Store}
	store := &failingStore{recordingStore: rec}
	f.acts.Store = store
	var golden bytes.Buffer
	run := func(name string, in actwire.UpdateInput) (actwire.UpdateOutput, int, error) {
		rec.transcript.Reset()
		before := len(f.model.Calls())
		var out actwire.UpdateOutput
		err := f.exec(t, UpdateMemoryName, in, &out)
		fmt.Fprintf(&golden, "##### %s\n", name)
		if err != nil {
			fmt.Fprintf(&golden, "error: %v\n", err)
		} else {
			out.LatencyMS = 0
			raw, _ := json.MarshalIndent(out, "", "  ")
			fmt.Fprintf(&golden, "output: %s\n", raw)
		}
		calls := len(f.model.Calls()) - before
		fmt.Fprintf(&golden, "model calls: %d\n", calls)
		golden.Write(sortedTranscript(rec.transcript.Bytes()))
		return out, calls, err
	}
	in := f.updateInput(p, 1)
	in.Checkpoint, in.FirstRunID = true, "chain-1"
	run("chunk 1 with a checkpoint", in)

	in = f.updateInput(p, 2)
	in.Memory, in.Checkpoint, in.FirstRunID = "memory 1", true, "chain-1"
	store.failKey = "checkpoint"
	if _, calls, err := run("chunk 2, the checkpoint write fails", in); err == nil || calls != 1 {
		t.Fatalf("chunk 2's first attempt: %d model calls, error %v; want one call and the checkpoint's error", calls, err)
	}
	if store.failKey != "" {
		t.Fatal("test setup: no checkpoint was written")
	}
	// Paid once: the retry answers from the completion the failed attempt
	// paid for, makes no call, and still reports that one call's usage
	// (usage counts every call made, once).
	out, calls, err := run("chunk 2 retried: the kept completion, not a second call", in)
	if err != nil || calls != 0 || out.Usage.Calls != 1 || out.Usage.PromptTokens == 0 {
		t.Errorf("chunk 2 retried: %d model calls, usage %+v, error %v; want no call and the first attempt's one call counted", calls, out.Usage, err)
	}

	in = f.updateInput(p, 9)
	run("chunk 9 of 4", in)
	in = f.updateInput(p, 0)
	in.TracePrefix = "not-a-uri/"
	run("a trace prefix that is no S3 URI", in)

	got := regexp.MustCompile(`"latency_ms":\d+`).ReplaceAll(golden.Bytes(), []byte(`"latency_ms":0`))
	checkGolden(t, "update/update.golden", got)
}
