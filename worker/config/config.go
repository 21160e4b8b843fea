package config

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/memagent/memagent/internal/buildinfo"
	"github.com/memagent/memagent/internal/clientconf"
	"github.com/memagent/memagent/internal/codec"
	"github.com/memagent/memagent/internal/devaddr"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/secret"
	"github.com/memagent/memagent/internal/settings"
	"github.com/memagent/memagent/plugin"
)

// Addresses of the embedded dev stack, which the worker and the starter
// find without any environment (the rest are internal/devaddr's).
const (
	DevTemporalAddress = devaddr.TemporalAddress
	DevUIURL           = devaddr.UIURL
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
// TEMPORAL_CLIENT_AUTHORITY and TEMPORAL_GRPC_META_*. memagent's former
// names TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY and TEMPORAL_TLS_CA are refused
// with the name to use (CHANGELOG.md).
type Config struct {
	// Options are the plugin's settings: the bucket and the areas a run
	// may use, S3, the model servers, the limits, the codec, the worker's
	// rate limit, stop timeout and deployment (plugin.OptionsFromEnv reads
	// them; FromEnv through plugin.OptionsFromLookup).
	plugin.Options
	// Host are the settings of memagent's own programs, which host the
	// plugin or are clients of its workflows.
	Host
}

// Host are the settings of memagent's worker and CLI beside the plugin's:
// the Temporal connection, logging and the worker's HTTP endpoint.
type Host struct {
	// Temporal is the Temporal connection, read as a client reads it
	// (clientconf.Temporal: envconfig's variables and profile).
	clientconf.Temporal

	// ModelConfigured says the environment names a model server
	// (OPENAI_BASE_URL, or MEMAGENT_MODEL_API=azure): `devstack` then
	// uses it instead of starting the simulator.
	ModelConfigured bool

	LogLevel slog.Level

	// HTTPAddr is where a worker serves /metrics, /healthz, /readyz and,
	// with CodecKeys, the codec server under /codec/; empty disables the
	// endpoint.
	HTTPAddr string
}

// WorkerBuildID is BuildID, or this binary's version when unset.
func (c Config) WorkerBuildID() string {
	if c.BuildID != "" {
		return c.BuildID
	}
	return buildinfo.BinaryVersion()
}

// WorkerStopTimeout is StopTimeout, or plugin.DefaultStopTimeout when
// unset.
func (c Config) WorkerStopTimeout() time.Duration {
	if c.StopTimeout <= 0 {
		return plugin.DefaultStopTimeout
	}
	return c.StopTimeout
}

// DefaultHTTPAddr is the worker's HTTP endpoint by default: loopback only,
// on the port OpenTelemetry's Prometheus exporters conventionally use.
const DefaultHTTPAddr = "127.0.0.1:9464"

// Default returns the configuration that talks to the embedded dev stack:
// plugin.DevOptions, and the host's own defaults.
func Default() Config {
	return Config{
		Options: plugin.DevOptions(),
		Host: Host{
			Temporal: clientconf.Temporal{TemporalAddress: DevTemporalAddress, TemporalNamespace: "default"},
			LogLevel: slog.LevelInfo,
			HTTPAddr: DefaultHTTPAddr,
		},
	}
}

// FromEnv returns Default overridden by the environment (lookup is
// os.LookupEnv in production, a map in tests): the Temporal connection as
// envconfig reads it, then the plugin's settings as
// plugin.OptionsFromLookup reads them, then the host's own. The error
// names the first variable that does not parse.
func FromEnv(lookup func(string) (string, bool)) (Config, error) {
	c := Default()
	if err := c.LoadTemporal(settings.FirstSet(lookup)); err != nil {
		return c, err
	}
	o, err := plugin.OptionsFromLookup(lookup)
	c.Options = o
	if err != nil {
		return c, err
	}
	if err := settings.Apply(&c.Host, hostSettings, lookup); err != nil {
		return c, err
	}
	_, urlSet := settings.FirstSet(lookup)("OPENAI_BASE_URL")
	c.ModelConfigured = urlSet || c.ModelAPI == string(inference.APIAzure)
	return c, nil
}

// hostSettings are the variables FromEnv reads after the plugin's.
var hostSettings = []settings.Row[Host]{
	{Names: []string{"MEMAGENT_LOG_LEVEL"}, Set: func(h *Host, name, v string) error {
		if err := h.LogLevel.UnmarshalText([]byte(v)); err != nil {
			return fmt.Errorf("%s %q: use debug, info, warn or error", name, v)
		}
		return nil
	}},
	{Names: []string{"MEMAGENT_HTTP_ADDR"}, EmptyCounts: true, Set: settings.Text(func(h *Host) *string { return &h.HTTPAddr })},
}

// EnvNames are the variables FromEnv reads through its tables (the
// Temporal connection's are envconfig's, read besides).
func EnvNames() []string { return append(plugin.EnvNames(), settings.Names(hostSettings)...) }

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
	fs.StringVar(&c.S3Endpoint, "s3-endpoint", c.S3Endpoint, `S3-compatible endpoint URL, or "aws" (AWS_ENDPOINT_URL_S3)`)
	fs.StringVar(&c.Bucket, "bucket", c.Bucket, "bucket for uploads, indexes, traces and results (MEMAGENT_BUCKET)")
	fs.BoolVar(&c.CreateBucket, "create-bucket", c.CreateBucket, "create the bucket if it is missing (MEMAGENT_CREATE_BUCKET); otherwise a missing bucket is an error")
	fs.StringVar(&c.Model, "model", c.Model, "served model name, or the Azure deployment; empty = the server's first model (MEMAGENT_MODEL)")
}

// RegisterWorkerFlags binds the flags only a worker uses: the model
// server and the worker's limits.
func (c *Config) RegisterWorkerFlags(fs *flag.FlagSet) {
	fs.Var((*urlList)(&c.ModelURLs), "model-url", "OpenAI-compatible base URL including /v1, or several comma-separated (OPENAI_BASE_URL); with --model-api azure the resource's endpoint (AZURE_OPENAI_ENDPOINT)")
	fs.StringVar(&c.ModelAPI, "model-api", c.ModelAPI, "the model server's API: openai (OpenAI and compatible servers such as vLLM) or azure (MEMAGENT_MODEL_API)")
	fs.IntVar(&c.ModelContext, "model-context", c.ModelContext, "the model's context length in tokens; 0 = what the server reports (MEMAGENT_MODEL_CONTEXT; Azure reports none)")
	fs.Var((*urlList)(&c.ModelPriority), "model-priority", "how each model server is told a request's priority: vllm (--scheduling-policy priority), sglang (--enable-priority-scheduling) or off, one for all or one per --model-url (MEMAGENT_MODEL_PRIORITY)")
	fs.StringVar(&c.ModelPriorityHold, "model-priority-hold", c.ModelPriorityHold, "while a call of this priority or a more urgent one runs at a model server, start no new less urgent call there: on (questions, 2), off, or 1-4; default "+plugin.DefaultModelPriorityHold+" (MEMAGENT_MODEL_PRIORITY_HOLD)")
	fs.StringVar(&c.ModelPriorityReserve, "model-priority-reserve", c.ModelPriorityReserve, "urgent calls (priority 2 or more urgent) a model server told priorities by --model-priority may take beyond --max-in-flight, for it to preempt less urgent ones: auto (a quarter of the cap), off, or 1-1024; default "+plugin.DefaultModelPriorityReserve+" (MEMAGENT_MODEL_PRIORITY_RESERVE)")
	fs.StringVar(&c.ModelPriorityEvict, "model-priority-evict", c.ModelPriorityEvict, "stop a less urgent call that started at a model server told priorities by --model-priority within this long when an urgent one (held back by --model-priority-hold, which must be on) needs the server, and send it again later: off, on ("+inference.DefaultPriorityEvict.String()+") or a duration up to 10m; default "+plugin.DefaultModelPriorityEvict+" (MEMAGENT_MODEL_PRIORITY_EVICT)")
	fs.IntVar(&c.ModelMaxInFlight, "max-in-flight", c.ModelMaxInFlight, "requests in flight per model endpoint; 0 = default (MEMAGENT_MAX_IN_FLIGHT)")
	fs.IntVar(&c.ChunkCacheMB, "chunk-cache-mb", c.ChunkCacheMB, "megabytes of chunks a review's questions share in this worker; 0 = default 64, -1 = off (MEMAGENT_CHUNK_CACHE_MB)")
	fs.Float64Var(&c.RateLimit, "rate-limit", c.RateLimit, "activities started per second on the task queue, all workers together; 0 = none (MEMAGENT_RATE_LIMIT)")
	fs.DurationVar(&c.ModelTimeout, "model-timeout", c.ModelTimeout, "deadline of one model request (MEMAGENT_MODEL_TIMEOUT)")
}

// Normalize resolves the "aws" endpoint marker. Call it after flags are parsed.
func (c *Config) Normalize() {
	if c.S3Endpoint == s3store.AWSEndpoint {
		c.S3Endpoint = ""
	}
}

// Validate reports every setting that cannot work, each naming what to
// change: the plugin's settings by plugin.Options.Validate, in the
// worker's words (the variable and the flag, from flagOf), and the
// settings of the worker's host (the Temporal connection, the HTTP
// endpoint, the codec server) here.
func (c Config) Validate() error {
	errs := []error{c.Options.Validate(settingName)}
	for _, check := range []func() []error{c.validateRequired, c.validateHost, c.validateCodec} {
		errs = append(errs, check()...)
	}
	return errors.Join(errs...)
}

// flagOf is the worker's flag of each plugin setting that has one, by its
// Options field: the one table settingName reads.
var flagOf = map[string]string{
	"TaskQueue": "task-queue", "S3Endpoint": "s3-endpoint", "Bucket": "bucket", "CreateBucket": "create-bucket",
	"Model": "model", "ModelURLs": "model-url", "ModelAPI": "model-api", "ModelContext": "model-context",
	"ModelMaxInFlight": "max-in-flight", "ModelPriority": "model-priority", "ModelPriorityHold": "model-priority-hold", "ModelPriorityReserve": "model-priority-reserve", "ModelPriorityEvict": "model-priority-evict", "ChunkCacheMB": "chunk-cache-mb", "RateLimit": "rate-limit",
	"ModelTimeout": "model-timeout", "StopTimeout": "stop-timeout", "DeploymentName": "deployment-name", "BuildID": "build-id",
}

// FlagNames are the flags flagOf names, for the test that each is one the
// worker registers.
func FlagNames() []string {
	names := make([]string, 0, len(flagOf))
	for _, f := range flagOf {
		names = append(names, f)
	}
	slices.Sort(names)
	return names
}

// settingName names a plugin setting as an operator of the worker sets it:
// its variables, then its flag ("MEMAGENT_BUCKET or --bucket").
func settingName(field string, env []string) string {
	names := slices.Clone(env)
	if f, ok := flagOf[field]; ok {
		names = append(names, "--"+f)
	}
	if len(names) == 0 {
		return field
	}
	return strings.Join(names, " or ")
}

// validateRequired checks the host's settings that have to be set.
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
	return errs
}

// validateHost checks the worker's HTTP endpoint and its Temporal
// connection.
func (c Config) validateHost() []error {
	var errs []error
	if c.HTTPAddr != "" {
		if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
			errs = append(errs, fmt.Errorf("HTTP address %q is not host:port (e.g. 127.0.0.1:9464, or :9464 for every interface; empty disables it): set MEMAGENT_HTTP_ADDR or --http-addr", c.HTTPAddr))
		}
	}
	if _, _, err := c.TemporalConnection(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// validateCodec checks the payload keys, and that a codec server others
// can reach requires a token.
func (c Config) validateCodec() []error {
	if len(c.CodecKeys) == 0 {
		return nil
	}
	var errs []error
	if _, err := c.Codec(); err != nil {
		errs = append(errs, fmt.Errorf("%w (MEMAGENT_CODEC_KEYS_FILE or MEMAGENT_CODEC_KEYS)", err))
	}
	if c.CodecServer.Token == "" && c.HTTPAddr != "" && !loopback(c.HTTPAddr) {
		errs = append(errs, fmt.Errorf("the codec server on %s would decrypt runs for anyone who reaches it: set MEMAGENT_CODEC_TOKEN, or serve on 127.0.0.1 (MEMAGENT_HTTP_ADDR)", c.HTTPAddr))
	}
	return errs
}

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

// urlList is a comma-separated flag (--model-url, --model-priority).
type urlList []string

func (u *urlList) String() string { return strings.Join(*u, ",") }

func (u *urlList) Set(v string) error {
	*u = settings.Split(v)
	return nil
}

// Codec is the payload codec of CodecKeys (nil, nil without keys).
func (c Config) Codec() (*codec.Codec, error) {
	if len(c.CodecKeys) == 0 {
		return nil, nil
	}
	keys := make([]codec.Key, len(c.CodecKeys))
	for i, k := range c.CodecKeys {
		keys[i] = codec.Key{ID: k.ID, Raw: secret.Value(k.Key)}
	}
	return codec.New(keys)
}

// AtDevStack points c at a running dev stack: Temporal, S3 (with the
// stack's credentials) and, when the simulator runs, the model (replacing
// every model setting; without the simulator c's model is left as it is).
// devenv.Env's Addresses say where a stack is.
func (c Config) AtDevStack(s devaddr.Stack) Config {
	c.TemporalAddress = s.TemporalAddress
	c.TemporalNamespace = s.Namespace
	c.S3Endpoint = s.S3Endpoint
	c.S3Region = s.Region
	c.S3AccessKeyID, c.S3SecretAccessKey = s.S3AccessKey, s.S3SecretKey
	c.S3VirtualHostStyle = false
	c.Bucket = s.Bucket
	c.CreateBucket = true
	// The stack's receivers (tests, a local webhook) are on this machine.
	c.NotifyAllowNets = []string{"127.0.0.0/8", "::1/128"}
	if s.SimulatorURL != "" {
		c.ModelAPI = string(inference.APIOpenAI)
		c.ModelURLs = []string{s.SimulatorURL}
		c.ModelAPIKey = ""
		c.Model = ""
		c.ModelFamily = ""
		c.ModelContext = 0
		// The stack's simulator schedules first come, first served.
		c.ModelPriority = nil
	}
	return c
}

// Client is the part of c a client of the workflows uses (the starter,
// the review desk, a test driving the CLI): the same Temporal connection,
// task queue, bucket, S3 service, model and codec keys.
func (c Config) Client() clientconf.Config {
	keys := make([]codec.Key, len(c.CodecKeys))
	for i, k := range c.CodecKeys {
		keys[i] = codec.Key{ID: k.ID, Raw: secret.Value(k.Key)}
	}
	if len(keys) == 0 {
		keys = nil
	}
	return clientconf.Config{
		Temporal:           c.Temporal,
		TaskQueue:          c.TaskQueue,
		Bucket:             c.Bucket,
		CreateBucket:       c.CreateBucket,
		Model:              c.Model,
		S3Endpoint:         c.S3Endpoint,
		S3Region:           c.S3Region,
		S3AccessKeyID:      c.S3AccessKeyID,
		S3SecretAccessKey:  c.S3SecretAccessKey,
		S3VirtualHostStyle: c.S3VirtualHostStyle,
		S3SSE:              c.S3SSE,
		S3KMSKeyID:         c.S3KMSKeyID,
		CodecKeys:          keys,
		LogLevel:           c.LogLevel,
	}
}
