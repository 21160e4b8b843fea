package s3client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestParseURI: an s3:// URI names a bucket and a plain key; anything
// else is refused with what to write.
func TestParseURI(t *testing.T) {
	for _, tt := range []struct {
		uri, want string // want "" = refused
	}{
		{"s3://b/docs/a.txt", "s3://b/docs/a.txt"},
		{"s3://b/reports/", "s3://b/reports/"},
		{"s3://b", ""},
		{"s3://b/a//b", ""},
		{"s3://b/a/../b", ""},
		{"http://b/a", ""},
	} {
		loc, err := ParseURI(tt.uri)
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("ParseURI(%q) = %v, want an error", tt.uri, loc)
		case tt.want != "" && (err != nil || loc.String() != tt.want):
			t.Errorf("ParseURI(%q) = %v, %v; want %s", tt.uri, loc, err, tt.want)
		}
	}
}

// TestMissingBucketSaysWhatToDo: a bucket the service does not have is
// ErrBucketMissing, and BucketError says how to fix it, in the words the
// worker uses; a missing object is ErrNotFound.
func TestMissingBucketSaysWhatToDo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusNotFound)
		if r.Method != http.MethodHead {
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>none</Message></Error>`))
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	s, err := New(ctx, Config{Endpoint: srv.URL, Region: "us-east-1", AccessKeyID: "k", SecretAccessKey: "s"})
	if err != nil {
		t.Fatal(err)
	}
	err = s.EnsureBucket(ctx, "nope", false)
	if !errors.Is(err, ErrBucketMissing) {
		t.Fatalf("EnsureBucket = %v, want ErrBucketMissing", err)
	}
	want := "bucket nope does not exist: fix MEMAGENT_BUCKET (--bucket), create the bucket, or let memagent create it with MEMAGENT_CREATE_BUCKET=true (--create-bucket)"
	if got := BucketError("nope", err).Error(); got != want {
		t.Errorf("BucketError = %q, want %q", got, want)
	}
	if _, err := s.ReadAll(ctx, Location{Bucket: "b", Key: "k"}); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "s3: get s3://b/k") {
		t.Errorf("ReadAll of a missing object = %v, want ErrNotFound naming it", err)
	}
	if _, err := s.Head(ctx, Location{Bucket: "b", Key: "k"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Head of a missing object = %v, want ErrNotFound", err)
	}
}
