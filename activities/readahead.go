package activities

import (
	"context"
	"sync"
	"time"
)

// readAhead reads the next chunk of a single question's run while the model
// rewrites the memory for this one, so the next UpdateMemory, which runs on
// this worker whenever its run's workflow task does (eager execution), finds
// the chunk's bytes in memory instead of waiting for S3 on the run's
// critical path. A run reads each chunk once either way; a next chunk that
// runs on another worker is read there too, and this one's copy is dropped
// unused.
//
// An entry is taken once, by the activity of its chunk, after that
// activity's own read checks (allowChunkRead): the read-ahead adds no read a
// run could not make. Entries are keyed like ChunkCache's (document, ETag,
// byte range); a failed read is not kept, and whoever asks reads again. At
// most readAheadEntries reads are kept, none older than readAheadFor and
// none larger than readAheadMaxBytes, so it holds a few MiB at most. The
// zero value is ready to use and safe for concurrent use.
type readAhead struct {
	mu      sync.Mutex
	entries map[chunkKey]*aheadRead
	order   []chunkKey // oldest first
	stats   readAheadStats
}

type readAheadStats struct {
	Used, Dropped int64
}

type aheadRead struct {
	chunkRead
	at time.Time
}

const (
	readAheadEntries  = 64
	readAheadFor      = time.Minute
	readAheadMaxBytes = 256 << 10
)

// start reads key in the background with read, unless it is held already
// or too large. The read gets its own context, bounded by timeout: the
// activity that starts it ends before it is used.
func (r *readAhead) start(key chunkKey, timeout time.Duration, read func(context.Context) ([]byte, error)) {
	if key.etag == "" || key.end-key.start > readAheadMaxBytes {
		return
	}
	now := time.Now()
	r.mu.Lock()
	if _, ok := r.entries[key]; ok {
		r.mu.Unlock()
		return
	}
	if r.entries == nil {
		r.entries = make(map[chunkKey]*aheadRead)
	}
	for len(r.order) > 0 && (len(r.order) >= readAheadEntries || now.Sub(r.entries[r.order[0]].at) > readAheadFor) {
		delete(r.entries, r.order[0])
		r.order = r.order[1:]
		r.stats.Dropped++
	}
	e := &aheadRead{chunkRead: chunkRead{done: make(chan struct{})}, at: now}
	r.entries[key] = e
	r.order = append(r.order, key)
	r.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		e.data, e.err = read(ctx)
		close(e.done)
	}()
}

// take returns the bytes read ahead for key and forgets them, waiting for a
// read in flight; ok is false when there are none (never started, dropped,
// failed, or ctx ended first), and the caller reads for itself.
func (r *readAhead) take(ctx context.Context, key chunkKey) (data []byte, ok bool) {
	r.mu.Lock()
	e, found := r.entries[key]
	if found {
		delete(r.entries, key)
		for i, k := range r.order {
			if k == key {
				r.order = append(r.order[:i], r.order[i+1:]...)
				break
			}
		}
	}
	r.mu.Unlock()
	if !found {
		return nil, false
	}
	select {
	case <-e.done:
	case <-ctx.Done():
		return nil, false
	}
	if e.err != nil {
		return nil, false
	}
	r.mu.Lock()
	r.stats.Used++
	r.mu.Unlock()
	return e.data, true
}
