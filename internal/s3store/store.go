package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/memagent/memagent/internal/s3client"
	"github.com/memagent/memagent/internal/secret"
)

// ErrNotFound reports that a bucket or object does not exist: the
// client's sentinel (s3client), so that either side's errors match.
var ErrNotFound = s3client.ErrNotFound

// ErrChanged reports that an object no longer matches the ETag a read was
// pinned to: the document was overwritten after it was indexed (the
// client's sentinel, s3client, as ErrNotFound is).
var ErrChanged = s3client.ErrChanged

// Values of Config.SSE: S3-managed keys, or keys in AWS KMS.
const (
	SSES3  = string(types.ServerSideEncryptionAes256)
	SSEKMS = string(types.ServerSideEncryptionAwsKms)
)

// AWSEndpoint, written as an endpoint setting (AWS_ENDPOINT_URL_S3,
// --s3-endpoint), selects AWS itself, the SDK's own endpoint resolution,
// instead of the dev stack: it stands for the empty Config.Endpoint.
const AWSEndpoint = "aws"

// Config says how to reach the store. The zero value uses the SDK's default
// resolution (environment, shared config, instance roles) against AWS.
type Config struct {
	// Endpoint is the base URL of an S3-compatible service, e.g.
	// http://127.0.0.1:9000. Empty means AWS itself.
	Endpoint secret.Endpoint
	// Region defaults to us-east-1 when neither this nor the environment sets one.
	Region string
	// AccessKeyID and SecretAccessKey, when both set, replace the default
	// credential chain with static credentials.
	AccessKeyID     string
	SecretAccessKey secret.Value
	// VirtualHostStyle switches off path-style addressing, which is the
	// default because most S3-compatible servers need it.
	VirtualHostStyle bool
	// RequestTimeout bounds one HTTP request; default 5 minutes.
	RequestTimeout time.Duration
	// MaxAttempts is the SDK's per-request attempt budget; default 1, since
	// Temporal retries whole activities.
	MaxAttempts int
	// HTTPClient replaces the SDK's buildable client (tests).
	HTTPClient aws.HTTPClient
	// TracerProvider gives every request made under a span an HTTP client
	// span named after the S3 operation ("S3 GetObject"); nil records
	// nothing. Requests made outside any span are not traced.
	TracerProvider trace.TracerProvider
	// MeterProvider receives the HTTP client metrics of those requests
	// (http.client.request.duration and the like); nil means none.
	MeterProvider metric.MeterProvider
	// SSE is the server-side encryption requested for every object the
	// store writes: "" (the bucket's default), "AES256" (S3-managed keys)
	// or "aws:kms".
	SSE string
	// KMSKeyID is the KMS key for SSE "aws:kms"; empty means the account's
	// AWS-managed key. It is not allowed with any other SSE.
	KMSKeyID string

	// Client, when set, is used as it is: the fields above that say how to
	// reach and sign for the service (Endpoint, Region, keys, addressing,
	// timeouts, HTTPClient, tracing) are ignored. SSE and KMSKeyID still
	// apply. It lets a host share the S3 client it already has.
	Client *s3.Client
	// AWSConfig, when set (and Client is not), replaces the SDK's default
	// configuration loading: its region, credentials, retryer and HTTP
	// client are kept (Region and HTTPClient above fill them when unset);
	// Endpoint and VirtualHostStyle still apply.
	AWSConfig *aws.Config
}

// Store reads and writes objects.
type Store struct {
	client   *s3.Client
	sse      types.ServerSideEncryption
	kmsKeyID string
}

// New builds a Store. It does not contact the service.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	client := cfg.Client
	if client == nil {
		awsCfg, err := cfg.awsConfig(ctx)
		if err != nil {
			return nil, err
		}
		client = s3.NewFromConfig(awsCfg, func(o *s3.Options) {
			if cfg.Endpoint != "" {
				o.BaseEndpoint = aws.String(string(cfg.Endpoint))
			}
			o.UsePathStyle = !cfg.VirtualHostStyle
			// Many S3-compatible stores reject the newer default checksum
			// trailers; ask for checksums only where the API requires them.
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		})
	}
	return &Store{client: client, sse: types.ServerSideEncryption(cfg.SSE), kmsKeyID: cfg.KMSKeyID}, nil
}

// check reports an endpoint that is not an http(s) URL and an encryption
// S3 does not offer.
func (cfg Config) check() error {
	if cfg.Endpoint != "" {
		u, err := url.Parse(string(cfg.Endpoint))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("s3: endpoint %q is not an http(s) URL: set AWS_ENDPOINT_URL_S3 to e.g. http://127.0.0.1:9000", cfg.Endpoint.String())
		}
	}
	switch types.ServerSideEncryption(cfg.SSE) {
	case "", types.ServerSideEncryptionAes256:
		if cfg.KMSKeyID != "" {
			return fmt.Errorf("s3: a KMS key id needs SSE %q, not %q", types.ServerSideEncryptionAwsKms, cfg.SSE)
		}
	case types.ServerSideEncryptionAwsKms:
	default:
		return fmt.Errorf("s3: server-side encryption %q: use %q, %q or none", cfg.SSE, types.ServerSideEncryptionAes256, types.ServerSideEncryptionAwsKms)
	}
	return nil
}

// awsConfig is the AWS configuration the client is built from: cfg's
// AWSConfig, or the SDK's default chain with cfg's region and static keys;
// either way with cfg's HTTP client (or one with its timeout), its region
// (us-east-1 when none is known) and tracing.
func (cfg Config) awsConfig(ctx context.Context) (aws.Config, error) {
	timeout := cfg.RequestTimeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	var httpClient aws.HTTPClient = cfg.HTTPClient
	if httpClient == nil {
		// The buildable client keeps AWS_CA_BUNDLE working, which a bare
		// *http.Client would break.
		httpClient = awshttp.NewBuildableClient().WithTimeout(timeout)
	}
	var awsCfg aws.Config
	if cfg.AWSConfig != nil {
		awsCfg = cfg.AWSConfig.Copy()
		if awsCfg.HTTPClient == nil {
			awsCfg.HTTPClient = httpClient
		}
		if awsCfg.Region == "" {
			awsCfg.Region = cfg.Region
		}
	} else {
		c, err := config.LoadDefaultConfig(ctx, cfg.loadOptions(httpClient)...)
		if err != nil {
			return aws.Config{}, fmt.Errorf("s3: load config: %w", err)
		}
		awsCfg = c
	}
	if awsCfg.Region == "" {
		awsCfg.Region = "us-east-1"
	}
	if cfg.TracerProvider != nil {
		// Wrapped after loading, around the client the SDK resolved, so that
		// AWS_CA_BUNDLE (which needs the buildable client) keeps working.
		awsCfg.HTTPClient = traced(awsCfg.HTTPClient, cfg.TracerProvider, cfg.MeterProvider)
	}
	return awsCfg, nil
}

// loadOptions are the SDK's default chain's options: the HTTP client, the
// retries (one attempt unless cfg says more: Temporal retries), the region
// and the static keys, when set.
func (cfg Config) loadOptions(httpClient aws.HTTPClient) []func(*config.LoadOptions) error {
	attempts := cfg.MaxAttempts
	if attempts <= 0 {
		attempts = 1
	}
	opts := []func(*config.LoadOptions) error{
		config.WithHTTPClient(httpClient),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = attempts })
		}),
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.AccessKeyID != "" && cfg.SecretAccessKey != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, string(cfg.SecretAccessKey), "")))
	}
	return opts
}

// Location names one object (s3client's: the CLI and the worker name
// objects alike).
type Location = s3client.Location

// MaxRangeBytes bounds one ranged read, which is held in memory whole: a
// chunk or a passage is kilobytes.
const MaxRangeBytes = s3client.MaxRangeBytes

// ParseURI parses "s3://bucket/key" as s3client.ParseURI does.
func ParseURI(uri string) (Location, error) { return s3client.ParseURI(uri) }

// ObjectInfo is what a HEAD returns (s3client's).
type ObjectInfo = s3client.ObjectInfo

// Head returns an object's size and ETag, or ErrNotFound.
func (s *Store) Head(ctx context.Context, loc Location) (ObjectInfo, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &loc.Bucket, Key: &loc.Key})
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("s3: head %s: %w", loc, classify(err))
	}
	return ObjectInfo{Size: aws.ToInt64(out.ContentLength), ETag: aws.ToString(out.ETag)}, nil
}

// Open streams a whole object. When etag is not empty the read is pinned to
// it and fails with ErrChanged if the object was replaced.
func (s *Store) Open(ctx context.Context, loc Location, etag string) (io.ReadCloser, error) {
	in := &s3.GetObjectInput{Bucket: &loc.Bucket, Key: &loc.Key}
	if etag != "" {
		in.IfMatch = aws.String(etag)
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("s3: get %s: %w", loc, classify(err))
	}
	return out.Body, nil
}

// ReadRange returns bytes [start, end) of an object with one ranged GET,
// pinned to etag when it is not empty (a replaced object then fails with
// ErrChanged).
func (s *Store) ReadRange(ctx context.Context, loc Location, start, end int64, etag string) ([]byte, error) {
	return s3client.ReadRange(ctx, s.client, loc, start, end, etag)
}

// ReadAll returns a whole small object (indexes, results). Documents are
// streamed with Open instead.
func (s *Store) ReadAll(ctx context.Context, loc Location) ([]byte, error) {
	body, err := s.Open(ctx, loc, "")
	if err != nil {
		return nil, err
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, fmt.Errorf("s3: read %s: %w", loc, err)
	}
	return data, nil
}

// Put writes an object from memory.
func (s *Store) Put(ctx context.Context, loc Location, data []byte, contentType string) error {
	return s.PutReader(ctx, loc, bytes.NewReader(data), int64(len(data)), contentType)
}

// PutReader writes an object of a known size from a seekable reader (a file),
// without loading it into memory, with the store's server-side encryption.
func (s *Store) PutReader(ctx context.Context, loc Location, body io.ReadSeeker, size int64, contentType string) error {
	if _, err := s.client.PutObject(ctx, s.putInput(loc, body, size, contentType)); err != nil {
		return fmt.Errorf("s3: put %s: %w", loc, classify(err))
	}
	return nil
}

// putInput is a PutObject request with the store's server-side encryption.
func (s *Store) putInput(loc Location, body io.ReadSeeker, size int64, contentType string) *s3.PutObjectInput {
	in := &s3.PutObjectInput{
		Bucket:        &loc.Bucket,
		Key:           &loc.Key,
		Body:          body,
		ContentLength: aws.Int64(size),
	}
	if contentType != "" {
		in.ContentType = aws.String(contentType)
	}
	if s.sse != "" {
		in.ServerSideEncryption = s.sse
	}
	if s.kmsKeyID != "" {
		in.SSEKMSKeyId = aws.String(s.kmsKeyID)
	}
	return in
}

// PutIfAbsent writes an object only if no object has its key (a
// conditional put, If-None-Match: *), and reports whether it wrote it.
// Outputs that must never replace an earlier run's (results, reports,
// ownership markers) are written with it.
func (s *Store) PutIfAbsent(ctx context.Context, loc Location, data []byte, contentType string) (bool, error) {
	in := s.putInput(loc, bytes.NewReader(data), int64(len(data)), contentType)
	in.IfNoneMatch = aws.String("*")
	if _, err := s.client.PutObject(ctx, in); err != nil {
		var re *awshttp.ResponseError
		// 412: the key exists; 409: a concurrent conditional write to it
		// is in progress (S3 asks the loser to retry, and it would then
		// find the key taken).
		if errors.As(err, &re) && (re.HTTPStatusCode() == http.StatusPreconditionFailed || re.HTTPStatusCode() == http.StatusConflict) {
			return false, nil
		}
		return false, fmt.Errorf("s3: put %s if absent: %w", loc, classify(err))
	}
	return true, nil
}

// Errors of CheckBucket, by what is wrong (s3client's).
var (
	// ErrBucketMissing: the bucket does not exist.
	ErrBucketMissing = s3client.ErrBucketMissing
	// ErrAccessDenied: the credentials are valid but may not use it.
	ErrAccessDenied = s3client.ErrAccessDenied
	// ErrBadCredentials: the service does not accept the credentials.
	ErrBadCredentials = s3client.ErrBadCredentials
)

// CheckBucket reports whether the bucket can be used, as
// s3client.CheckBucket does.
func (s *Store) CheckBucket(ctx context.Context, bucket string) error {
	return s3client.CheckBucket(ctx, s.client, bucket)
}

// EnsureBucket checks the bucket and, when it is missing and create is
// true, creates it, as s3client.EnsureBucket does.
func (s *Store) EnsureBucket(ctx context.Context, bucket string, create bool) error {
	return s3client.EnsureBucket(ctx, s.client, bucket, create)
}

// List returns the keys under a prefix, at most limit of them (0 = all).
func (s *Store) List(ctx context.Context, bucket, prefix string, limit int) ([]string, error) {
	return s3client.ListKeys(ctx, s.client, bucket, prefix, limit)
}

// ListFolders returns the names of the "folders" right under a prefix
// (ending in '/'): the common prefixes of a delimited listing, without the
// prefix itself, each ending in '/'. It lists one level, however many
// objects each folder holds.
func (s *Store) ListFolders(ctx context.Context, bucket, prefix string) ([]string, error) {
	var folders []string
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix, Delimiter: aws.String("/")})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("s3: list s3://%s/%s: %w", bucket, prefix, classify(err))
		}
		for _, cp := range page.CommonPrefixes {
			folders = append(folders, strings.TrimPrefix(aws.ToString(cp.Prefix), prefix))
		}
	}
	return folders, nil
}

// classify maps the SDK's typed and HTTP-status errors onto ErrNotFound and
// ErrChanged, keeping the original error in the chain (s3client.Classify).
func classify(err error) error { return s3client.Classify(err) }

// traced wraps an SDK HTTP client with otelhttp. The span is named after the
// S3 operation, which the SDK keeps in the request's context; the request's
// URL (bucket and key) is an attribute, the object's contents never are.
func traced(c aws.HTTPClient, tp trace.TracerProvider, mp metric.MeterProvider) aws.HTTPClient {
	opts := []otelhttp.Option{
		otelhttp.WithTracerProvider(tp),
		// Trace context only: baggage is not for a third-party server.
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithFilter(func(r *http.Request) bool { return trace.SpanContextFromContext(r.Context()).IsValid() }),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			if op := awsmiddleware.GetOperationName(r.Context()); op != "" {
				return "S3 " + op
			}
			return "S3 " + r.Method
		}),
	}
	if mp != nil {
		opts = append(opts, otelhttp.WithMeterProvider(mp))
	}
	return roundTripClient{otelhttp.NewTransport(clientTransport{c}, opts...)}
}

// clientTransport adapts an SDK HTTP client to a RoundTripper, so that the
// whole exchange (redirects, timeouts, the CA bundle) stays the SDK's.
type clientTransport struct{ c aws.HTTPClient }

func (t clientTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if op := awsmiddleware.GetOperationName(r.Context()); op != "" {
		trace.SpanFromContext(r.Context()).SetAttributes(
			attribute.String("rpc.system", "aws-api"),
			attribute.String("rpc.service", "S3"),
			attribute.String("rpc.method", op),
		)
	}
	return t.c.Do(r)
}

// roundTripClient adapts a RoundTripper back to an SDK HTTP client.
type roundTripClient struct{ rt http.RoundTripper }

func (c roundTripClient) Do(r *http.Request) (*http.Response, error) { return c.rt.RoundTrip(r) }
