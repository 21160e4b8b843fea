package plugin

import (
	"cmp"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/internal/assemble"
	"github.com/memagent/memagent/internal/buildinfo"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/secret"
)

// DefaultModelTimeout bounds one model request when Options.ModelTimeout
// is zero (MEMAGENT_MODEL_TIMEOUT): 10 minutes, the inference client's own
// default (a test holds them equal).
const DefaultModelTimeout = 10 * time.Minute

// DefaultStopTimeout is how long a stopping worker lets in-flight
// activities finish when Options.StopTimeout is zero and the host left
// worker.Options.WorkerStopTimeout unset: most model calls finish within
// it, and what does not is handed back to Temporal when its heartbeat
// times out.
const DefaultStopTimeout = 30 * time.Second

// Options configure the plugin in code. Nothing is read from the
// environment: a zero field means the default written beside it, never
// an environment variable. OptionsFromEnv fills Options from the
// environment, as memagent's own worker does; change its result to mix
// the two.
//
// Only Bucket and ModelURLs have no default. They are checked, with the
// rest, when a worker starts.
type Options struct {
	// Bucket holds the chunk indexes, traces and results the activities
	// write (MEMAGENT_BUCKET). Documents may live in other buckets the S3
	// credentials can read (see ReadPrefixes). Required.
	Bucket string
	// CreateBucket lets a worker create Bucket when it is missing
	// (MEMAGENT_CREATE_BUCKET). Otherwise a missing bucket, refused
	// credentials or denied access fail worker start, each in its words.
	CreateBucket bool
	// ReadPrefixes are the s3:// prefixes documents and manifests may be
	// read from (MEMAGENT_READ_PREFIXES), and WritePrefixes those a run's
	// outputs (output_prefix, report_prefix) may be written under
	// (MEMAGENT_WRITE_PREFIXES). Empty means s3://<Bucket>/; "s3://"
	// means any bucket the credentials reach. Anything else fails as
	// memagent.Forbidden before any model call.
	ReadPrefixes, WritePrefixes []string
	// ClaimRoots are the s3:// prefixes under which a run's output_prefix
	// or report_prefix may be claimed (MEMAGENT_CLAIM_ROOTS); empty means
	// WritePrefixes. ClaimDepth is how many folders below its root a
	// claimed prefix must be, at least (MEMAGENT_CLAIM_DEPTH); 0 means
	// activities.DefaultClaimDepth (2), so that no run takes a folder at
	// the bucket's root. A claim is refused while anything lies under it.
	ClaimRoots []string
	ClaimDepth int
	// NotifyHosts are the host names a batch's notify_url may name
	// (MEMAGENT_NOTIFY_HOSTS): "hooks.example.com", or "*.example.com" for
	// its subdomains; empty means any host. NotifyAllowNets are networks
	// (CIDRs) among the loopback, link-local and private ones, which are
	// otherwise never notified, that may be (MEMAGENT_NOTIFY_ALLOW_NETS);
	// the check is on the address dialled.
	NotifyHosts, NotifyAllowNets []string

	// S3Client, when set, is the S3 client the activities use, as it is:
	// the S3 fields below (endpoint, region, keys, addressing) and
	// AWSConfig are ignored. It lets a service share the client it has.
	S3Client *s3.Client
	// AWSConfig, when set (and S3Client is not), is the AWS configuration
	// (region, credentials, HTTP client, retryer) the S3 client is built
	// from; S3Endpoint and S3VirtualHostStyle still apply. Nil means the
	// SDK's default chain (environment, shared config, instance roles)
	// with S3Region and the static keys below, when set.
	AWSConfig *aws.Config
	// S3Endpoint is the base URL of an S3-compatible service, such as
	// http://127.0.0.1:9000 (AWS_ENDPOINT_URL_S3); empty means AWS itself.
	S3Endpoint string
	// S3Region is the bucket's region (AWS_REGION); empty means the SDK's
	// default chain, or us-east-1.
	S3Region string
	// S3AccessKeyID and S3SecretAccessKey, when both set, are static
	// credentials used instead of the SDK's default chain.
	S3AccessKeyID, S3SecretAccessKey string
	// S3VirtualHostStyle addresses buckets as bucket.host instead of the
	// default host/bucket, which most S3-compatible servers need.
	S3VirtualHostStyle bool
	// S3SSE asks S3 to encrypt every object memagent writes: "" (the
	// bucket's default), "AES256" or "aws:kms" (MEMAGENT_S3_SSE).
	S3SSE string
	// S3KMSKeyID is the KMS key for S3SSE "aws:kms"; empty means the
	// account's AWS-managed key (MEMAGENT_S3_KMS_KEY_ID).
	S3KMSKeyID string

	// ModelURLs are the OpenAI-compatible base URLs of the model servers,
	// including /v1 (OPENAI_BASE_URL, comma-separated); several form a
	// pool, balanced by requests in flight. Required.
	ModelURLs []string
	// ModelAPIKey is sent as a bearer token to every model server
	// (OPENAI_API_KEY), or as Azure's api-key header with ModelAPI
	// "azure" (AZURE_OPENAI_API_KEY); empty sends none.
	ModelAPIKey string
	// ModelAPI is the servers' dialect: "openai" (the default: OpenAI and
	// compatible servers such as vLLM and SGLang) or "azure" (Azure
	// OpenAI: ModelURLs is the resource endpoint, AZURE_OPENAI_ENDPOINT,
	// and Model the deployment) (MEMAGENT_MODEL_API).
	ModelAPI string
	// ModelAPIVersion is Azure OpenAI's api-version; empty means the
	// client's default (OPENAI_API_VERSION).
	ModelAPIVersion string
	// ModelContext is the model's context length in tokens, for servers
	// that do not report it (Azure, most hosted APIs); 0 means what the
	// server reports (MEMAGENT_MODEL_CONTEXT).
	ModelContext int
	// ModelFamily names the model's family when the served name does not
	// (an Azure deployment called "prod", say), so the tokenizer check
	// knows it: "gpt-4o", "qwen2.5", ... (MEMAGENT_MODEL_FAMILY).
	ModelFamily string
	// Model is the served model name requests use when they name none
	// (MEMAGENT_MODEL); empty means the first one the server lists.
	Model string
	// ModelTimeout bounds one model request; default DefaultModelTimeout.
	ModelTimeout time.Duration
	// ModelMaxInFlight caps the requests in flight per model server
	// (MEMAGENT_MAX_IN_FLIGHT); 0 means the pool's default.
	ModelMaxInFlight int
	// ModelPriority says how each model server is told a request's
	// priority, so that its own queue orders requests by it
	// (MEMAGENT_MODEL_PRIORITY, comma-separated): "vllm" (a vLLM server
	// started with --scheduling-policy priority), "sglang" (SGLang with
	// --enable-priority-scheduling) or "off" (none, the default). One
	// value applies to every server; one for each of ModelURLs, in order,
	// gives each its own, for a pool that mixes them. docs/DEPLOY.md has
	// the mapping from memagent's priorities 1–5 to each server's.
	ModelPriority []string
	// ModelPriorityHold says which calls hold back the others at a model
	// server (MEMAGENT_MODEL_PRIORITY_HOLD): while a call of this
	// priority or a more urgent one runs at a server, the worker starts
	// no new less urgent call there (they wait in its queue, and start
	// when the urgent calls are done, at another server, or after
	// inference.MaxHold at the most); calls already at the server run on.
	// "on" (questions, priority 2, hold back reviews and batches), "off",
	// or a priority 1–4; "" means DefaultModelPriorityHold. On vLLM and
	// SGLang a call that starts has its prompt prefilled in the steps the
	// running calls decode in: docs/DEPLOY.md has the measurement.
	ModelPriorityHold string
	// ModelPriorityReserve is how many calls a model server told
	// priorities by ModelPriority ("vllm" or "sglang") may take beyond
	// ModelMaxInFlight, for urgent ones only: a call of priority 2 (a
	// question) or more urgent, when a less urgent call is outstanding at
	// that server, goes there at once instead of waiting in the worker
	// for a call to end, and the server preempts the less urgent sequence
	// for it (MEMAGENT_MODEL_PRIORITY_RESERVE). Less urgent calls never
	// exceed ModelMaxInFlight, reserved calls counted. "auto" (a quarter
	// of the in-flight cap, at least 1), "off" (or "0"), or a number of
	// calls 1–1024; "" means DefaultModelPriorityReserve. Servers with
	// priority off get none: they would only queue the call.
	ModelPriorityReserve string
	// ModelPriorityEvict is how young a less urgent call at a model
	// server told priorities by ModelPriority ("vllm" or "sglang") may be
	// for the worker to stop it when an urgent call (one that holds it
	// back: ModelPriorityHold, which must be on) starts there or waits
	// for a slot (MEMAGENT_MODEL_PRIORITY_EVICT). The server frees a
	// sequence whose client goes away, so the urgent call's steps run
	// without the stopped calls' prompts; each stopped call goes back to
	// the worker's queue and is sent again once the hold lets it, at most
	// once stopped. It was not completed, so nothing is paid twice, but
	// the GPU time it had is lost. "off", "on" (calls started in the last
	// inference.DefaultPriorityEvict) or a duration up to 10m; "" means
	// DefaultModelPriorityEvict.
	ModelPriorityEvict string

	// Tokenizers returns the tokenizer a request names (its
	// options.tokenizer; activities.DefaultTokenizer when it names none),
	// with which chunks and budgets are counted. Nil means the built-in
	// ones, activities.NewTokenizer.
	Tokenizers func(name string) (activities.Tokenizer, error)
	// UpdateTemplate and FinalTemplate are paths of prompt template files;
	// empty means the built-in prompts. See activities.ParseTemplates.
	UpdateTemplate, FinalTemplate string
	// Limits bound the documents a worker accepts; zero fields mean the
	// defaults (4 GiB, a million chunks).
	Limits activities.Limits
	// OCRCommand is the Tesseract binary that reads scanned PDF pages
	// (MEMAGENT_TESSERACT): "" finds tesseract on PATH, "none" turns OCR
	// off. Limits bound the engine (OCRWorkers, OCRPageTimeout,
	// OCRMemoryBytes).
	OCRCommand string
	// ChunkCacheMB bounds each worker's cache of chunk bytes, which lets
	// the questions of a review share each chunk's S3 read
	// (MEMAGENT_CHUNK_CACHE_MB); 0 means 64, -1 turns it off.
	ChunkCacheMB int

	// Concurrency caps activities running at once in a worker when the
	// host left worker.Options.MaxConcurrentActivityExecutionSize unset;
	// default four times the model pool's capacity.
	Concurrency int
	// RateLimit caps activities started per second on the task queue,
	// across workers, when the host left
	// worker.Options.TaskQueueActivitiesPerSecond unset
	// (MEMAGENT_RATE_LIMIT); 0 means none.
	RateLimit float64
	// StopTimeout is how long a stopping worker lets in-flight model calls
	// finish when the host left worker.Options.WorkerStopTimeout unset
	// (MEMAGENT_STOP_TIMEOUT); default DefaultStopTimeout.
	StopTimeout time.Duration
	// TaskQueue is the task queue the plugin expects to serve
	// (MEMAGENT_TASK_QUEUE); a worker on another queue is logged, as
	// starters must then name that queue. Empty logs nothing.
	TaskQueue string

	// DeploymentName, when set, turns Worker Versioning on for every
	// worker the plugin is attached to whose host left
	// worker.Options.DeploymentOptions unset: the worker polls as build
	// BuildID of this Worker Deployment (TEMPORAL_DEPLOYMENT_NAME), and
	// runs stay on the build that started them until they continue as new
	// (docs/DEPLOY.md, Upgrading). Empty: unversioned workers, as before.
	DeploymentName string
	// BuildID names the build (TEMPORAL_WORKER_BUILD_ID); empty means the
	// running binary's version: the version a tagged `go install` or an
	// -ldflags stamp gave it, else the commit of a clean checkout. Worker
	// start fails when neither is known.
	BuildID string

	// CodecKeys are the payload encryption keys (MEMAGENT_CODEC_KEYS or
	// MEMAGENT_CODEC_KEYS_FILE): the first encrypts, all decrypt. With
	// keys, the plugin offers its codec (Plugin.PayloadCodec,
	// Plugin.DataConverter) and codec server (Plugin.CodecHandler); it
	// installs a converter in the client only with InstallConverter.
	CodecKeys []CodecKey
	// InstallConverter, with CodecKeys, lets the plugin wrap the client's
	// data converter (the host's, or the SDK's default) in its codec, and
	// set an encrypting failure converter where the host set none. It
	// needs the plugin in client.Options.Plugins: a worker uses its
	// client's converter, so a worker whose client the plugin did not
	// configure refuses to start. Without it the plugin never touches a
	// converter.
	InstallConverter bool
	// CodecServer configures Plugin.CodecHandler: the bearer token it
	// requires and the browser origins it allows
	// (MEMAGENT_CODEC_TOKEN, MEMAGENT_CODEC_CORS_ORIGINS).
	CodecServer CodecHandlerOptions

	// StartTimeout bounds the checks of the bucket and the model server at
	// worker start; default DefaultStartTimeout.
	StartTimeout time.Duration
	// Logger defaults to slog.Default.
	Logger *slog.Logger
}

// s3 is the store o names: the one mapping from Options to the S3 client.
func (o Options) s3() s3store.Config {
	return s3store.Config{
		Client:           o.S3Client,
		AWSConfig:        o.AWSConfig,
		Endpoint:         secret.Endpoint(o.S3Endpoint),
		Region:           o.S3Region,
		AccessKeyID:      o.S3AccessKeyID,
		SecretAccessKey:  secret.Value(o.S3SecretAccessKey),
		VirtualHostStyle: o.S3VirtualHostStyle,
		SSE:              o.S3SSE,
		KMSKeyID:         o.S3KMSKeyID,
	}
}

// model is the model pool o names: the one mapping from Options to it.
func (o Options) model() assemble.Model {
	return assemble.Model{
		API:         inference.API(o.ModelAPI),
		URLs:        o.ModelURLs,
		APIKey:      secret.Value(o.ModelAPIKey),
		APIVersion:  o.ModelAPIVersion,
		Name:        o.Model,
		Family:      o.ModelFamily,
		Context:     o.ModelContext,
		Timeout:     o.ModelTimeout,
		MaxInFlight: o.ModelMaxInFlight,
		Priority:    o.ModelPriority,
		Hold:        o.modelPriorityHold(),
		Reserve:     o.modelPriorityReserve(),
		Evict:       o.modelPriorityEvict(),
	}
}

// buildID is BuildID, or the binary's version when unset.
func (o Options) buildID() string {
	if o.BuildID != "" {
		return o.BuildID
	}
	return buildinfo.BinaryVersion()
}

// withDefaults fills the zero fields that have defaults.
func (o Options) withDefaults() Options {
	if o.ModelTimeout <= 0 {
		o.ModelTimeout = DefaultModelTimeout
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = DefaultStopTimeout
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.ModelURLs = append([]string(nil), o.ModelURLs...)
	o.CodecKeys = append([]CodecKey(nil), o.CodecKeys...)
	return o
}

// capacity is the model pool's capacity as configured, or 0 when the model
// URLs do not parse (worker start reports that).
func (o Options) capacity() int {
	eps, err := inference.Endpoints(inference.APIOpenAI, o.ModelURLs, "", o.ModelMaxInFlight)
	if err != nil {
		return 0
	}
	n := 0
	for _, ep := range eps {
		if ep.MaxInFlight > 0 {
			n += ep.MaxInFlight
		} else {
			n += inference.DefaultMaxInFlight
		}
	}
	return n
}

// DefaultModelPriorityHold is ModelPriorityHold when unset.
const DefaultModelPriorityHold = "off"

// DefaultModelPriorityReserve is ModelPriorityReserve when unset.
const DefaultModelPriorityReserve = "off"

// DefaultModelPriorityEvict is ModelPriorityEvict when unset.
const DefaultModelPriorityEvict = "off"

// modelPriorityEvict is ModelPriorityEvict as the pool takes it; Validate
// has checked it.
func (o Options) modelPriorityEvict() time.Duration {
	d, _ := inference.ParsePriorityEvict(cmp.Or(o.ModelPriorityEvict, DefaultModelPriorityEvict))
	return d
}

// modelPriorityReserve is ModelPriorityReserve as the pool takes it;
// Validate has checked it.
func (o Options) modelPriorityReserve() int {
	n, _ := inference.ParsePriorityReserve(cmp.Or(o.ModelPriorityReserve, DefaultModelPriorityReserve))
	return n
}

// modelPriorityHold is ModelPriorityHold as the pool takes it; Validate has
// checked it.
func (o Options) modelPriorityHold() int {
	n, _ := inference.ParsePriorityHold(cmp.Or(o.ModelPriorityHold, DefaultModelPriorityHold))
	return n
}
