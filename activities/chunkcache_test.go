package activities

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
)

func cacheTestKey(i int) chunkKey {
	return chunkKey{doc: "s3://b/doc", etag: `"e"`, start: int64(i * 10), end: int64(i*10 + 10)}
}

// waitFor polls cond until it holds, failing the test after a deadline.
func cacheWaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestChunkCacheSingleFlight(t *testing.T) {
	var c ChunkCache
	const callers = 10
	var reads atomic.Int32
	release := make(chan struct{})
	read := func(context.Context) ([]byte, error) {
		reads.Add(1)
		<-release
		return []byte("chunk bytes"), nil
	}
	var wg sync.WaitGroup
	got := make([][]byte, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = c.get(context.Background(), cacheTestKey(0), read)
		}()
	}
	// All callers are in: one reads, the others wait for that read.
	cacheWaitFor(t, "callers joining the read in flight", func() bool { return c.Stats().Shared == callers-1 })
	close(release)
	wg.Wait()
	for i := range callers {
		if errs[i] != nil || string(got[i]) != "chunk bytes" {
			t.Errorf("caller %d: %q, %v", i, got[i], errs[i])
		}
	}
	if n := reads.Load(); n != 1 {
		t.Errorf("%d reads for %d concurrent callers, want 1", n, callers)
	}
	// A later caller is answered from memory.
	if _, err := c.get(context.Background(), cacheTestKey(0), read); err != nil || reads.Load() != 1 {
		t.Errorf("later get: err %v, reads %d; want a hit", err, reads.Load())
	}
	if s := c.Stats(); s.Reads != 1 || s.Hits != 1 || s.Shared != callers-1 || s.Entries != 1 || s.Bytes != int64(len("chunk bytes")) {
		t.Errorf("stats = %+v", s)
	}
}

func TestChunkCacheLRUBound(t *testing.T) {
	c := ChunkCache{MaxBytes: 30}
	reads := map[chunkKey]int{}
	get := func(i int) {
		t.Helper()
		data, err := c.get(context.Background(), cacheTestKey(i), func(context.Context) ([]byte, error) {
			reads[cacheTestKey(i)]++
			return bytes.Repeat([]byte{byte('a' + i)}, 10), nil
		})
		if err != nil || len(data) != 10 || data[0] != byte('a'+i) {
			t.Fatalf("get(%d) = %q, %v", i, data, err)
		}
	}
	get(0)
	get(1)
	get(2)
	get(0) // 0 is now the most recent; 1 the least
	get(3) // evicts 1
	if s := c.Stats(); s.Bytes != 30 || s.Entries != 3 || s.Evictions != 1 {
		t.Errorf("after 4 chunks of 10 bytes in 30: %+v", s)
	}
	get(0)
	get(2)
	get(3)
	get(1) // read again
	want := map[chunkKey]int{cacheTestKey(0): 1, cacheTestKey(1): 2, cacheTestKey(2): 1, cacheTestKey(3): 1}
	for k, n := range want {
		if reads[k] != n {
			t.Errorf("chunk [%d,%d) read %d times, want %d", k.start, k.end, reads[k], n)
		}
	}
	if s := c.Stats(); s.Bytes > c.MaxBytes {
		t.Errorf("holds %d bytes, over its bound of %d", s.Bytes, c.MaxBytes)
	}

	t.Run("a chunk over the bound is read but not kept", func(t *testing.T) {
		c := ChunkCache{MaxBytes: 5}
		for range 2 {
			if _, err := c.get(context.Background(), cacheTestKey(0), func(context.Context) ([]byte, error) { return make([]byte, 6), nil }); err != nil {
				t.Fatal(err)
			}
		}
		if s := c.Stats(); s.Reads != 2 || s.Entries != 0 {
			t.Errorf("stats = %+v, want 2 reads and nothing kept", s)
		}
	})
}

func TestChunkCacheDoesNotKeepFailures(t *testing.T) {
	var c ChunkCache
	fail := errors.New("s3: 503")
	if _, err := c.get(context.Background(), cacheTestKey(0), func(context.Context) ([]byte, error) { return nil, fail }); !errors.Is(err, fail) {
		t.Fatalf("err = %v, want the read's error", err)
	}
	data, err := c.get(context.Background(), cacheTestKey(0), func(context.Context) ([]byte, error) { return []byte("ok"), nil })
	if err != nil || string(data) != "ok" {
		t.Errorf("after a failed read: %q, %v; want a new read", data, err)
	}
}

// A reader whose own activity is cancelled must not fail the activities
// waiting for its read: one of them reads again.
func TestChunkCacheReaderCancelled(t *testing.T) {
	var c ChunkCache
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	var leaderErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, leaderErr = c.get(ctx, cacheTestKey(0), func(ctx context.Context) ([]byte, error) {
			close(started)
			<-ctx.Done()
			return nil, fmt.Errorf("s3: get: %w", ctx.Err())
		})
	}()
	<-started
	var followerData []byte
	var followerErr error
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		followerData, followerErr = c.get(context.Background(), cacheTestKey(0), func(context.Context) ([]byte, error) { return []byte("fresh"), nil })
	}()
	cacheWaitFor(t, "the follower joining", func() bool { return c.Stats().Shared == 1 })
	cancel()
	<-done
	<-followed
	if !errors.Is(leaderErr, context.Canceled) {
		t.Errorf("cancelled reader: err = %v", leaderErr)
	}
	if followerErr != nil || string(followerData) != "fresh" {
		t.Errorf("follower: %q, %v; want its own read", followerData, followerErr)
	}
}

func TestChunkCacheBypass(t *testing.T) {
	tests := []struct {
		name     string
		maxBytes int64
		etag     string
	}{
		{"no ETag: an unversioned read may change", 0, ""},
		{"turned off", -1, `"e"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &ChunkCache{MaxBytes: tt.maxBytes}
			n := 0
			for range 2 {
				k := cacheTestKey(0)
				k.etag = tt.etag
				if _, err := c.get(context.Background(), k, func(context.Context) ([]byte, error) { n++; return []byte("x"), nil }); err != nil {
					t.Fatal(err)
				}
			}
			if n != 2 || c.Stats().Entries != 0 {
				t.Errorf("%d reads, %d entries; want every get to read and nothing kept", n, c.Stats().Entries)
			}
		})
	}
}

// reviewUpdate reads its chunk through the cache: the same chunk asked by
// several questions is one ranged read of the store. DocumentQA's
// updateMemory reads straight from the store.
func TestReviewUpdateReadsThroughChunkCache(t *testing.T) {
	f := newFixture(t, []byte(makeDoc(3)))
	p := f.prepare(t, api.ModelOptions{ChunkTokens: 100})
	// The last chunk: a plain update reads none ahead.
	last := p.Chunks - 1
	for i, q := range []string{"first question?", "second question?", "third question?"} {
		in := f.updateInput(p, last)
		in.Question, in.TracePrefix = q, fmt.Sprintf("%sq%d/", tracePrefix, i)
		var out actwire.ReviewUpdateOutput
		if err := f.exec(t, ReviewUpdateName, in, &out); err != nil {
			t.Fatal(err)
		}
	}
	var plain actwire.UpdateOutput
	if err := f.exec(t, UpdateMemoryName, f.updateInput(p, last), &plain); err != nil {
		t.Fatal(err)
	}
	if f.store.Ranges != 2 {
		t.Errorf("3 review updates and 1 plain update of one chunk made %d ranged reads, want 2", f.store.Ranges)
	}
	// Hits include the evidence passage lookups, which re-read the chunk.
	if s := f.acts.Chunks.Stats(); s.Reads != 1 {
		t.Errorf("cache stats = %+v, want 1 read", s)
	}
}

// A single question's update reads the run's next chunk while the model
// works, and the next update takes it instead of reading it again.
func TestUpdateReadsNextChunkAhead(t *testing.T) {
	f := newFixture(t, []byte(makeDoc(3)))
	p := f.prepare(t, api.ModelOptions{ChunkTokens: 100})
	if p.Chunks < 3 {
		t.Fatalf("%d chunks, want 3 or more", p.Chunks)
	}
	for chunk := range 2 {
		var out actwire.UpdateOutput
		if err := f.exec(t, UpdateMemoryName, f.updateInput(p, chunk), &out); err != nil {
			t.Fatal(err)
		}
	}
	idx := f.index(t, p.IndexURI)
	third := idx.Chunks[2]
	data, ok := f.acts.ahead.take(context.Background(), chunkKey{doc: p.Document, etag: p.ETag, start: third.Start, end: third.End})
	if !ok || string(data) != string(f.store.Object(mustLoc(t, p.Document))[third.Start:third.End]) {
		t.Fatalf("the third chunk was not read ahead by the second update (ok %v)", ok)
	}
	// Chunk 0 read by its update, 1 and 2 read ahead; chunk 1's update read
	// nothing itself.
	if f.store.Ranges != 3 || f.acts.ahead.stats.Used != 2 {
		t.Errorf("%d ranged reads, %d taken from the read-ahead; want 3 and 2", f.store.Ranges, f.acts.ahead.stats.Used)
	}
}
