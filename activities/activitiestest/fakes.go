// Package activitiestest provides in-memory stand-ins for the activities'
// dependencies, for unit tests of activities and workflows. Integration
// tests use the real S3 server and the simulator over HTTP instead.
package activitiestest

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/s3store"
)

// Store is an in-memory object store with S3's not-found and ETag semantics.
type Store struct {
	mu      sync.Mutex
	objects map[s3store.Location][]byte
	// Ranges counts ranged reads, for tests that check chunks are read by range.
	Ranges int
}

// NewStore returns an empty Store.
func NewStore() *Store { return &Store{objects: make(map[s3store.Location][]byte)} }

func etag(b []byte) string {
	h := md5.Sum(b)
	return `"` + hex.EncodeToString(h[:]) + `"`
}

func (s *Store) get(loc s3store.Location, tag string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.objects[loc]
	if !ok {
		return nil, fmt.Errorf("get %s: %w", loc, s3store.ErrNotFound)
	}
	if tag != "" && tag != etag(b) {
		return nil, fmt.Errorf("get %s: %w", loc, s3store.ErrChanged)
	}
	return b, nil
}

// Head implements activities.ObjectStore.
func (s *Store) Head(_ context.Context, loc s3store.Location) (s3store.ObjectInfo, error) {
	b, err := s.get(loc, "")
	if err != nil {
		return s3store.ObjectInfo{}, err
	}
	return s3store.ObjectInfo{Size: int64(len(b)), ETag: etag(b)}, nil
}

// Open implements activities.ObjectStore.
func (s *Store) Open(_ context.Context, loc s3store.Location, tag string) (io.ReadCloser, error) {
	b, err := s.get(loc, tag)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// ReadRange implements activities.ObjectStore.
func (s *Store) ReadRange(_ context.Context, loc s3store.Location, start, end int64, tag string) ([]byte, error) {
	b, err := s.get(loc, tag)
	if err != nil {
		return nil, err
	}
	if start < 0 || end > int64(len(b)) || start >= end {
		return nil, fmt.Errorf("range [%d,%d) outside object of %d bytes", start, end, len(b))
	}
	s.mu.Lock()
	s.Ranges++
	s.mu.Unlock()
	return bytes.Clone(b[start:end]), nil
}

// ReadAll implements activities.ObjectStore.
func (s *Store) ReadAll(_ context.Context, loc s3store.Location) ([]byte, error) {
	b, err := s.get(loc, "")
	return bytes.Clone(b), err
}

// Put implements activities.ObjectStore.
func (s *Store) Put(_ context.Context, loc s3store.Location, data []byte, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objects[loc] = bytes.Clone(data)
	return nil
}

// PutReader implements activities.ObjectStore.
func (s *Store) PutReader(ctx context.Context, loc s3store.Location, body io.ReadSeeker, size int64, contentType string) error {
	data, err := io.ReadAll(io.LimitReader(body, size))
	if err != nil {
		return err
	}
	return s.Put(ctx, loc, data, contentType)
}

// ListFolders lists the folders right under prefix, as s3store.Store
// does: sorted names relative to prefix, each ending in '/'.
func (s *Store) ListFolders(_ context.Context, bucket, prefix string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	var folders []string
	for loc := range s.objects {
		rest, ok := strings.CutPrefix(loc.Key, prefix)
		if loc.Bucket != bucket || !ok {
			continue
		}
		if i := strings.IndexByte(rest, '/'); i >= 0 && !seen[rest[:i+1]] {
			seen[rest[:i+1]] = true
			folders = append(folders, rest[:i+1])
		}
	}
	sort.Strings(folders)
	return folders, nil
}

// List lists up to limit keys under prefix in key order, as
// s3store.Store does (limit <= 0: all of them).
func (s *Store) List(_ context.Context, bucket, prefix string, limit int) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	for loc := range s.objects {
		if loc.Bucket == bucket && strings.HasPrefix(loc.Key, prefix) {
			keys = append(keys, loc.Key)
		}
	}
	sort.Strings(keys)
	if limit > 0 && len(keys) > limit {
		keys = keys[:limit]
	}
	return keys, nil
}

// Delete removes an object, as an expiry rule would.
func (s *Store) Delete(loc s3store.Location) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.objects, loc)
}

// Object returns an object's bytes, or nil.
func (s *Store) Object(loc s3store.Location) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.objects[loc])
}

// Keys returns the stored locations.
func (s *Store) Keys() []s3store.Location {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]s3store.Location, 0, len(s.objects))
	for k := range s.objects {
		keys = append(keys, k)
	}
	return keys
}

// Model answers with a function of the request, so tests decide what the
// "model" says. It records every request.
type Model struct {
	mu       sync.Mutex
	Respond  func(req inference.Request) (string, error)
	Requests []inference.Request
}

// Complete implements activities.Model.
func (m *Model) Complete(_ context.Context, req inference.Request) (inference.Completion, error) {
	m.mu.Lock()
	m.Requests = append(m.Requests, req)
	respond := m.Respond
	m.mu.Unlock()
	text, err := respond(req)
	if err != nil {
		return inference.Completion{}, err
	}
	return inference.Completion{Text: text, Model: "fake", FinishReason: "stop", PromptTokens: len(req.Prompt) / 4, CompletionTokens: len(text) / 4}, nil
}

// Calls returns a copy of the recorded requests.
func (m *Model) Calls() []inference.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]inference.Request(nil), m.Requests...)
}
