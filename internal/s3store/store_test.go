package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/rclone/gofakes3"
	"github.com/rclone/gofakes3/s3mem"

	"github.com/memagent/memagent/internal/secret"
)

// newTestStore serves a real S3 protocol implementation (SigV4 checked) over
// loopback HTTP, so the SDK client is exercised end to end.
func newTestStore(t *testing.T) *Store {
	t.Helper()
	faker := gofakes3.New(s3mem.New(), gofakes3.WithV4Auth(map[string]string{"test-key": "test-secret"}))
	srv := httptest.NewServer(faker.Server())
	t.Cleanup(srv.Close)
	s, err := New(context.Background(), Config{
		Endpoint: secret.Endpoint(srv.URL), Region: "us-east-1",
		AccessKeyID: "test-key", SecretAccessKey: "test-secret",
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := s.EnsureBucket(context.Background(), "bkt", true); err != nil {
		t.Fatalf("EnsureBucket: %v", err)
	}
	if err := s.EnsureBucket(context.Background(), "bkt", true); err != nil {
		t.Fatalf("EnsureBucket twice: %v", err)
	}
	return s
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	loc := Location{Bucket: "bkt", Key: "docs/a.txt"}
	data := []byte("0123456789abcdefghij")
	if err := s.Put(ctx, loc, data, "text/plain"); err != nil {
		t.Fatalf("Put: %v", err)
	}
	info, err := s.Head(ctx, loc)
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	if info.Size != int64(len(data)) || info.ETag == "" {
		t.Errorf("Head = %+v, want size %d and an etag", info, len(data))
	}
	got, err := s.ReadRange(ctx, loc, 10, 15, info.ETag)
	if err != nil {
		t.Fatalf("ReadRange: %v", err)
	}
	if string(got) != "abcde" {
		t.Errorf("ReadRange = %q, want %q", got, "abcde")
	}
	all, err := s.ReadAll(ctx, loc)
	if err != nil || !bytes.Equal(all, data) {
		t.Errorf("ReadAll = %q, %v; want %q", all, err, data)
	}
	keys, err := s.List(ctx, "bkt", "docs/", 0)
	if err != nil || len(keys) != 1 || keys[0] != "docs/a.txt" {
		t.Errorf("List = %v, %v; want [docs/a.txt]", keys, err)
	}
	for _, k := range []string{"reports/n/2026-01-01T020000Z/report.json", "reports/n/2026-01-01T020000Z/work/x/items/000000.jsonl", "reports/n/2026-01-02T020000Z/report.json", "reports/n/top.json"} {
		if err := s.Put(ctx, Location{Bucket: "bkt", Key: k}, []byte("{}"), "application/json"); err != nil {
			t.Fatal(err)
		}
	}
	folders, err := s.ListFolders(ctx, "bkt", "reports/n/")
	if err != nil || strings.Join(folders, " ") != "2026-01-01T020000Z/ 2026-01-02T020000Z/" {
		t.Errorf("ListFolders = %q, %v; want the two dated folders", folders, err)
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	missing := Location{Bucket: "bkt", Key: "nope"}
	if _, err := s.Head(ctx, missing); !errors.Is(err, ErrNotFound) {
		t.Errorf("Head missing: got %v, want ErrNotFound", err)
	}
	if _, err := s.ReadRange(ctx, missing, 0, 4, ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("ReadRange missing: got %v, want ErrNotFound", err)
	}
	loc := Location{Bucket: "bkt", Key: "doc"}
	if err := s.Put(ctx, loc, []byte("first version"), ""); err != nil {
		t.Fatal(err)
	}
	info, err := s.Head(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, loc, []byte("second version!"), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadRange(ctx, loc, 0, 4, info.ETag); !errors.Is(err, ErrChanged) {
		t.Errorf("ReadRange with stale etag: got %v, want ErrChanged", err)
	}
	if _, err := s.ReadRange(ctx, loc, 4, 4, ""); err == nil {
		t.Error("ReadRange empty range: got nil error")
	}
}

func TestParseURI(t *testing.T) {
	tests := []struct {
		in      string
		want    Location
		wantErr bool
	}{
		{in: "s3://bucket/key/with/slashes.txt", want: Location{Bucket: "bucket", Key: "key/with/slashes.txt"}},
		{in: "s3://bucket/", wantErr: true},
		{in: "s3://bucket", wantErr: true},
		{in: "/local/path", wantErr: true},
		{in: "https://bucket/key", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseURI(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseURI(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ParseURI(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			if !tt.wantErr && got.String() != tt.in {
				t.Errorf("String() = %q, want %q", got.String(), tt.in)
			}
		})
	}
}

func TestNewRejectsBadEndpoint(t *testing.T) {
	if _, err := New(context.Background(), Config{Endpoint: "127.0.0.1:9000"}); err == nil {
		t.Error("New with a scheme-less endpoint: got nil error")
	}
}

func TestServerSideEncryption(t *testing.T) {
	tests := []struct {
		name, sse, kmsKey   string
		wantSSE, wantKMSKey string
		wantErr             string
	}{
		{name: "bucket default"},
		{name: "S3-managed keys", sse: "AES256", wantSSE: "AES256"},
		{name: "KMS, AWS-managed key", sse: "aws:kms", wantSSE: "aws:kms"},
		{name: "KMS key", sse: "aws:kms", kmsKey: "arn:aws:kms:us-east-1:111122223333:key/k1", wantSSE: "aws:kms", wantKMSKey: "arn:aws:kms:us-east-1:111122223333:key/k1"},
		{name: "KMS key without aws:kms", sse: "AES256", kmsKey: "k1", wantErr: "needs SSE"},
		{name: "unknown mode", sse: "rot13", wantErr: "use"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			faker := gofakes3.New(s3mem.New(), gofakes3.WithV4Auth(map[string]string{"test-key": "test-secret"}))
			var mu sync.Mutex
			var puts []http.Header
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPut && strings.Count(strings.Trim(r.URL.Path, "/"), "/") > 0 {
					mu.Lock()
					puts = append(puts, r.Header.Clone())
					mu.Unlock()
					// gofakes3 refuses SSE-KMS (501): object writes are
					// answered here, the rest by the fake.
					w.Header().Set("ETag", `"0"`)
					return
				}
				faker.Server().ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)
			s, err := New(context.Background(), Config{
				Endpoint: secret.Endpoint(srv.URL), Region: "us-east-1", AccessKeyID: "test-key", SecretAccessKey: "test-secret",
				SSE: tt.sse, KMSKeyID: tt.kmsKey,
			})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("New() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := s.EnsureBucket(ctx, "bkt", true); err != nil {
				t.Fatal(err)
			}
			if err := s.Put(ctx, Location{Bucket: "bkt", Key: "results/r.json"}, []byte("{}"), "application/json"); err != nil {
				t.Fatalf("Put: %v", err)
			}
			if err := s.PutReader(ctx, Location{Bucket: "bkt", Key: "documents/d.txt"}, strings.NewReader("text"), 4, "text/plain"); err != nil {
				t.Fatalf("PutReader: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(puts) != 2 {
				t.Fatalf("saw %d object PUTs, want 2", len(puts))
			}
			for i, h := range puts {
				if got := h.Get("X-Amz-Server-Side-Encryption"); got != tt.wantSSE {
					t.Errorf("PUT %d: x-amz-server-side-encryption = %q, want %q", i, got, tt.wantSSE)
				}
				if got := h.Get("X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id"); got != tt.wantKMSKey {
					t.Errorf("PUT %d: x-amz-server-side-encryption-aws-kms-key-id = %q, want %q", i, got, tt.wantKMSKey)
				}
			}
		})
	}
}

func TestPutIfAbsent(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	loc := Location{Bucket: "bkt", Key: "runs/a/result.json"}
	for i, want := range []bool{true, false} {
		created, err := s.PutIfAbsent(ctx, loc, []byte(fmt.Sprintf(`{"n":%d}`, i)), "application/json")
		if err != nil || created != want {
			t.Fatalf("write %d: created %t, err %v; want created %t", i, created, err, want)
		}
	}
	got, err := s.ReadAll(ctx, loc)
	if err != nil || string(got) != `{"n":0}` {
		t.Fatalf("object %q (err %v), want the first write kept", got, err)
	}
}

func TestCheckBucketTellsMissingFromRefused(t *testing.T) {
	faker := gofakes3.New(s3mem.New(), gofakes3.WithV4Auth(map[string]string{"test-key": "test-secret"}))
	srv := httptest.NewServer(faker.Server())
	t.Cleanup(srv.Close)
	ctx := context.Background()
	store := func(key, secretKey string) *Store {
		s, err := New(ctx, Config{Endpoint: secret.Endpoint(srv.URL), Region: "us-east-1", AccessKeyID: key, SecretAccessKey: secret.Value(secretKey)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	good := store("test-key", "test-secret")
	if err := good.EnsureBucket(ctx, "typo", false); !errors.Is(err, ErrBucketMissing) {
		t.Fatalf("missing bucket without create: %v, want ErrBucketMissing", err)
	}
	if err := good.CheckBucket(ctx, "typo"); !errors.Is(err, ErrBucketMissing) {
		t.Fatalf("EnsureBucket without create made the bucket: %v", err)
	}
	if err := good.EnsureBucket(ctx, "made", true); err != nil {
		t.Fatalf("missing bucket with create: %v", err)
	}
	for name, s := range map[string]*Store{"wrong secret": store("test-key", "nope"), "unknown key": store("who", "nope")} {
		if err := s.CheckBucket(ctx, "made"); !errors.Is(err, ErrBadCredentials) {
			t.Errorf("%s: %v, want ErrBadCredentials", name, err)
		}
		if err := s.EnsureBucket(ctx, "other", true); !errors.Is(err, ErrBadCredentials) {
			t.Errorf("%s: EnsureBucket with create: %v, want ErrBadCredentials (never a create attempt)", name, err)
		}
	}
}
