package activities

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestReadAheadTakesOnce(t *testing.T) {
	var r readAhead
	var reads atomic.Int32
	key := chunkKey{doc: "s3://b/d.txt", etag: "e1", start: 10, end: 20}
	read := func(context.Context) ([]byte, error) { reads.Add(1); return []byte("0123456789"), nil }
	r.start(key, time.Second, read)
	r.start(key, time.Second, read) // held already: no second read
	got, ok := r.take(context.Background(), key)
	if !ok || string(got) != "0123456789" {
		t.Fatalf("take = %q, %v; want the bytes read", got, ok)
	}
	if _, ok := r.take(context.Background(), key); ok {
		t.Error("a second take found the bytes again; want them forgotten once taken")
	}
	if n := reads.Load(); n != 1 {
		t.Errorf("%d reads, want 1", n)
	}
}

func TestReadAheadFallsBack(t *testing.T) {
	var r readAhead
	ctx := context.Background()
	failed := chunkKey{doc: "s3://b/d.txt", etag: "e1", start: 0, end: 10}
	r.start(failed, time.Second, func(context.Context) ([]byte, error) { return nil, errors.New("slow down") })
	if _, ok := r.take(ctx, failed); ok {
		t.Error("a failed read was taken; want the caller to read for itself")
	}
	if _, ok := r.take(ctx, chunkKey{doc: "s3://b/other.txt", etag: "e1", end: 10}); ok {
		t.Error("a chunk never read ahead was taken")
	}
	noETag := chunkKey{doc: "s3://b/d.txt", end: 10}
	big := chunkKey{doc: "s3://b/d.txt", etag: "e1", end: readAheadMaxBytes + 1}
	for _, k := range []chunkKey{noETag, big} {
		r.start(k, time.Second, func(context.Context) ([]byte, error) { t.Errorf("read %+v ahead; want it skipped", k); return nil, nil })
	}
	// A take whose activity ends while the read is still in flight gives up.
	slow := chunkKey{doc: "s3://b/d.txt", etag: "e1", start: 20, end: 30}
	release := make(chan struct{})
	r.start(slow, time.Second, func(context.Context) ([]byte, error) { <-release; return []byte("x"), nil })
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, ok := r.take(cctx, slow); ok {
		t.Error("take with an ended context returned bytes")
	}
	close(release)
}

func TestReadAheadBounded(t *testing.T) {
	var r readAhead
	for i := range readAheadEntries + 10 {
		r.start(chunkKey{doc: "d", etag: "e", start: int64(i), end: int64(i + 1)}, time.Second,
			func(context.Context) ([]byte, error) { return []byte("x"), nil })
	}
	r.mu.Lock()
	n, dropped := len(r.entries), r.stats.Dropped
	r.mu.Unlock()
	if n != readAheadEntries || dropped != 10 {
		t.Errorf("%d entries held, %d dropped; want %d held, the 10 oldest dropped", n, dropped, readAheadEntries)
	}
	if _, ok := r.take(context.Background(), chunkKey{doc: "d", etag: "e", start: 0, end: 1}); ok {
		t.Error("the oldest entry was still held")
	}
}
