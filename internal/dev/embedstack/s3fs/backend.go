package s3fs

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rclone/gofakes3"
)

const (
	bucketRecord = "bucket.json"
	objectsDir   = "objects"
	recordExt    = ".json"
	dataExt      = ".data"
	tmpExt       = ".tmp"
)

// Backend stores buckets and objects as files under a root directory. It is
// safe for concurrent use. The zero value is not usable; call New.
type Backend struct {
	root string

	mu      sync.RWMutex
	buckets map[string]*bucket
}

var _ gofakes3.Backend = (*Backend)(nil)

type bucket struct {
	created time.Time
	objects map[string]*object
}

// object is the on-disk record of one object.
type object struct {
	Key      string            `json:"key"`
	Size     int64             `json:"size"`
	MD5      string            `json:"md5"`
	Modified time.Time         `json:"modified"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// Data is the base name of the contents file, in the record's directory.
	Data string `json:"data"`
}

type bucketFile struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
}

// New opens (creating it if needed) a backend rooted at root, loads the
// object records into memory and removes leftovers of interrupted writes.
func New(root string) (*Backend, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("s3fs: create root %s: %w", root, err)
	}
	b := &Backend{root: root, buckets: map[string]*bucket{}}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("s3fs: read root %s: %w", root, err)
	}
	for _, e := range entries {
		if !e.IsDir() || validBucketName(e.Name()) != nil {
			continue
		}
		bk, err := loadBucket(filepath.Join(root, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue // not a bucket directory
		}
		if err != nil {
			return nil, fmt.Errorf("s3fs: load bucket %s: %w", e.Name(), err)
		}
		b.buckets[e.Name()] = bk
	}
	return b, nil
}

func loadBucket(dir string) (*bucket, error) {
	raw, err := os.ReadFile(filepath.Join(dir, bucketRecord))
	if err != nil {
		return nil, err
	}
	var bf bucketFile
	if err := json.Unmarshal(raw, &bf); err != nil {
		return nil, fmt.Errorf("decode %s: %w", bucketRecord, err)
	}
	bk := &bucket{created: bf.Created, objects: map[string]*object{}}
	shards, err := os.ReadDir(filepath.Join(dir, objectsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return bk, nil
	}
	if err != nil {
		return nil, err
	}
	for _, shard := range shards {
		if !shard.IsDir() {
			continue
		}
		if err := loadShard(filepath.Join(dir, objectsDir, shard.Name()), bk); err != nil {
			return nil, err
		}
	}
	return bk, nil
}

// loadShard reads the object records of one shard directory into bk and
// deletes data and temporary files that no record names.
func loadShard(dir string, bk *bucket) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	referenced := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, recordExt) {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		var o object
		if err := json.Unmarshal(raw, &o); err != nil {
			return fmt.Errorf("decode %s: %w", name, err)
		}
		if recordName(o.Key) != name || o.Data != filepath.Base(o.Data) || !strings.HasSuffix(o.Data, dataExt) {
			return fmt.Errorf("record %s does not match its key or names a bad data file", name)
		}
		if _, err := os.Stat(filepath.Join(dir, o.Data)); err != nil {
			return fmt.Errorf("record %s: data file: %w", name, err)
		}
		referenced[o.Data] = true
		bk.objects[o.Key] = &o
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || referenced[name] {
			continue
		}
		if strings.HasSuffix(name, dataExt) || strings.HasSuffix(name, tmpExt) {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

func recordName(key string) string { return keyHash(key) + recordExt }

// validBucketName applies the S3 naming rules, which also guarantee that the
// name is a single safe path element.
func validBucketName(name string) error {
	if name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return gofakes3.ResourceError(gofakes3.ErrInvalidBucketName, name)
	}
	return gofakes3.ValidateBucketName(name)
}

func (b *Backend) bucketDir(name string) string { return filepath.Join(b.root, name) }

func (b *Backend) shardDir(bucketName, key string) string {
	h := keyHash(key)
	return filepath.Join(b.root, bucketName, objectsDir, h[:2])
}

// ListBuckets lists the buckets in name order.
func (b *Backend) ListBuckets(ctx context.Context) ([]gofakes3.BucketInfo, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]gofakes3.BucketInfo, 0, len(b.buckets))
	for _, name := range slices.Sorted(maps.Keys(b.buckets)) {
		out = append(out, gofakes3.BucketInfo{Name: name, CreationDate: gofakes3.NewContentTime(b.buckets[name].created)})
	}
	return out, nil
}

// ListBucket lists the objects of a bucket in key order, honouring prefix,
// delimiter, marker and max-keys.
func (b *Backend) ListBucket(ctx context.Context, name string, prefix *gofakes3.Prefix, page gofakes3.ListBucketPage) (*gofakes3.ObjectList, error) {
	if prefix == nil {
		prefix = &gofakes3.Prefix{}
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	bk := b.buckets[name]
	if bk == nil {
		return nil, gofakes3.BucketNotFound(name)
	}
	keys := slices.Sorted(maps.Keys(bk.objects))
	start := 0
	if page.Marker != "" {
		start, _ = slices.BinarySearch(keys, page.Marker)
		if start < len(keys) && keys[start] == page.Marker {
			start++
		}
	}

	list := gofakes3.NewObjectList()
	var match gofakes3.PrefixMatch
	var lastPrefix string
	var count int64
	for i := start; i < len(keys); i++ {
		key := keys[i]
		if !prefix.Match(key, &match) {
			continue
		}
		if match.CommonPrefix {
			if match.MatchedPart == lastPrefix {
				continue
			}
			list.AddPrefix(match.MatchedPart)
			lastPrefix = match.MatchedPart
		} else {
			o := bk.objects[key]
			list.Add(&gofakes3.Content{
				Key:          key,
				LastModified: gofakes3.NewContentTime(o.Modified),
				ETag:         `"` + o.MD5 + `"`,
				Size:         o.Size,
			})
		}
		count++
		if page.MaxKeys > 0 && count >= page.MaxKeys {
			list.NextMarker = key
			list.IsTruncated = i+1 < len(keys)
			break
		}
	}
	return list, nil
}

// CreateBucket creates a bucket, or returns a BucketAlreadyExists error.
func (b *Backend) CreateBucket(ctx context.Context, name string) error {
	if err := validBucketName(name); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buckets[name] != nil {
		return gofakes3.ResourceError(gofakes3.ErrBucketAlreadyExists, name)
	}
	dir := b.bucketDir(name)
	if err := os.MkdirAll(filepath.Join(dir, objectsDir), 0o755); err != nil {
		return fmt.Errorf("s3fs: create bucket %s: %w", name, err)
	}
	created := time.Now().UTC()
	raw, err := json.Marshal(bucketFile{Name: name, Created: created})
	if err != nil {
		return fmt.Errorf("s3fs: create bucket %s: %w", name, err)
	}
	if err := writeFileAtomic(dir, bucketRecord, raw); err != nil {
		return fmt.Errorf("s3fs: create bucket %s: %w", name, err)
	}
	b.buckets[name] = &bucket{created: created, objects: map[string]*object{}}
	return nil
}

// BucketExists reports whether the bucket exists.
func (b *Backend) BucketExists(ctx context.Context, name string) (bool, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.buckets[name] != nil, nil
}

// DeleteBucket deletes an empty bucket.
func (b *Backend) DeleteBucket(ctx context.Context, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	bk := b.buckets[name]
	if bk == nil {
		return gofakes3.BucketNotFound(name)
	}
	if len(bk.objects) > 0 {
		return gofakes3.ResourceError(gofakes3.ErrBucketNotEmpty, name)
	}
	// Remove the record first: a bucket directory without one is ignored
	// when the backend is opened, so a crash half way leaves no bucket.
	if err := os.Remove(filepath.Join(b.bucketDir(name), bucketRecord)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("s3fs: delete bucket %s: %w", name, err)
	}
	delete(b.buckets, name)
	if err := os.RemoveAll(b.bucketDir(name)); err != nil {
		return fmt.Errorf("s3fs: delete bucket %s: %w", name, err)
	}
	return nil
}

// lookup returns the record of key and an open handle on its contents.
func (b *Backend) lookup(bucketName, key string, open bool) (*object, *os.File, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	bk := b.buckets[bucketName]
	if bk == nil {
		return nil, nil, gofakes3.BucketNotFound(bucketName)
	}
	o := bk.objects[key]
	if o == nil {
		return nil, nil, gofakes3.KeyNotFound(key)
	}
	if !open {
		return o, nil, nil
	}
	// Opened under the read lock: a concurrent overwrite removes the old
	// contents file only after taking the write lock, and an open handle keeps
	// the removed file readable.
	f, err := os.Open(filepath.Join(b.shardDir(bucketName, key), o.Data))
	if err != nil {
		return nil, nil, fmt.Errorf("s3fs: open %s/%s: %w", bucketName, key, err)
	}
	return o, f, nil
}

func (o *object) toObject(contents io.ReadCloser, rng *gofakes3.ObjectRange) *gofakes3.Object {
	hash, _ := hex.DecodeString(o.MD5)
	return &gofakes3.Object{
		Name:     o.Key,
		Metadata: maps.Clone(o.Metadata),
		Size:     o.Size,
		Contents: contents,
		Hash:     hash,
		Range:    rng,
	}
}

type readCloser struct {
	io.Reader
	io.Closer
}

// GetObject returns the object, or the requested byte range of it. The
// caller must close Contents.
func (b *Backend) GetObject(ctx context.Context, bucketName, key string, rangeRequest *gofakes3.ObjectRangeRequest) (*gofakes3.Object, error) {
	o, f, err := b.lookup(bucketName, key, true)
	if err != nil {
		return nil, err
	}
	rng, err := rangeRequest.Range(o.Size)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	var contents io.ReadCloser = f
	if rng != nil {
		if _, err := f.Seek(rng.Start, io.SeekStart); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("s3fs: seek %s/%s: %w", bucketName, key, err)
		}
		contents = readCloser{Reader: io.LimitReader(f, rng.Length), Closer: f}
	}
	return o.toObject(contents, rng), nil
}

// HeadObject returns the object's record with empty Contents.
func (b *Backend) HeadObject(ctx context.Context, bucketName, key string) (*gofakes3.Object, error) {
	o, _, err := b.lookup(bucketName, key, false)
	if err != nil {
		return nil, err
	}
	return o.toObject(io.NopCloser(strings.NewReader("")), nil), nil
}

// PutObject stores the object, replacing any previous one atomically. size
// is the expected length of input, or -1 if unknown.
func (b *Backend) PutObject(ctx context.Context, bucketName, key string, meta map[string]string, input io.Reader, size int64) (gofakes3.PutObjectResult, error) {
	var result gofakes3.PutObjectResult
	if ok, _ := b.BucketExists(ctx, bucketName); !ok {
		return result, gofakes3.BucketNotFound(bucketName)
	}
	dir := b.shardDir(bucketName, key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return result, fmt.Errorf("s3fs: put %s/%s: %w", bucketName, key, err)
	}
	h := keyHash(key)

	data, err := os.CreateTemp(dir, h+".*"+dataExt)
	if err != nil {
		return result, fmt.Errorf("s3fs: put %s/%s: %w", bucketName, key, err)
	}
	dataName := filepath.Base(data.Name())
	committed := false
	defer func() {
		if !committed {
			_ = os.Remove(filepath.Join(dir, dataName))
		}
	}()
	sum := md5.New()
	in := &readErr{r: input}
	n, err := io.Copy(io.MultiWriter(data, sum), in)
	if err == nil {
		err = data.Sync() // the record must never name contents that a power cut could lose
	}
	if cerr := data.Close(); err == nil {
		err = cerr
	}
	switch {
	case in.err != nil:
		// gofakes3 maps errors to S3 codes by type switch, so errors from the
		// request body (bad digest, truncated body) must stay unwrapped.
		return result, in.err
	case err != nil:
		return result, fmt.Errorf("s3fs: put %s/%s: write contents: %w", bucketName, key, err)
	case size >= 0 && n != size:
		return result, gofakes3.ErrIncompleteBody
	}

	o := &object{
		Key:      key,
		Size:     n,
		MD5:      hex.EncodeToString(sum.Sum(nil)),
		Modified: time.Now().UTC(),
		Metadata: maps.Clone(meta),
		Data:     dataName,
	}
	raw, err := json.Marshal(o)
	if err != nil {
		return result, fmt.Errorf("s3fs: put %s/%s: %w", bucketName, key, err)
	}

	b.mu.Lock()
	bk := b.buckets[bucketName]
	if bk == nil {
		b.mu.Unlock()
		return result, gofakes3.BucketNotFound(bucketName)
	}
	if gofakes3.HasWriteConditions(ctx) {
		// gofakes3 checked If-None-Match / If-Match before the body was
		// read; check again under the lock, so that of two conditional
		// writes racing for one key exactly one wins.
		etag := ""
		if cur := bk.objects[key]; cur != nil {
			etag = cur.MD5
		}
		if err := gofakes3.CheckWriteConditions(ctx, bk.objects[key] != nil, etag); err != nil {
			b.mu.Unlock()
			return result, err
		}
	}
	if err := writeFileAtomic(dir, recordName(key), raw); err != nil {
		b.mu.Unlock()
		return result, fmt.Errorf("s3fs: put %s/%s: write record: %w", bucketName, key, err)
	}
	committed = true
	old := bk.objects[key]
	bk.objects[key] = o
	b.mu.Unlock()

	if old != nil && old.Data != dataName {
		_ = os.Remove(filepath.Join(dir, old.Data)) // an orphan is removed on the next open
	}
	result.ETag = `"` + o.MD5 + `"`
	return result, nil
}

// DeleteObject deletes the object; deleting a missing object is not an
// error.
func (b *Backend) DeleteObject(ctx context.Context, bucketName, key string) (gofakes3.ObjectDeleteResult, error) {
	var result gofakes3.ObjectDeleteResult
	b.mu.Lock()
	bk := b.buckets[bucketName]
	if bk == nil {
		b.mu.Unlock()
		return result, gofakes3.BucketNotFound(bucketName)
	}
	o := bk.objects[key]
	if o == nil {
		b.mu.Unlock()
		return result, nil
	}
	dir := b.shardDir(bucketName, key)
	if err := os.Remove(filepath.Join(dir, recordName(key))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		b.mu.Unlock()
		return result, fmt.Errorf("s3fs: delete %s/%s: %w", bucketName, key, err)
	}
	delete(bk.objects, key)
	b.mu.Unlock()
	_ = os.Remove(filepath.Join(dir, o.Data)) // an orphan is removed on the next open
	return result, nil
}

// DeleteMulti deletes several objects, reporting each failure separately.
func (b *Backend) DeleteMulti(ctx context.Context, bucketName string, keys ...string) (gofakes3.MultiDeleteResult, error) {
	var result gofakes3.MultiDeleteResult
	if ok, _ := b.BucketExists(ctx, bucketName); !ok {
		return result, gofakes3.BucketNotFound(bucketName)
	}
	for _, key := range keys {
		if _, err := b.DeleteObject(ctx, bucketName, key); err != nil {
			result.Error = append(result.Error, gofakes3.ErrorResultFromError(err))
			continue
		}
		result.Deleted = append(result.Deleted, gofakes3.ObjectID{Key: key})
	}
	return result, nil
}

// CopyObject copies srcBucket/srcKey to dstBucket/dstKey with metadata meta.
func (b *Backend) CopyObject(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string, meta map[string]string) (gofakes3.CopyObjectResult, error) {
	var result gofakes3.CopyObjectResult
	src, err := b.GetObject(ctx, srcBucket, srcKey, nil)
	if err != nil {
		return result, err
	}
	defer func() { _ = src.Contents.Close() }()
	put, err := b.PutObject(ctx, dstBucket, dstKey, meta, src.Contents, src.Size)
	if err != nil {
		return result, err
	}
	result.ETag = put.ETag
	result.LastModified = gofakes3.NewContentTime(time.Now().UTC())
	return result, nil
}

// readErr remembers the first error of the reader it wraps, other than
// io.EOF.
type readErr struct {
	r   io.Reader
	err error
}

func (r *readErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF && r.err == nil {
		r.err = err
	}
	return n, err
}

// writeFileAtomic replaces dir/name with data through a synced temporary
// file and a rename.
func writeFileAtomic(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, name+".*"+tmpExt)
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}
