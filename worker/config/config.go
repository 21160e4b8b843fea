package config

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"

	"github.com/memagent/memagent/internal/buildinfo"
	"github.com/memagent/memagent/internal/codec"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/notify"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/secret"
)

// Addresses and credentials of the embedded dev stack. Without any
// environment, the worker and starter find it here.
const (
	DevTemporalAddress = "127.0.0.1:7233"
	DevUIURL           = "http://127.0.0.1:8233"
	DevS3Endpoint      = "http://127.0.0.1:9000"
	DevModelBaseURL    = "http://127.0.0.1:8000/v1"
	DevS3AccessKey     = "memagent"
	DevS3SecretKey     = "memagent-dev-secret"
	DevRegion          = "us-east-1"
	// AWSEndpoint as AWS_ENDPOINT_URL_S3 selects AWS itself (the SDK's own
	// endpoint resolution) instead of the dev stack.
	AWSEndpoint = "aws"
)

// Config is everything a worker or starter needs to reach its services.
//
// The Temporal connection settings are read as the Temporal SDK's
// contrib/envconfig and the temporal CLI read them: a profile of the TOML
// file (TEMPORAL_CONFIG_FILE, default ~/.config/temporalio/temporal.toml;
// TEMPORAL_PROFILE, default "default") overridden by TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS,
// TEMPORAL_TLS_CLIENT_CERT_PATH (or _DATA), TEMPORAL_TLS_CLIENT_KEY_PATH
// (or _DATA), TEMPORAL_TLS_SERVER_CA_CERT_PATH (or _DATA),
// TEMPORAL_TLS_SERVER_NAME, TEMPORAL_TLS_DISABLE_HOST_VERIFICATION,
// TEMPORAL_CLIENT_AUTHORITY and TEMPORAL_GRPC_META_*. memagent's older
// names TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY and TEMPORAL_TLS_CA still work,
// with a deprecation in Deprecations.
type Config struct {
	TemporalAddress   string
	TemporalNamespace string
	TaskQueue         string
	// TemporalTLS turns on TLS to the frontend with the system's roots
	// (TEMPORAL_TLS); setting any of the TLS files or the server name, or an
	// API key, turns it on too.
	TemporalTLS bool
	// TemporalTLSCert and TemporalTLSKey are the paths of a PEM client
	// certificate and key for mTLS (TEMPORAL_TLS_CLIENT_CERT_PATH,
	// TEMPORAL_TLS_CLIENT_KEY_PATH).
	TemporalTLSCert, TemporalTLSKey string
	// TemporalTLSCA is the path of PEM roots to verify the frontend with
	// instead of the system's (TEMPORAL_TLS_SERVER_CA_CERT_PATH).
	TemporalTLSCA string
	// TemporalProfile is the envconfig profile the fields above were read
	// from: it also carries what they cannot say (inline PEM data, host
	// verification, the :authority, gRPC metadata), which
	// TemporalConnection and TemporalHeaders apply.
	TemporalProfile secret.Opaque[envconfig.ClientConfigProfile]
	// Deprecations are one-line notes on deprecated settings in use, for
	// the process to log at start.
	Deprecations []string
	// TemporalTLSServerName overrides the name verified in the frontend's
	// certificate (TEMPORAL_TLS_SERVER_NAME).
	TemporalTLSServerName string
	// TemporalAPIKey is sent as a bearer token on every Temporal call
	// (TEMPORAL_API_KEY), as Temporal Cloud's API keys are; never printed.
	TemporalAPIKey secret.Value
	// ClientIdentity is the identity a client dials Temporal with, which
	// Temporal records in the history of what it sends; empty means the
	// SDK's default (pid@host). The review desk and the starter's sign-off
	// commands set it, so that a decision's history names the program
	// (and the reviewer) it came through. No flag or environment variable.
	ClientIdentity string

	S3Endpoint  secret.Endpoint // "" after Load means AWS itself
	S3Region    string
	S3AccessKey string
	S3SecretKey secret.Value
	S3PathStyle bool
	Bucket      string
	// ReadPrefixes are the s3:// prefixes documents and manifests may be
	// read from, and WritePrefixes those outputs (output_prefix,
	// report_prefix) may be written under; empty means s3://<Bucket>/,
	// and "s3://" means any bucket the credentials reach.
	// MEMAGENT_READ_PREFIXES and MEMAGENT_WRITE_PREFIXES, comma-separated.
	ReadPrefixes  []string
	WritePrefixes []string
	// ClaimRoots are the s3:// prefixes under which a caller's
	// output_prefix or report_prefix may be claimed (MEMAGENT_CLAIM_ROOTS,
	// comma-separated; empty means WritePrefixes), and ClaimDepth how many
	// folders below its root a claimed prefix must be at least
	// (MEMAGENT_CLAIM_DEPTH; 0 means 2).
	ClaimRoots []string
	ClaimDepth int
	// NotifyHosts are the host names a batch's notify_url may name
	// (MEMAGENT_NOTIFY_HOSTS, comma-separated; "*.example.com" matches its
	// subdomains); empty means any. NotifyAllowNets are the loopback,
	// link-local or private networks a notification may still be sent to
	// (MEMAGENT_NOTIFY_ALLOW_NETS, CIDRs such as 10.1.0.0/16); empty means
	// none. The dev stack allows loopback.
	NotifyHosts     []string
	NotifyAllowNets []string
	// CreateBucket lets the worker and the starter create Bucket when it
	// is missing (MEMAGENT_CREATE_BUCKET, --create-bucket); the dev stack
	// sets it. Otherwise a missing bucket stops them with an error.
	CreateBucket bool
	// S3SSE asks S3 to encrypt every object memagent writes: "" (the
	// bucket's default), "AES256" (S3-managed keys) or "aws:kms".
	S3SSE string
	// S3KMSKeyID is the KMS key for S3SSE "aws:kms"; empty means the
	// account's AWS-managed key.
	S3KMSKeyID string

	// ModelAPI is the model server's dialect (MEMAGENT_MODEL_API): ""
	// or "openai" for OpenAI and every compatible server, "azure" for
	// Azure OpenAI.
	ModelAPI inference.API
	// ModelBaseURL is one OpenAI-compatible base URL or several,
	// comma-separated: a pool of replicas (OPENAI_BASE_URL). With Azure it
	// is the resource's endpoint, or several (AZURE_OPENAI_ENDPOINT).
	ModelBaseURL secret.Endpoint
	// ModelAPIKey is OPENAI_API_KEY, or with Azure AZURE_OPENAI_API_KEY.
	ModelAPIKey secret.Value
	// ModelAPIVersion is Azure's api-version (OPENAI_API_VERSION); empty
	// means inference.DefaultAzureAPIVersion.
	ModelAPIVersion string
	// Model is the served model name, or the Azure deployment's name
	// (MEMAGENT_MODEL).
	Model string
	// ModelFamily names the OpenAI model behind Model when its name does
	// not say, as a deployment's need not (MEMAGENT_MODEL_FAMILY, e.g.
	// "o3-mini"): it decides the request's shape and the tokenizer the
	// worker suggests.
	ModelFamily string
	// ModelContext is the model's context length in tokens
	// (MEMAGENT_MODEL_CONTEXT): what Azure cannot report, and a cap on what
	// other servers report; 0 means what the server reports.
	ModelContext int
	// ModelConfigured says the environment names a model server
	// (OPENAI_BASE_URL, or MEMAGENT_MODEL_API=azure): `devstack` then
	// uses it instead of starting the simulator.
	ModelConfigured bool
	ModelTimeout    time.Duration
	// ModelMaxInFlight caps the requests in flight per endpoint (0 = the
	// pool's default).
	ModelMaxInFlight int
	// ChunkCacheMB bounds the worker's cache of chunk bytes, which lets the
	// questions of a review share each chunk's S3 read (0 = the default,
	// 64; -1 turns it off).
	ChunkCacheMB int
	// RateLimit caps activities started per second on the task queue,
	// across all workers (0 = none), for pools shared with others.
	RateLimit float64

	LogLevel slog.Level

	// HTTPAddr is where a worker serves /metrics, /healthz, /readyz and,
	// with CodecKeys, the codec server under /codec/; empty disables the
	// endpoint.
	HTTPAddr string

	// CodecKeys, when set, encrypt every payload memagent puts into
	// Temporal (inputs, results, memories, queries, memo, failures); the
	// first key encrypts, all of them decrypt. Loaded from
	// MEMAGENT_CODEC_KEYS_FILE or MEMAGENT_CODEC_KEYS; never printed.
	CodecKeys CodecKeys
	// CodecToken is the bearer token the codec server requires
	// (MEMAGENT_CODEC_TOKEN); empty requires none.
	CodecToken secret.Value
	// CodecOrigins are the browser origins allowed to call the codec
	// server (MEMAGENT_CODEC_CORS_ORIGINS, comma-separated; "*" allows any,
	// without credentials).
	CodecOrigins []string
	// CodecHosts are Host names the codec server answers for besides
	// loopback ones when it has no token (MEMAGENT_CODEC_HOSTS).
	CodecHosts []string
	// CodecEncode turns on the codec server's /encode
	// (MEMAGENT_CODEC_ENCODE=true); off, it only decodes.
	CodecEncode bool

	// MaxConvertedMB bounds the text converted from one PDF, DOCX or HTML
	// document, in MiB (MEMAGENT_MAX_CONVERTED_MB); PDFMemoryMB bounds the
	// memory of each PDFium instance (MEMAGENT_PDF_MEMORY_MB);
	// ConvertTimeout bounds one conversion (MEMAGENT_CONVERT_TIMEOUT). 0
	// means the converter's defaults (64 MiB, 64 MiB, 10m).
	MaxConvertedMB int
	PDFMemoryMB    int
	ConvertTimeout time.Duration
	// OCRCommand is the Tesseract binary that reads scanned PDF pages
	// (MEMAGENT_TESSERACT; "" is tesseract on PATH, "none" turns OCR off).
	// OCRWorkers bounds the pages read at once (MEMAGENT_OCR_WORKERS; 0
	// is GOMAXPROCS, at most 4), OCRPageTimeout the engine's time on one page
	// (MEMAGENT_OCR_PAGE_TIMEOUT; 0 is 2m), OCRMemoryMB its address
	// space (MEMAGENT_OCR_MEMORY_MB; 0 is 512).
	OCRCommand     string
	OCRWorkers     int
	OCRPageTimeout time.Duration
	OCRMemoryMB    int
	// StopTimeout is how long a stopping worker lets in-flight activities
	// run before it cancels them (MEMAGENT_STOP_TIMEOUT, worker
	// --stop-timeout); 0 means DefaultStopTimeout. A deployment's grace
	// period (Kubernetes' terminationGracePeriodSeconds) must exceed it.
	StopTimeout time.Duration

	// DeploymentName turns Worker Versioning on: the worker polls as
	// build BuildID of this Temporal Worker Deployment
	// (TEMPORAL_DEPLOYMENT_NAME, worker --deployment-name; the names the
	// Temporal Worker Controller sets in the pods it runs). Empty: an
	// unversioned worker, as before.
	DeploymentName string
	// BuildID names this worker's build within DeploymentName
	// (TEMPORAL_WORKER_BUILD_ID, worker --build-id); empty means
	// buildinfo.BinaryVersion (see WorkerBuildID).
	BuildID string
}

// WorkerBuildID is BuildID, or this binary's version when unset.
func (c Config) WorkerBuildID() string {
	if c.BuildID != "" {
		return c.BuildID
	}
	return buildinfo.BinaryVersion()
}

// S3 is the store c names: the one mapping from Config to s3store, for the
// CLI's uploads and the activities (assemble.ConfigFrom).
func (c Config) S3() s3store.Config {
	ep := c.S3Endpoint
	if ep == AWSEndpoint {
		ep = ""
	}
	return s3store.Config{
		Endpoint:         ep,
		Region:           c.S3Region,
		AccessKeyID:      c.S3AccessKey,
		SecretAccessKey:  c.S3SecretKey,
		VirtualHostStyle: !c.S3PathStyle,
		SSE:              c.S3SSE,
		KMSKeyID:         c.S3KMSKeyID,
	}
}

// ModelURLs are the model servers' URLs, one per entry of ModelBaseURL.
func (c Config) ModelURLs() []string { return splitList(string(c.ModelBaseURL)) }

// DefaultStopTimeout is how long a stopping worker waits for in-flight
// activities by default: most model calls finish within it, and what does
// not is handed back to Temporal when its heartbeat times out.
const DefaultStopTimeout = 30 * time.Second

// DefaultModelTimeout bounds one model request by default
// (MEMAGENT_MODEL_TIMEOUT): the inference client's own default.
const DefaultModelTimeout = inference.DefaultRequestTimeout

// WorkerStopTimeout is StopTimeout, or DefaultStopTimeout when unset.
func (c Config) WorkerStopTimeout() time.Duration {
	if c.StopTimeout <= 0 {
		return DefaultStopTimeout
	}
	return c.StopTimeout
}

// CodecKeys are payload encryption keys. They format as their count and
// the active key's id, never as key material.
type CodecKeys []codec.Key

// String describes the keys without revealing them.
func (k CodecKeys) String() string {
	if len(k) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d key(s), active %q", len(k), k[0].ID)
}

// GoString is String, so %#v does not print key material either.
func (k CodecKeys) GoString() string { return k.String() }

// LogValue is String, for slog.
func (k CodecKeys) LogValue() slog.Value { return slog.StringValue(k.String()) }

// DefaultHTTPAddr is the worker's HTTP endpoint by default: loopback only,
// on the port OpenTelemetry's Prometheus exporters conventionally use.
const DefaultHTTPAddr = "127.0.0.1:9464"

// Default returns the configuration that talks to the embedded dev stack.
func Default() Config {
	return Config{
		TemporalAddress:   DevTemporalAddress,
		TemporalNamespace: "default",
		TaskQueue:         "memagent",
		S3Endpoint:        DevS3Endpoint,
		S3Region:          DevRegion,
		S3PathStyle:       true,
		Bucket:            "memagent",
		ModelBaseURL:      DevModelBaseURL,
		ModelTimeout:      DefaultModelTimeout,
		LogLevel:          slog.LevelInfo,
		HTTPAddr:          DefaultHTTPAddr,
		CodecOrigins:      []string{DevUIURL},
		StopTimeout:       DefaultStopTimeout,
	}
}

// FromEnv returns Default overridden by the environment (lookup is
// os.LookupEnv in production, a map in tests): the Temporal connection as
// envconfig reads it, then each of settings in turn. The error names the
// first variable that does not parse.
func FromEnv(lookup func(string) (string, bool)) (Config, error) {
	c := Default()
	if err := c.loadTemporal(firstSet(lookup)); err != nil {
		return c, err
	}
	for _, s := range settings {
		if err := s.apply(&c, lookup); err != nil {
			return c, err
		}
	}
	return c, nil
}

// firstSet is the value of the first of names that is set and not empty:
// set and empty is unset, for every setting but MEMAGENT_HTTP_ADDR.
func firstSet(lookup func(string) (string, bool)) func(names ...string) (string, bool) {
	return func(names ...string) (string, bool) {
		for _, n := range names {
			if v, ok := lookup(n); ok && v != "" {
				return v, true
			}
		}
		return "", false
	}
}

// A setting is one environment variable FromEnv reads, or several names
// for it (the first set wins), and what its value does to a Config.
type setting struct {
	names []string
	// set applies the value v of the variable name; its error names the
	// variable and says what to write instead.
	set func(c *Config, name, v string) error
	// emptyCounts reads names[0] even when set and empty (which turns the
	// HTTP endpoint off).
	emptyCounts bool
	// load, instead of set, reads what it needs itself, always.
	load func(c *Config, lookup func(string) (string, bool)) error
}

func (s setting) apply(c *Config, lookup func(string) (string, bool)) error {
	if s.load != nil {
		return s.load(c, lookup)
	}
	v, ok := firstSet(lookup)(s.names...)
	if s.emptyCounts {
		v, ok = lookup(s.names[0])
	}
	if !ok {
		return nil
	}
	return s.set(c, s.names[0], v)
}

// settings are the variables FromEnv reads after the Temporal connection,
// in the order it reads them: a later one may depend on an earlier one
// (Azure's variables on MEMAGENT_MODEL_API, the dev stack's credentials on
// the S3 endpoint).
var settings = []setting{
	{names: []string{"MEMAGENT_TASK_QUEUE"}, set: text(func(c *Config) *string { return &c.TaskQueue })},
	{names: []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}, set: text(func(c *Config) *secret.Endpoint { return &c.S3Endpoint })},
	{names: []string{"AWS_REGION", "AWS_DEFAULT_REGION"}, set: text(func(c *Config) *string { return &c.S3Region })},
	{names: []string{"MEMAGENT_BUCKET"}, set: text(func(c *Config) *string { return &c.Bucket })},
	{names: []string{"MEMAGENT_CREATE_BUCKET"}, set: func(c *Config, _, v string) error {
		c.CreateBucket = v == "true" || v == "1"
		return nil
	}},
	{names: []string{"MEMAGENT_READ_PREFIXES"}, set: list(func(c *Config) *[]string { return &c.ReadPrefixes })},
	{names: []string{"MEMAGENT_WRITE_PREFIXES"}, set: list(func(c *Config) *[]string { return &c.WritePrefixes })},
	{names: []string{"MEMAGENT_CLAIM_ROOTS"}, set: list(func(c *Config) *[]string { return &c.ClaimRoots })},
	{names: []string{"MEMAGENT_CLAIM_DEPTH"}, set: whole(func(c *Config) *int { return &c.ClaimDepth }, 0, math.MaxInt,
		"want how many folders below its claim root a claimed prefix must be, at least (e.g. 2; 0 = the default, 2)")},
	{names: []string{"MEMAGENT_NOTIFY_HOSTS"}, set: list(func(c *Config) *[]string { return &c.NotifyHosts })},
	{names: []string{"MEMAGENT_NOTIFY_ALLOW_NETS"}, set: list(func(c *Config) *[]string { return &c.NotifyAllowNets })},
	{names: []string{"MEMAGENT_S3_PATH_STYLE"}, set: func(c *Config, _, v string) error {
		c.S3PathStyle = v != "false" && v != "0"
		return nil
	}},
	{names: []string{"OPENAI_BASE_URL"}, set: func(c *Config, _, v string) error {
		c.ModelBaseURL, c.ModelConfigured = secret.Endpoint(v), true
		return nil
	}},
	{names: []string{"OPENAI_API_KEY"}, set: text(func(c *Config) *secret.Value { return &c.ModelAPIKey })},
	{names: []string{"MEMAGENT_MODEL_API"}, set: func(c *Config, name, v string) error {
		api, err := inference.ParseAPI(v)
		if err != nil {
			return fmt.Errorf("%s %q: use openai (OpenAI and compatible servers such as vLLM) or azure (Azure OpenAI)", name, v)
		}
		c.ModelAPI = api
		return nil
	}},
	{load: loadAzure},
	{names: []string{"OPENAI_API_VERSION"}, set: text(func(c *Config) *string { return &c.ModelAPIVersion })},
	{names: []string{"MEMAGENT_MODEL"}, set: text(func(c *Config) *string { return &c.Model })},
	{names: []string{"MEMAGENT_MODEL_FAMILY"}, set: text(func(c *Config) *string { return &c.ModelFamily })},
	{names: []string{"MEMAGENT_MODEL_CONTEXT"}, set: whole(func(c *Config) *int { return &c.ModelContext }, 0, math.MaxInt,
		"want the model's context length in tokens, e.g. 128000 (0 = what the server reports)")},
	{names: []string{"MEMAGENT_MODEL_TIMEOUT"}, set: func(c *Config, name, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%s %q: %w (use e.g. 10m)", name, v, err)
		}
		c.ModelTimeout = d
		return nil
	}},
	{names: []string{"MEMAGENT_MAX_IN_FLIGHT"}, set: whole(func(c *Config) *int { return &c.ModelMaxInFlight }, 0, math.MaxInt,
		"want a whole number >= 0")},
	{names: []string{"MEMAGENT_CHUNK_CACHE_MB"}, set: whole(func(c *Config) *int { return &c.ChunkCacheMB }, -1, math.MaxInt,
		"want megabytes >= 0 (0 = the default, 64), or -1 to turn the cache off")},
	{names: []string{"MEMAGENT_RATE_LIMIT"}, set: func(c *Config, name, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			return fmt.Errorf("%s %q: want activities per second >= 0", name, v)
		}
		c.RateLimit = f
		return nil
	}},
	{names: []string{"MEMAGENT_MAX_CONVERTED_MB"}, set: whole(func(c *Config) *int { return &c.MaxConvertedMB }, 1, math.MaxInt, mibWanted)},
	{names: []string{"MEMAGENT_PDF_MEMORY_MB"}, set: whole(func(c *Config) *int { return &c.PDFMemoryMB }, 1, math.MaxInt, mibWanted)},
	{names: []string{"MEMAGENT_OCR_MEMORY_MB"}, set: whole(func(c *Config) *int { return &c.OCRMemoryMB }, 1, math.MaxInt, mibWanted)},
	{names: []string{"MEMAGENT_TESSERACT"}, set: text(func(c *Config) *string { return &c.OCRCommand })},
	{names: []string{"MEMAGENT_OCR_WORKERS"}, set: whole(func(c *Config) *int { return &c.OCRWorkers }, 0, 1024,
		"want a number of pages read at once, 0 for one per CPU")},
	{names: []string{"MEMAGENT_OCR_PAGE_TIMEOUT"}, set: positive(func(c *Config) *time.Duration { return &c.OCRPageTimeout }, "2m")},
	{names: []string{"MEMAGENT_CONVERT_TIMEOUT"}, set: positive(func(c *Config) *time.Duration { return &c.ConvertTimeout }, "10m")},
	{names: []string{"MEMAGENT_STOP_TIMEOUT"}, set: positive(func(c *Config) *time.Duration { return &c.StopTimeout }, "30s or 5m")},
	{names: []string{"TEMPORAL_DEPLOYMENT_NAME"}, set: text(func(c *Config) *string { return &c.DeploymentName })},
	{names: []string{"TEMPORAL_WORKER_BUILD_ID"}, set: text(func(c *Config) *string { return &c.BuildID })},
	{names: []string{"MEMAGENT_LOG_LEVEL"}, set: func(c *Config, name, v string) error {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			return fmt.Errorf("%s %q: use debug, info, warn or error", name, v)
		}
		return nil
	}},
	{names: []string{"MEMAGENT_HTTP_ADDR"}, emptyCounts: true, set: text(func(c *Config) *string { return &c.HTTPAddr })},
	{names: []string{"MEMAGENT_S3_SSE"}, set: text(func(c *Config) *string { return &c.S3SSE })},
	{names: []string{"MEMAGENT_S3_KMS_KEY_ID"}, set: text(func(c *Config) *string { return &c.S3KMSKeyID })},
	{load: func(c *Config, lookup func(string) (string, bool)) error {
		keys, err := codec.LoadKeys(lookup)
		if err != nil {
			return fmt.Errorf("%w (MEMAGENT_CODEC_KEYS_FILE or MEMAGENT_CODEC_KEYS: id:base64key entries, a key made with `openssl rand -base64 32`)", err)
		}
		c.CodecKeys = keys
		return nil
	}},
	{names: []string{"MEMAGENT_CODEC_TOKEN"}, set: text(func(c *Config) *secret.Value { return &c.CodecToken })},
	{names: []string{"MEMAGENT_CODEC_HOSTS"}, set: list(func(c *Config) *[]string { return &c.CodecHosts })},
	{names: []string{"MEMAGENT_CODEC_ENCODE"}, set: func(c *Config, name, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%s %q: want true or false", name, v)
		}
		c.CodecEncode = b
		return nil
	}},
	{names: []string{"MEMAGENT_CODEC_CORS_ORIGINS"}, set: list(func(c *Config) *[]string { return &c.CodecOrigins })},
	{load: loadDevCredentials},
}

// mibWanted is what the MiB settings want.
const mibWanted = "want a positive number of MiB"

// text sets a string field to the value as it is.
func text[T ~string](field func(*Config) *T) func(*Config, string, string) error {
	return func(c *Config, _, v string) error {
		*field(c) = T(v)
		return nil
	}
}

// list sets a field to the comma-separated items of the value.
func list(field func(*Config) *[]string) func(*Config, string, string) error {
	return func(c *Config, _, v string) error {
		*field(c) = splitList(v)
		return nil
	}
}

// whole sets an int field to the value, a whole number within [lo, hi],
// or fails saying what is wanted.
func whole(field func(*Config) *int, lo, hi int, want string) func(*Config, string, string) error {
	return func(c *Config, name, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("%s %q: %s", name, v, want)
		}
		*field(c) = n
		return nil
	}
}

// positive sets a duration field to the value, a positive duration, or
// fails with an example.
func positive(field func(*Config) *time.Duration, example string) func(*Config, string, string) error {
	return func(c *Config, name, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("%s %q: want a positive duration such as %s", name, v, example)
		}
		*field(c) = d
		return nil
	}
}

// loadAzure reads Azure's own variables, as OpenAI's SDKs read them, when
// MEMAGENT_MODEL_API is azure; the OpenAI ones are not Azure's and are not
// used.
func loadAzure(c *Config, lookup func(string) (string, bool)) error {
	if c.ModelAPI != inference.APIAzure {
		return nil
	}
	get := firstSet(lookup)
	endpoint, _ := get("AZURE_OPENAI_ENDPOINT")
	key, _ := get("AZURE_OPENAI_API_KEY")
	c.ModelBaseURL, c.ModelAPIKey, c.ModelConfigured = secret.Endpoint(endpoint), secret.Value(key), true
	return nil
}

// loadDevCredentials supplies the dev stack's S3 keys when the endpoint is
// the dev stack's and the environment names no credentials: static ones
// from the environment are picked up by the SDK's default chain.
func loadDevCredentials(c *Config, lookup func(string) (string, bool)) error {
	get := firstSet(lookup)
	_, hasKey := get("AWS_ACCESS_KEY_ID")
	_, hasProfile := get("AWS_PROFILE")
	if !hasKey && !hasProfile && c.S3Endpoint == DevS3Endpoint {
		c.S3AccessKey, c.S3SecretKey = DevS3AccessKey, DevS3SecretKey
	}
	return nil
}

// envLookup gives envconfig the variables get sees: set and empty is unset,
// as for every other setting here.
type envLookup func(names ...string) (string, bool)

func (e envLookup) LookupEnv(name string) (string, bool) { return e(name) }

// Environ lists the TEMPORAL_GRPC_META_* variables, from this process's
// environment (a map in tests has none).
func (e envLookup) Environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "TEMPORAL_GRPC_META_") {
			if v, ok := e(name); ok {
				out = append(out, name+"="+v)
			}
		}
	}
	return out
}

// deprecatedTLS are memagent's former names of envconfig's TLS variables.
var deprecatedTLS = []struct{ old, now string }{
	{"TEMPORAL_TLS_CERT", "TEMPORAL_TLS_CLIENT_CERT_PATH"},
	{"TEMPORAL_TLS_KEY", "TEMPORAL_TLS_CLIENT_KEY_PATH"},
	{"TEMPORAL_TLS_CA", "TEMPORAL_TLS_SERVER_CA_CERT_PATH"},
}

// loadTemporal reads the Temporal connection the way envconfig does (the
// profile of the config file, then the environment), then memagent's
// deprecated names where envconfig's are not set.
func (c *Config) loadTemporal(get func(names ...string) (string, bool)) error {
	lookup := envLookup(get)
	p, err := envconfig.LoadClientConfigProfile(envconfig.LoadClientConfigProfileOptions{EnvLookup: lookup})
	if err != nil {
		return fmt.Errorf("Temporal connection settings (TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE, TEMPORAL_*): %w", err)
	}
	if v, ok := get("TEMPORAL_TLS"); ok {
		if _, err := strconv.ParseBool(v); err != nil {
			return fmt.Errorf("TEMPORAL_TLS %q: use true or false", v)
		}
	}
	for _, d := range deprecatedTLS {
		v, ok := get(d.old)
		if !ok {
			continue
		}
		if _, set := get(d.now); set {
			c.Deprecations = append(c.Deprecations, fmt.Sprintf("%s is ignored: %s, its replacement, is set too", d.old, d.now))
			continue
		}
		c.Deprecations = append(c.Deprecations, fmt.Sprintf("%s is deprecated: name it %s, as the Temporal SDKs and CLI do", d.old, d.now))
		if p.TLS == nil {
			p.TLS = &envconfig.ClientConfigTLS{}
		}
		switch d.old {
		case "TEMPORAL_TLS_CERT":
			p.TLS.ClientCertPath = v
		case "TEMPORAL_TLS_KEY":
			p.TLS.ClientKeyPath = v
		case "TEMPORAL_TLS_CA":
			p.TLS.ServerCACertPath = v
		}
	}
	c.TemporalProfile.V = p
	if p.Address != "" {
		c.TemporalAddress = p.Address
	}
	if p.Namespace != "" {
		c.TemporalNamespace = p.Namespace
	}
	c.TemporalAPIKey = secret.Value(p.APIKey)
	if t := p.TLS; t != nil {
		c.TemporalTLS = !t.Disabled
		c.TemporalTLSCert, c.TemporalTLSKey, c.TemporalTLSCA = t.ClientCertPath, t.ClientKeyPath, t.ServerCACertPath
		c.TemporalTLSServerName = t.ServerName
	}
	return nil
}

// Load reads the environment of this process.
func Load() (Config, error) { return FromEnv(os.LookupEnv) }

// RegisterFlags binds flags that override c's fields: the client's and
// the worker's.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	c.RegisterClientFlags(fs)
	c.RegisterWorkerFlags(fs)
}

// RegisterClientFlags binds the flags a client of the workflows uses: where
// Temporal and S3 are, and the model a run names.
func (c *Config) RegisterClientFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.TemporalAddress, "temporal-address", c.TemporalAddress, "Temporal frontend host:port (TEMPORAL_ADDRESS)")
	fs.StringVar(&c.TemporalNamespace, "namespace", c.TemporalNamespace, "Temporal namespace (TEMPORAL_NAMESPACE)")
	fs.StringVar(&c.TaskQueue, "task-queue", c.TaskQueue, "task queue (MEMAGENT_TASK_QUEUE)")
	fs.StringVar((*string)(&c.S3Endpoint), "s3-endpoint", string(c.S3Endpoint), `S3-compatible endpoint URL, or "aws" (AWS_ENDPOINT_URL_S3)`)
	fs.StringVar(&c.Bucket, "bucket", c.Bucket, "bucket for uploads, indexes, traces and results (MEMAGENT_BUCKET)")
	fs.BoolVar(&c.CreateBucket, "create-bucket", c.CreateBucket, "create the bucket if it is missing (MEMAGENT_CREATE_BUCKET); otherwise a missing bucket is an error")
	fs.StringVar(&c.Model, "model", c.Model, "served model name, or the Azure deployment; empty = the server's first model (MEMAGENT_MODEL)")
}

// RegisterWorkerFlags binds the flags only a worker uses: the model
// server and the worker's limits.
func (c *Config) RegisterWorkerFlags(fs *flag.FlagSet) {
	fs.StringVar((*string)(&c.ModelBaseURL), "model-url", string(c.ModelBaseURL), "OpenAI-compatible base URL including /v1, or several comma-separated (OPENAI_BASE_URL); with --model-api azure the resource's endpoint (AZURE_OPENAI_ENDPOINT)")
	fs.StringVar((*string)(&c.ModelAPI), "model-api", string(c.ModelAPI), "the model server's API: openai (OpenAI and compatible servers such as vLLM) or azure (MEMAGENT_MODEL_API)")
	fs.IntVar(&c.ModelContext, "model-context", c.ModelContext, "the model's context length in tokens; 0 = what the server reports (MEMAGENT_MODEL_CONTEXT; Azure reports none)")
	fs.IntVar(&c.ModelMaxInFlight, "max-in-flight", c.ModelMaxInFlight, "requests in flight per model endpoint; 0 = default (MEMAGENT_MAX_IN_FLIGHT)")
	fs.IntVar(&c.ChunkCacheMB, "chunk-cache-mb", c.ChunkCacheMB, "megabytes of chunks a review's questions share in this worker; 0 = default 64, -1 = off (MEMAGENT_CHUNK_CACHE_MB)")
	fs.Float64Var(&c.RateLimit, "rate-limit", c.RateLimit, "activities started per second on the task queue, all workers together; 0 = none (MEMAGENT_RATE_LIMIT)")
	fs.DurationVar(&c.ModelTimeout, "model-timeout", c.ModelTimeout, "deadline of one model request (MEMAGENT_MODEL_TIMEOUT)")
}

// Normalize resolves the "aws" endpoint marker. Call it after flags are parsed.
func (c *Config) Normalize() {
	if c.S3Endpoint == AWSEndpoint {
		c.S3Endpoint = ""
	}
}

// Validate reports every setting that cannot work, each naming what to
// change.
func (c Config) Validate() error {
	var errs []error
	for _, check := range []func() []error{c.validateRequired, c.validateAreas, c.validateS3Endpoint, c.validateModel, c.validateWorker, c.validateSSE, c.validateCodec} {
		errs = append(errs, check()...)
	}
	return errors.Join(errs...)
}

// validateRequired checks the settings that have to be set.
func (c Config) validateRequired() []error {
	var errs []error
	if c.TemporalAddress == "" {
		errs = append(errs, errors.New("temporal address is empty: set TEMPORAL_ADDRESS or --temporal-address"))
	}
	if c.TemporalNamespace == "" {
		errs = append(errs, errors.New("namespace is empty: set TEMPORAL_NAMESPACE or --namespace"))
	}
	if c.TaskQueue == "" {
		errs = append(errs, errors.New("task queue is empty: set MEMAGENT_TASK_QUEUE or --task-queue"))
	}
	if c.Bucket == "" {
		errs = append(errs, errors.New("bucket is empty: set MEMAGENT_BUCKET or --bucket"))
	}
	return errs
}

// validateAreas checks where a caller may read, write and notify.
func (c Config) validateAreas() []error {
	var errs []error
	for _, p := range append(append(append([]string(nil), c.ReadPrefixes...), c.WritePrefixes...), c.ClaimRoots...) {
		if rest, ok := strings.CutPrefix(p, "s3://"); !ok || strings.HasPrefix(rest, "/") {
			errs = append(errs, fmt.Errorf("prefix %q is not an s3://bucket/prefix URI, or s3:// for any bucket (MEMAGENT_READ_PREFIXES, MEMAGENT_WRITE_PREFIXES, MEMAGENT_CLAIM_ROOTS)", p))
		}
	}
	if c.ClaimDepth < 0 {
		errs = append(errs, errors.New("claim depth must not be negative: set MEMAGENT_CLAIM_DEPTH (0 = the default, 2)"))
	}
	if _, err := notify.ParseNets(c.NotifyAllowNets); err != nil {
		errs = append(errs, fmt.Errorf("%w (MEMAGENT_NOTIFY_ALLOW_NETS)", err))
	}
	if err := notify.CheckHosts(c.NotifyHosts); err != nil {
		errs = append(errs, fmt.Errorf("%w (MEMAGENT_NOTIFY_HOSTS)", err))
	}
	return errs
}

// validateS3Endpoint checks the S3 endpoint, when it is not AWS itself.
func (c Config) validateS3Endpoint() []error {
	if c.S3Endpoint == "" {
		return nil
	}
	if err := checkURL(string(c.S3Endpoint)); err != nil {
		return []error{fmt.Errorf("S3 endpoint: %w (AWS_ENDPOINT_URL_S3 or --s3-endpoint)", err)}
	}
	return nil
}

// validateWorker checks the worker's limits, its HTTP endpoint, its
// Temporal connection and its deployment.
func (c Config) validateWorker() []error {
	var errs []error
	if c.RateLimit < 0 {
		errs = append(errs, errors.New("rate limit must not be negative: set --rate-limit"))
	}
	if c.HTTPAddr != "" {
		if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
			errs = append(errs, fmt.Errorf("HTTP address %q is not host:port (e.g. 127.0.0.1:9464, or :9464 for every interface; empty disables it): set MEMAGENT_HTTP_ADDR or --http-addr", c.HTTPAddr))
		}
	}
	if c.ModelTimeout <= 0 {
		errs = append(errs, errors.New("model timeout must be positive: set --model-timeout"))
	}
	if c.StopTimeout < 0 {
		errs = append(errs, errors.New("stop timeout must not be negative: set MEMAGENT_STOP_TIMEOUT or --stop-timeout"))
	}
	if _, _, err := c.TemporalConnection(); err != nil {
		errs = append(errs, err)
	}
	if err := buildinfo.CheckDeployment(c.DeploymentName, c.BuildID, c.WorkerBuildID()); err != nil {
		errs = append(errs, fmt.Errorf("%w (TEMPORAL_DEPLOYMENT_NAME or --deployment-name, TEMPORAL_WORKER_BUILD_ID or --build-id)", err))
	}
	return errs
}

// validateSSE checks the server-side encryption asked of S3.
func (c Config) validateSSE() []error {
	switch c.S3SSE {
	case "", s3store.SSES3:
		if c.S3KMSKeyID != "" {
			return []error{fmt.Errorf("MEMAGENT_S3_KMS_KEY_ID is set but MEMAGENT_S3_SSE is %q: set MEMAGENT_S3_SSE=aws:kms to use the KMS key", c.S3SSE)}
		}
	case s3store.SSEKMS:
	default:
		return []error{fmt.Errorf("MEMAGENT_S3_SSE %q: use AES256, aws:kms, or leave it empty for the bucket's default", c.S3SSE)}
	}
	return nil
}

// validateCodec checks the payload keys, and that a codec server others
// can reach requires a token.
func (c Config) validateCodec() []error {
	if len(c.CodecKeys) == 0 {
		return nil
	}
	var errs []error
	if _, err := codec.New(c.CodecKeys); err != nil {
		errs = append(errs, fmt.Errorf("%w (MEMAGENT_CODEC_KEYS_FILE or MEMAGENT_CODEC_KEYS)", err))
	}
	if c.CodecToken == "" && c.HTTPAddr != "" && !loopback(c.HTTPAddr) {
		errs = append(errs, fmt.Errorf("the codec server on %s would decrypt runs for anyone who reaches it: set MEMAGENT_CODEC_TOKEN, or serve on 127.0.0.1 (MEMAGENT_HTTP_ADDR)", c.HTTPAddr))
	}
	return errs
}

// validateModel checks the model server's settings.
func (c Config) validateModel() []error {
	var errs []error
	api, err := inference.ParseAPI(string(c.ModelAPI))
	if err != nil {
		return []error{fmt.Errorf("%w (MEMAGENT_MODEL_API or --model-api)", err)}
	}
	if c.ModelContext < 0 {
		errs = append(errs, fmt.Errorf("model context %d is negative: set MEMAGENT_MODEL_CONTEXT (or --model-context) to the context length in tokens, or 0 for what the server reports", c.ModelContext))
	}
	if api != inference.APIAzure {
		if _, err := inference.ParseEndpoints(string(c.ModelBaseURL), "", c.ModelMaxInFlight); err != nil {
			errs = append(errs, fmt.Errorf("model base URL: %w (OPENAI_BASE_URL or --model-url)", err))
		}
		return errs
	}
	if c.ModelBaseURL == DevModelBaseURL {
		errs = append(errs, errors.New("Azure OpenAI needs its endpoint: set AZURE_OPENAI_ENDPOINT (or --model-url) to the resource's URL, e.g. https://NAME.openai.azure.com"))
	} else if _, err := inference.ParseAzureEndpoints(string(c.ModelBaseURL), "", c.ModelMaxInFlight); err != nil {
		errs = append(errs, fmt.Errorf("%w (or --model-url)", err))
	}
	if c.Model == "" {
		errs = append(errs, errors.New("Azure OpenAI needs the deployment's name: set MEMAGENT_MODEL (or --model)"))
	}
	if c.ModelAPIKey == "" {
		errs = append(errs, errors.New("Azure OpenAI needs an API key: set AZURE_OPENAI_API_KEY (Microsoft Entra ID tokens are not supported)"))
	}
	return errs
}

// TemporalConnection returns the connection options and credentials of
// the Temporal client: TLS when TemporalTLS, a TLS file, the server name or
// an API key is set (an API key alone uses the system's roots), the client
// certificate for mTLS, and the API key as bearer credentials. Both are
// zero for a plaintext connection without credentials. Errors name the
// variable to fix, never a file's content or the key.
func (c Config) TemporalConnection() (client.ConnectionOptions, client.Credentials, error) {
	var (
		conn  client.ConnectionOptions
		creds client.Credentials
		pt    envconfig.ClientConfigTLS
	)
	if c.TemporalProfile.V.TLS != nil {
		pt = *c.TemporalProfile.V.TLS
	}
	conn.Authority = c.TemporalProfile.V.Authority
	certData, keyData := len(pt.ClientCertData) > 0, len(pt.ClientKeyData) > 0
	if (c.TemporalTLSCert == "" && !certData) != (c.TemporalTLSKey == "" && !keyData) {
		return conn, nil, errors.New("Temporal mTLS needs both a client certificate and its key: set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH (or their _DATA forms) together")
	}
	if c.temporalWantsTLS(pt) {
		tc, err := c.temporalTLS(pt)
		if err != nil {
			return conn, nil, err
		}
		conn.TLS = tc
	}
	if c.TemporalAPIKey != "" {
		creds = client.NewAPIKeyStaticCredentials(string(c.TemporalAPIKey))
	}
	return conn, creds, nil
}

// temporalWantsTLS reports whether the connection uses TLS: when asked, or
// when a TLS file, the server name or an API key is set, unless
// TEMPORAL_TLS=false (or tls.disabled in the profile) keeps it off, as
// envconfig does; flags turn it back on.
func (c Config) temporalWantsTLS(pt envconfig.ClientConfigTLS) bool {
	if pt.Disabled && !c.TemporalTLS {
		return false
	}
	return c.TemporalTLS || c.TemporalTLSCert != "" || len(pt.ClientCertData) > 0 || c.TemporalTLSCA != "" || len(pt.ServerCACertData) > 0 ||
		c.TemporalTLSServerName != "" || c.TemporalAPIKey != ""
}

// temporalTLS is the TLS configuration of the connection: the client
// certificate for mTLS and the roots to verify the frontend with, from
// the profile's data or from files.
func (c Config) temporalTLS(pt envconfig.ClientConfigTLS) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.TemporalTLSServerName, InsecureSkipVerify: pt.DisableHostVerification}
	switch {
	case len(pt.ClientCertData) > 0:
		cert, err := tls.X509KeyPair(pt.ClientCertData, pt.ClientKeyData)
		if err != nil {
			return nil, fmt.Errorf("Temporal client certificate (TEMPORAL_TLS_CLIENT_CERT_DATA, TEMPORAL_TLS_CLIENT_KEY_DATA): %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	case c.TemporalTLSCert != "":
		cert, err := tls.LoadX509KeyPair(c.TemporalTLSCert, c.TemporalTLSKey)
		if err != nil {
			return nil, fmt.Errorf("Temporal client certificate (TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CLIENT_KEY_PATH): %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	roots, err := c.temporalRoots(pt)
	if err != nil {
		return nil, err
	}
	tc.RootCAs = roots
	return tc, nil
}

// temporalRoots are the roots the profile's CA data or the CA file hold,
// or nil for the system's.
func (c Config) temporalRoots(pt envconfig.ClientConfigTLS) (*x509.CertPool, error) {
	pem, from := pt.ServerCACertData, "TEMPORAL_TLS_SERVER_CA_CERT_DATA"
	if len(pem) == 0 && c.TemporalTLSCA != "" {
		var err error
		if pem, err = os.ReadFile(c.TemporalTLSCA); err != nil {
			return nil, fmt.Errorf("Temporal CA (TEMPORAL_TLS_SERVER_CA_CERT_PATH): %w", err)
		}
		from = c.TemporalTLSCA
	}
	if len(pem) == 0 {
		return nil, nil
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("Temporal CA (TEMPORAL_TLS_SERVER_CA_CERT_PATH): %s holds no PEM certificate", from)
	}
	return roots, nil
}

// TemporalHeaders is the gRPC metadata the profile adds to every Temporal
// call (TEMPORAL_GRPC_META_*, grpc_meta in the config file), or nil.
func (c Config) TemporalHeaders() interface {
	GetHeaders(context.Context) (map[string]string, error)
} {
	if len(c.TemporalProfile.V.GRPCMeta) == 0 {
		return nil
	}
	return fixedHeaders(c.TemporalProfile.V.GRPCMeta)
}

type fixedHeaders map[string]string

func (h fixedHeaders) GetHeaders(context.Context) (map[string]string, error) { return h, nil }

// loopback reports whether host:port listens on loopback only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", secret.URL(s))
	}
	return nil
}

// splitList splits a comma-separated setting, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
