package s3fs

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rclone/gofakes3"
)

const testBucket = "docs"

func newBackend(t *testing.T, root string) *Backend {
	t.Helper()
	b, err := New(root)
	if err != nil {
		t.Fatalf("New(%s): %v", root, err)
	}
	return b
}

func put(t *testing.T, b *Backend, key, body string) {
	t.Helper()
	meta := map[string]string{"Content-Type": "text/plain", "Last-Modified": "Mon, 02 Jan 2006 15:04:05 GMT"}
	if _, err := b.PutObject(context.Background(), testBucket, key, meta, strings.NewReader(body), int64(len(body))); err != nil {
		t.Fatalf("PutObject %s: %v", key, err)
	}
}

func get(t *testing.T, b *Backend, key string, rng *gofakes3.ObjectRangeRequest) (string, *gofakes3.Object) {
	t.Helper()
	obj, err := b.GetObject(context.Background(), testBucket, key, rng)
	if err != nil {
		t.Fatalf("GetObject %s: %v", key, err)
	}
	defer obj.Contents.Close()
	got, err := io.ReadAll(obj.Contents)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return string(got), obj
}

func setup(t *testing.T) (*Backend, string) {
	t.Helper()
	root := t.TempDir()
	b := newBackend(t, root)
	if err := b.CreateBucket(context.Background(), testBucket); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}
	return b, root
}

func TestGetRanges(t *testing.T) {
	b, _ := setup(t)
	const body = "0123456789abcdefghij"
	put(t, b, "a.txt", body)

	tests := []struct {
		name string
		rng  *gofakes3.ObjectRangeRequest
		want string
	}{
		{"whole", nil, body},
		{"10-19", &gofakes3.ObjectRangeRequest{Start: 10, End: 19}, "abcdefghij"},
		{"open ended", &gofakes3.ObjectRangeRequest{Start: 15, End: gofakes3.RangeNoEnd}, "fghij"},
		{"suffix", &gofakes3.ObjectRangeRequest{FromEnd: true, End: 3}, "hij"},
		{"past the end", &gofakes3.ObjectRangeRequest{Start: 18, End: 100}, "ij"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, obj := get(t, b, "a.txt", tt.rng)
			if got != tt.want {
				t.Errorf("contents = %q, want %q", got, tt.want)
			}
			if obj.Size != int64(len(body)) {
				t.Errorf("Size = %d, want %d", obj.Size, len(body))
			}
			if obj.Metadata["Content-Type"] != "text/plain" {
				t.Errorf("Content-Type = %q, want text/plain", obj.Metadata["Content-Type"])
			}
		})
	}

	_, err := b.GetObject(context.Background(), testBucket, "a.txt", &gofakes3.ObjectRangeRequest{Start: 20, End: 30})
	if !gofakes3.HasErrorCode(err, gofakes3.ErrInvalidRange) {
		t.Errorf("range starting at the end: err = %v, want InvalidRange", err)
	}
}

func TestErrors(t *testing.T) {
	b, _ := setup(t)
	ctx := context.Background()
	put(t, b, "a.txt", "x")

	tests := []struct {
		name string
		err  error
		want gofakes3.ErrorCode
	}{
		{"get missing key", func() error { _, err := b.GetObject(ctx, testBucket, "nope", nil); return err }(), gofakes3.ErrNoSuchKey},
		{"head missing key", func() error { _, err := b.HeadObject(ctx, testBucket, "nope"); return err }(), gofakes3.ErrNoSuchKey},
		{"get missing bucket", func() error { _, err := b.GetObject(ctx, "other", "a.txt", nil); return err }(), gofakes3.ErrNoSuchBucket},
		{"put missing bucket", func() error {
			_, err := b.PutObject(ctx, "other", "a.txt", nil, strings.NewReader("x"), 1)
			return err
		}(), gofakes3.ErrNoSuchBucket},
		{"create existing bucket", b.CreateBucket(ctx, testBucket), gofakes3.ErrBucketAlreadyExists},
		{"create bucket with bad name", b.CreateBucket(ctx, "../up"), gofakes3.ErrInvalidBucketName},
		{"delete non-empty bucket", b.DeleteBucket(ctx, testBucket), gofakes3.ErrBucketNotEmpty},
		{"short body", func() error {
			_, err := b.PutObject(ctx, testBucket, "short", nil, strings.NewReader("abc"), 10)
			return err
		}(), gofakes3.ErrIncompleteBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !gofakes3.HasErrorCode(tt.err, tt.want) {
				t.Errorf("err = %v, want code %s", tt.err, tt.want)
			}
		})
	}
	if _, err := b.HeadObject(ctx, testBucket, "short"); !gofakes3.HasErrorCode(err, gofakes3.ErrNoSuchKey) {
		t.Errorf("object after a short body: err = %v, want NoSuchKey", err)
	}
}

func TestListBucket(t *testing.T) {
	b, _ := setup(t)
	for _, k := range []string{"a/1", "a/2", "a/b/3", "c/4", "d"} {
		put(t, b, k, "v-"+k)
	}
	str := func(s string) *string { return &s }

	tests := []struct {
		name         string
		prefix       gofakes3.Prefix
		page         gofakes3.ListBucketPage
		wantKeys     string
		wantPrefixes string
		wantTrunc    bool
	}{
		{"all", gofakes3.Prefix{}, gofakes3.ListBucketPage{}, "a/1,a/2,a/b/3,c/4,d", "", false},
		{"prefix", gofakes3.NewPrefix(str("a/"), nil), gofakes3.ListBucketPage{}, "a/1,a/2,a/b/3", "", false},
		{"folder", gofakes3.NewFolderPrefix("a/"), gofakes3.ListBucketPage{}, "a/1,a/2", "a/b/", false},
		{"top level", gofakes3.NewPrefix(nil, str("/")), gofakes3.ListBucketPage{}, "d", "a/,c/", false},
		{"first page", gofakes3.Prefix{}, gofakes3.ListBucketPage{MaxKeys: 2}, "a/1,a/2", "", true},
		{"after marker", gofakes3.Prefix{}, gofakes3.ListBucketPage{Marker: "a/2", HasMarker: true, MaxKeys: 2}, "a/b/3,c/4", "", true},
		{"last page", gofakes3.Prefix{}, gofakes3.ListBucketPage{Marker: "c/4", HasMarker: true, MaxKeys: 2}, "d", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list, err := b.ListBucket(context.Background(), testBucket, &tt.prefix, tt.page)
			if err != nil {
				t.Fatalf("ListBucket: %v", err)
			}
			var keys, prefixes []string
			for _, c := range list.Contents {
				keys = append(keys, c.Key)
				if c.Size != int64(len("v-"+c.Key)) || !strings.HasPrefix(c.ETag, `"`) {
					t.Errorf("%s: size %d etag %s", c.Key, c.Size, c.ETag)
				}
			}
			for _, p := range list.CommonPrefixes {
				prefixes = append(prefixes, p.Prefix)
			}
			if got := strings.Join(keys, ","); got != tt.wantKeys {
				t.Errorf("keys = %s, want %s", got, tt.wantKeys)
			}
			if got := strings.Join(prefixes, ","); got != tt.wantPrefixes {
				t.Errorf("prefixes = %s, want %s", got, tt.wantPrefixes)
			}
			if list.IsTruncated != tt.wantTrunc {
				t.Errorf("IsTruncated = %v, want %v", list.IsTruncated, tt.wantTrunc)
			}
		})
	}
}

func TestOverwriteDeleteCopy(t *testing.T) {
	b, root := setup(t)
	ctx := context.Background()
	put(t, b, "k", "first")
	put(t, b, "k", "second version")
	if got, _ := get(t, b, "k", nil); got != "second version" {
		t.Errorf("after overwrite: %q, want %q", got, "second version")
	}
	if n := countFiles(t, root, dataExt); n != 1 {
		t.Errorf("data files after overwrite = %d, want 1", n)
	}

	if _, err := b.CopyObject(ctx, testBucket, "k", testBucket, "copy", map[string]string{"Content-Type": "x/y"}); err != nil {
		t.Fatalf("CopyObject: %v", err)
	}
	got, obj := get(t, b, "copy", nil)
	if got != "second version" || obj.Metadata["Content-Type"] != "x/y" {
		t.Errorf("copy = %q %v, want %q with Content-Type x/y", got, obj.Metadata, "second version")
	}

	res, err := b.DeleteMulti(ctx, testBucket, "k", "copy", "never-existed")
	if err != nil || len(res.Deleted) != 3 || len(res.Error) != 0 {
		t.Fatalf("DeleteMulti = %+v, %v; want 3 deleted", res, err)
	}
	if _, err := b.HeadObject(ctx, testBucket, "k"); !gofakes3.HasErrorCode(err, gofakes3.ErrNoSuchKey) {
		t.Errorf("after delete: err = %v, want NoSuchKey", err)
	}
	if n := countFiles(t, root, dataExt) + countFiles(t, root, recordExt) - 1; n != 0 { // minus bucket.json
		t.Errorf("object files left after delete = %d, want 0", n)
	}
	if err := b.DeleteBucket(ctx, testBucket); err != nil {
		t.Errorf("DeleteBucket: %v", err)
	}
	if ok, _ := b.BucketExists(ctx, testBucket); ok {
		t.Errorf("bucket exists after DeleteBucket")
	}
}

func TestPersistsAcrossReopen(t *testing.T) {
	b, root := setup(t)
	keys := []string{"plain.txt", "../../escape", "dir/with spaces/ünïcode?&=", strings.Repeat("long/", 150)}
	for _, k := range keys {
		put(t, b, k, "body of "+k)
	}
	// Leftovers of an interrupted write: an unreferenced data file and a
	// temporary record.
	shard := b.shardDir(testBucket, keys[0])
	for _, name := range []string{keyHash(keys[0]) + ".123" + dataExt, recordName(keys[0]) + ".456" + tmpExt} {
		if err := os.WriteFile(filepath.Join(shard, name), []byte("junk"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	reopened := newBackend(t, root)
	for _, k := range keys {
		got, obj := get(t, reopened, k, nil)
		if want := "body of " + k; got != want {
			t.Errorf("%q after reopen = %q, want %q", k, got, want)
		}
		if obj.Metadata["Content-Type"] != "text/plain" {
			t.Errorf("%q metadata after reopen = %v", k, obj.Metadata)
		}
	}
	buckets, err := reopened.ListBuckets(context.Background())
	if err != nil || len(buckets) != 1 || buckets[0].Name != testBucket || buckets[0].CreationDate.IsZero() {
		t.Errorf("ListBuckets after reopen = %+v, %v", buckets, err)
	}
	if n := countFiles(t, root, dataExt); n != len(keys) {
		t.Errorf("data files after reopen = %d, want %d (leftovers removed)", n, len(keys))
	}
	if n := countFiles(t, root, tmpExt); n != 0 {
		t.Errorf("temporary files after reopen = %d, want 0", n)
	}
	// Every file stays under the bucket's objects directory.
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == bucketRecord {
			return err
		}
		if !strings.HasPrefix(path, filepath.Join(root, testBucket, objectsDir)+string(filepath.Separator)) {
			t.Errorf("file outside the objects directory: %s", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func countFiles(t *testing.T, root, ext string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(d.Name(), ext) {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestConcurrentOverwrites races writers and readers on one key: every read
// must see one complete version, never a mix or a missing file.
func TestConcurrentOverwrites(t *testing.T) {
	b, root := setup(t)
	versions := []string{strings.Repeat("a", 4096), strings.Repeat("b", 8192), strings.Repeat("c", 100)}
	put(t, b, "hot", versions[0])
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 20 {
				v := versions[(w+i)%len(versions)]
				if _, err := b.PutObject(context.Background(), testBucket, "hot", nil, strings.NewReader(v), int64(len(v))); err != nil {
					t.Errorf("PutObject: %v", err)
					return
				}
			}
		})
		wg.Go(func() {
			for range 20 {
				obj, err := b.GetObject(context.Background(), testBucket, "hot", nil)
				if err != nil {
					t.Errorf("GetObject: %v", err)
					return
				}
				got, err := io.ReadAll(obj.Contents)
				_ = obj.Contents.Close()
				if err != nil || !slices.Contains(versions, string(got)) {
					t.Errorf("read %d bytes (%v), want one whole version", len(got), err)
				}
			}
		})
	}
	wg.Wait()
	if n := countFiles(t, root, dataExt); n != 1 {
		t.Errorf("data files after concurrent overwrites = %d, want 1", n)
	}
}
