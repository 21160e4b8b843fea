package s3client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// ErrNotFound reports that a bucket or object does not exist.
var ErrNotFound = errors.New("object not found")

// ErrChanged reports that an object no longer matches the ETag a read was
// pinned to: the document was overwritten after it was indexed.
var ErrChanged = errors.New("object changed since it was indexed")

// Errors of CheckBucket, by what is wrong.
var (
	// ErrBucketMissing: the bucket does not exist.
	ErrBucketMissing = errors.New("bucket does not exist")
	// ErrAccessDenied: the credentials are valid but may not use it.
	ErrAccessDenied = errors.New("access denied")
	// ErrBadCredentials: the service does not accept the credentials.
	ErrBadCredentials = errors.New("credentials not accepted")
)

// BucketError says what to do about a bucket that cannot be used: the
// words the worker and the CLI both refuse it with.
func BucketError(bucket string, err error) error {
	switch {
	case errors.Is(err, ErrBucketMissing):
		return fmt.Errorf("bucket %s does not exist: fix MEMAGENT_BUCKET (--bucket), create the bucket, or let memagent create it with MEMAGENT_CREATE_BUCKET=true (--create-bucket)", bucket)
	case errors.Is(err, ErrBadCredentials):
		return fmt.Errorf("bucket %s: the S3 service does not accept these credentials (%v): check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or the role the worker runs as", bucket, err)
	case errors.Is(err, ErrAccessDenied):
		return fmt.Errorf("bucket %s: access denied: the credentials are valid but may not use this bucket; grant s3:ListBucket, s3:GetObject and s3:PutObject on it (docs/DEPLOY.md)", bucket)
	}
	return fmt.Errorf("bucket %s: %w", bucket, err)
}

// Location names one object.
type Location struct {
	Bucket string
	Key    string
}

// String renders the location as an s3:// URI.
func (l Location) String() string { return "s3://" + l.Bucket + "/" + l.Key }

// ParseURI parses "s3://bucket/key". A key with an empty, "." or ".."
// segment (a prefix's trailing '/' aside) or a control character is
// refused: S3 takes such keys literally, but a proxy that normalises paths
// in front of it would read or write another key than the one checked.
func ParseURI(uri string) (Location, error) {
	rest, ok := strings.CutPrefix(uri, "s3://")
	if !ok {
		return Location{}, fmt.Errorf("%q is not an s3:// URI (want s3://bucket/key)", uri)
	}
	bucket, key, ok := strings.Cut(rest, "/")
	if !ok || bucket == "" || key == "" {
		return Location{}, fmt.Errorf("%q names no object (want s3://bucket/key)", uri)
	}
	if err := checkKey(key); err != nil {
		return Location{}, fmt.Errorf("%q: %w", uri, err)
	}
	return Location{Bucket: bucket, Key: key}, nil
}

func checkKey(key string) error {
	for i, seg := range strings.Split(key, "/") {
		switch {
		case seg == "" && i == strings.Count(key, "/") && i > 0:
			// A prefix's trailing '/'.
		case seg == "" || seg == "." || seg == "..":
			return fmt.Errorf("key has an empty, \".\" or \"..\" segment: name the object by its plain key")
		}
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("key has a control character (%U)", r)
		}
	}
	return nil
}

// Config says how to reach the service: the SDK's default chain
// (environment, shared config, instance roles) with the fields set here.
type Config struct {
	// Endpoint is an S3-compatible service's base URL; empty means AWS.
	Endpoint string
	// Region defaults to the SDK's chain, or us-east-1.
	Region string
	// AccessKeyID and SecretAccessKey, when both set, are static
	// credentials used instead of the default chain.
	AccessKeyID, SecretAccessKey string
	// VirtualHostStyle addresses buckets as bucket.host instead of
	// host/bucket.
	VirtualHostStyle bool
	// SSE ("", "AES256", "aws:kms") and KMSKeyID encrypt what is put.
	SSE, KMSKeyID string
	// RequestTimeout bounds one HTTP request; default 5 minutes.
	RequestTimeout time.Duration
}

// Store reads and writes objects.
type Store struct {
	client   *s3.Client
	sse      types.ServerSideEncryption
	kmsKeyID string
}

// New builds a Store. It does not contact the service.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("s3: endpoint %q is not an http(s) URL: set AWS_ENDPOINT_URL_S3 to e.g. http://127.0.0.1:9000", cfg.Endpoint)
		}
	}
	timeout := cfg.RequestTimeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	opts := []func(*config.LoadOptions) error{
		// The buildable client keeps AWS_CA_BUNDLE working.
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTimeout(timeout)),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 1 })
		}),
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.AccessKeyID != "" && cfg.SecretAccessKey != "" {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, "")))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("s3: load config: %w", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = !cfg.VirtualHostStyle
		// Many S3-compatible stores reject the newer default checksum
		// trailers; ask for checksums only where the API requires them.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	return &Store{client: client, sse: types.ServerSideEncryption(cfg.SSE), kmsKeyID: cfg.KMSKeyID}, nil
}

// ObjectInfo is what a HEAD returns.
type ObjectInfo struct {
	Size int64
	ETag string
}

// Head returns an object's size and ETag, or ErrNotFound.
func (s *Store) Head(ctx context.Context, loc Location) (ObjectInfo, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &loc.Bucket, Key: &loc.Key})
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("s3: head %s: %w", loc, Classify(err))
	}
	return ObjectInfo{Size: aws.ToInt64(out.ContentLength), ETag: aws.ToString(out.ETag)}, nil
}

// ReadAll returns a whole small object (reports, pages, rows).
func (s *Store) ReadAll(ctx context.Context, loc Location) ([]byte, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &loc.Bucket, Key: &loc.Key})
	if err != nil {
		return nil, fmt.Errorf("s3: get %s: %w", loc, Classify(err))
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("s3: read %s: %w", loc, err)
	}
	return data, nil
}

// PutReader writes an object of a known size from a seekable reader (a
// file), without loading it into memory, with the store's server-side
// encryption.
func (s *Store) PutReader(ctx context.Context, loc Location, body io.ReadSeeker, size int64, contentType string) error {
	in := &s3.PutObjectInput{Bucket: &loc.Bucket, Key: &loc.Key, Body: body, ContentLength: aws.Int64(size)}
	if contentType != "" {
		in.ContentType = aws.String(contentType)
	}
	if s.sse != "" {
		in.ServerSideEncryption = s.sse
	}
	if s.kmsKeyID != "" {
		in.SSEKMSKeyId = aws.String(s.kmsKeyID)
	}
	if _, err := s.client.PutObject(ctx, in); err != nil {
		return fmt.Errorf("s3: put %s: %w", loc, Classify(err))
	}
	return nil
}

// CheckBucket reports whether the bucket can be used, telling a missing
// bucket (ErrBucketMissing) from credentials the service refuses
// (ErrBadCredentials) and from credentials that may not use it
// (ErrAccessDenied): HEAD answers all three with a bare status, so a 403
// is asked again with a listing, whose answer names its cause.
func (s *Store) CheckBucket(ctx context.Context, bucket string) error {
	return CheckBucket(ctx, s.client, bucket)
}

// CheckBucket is Store.CheckBucket with client, for the worker's store.
func CheckBucket(ctx context.Context, client *s3.Client, bucket string) error {
	_, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &bucket})
	if err == nil {
		return nil
	}
	var re *awshttp.ResponseError
	var nf *types.NotFound
	var nb *types.NoSuchBucket
	switch {
	case errors.As(err, &nf) || errors.As(err, &nb) || (errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound):
		return fmt.Errorf("s3: bucket %s: %w", bucket, ErrBucketMissing)
	case errors.As(err, &re) && (re.HTTPStatusCode() == http.StatusForbidden || re.HTTPStatusCode() == http.StatusUnauthorized):
		_, lerr := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &bucket, MaxKeys: aws.Int32(1)})
		var ae smithy.APIError
		if lerr != nil && errors.As(lerr, &ae) {
			switch ae.ErrorCode() {
			case "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken", "InvalidSecurity":
				return fmt.Errorf("s3: bucket %s: %w (%s)", bucket, ErrBadCredentials, ae.ErrorCode())
			case "NoSuchBucket":
				return fmt.Errorf("s3: bucket %s: %w", bucket, ErrBucketMissing)
			}
		}
		return fmt.Errorf("s3: bucket %s: %w", bucket, ErrAccessDenied)
	}
	return fmt.Errorf("s3: bucket %s: %w", bucket, err)
}

// EnsureBucket checks the bucket and, when it is missing and create is
// true, creates it. Only the dev stack, or an operator who asks, creates
// buckets: a typo in a bucket name must not send results somewhere new.
func (s *Store) EnsureBucket(ctx context.Context, bucket string, create bool) error {
	return EnsureBucket(ctx, s.client, bucket, create)
}

// EnsureBucket is Store.EnsureBucket with client, for the worker's store.
func EnsureBucket(ctx context.Context, client *s3.Client, bucket string, create bool) error {
	err := CheckBucket(ctx, client, bucket)
	if err == nil || !create || !errors.Is(err, ErrBucketMissing) {
		return err
	}
	_, err = client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket})
	var owned *types.BucketAlreadyOwnedByYou
	var exists *types.BucketAlreadyExists
	if err != nil && !errors.As(err, &owned) && !errors.As(err, &exists) {
		return fmt.Errorf("s3: create bucket %s: %w", bucket, err)
	}
	return nil
}

// List returns the keys under a prefix, at most limit of them (0 = all).
func (s *Store) List(ctx context.Context, bucket, prefix string, limit int) ([]string, error) {
	return ListKeys(ctx, s.client, bucket, prefix, limit)
}

// ListKeys returns the keys under a prefix of bucket, at most limit of
// them (0 = all), through client; errors are Classify'd.
func ListKeys(ctx context.Context, client *s3.Client, bucket, prefix string, limit int) ([]string, error) {
	var keys []string
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("s3: list s3://%s/%s: %w", bucket, prefix, Classify(err))
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
			if limit > 0 && len(keys) >= limit {
				return keys, nil
			}
		}
	}
	return keys, nil
}

// Classify maps the SDK's typed and HTTP-status "not found" errors onto
// ErrNotFound, keeping the original error in the chain; other errors are
// returned as they are.
func Classify(err error) error {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	var nb *types.NoSuchBucket
	var re *awshttp.ResponseError
	if errors.As(err, &nsk) || errors.As(err, &nf) || errors.As(err, &nb) || (errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound) {
		return &Classified{Kind: ErrNotFound, Err: err}
	}
	if errors.As(err, &re) && re.HTTPStatusCode() == http.StatusPreconditionFailed {
		return &Classified{Kind: ErrChanged, Err: err}
	}
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() == "PreconditionFailed" {
		return &Classified{Kind: ErrChanged, Err: err}
	}
	return err
}

// Classified keeps the SDK's message while matching a sentinel with
// errors.Is.
type Classified struct {
	Kind error
	Err  error
}

func (c *Classified) Error() string   { return c.Err.Error() }
func (c *Classified) Unwrap() []error { return []error{c.Kind, c.Err} }

// MaxRangeBytes bounds one ranged read, which is held in memory whole.
const MaxRangeBytes = 64 << 20

// ReadRange returns bytes [start, end) of an object with one ranged GET,
// pinned to etag when it is not empty (a replaced object then fails with
// ErrChanged).
func (s *Store) ReadRange(ctx context.Context, loc Location, start, end int64, etag string) ([]byte, error) {
	return ReadRange(ctx, s.client, loc, start, end, etag)
}

// ReadRange is Store.ReadRange through client, for a store of its own
// (s3store's).
func ReadRange(ctx context.Context, client *s3.Client, loc Location, start, end int64, etag string) ([]byte, error) {
	if start < 0 || end <= start || end-start > MaxRangeBytes {
		return nil, fmt.Errorf("s3: get %s: invalid range [%d,%d) (at most %d bytes)", loc, start, end, MaxRangeBytes)
	}
	in := &s3.GetObjectInput{Bucket: &loc.Bucket, Key: &loc.Key, Range: aws.String(fmt.Sprintf("bytes=%d-%d", start, end-1))}
	if etag != "" {
		in.IfMatch = aws.String(etag)
	}
	out, err := client.GetObject(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("s3: get %s range [%d,%d): %w", loc, start, end, Classify(err))
	}
	defer out.Body.Close()
	buf := make([]byte, end-start)
	n, err := io.ReadFull(out.Body, buf)
	if err != nil {
		return nil, fmt.Errorf("s3: read %s range [%d,%d): got %d bytes: %w", loc, start, end, n, err)
	}
	return buf, nil
}

// SafeName is name as an object key's last part: its letters, digits,
// '.', '-' and '_' (ASCII), each other rune '_'; "document" when nothing
// is left. The starter and devstack name uploads with it.
func SafeName(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r < 0x80 && (r == '.' || r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "document"
	}
	return b.String()
}
