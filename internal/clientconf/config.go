package clientconf

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/codec"
	"github.com/memagent/memagent/internal/devaddr"
	"github.com/memagent/memagent/internal/s3client"
	"github.com/memagent/memagent/internal/secret"
	"github.com/memagent/memagent/internal/settings"
)

// AWSEndpoint, written as the S3 endpoint (AWS_ENDPOINT_URL_S3,
// --s3-endpoint), selects AWS itself instead of the dev stack: Normalize
// turns it into the empty S3Endpoint.
const AWSEndpoint = "aws"

// Server-side encryptions S3 offers (MEMAGENT_S3_SSE).
const (
	SSES3  = "AES256"
	SSEKMS = "aws:kms"
)

// Config is what a client of memagent's workflows needs: the Temporal
// connection, the task queue its runs go to, the bucket and S3 service it
// uploads documents and manifests to and reads reports from, the model a
// run names when the caller names none, and the payload codec's keys.
// Its field names are the worker configuration's.
type Config struct {
	Temporal

	// TaskQueue is the queue runs are started on (MEMAGENT_TASK_QUEUE).
	TaskQueue string
	// Bucket receives uploads (MEMAGENT_BUCKET); CreateBucket creates it
	// when missing (MEMAGENT_CREATE_BUCKET).
	Bucket       string
	CreateBucket bool
	// Model is the served model a run names (MEMAGENT_MODEL); empty means
	// the worker's.
	Model string

	// S3Endpoint is an S3-compatible service's base URL
	// (AWS_ENDPOINT_URL_S3); empty means AWS itself. S3Region is the
	// bucket's region (AWS_REGION). S3AccessKeyID and S3SecretAccessKey,
	// when both set, replace the SDK's default credential chain (the dev
	// stack's keys when its endpoint is named and no credentials are).
	// S3VirtualHostStyle addresses buckets as bucket.host
	// (MEMAGENT_S3_PATH_STYLE=false). S3SSE and S3KMSKeyID encrypt what
	// the client uploads (MEMAGENT_S3_SSE, MEMAGENT_S3_KMS_KEY_ID).
	S3Endpoint                       string
	S3Region                         string
	S3AccessKeyID, S3SecretAccessKey string
	S3VirtualHostStyle               bool
	S3SSE, S3KMSKeyID                string

	// CodecKeys encrypt and decrypt payloads (MEMAGENT_CODEC_KEYS_FILE or
	// MEMAGENT_CODEC_KEYS), as the worker's do.
	CodecKeys []codec.Key

	LogLevel slog.Level
}

// Default is the configuration that reaches the embedded dev stack.
func Default() Config {
	return Config{
		Temporal:   Temporal{TemporalAddress: devaddr.TemporalAddress, TemporalNamespace: "default"},
		TaskQueue:  api.DefaultTaskQueue,
		Bucket:     devaddr.Bucket,
		S3Endpoint: devaddr.S3Endpoint,
		S3Region:   devaddr.Region,
		LogLevel:   slog.LevelInfo,
	}
}

// FromEnv returns Default overridden by the environment (lookup is
// os.LookupEnv in production, a map in tests): the Temporal connection as
// envconfig reads it, then Rows. The error names the first variable that
// does not parse. Variables only a worker reads are not read.
func FromEnv(lookup func(string) (string, bool)) (Config, error) {
	c := Default()
	if err := c.LoadTemporal(settings.FirstSet(lookup)); err != nil {
		return c, err
	}
	if err := settings.Apply(&c, Rows, lookup); err != nil {
		return c, err
	}
	if c.S3Endpoint == AWSEndpoint {
		c.S3Endpoint = ""
	}
	return c, nil
}

// Load reads the environment of this process.
func Load() (Config, error) { return FromEnv(os.LookupEnv) }

// Rows are the variables a client reads besides the Temporal connection's:
// each named as plugin's table names it for the same field (a test checks
// that they agree), parsed the same way.
var Rows = []settings.Row[Config]{
	{Names: []string{"MEMAGENT_TASK_QUEUE"}, Field: "TaskQueue", Set: settings.Text(func(c *Config) *string { return &c.TaskQueue })},
	{Names: []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}, Field: "S3Endpoint", Set: settings.Text(func(c *Config) *string { return &c.S3Endpoint })},
	{Names: []string{"AWS_REGION", "AWS_DEFAULT_REGION"}, Field: "S3Region", Set: settings.Text(func(c *Config) *string { return &c.S3Region })},
	{Names: []string{"MEMAGENT_BUCKET"}, Field: "Bucket", Set: settings.Text(func(c *Config) *string { return &c.Bucket })},
	{Names: []string{"MEMAGENT_CREATE_BUCKET"}, Field: "CreateBucket", Set: settings.Bool(func(c *Config, b bool) { c.CreateBucket = b })},
	{Names: []string{"MEMAGENT_S3_PATH_STYLE"}, Field: "S3VirtualHostStyle", Set: settings.Bool(func(c *Config, pathStyle bool) { c.S3VirtualHostStyle = !pathStyle })},
	{Names: []string{"MEMAGENT_MODEL"}, Field: "Model", Set: settings.Text(func(c *Config) *string { return &c.Model })},
	{Names: []string{"MEMAGENT_S3_SSE"}, Field: "S3SSE", Set: settings.Text(func(c *Config) *string { return &c.S3SSE })},
	{Names: []string{"MEMAGENT_S3_KMS_KEY_ID"}, Field: "S3KMSKeyID", Set: settings.Text(func(c *Config) *string { return &c.S3KMSKeyID })},
	{Names: []string{"MEMAGENT_CODEC_KEYS_FILE", "MEMAGENT_CODEC_KEYS"}, Field: "CodecKeys", Load: func(c *Config, lookup settings.Lookup) error {
		keys, err := codec.LoadKeys(lookup)
		if err != nil {
			return fmt.Errorf("%w (MEMAGENT_CODEC_KEYS_FILE or MEMAGENT_CODEC_KEYS: id:base64key entries, a key made with `openssl rand -base64 32`)", err)
		}
		c.CodecKeys = keys
		return nil
	}},
	{Names: []string{"MEMAGENT_LOG_LEVEL"}, Set: func(c *Config, name, v string) error {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			return fmt.Errorf("%s %q: use debug, info, warn or error", name, v)
		}
		return nil
	}},
	{Load: loadDevCredentials},
}

// loadDevCredentials supplies the dev stack's S3 keys when the endpoint is
// the dev stack's and the environment names no credentials, as the
// worker's configuration does.
func loadDevCredentials(c *Config, lookup settings.Lookup) error {
	get := settings.FirstSet(lookup)
	_, hasKey := get("AWS_ACCESS_KEY_ID")
	_, hasProfile := get("AWS_PROFILE")
	if !hasKey && !hasProfile && c.S3Endpoint == devaddr.S3Endpoint {
		c.S3AccessKeyID, c.S3SecretAccessKey = devaddr.S3AccessKey, devaddr.S3SecretKey
	}
	return nil
}

// RegisterFlags binds the flags a client of the workflows uses: where
// Temporal and S3 are, and the model a run names. They are the worker's
// flags of the same settings.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.TemporalAddress, "temporal-address", c.TemporalAddress, "Temporal frontend host:port (TEMPORAL_ADDRESS)")
	fs.StringVar(&c.TemporalNamespace, "namespace", c.TemporalNamespace, "Temporal namespace (TEMPORAL_NAMESPACE)")
	fs.StringVar(&c.TaskQueue, "task-queue", c.TaskQueue, "task queue (MEMAGENT_TASK_QUEUE)")
	fs.StringVar(&c.S3Endpoint, "s3-endpoint", c.S3Endpoint, `S3-compatible endpoint URL, or "aws" (AWS_ENDPOINT_URL_S3)`)
	fs.StringVar(&c.Bucket, "bucket", c.Bucket, "bucket for uploads, indexes, traces and results (MEMAGENT_BUCKET)")
	fs.BoolVar(&c.CreateBucket, "create-bucket", c.CreateBucket, "create the bucket if it is missing (MEMAGENT_CREATE_BUCKET); otherwise a missing bucket is an error")
	fs.StringVar(&c.Model, "model", c.Model, "served model name, or the Azure deployment; empty = the server's first model (MEMAGENT_MODEL)")
}

// Normalize resolves the "aws" endpoint marker. Call it after flags are
// parsed.
func (c *Config) Normalize() {
	if c.S3Endpoint == AWSEndpoint {
		c.S3Endpoint = ""
	}
}

// Validate reports every setting that cannot work, each naming the
// variable and the flag to change, in the worker's words.
func (c Config) Validate() error {
	errs := c.validateTemporal()
	if c.TaskQueue == "" {
		errs = append(errs, errors.New("task queue is empty: set MEMAGENT_TASK_QUEUE or --task-queue"))
	}
	if _, _, err := c.TemporalConnection(); err != nil {
		errs = append(errs, err)
	}
	if c.Bucket == "" {
		errs = append(errs, errors.New("the bucket is empty: set MEMAGENT_BUCKET or --bucket"))
	}
	if c.S3Endpoint != "" {
		if u, err := url.Parse(c.S3Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("S3 endpoint %q is not an http(s) URL: set AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL or --s3-endpoint to e.g. http://127.0.0.1:9000, or leave it empty for AWS", secret.URL(c.S3Endpoint)))
		}
	}
	switch c.S3SSE {
	case "", SSES3:
		if c.S3KMSKeyID != "" {
			errs = append(errs, fmt.Errorf("a KMS key is set (MEMAGENT_S3_KMS_KEY_ID) but server-side encryption is %q: set MEMAGENT_S3_SSE to aws:kms to use it", c.S3SSE))
		}
	case SSEKMS:
	default:
		errs = append(errs, fmt.Errorf("server-side encryption %q: use AES256, aws:kms, or empty for the bucket's default: set MEMAGENT_S3_SSE", c.S3SSE))
	}
	if _, err := c.Codec(); err != nil {
		errs = append(errs, fmt.Errorf("%w (MEMAGENT_CODEC_KEYS_FILE or MEMAGENT_CODEC_KEYS)", err))
	}
	return errors.Join(errs...)
}

// Codec is the payload codec of CodecKeys (nil, nil without keys).
func (c Config) Codec() (*codec.Codec, error) {
	if len(c.CodecKeys) == 0 {
		return nil, nil
	}
	return codec.New(c.CodecKeys)
}

// S3 is the S3 service c names, for s3client.New.
func (c Config) S3() s3client.Config {
	return s3client.Config{
		Endpoint: c.S3Endpoint, Region: c.S3Region,
		AccessKeyID: c.S3AccessKeyID, SecretAccessKey: c.S3SecretAccessKey,
		VirtualHostStyle: c.S3VirtualHostStyle, SSE: c.S3SSE, KMSKeyID: c.S3KMSKeyID,
	}
}
