package activities

import (
	"container/list"
	"context"
	"sync"

	"github.com/memagent/memagent/internal/s3store"
)

// DefaultChunkCacheBytes bounds a ChunkCache whose MaxBytes is zero: about
// 2,600 chunks of 5,000 tokens of English.
const DefaultChunkCacheBytes = 64 << 20

// ChunkCache keeps the bytes of recently read chunks in the worker's
// memory, so that the questions of a review, each its own UpdateMemory
// activity, read each chunk from S3 once: the first activity to ask reads
// it, the ones asking meanwhile wait for that read (single flight), the ones
// asking later find it here. Entries are keyed by document, ETag and byte
// range, and an object version never changes, so an entry is never stale;
// reads without an ETag are not cached. The least recently used entries go
// first once the cache holds more than MaxBytes. Failed reads are not kept:
// the next activity, or the retry, reads again.
//
// With several workers each keeps its own cache, so a chunk is read once per
// worker that runs one of its activities; a worker that restarts starts
// empty. The zero value is ready to use and safe for concurrent use.
type ChunkCache struct {
	// MaxBytes bounds the bytes held; 0 means DefaultChunkCacheBytes and a
	// negative value turns the cache (and the single flight) off.
	MaxBytes int64

	mu       sync.Mutex
	entries  map[chunkKey]*list.Element // of *chunkEntry, in lru
	lru      list.List                  // front: most recently used
	held     int64
	inflight map[chunkKey]*chunkRead
	stats    ChunkCacheStats
}

// ChunkCacheStats counts what a ChunkCache did.
type ChunkCacheStats struct {
	// Reads is how many reads went to S3 through the cache.
	Reads int64 `json:"reads"`
	// Hits were answered from memory; Shared waited for a read another
	// activity had started.
	Hits   int64 `json:"hits"`
	Shared int64 `json:"shared"`
	// Evictions counts entries dropped to stay within MaxBytes.
	Evictions int64 `json:"evictions"`
	// Entries and Bytes are what the cache holds now.
	Entries int   `json:"entries"`
	Bytes   int64 `json:"bytes"`
}

type chunkKey struct {
	doc, etag  string
	start, end int64
}

type chunkEntry struct {
	key  chunkKey
	data []byte
}

// chunkRead is a read in flight; done closes when data and err are set.
type chunkRead struct {
	done chan struct{}
	data []byte
	err  error
	// abandoned: the reader's own context ended, so its error says nothing
	// about the chunk and whoever waited reads again.
	abandoned bool
}

// Stats returns the counters and the current size.
func (c *ChunkCache) Stats() ChunkCacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Entries, s.Bytes = len(c.entries), c.held
	return s
}

func (c *ChunkCache) maxBytes() int64 {
	if c.MaxBytes == 0 {
		return DefaultChunkCacheBytes
	}
	return c.MaxBytes
}

// get returns the bytes for key, from memory, from a read in flight, or
// from read. The bytes are shared: callers must not modify them.
func (c *ChunkCache) get(ctx context.Context, key chunkKey, read func(context.Context) ([]byte, error)) ([]byte, error) {
	if key.etag == "" || c.maxBytes() < 0 {
		return read(ctx)
	}
	for {
		c.mu.Lock()
		if el, ok := c.entries[key]; ok {
			c.lru.MoveToFront(el)
			c.stats.Hits++
			c.mu.Unlock()
			return el.Value.(*chunkEntry).data, nil
		}
		if r, ok := c.inflight[key]; ok {
			c.stats.Shared++
			c.mu.Unlock()
			select {
			case <-r.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if r.abandoned && ctx.Err() == nil {
				continue // the reader gave up, not the read: read again
			}
			return r.data, r.err
		}
		r := &chunkRead{done: make(chan struct{})}
		if c.inflight == nil {
			c.inflight = make(map[chunkKey]*chunkRead)
		}
		c.inflight[key] = r
		c.stats.Reads++
		c.mu.Unlock()
		c.fill(ctx, key, r, read)
		return r.data, r.err
	}
}

// fill runs read for r and publishes its outcome, even if read panics.
func (c *ChunkCache) fill(ctx context.Context, key chunkKey, r *chunkRead, read func(context.Context) ([]byte, error)) {
	defer func() {
		c.mu.Lock()
		delete(c.inflight, key)
		if r.err == nil && r.data != nil {
			c.add(key, r.data)
		}
		c.mu.Unlock()
		close(r.done)
	}()
	// Until read returns, a panic leaves the waiters to read again.
	r.err, r.abandoned = context.Canceled, true
	r.data, r.err = read(ctx)
	r.abandoned = r.err != nil && ctx.Err() != nil
}

// add keeps data under key and evicts the least recently used entries
// beyond the bound. A chunk larger than the bound is not kept. c.mu is held.
func (c *ChunkCache) add(key chunkKey, data []byte) {
	limit := c.maxBytes()
	size := int64(len(data))
	if size > limit {
		return
	}
	if c.entries == nil {
		c.entries = make(map[chunkKey]*list.Element)
	}
	if _, ok := c.entries[key]; ok {
		return
	}
	c.entries[key] = c.lru.PushFront(&chunkEntry{key: key, data: data})
	c.held += size
	for c.held > limit {
		el := c.lru.Back()
		e := el.Value.(*chunkEntry)
		c.lru.Remove(el)
		delete(c.entries, e.key)
		c.held -= int64(len(e.data))
		c.stats.Evictions++
	}
}

// readChunk reads a chunk's byte range of a document version through the
// worker's chunk cache.
func (a *Activities) readChunk(ctx context.Context, loc s3store.Location, start, end int64, etag string) ([]byte, error) {
	key := chunkKey{doc: loc.String(), etag: etag, start: start, end: end}
	return a.Chunks.get(ctx, key, func(ctx context.Context) ([]byte, error) {
		return a.Store.ReadRange(ctx, loc, start, end, etag)
	})
}
