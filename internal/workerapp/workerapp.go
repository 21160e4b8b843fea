package workerapp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"go.opentelemetry.io/otel"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/codec"
	"github.com/memagent/memagent/internal/config"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/telemetry"
	"github.com/memagent/memagent/internal/tokenizer"
	"github.com/memagent/memagent/workflows"
)

// Options are the worker settings that are not connection settings.
type Options struct {
	// UpdateTemplate and FinalTemplate are paths of template files; empty
	// means the built-in prompts.
	UpdateTemplate, FinalTemplate string
	// Concurrency caps activities running at once in this worker; default
	// twice the model pool's capacity.
	Concurrency int
	Logger      *slog.Logger

	// S3Client, when set, is the S3 client the activities use as it is;
	// cfg's S3 endpoint, region, keys and addressing are then ignored.
	S3Client *s3.Client
	// AWSConfig, when set (and S3Client is not), replaces the SDK's default
	// configuration loading; cfg's S3 endpoint and addressing still apply.
	AWSConfig *aws.Config
	// Limits bound documents; zero fields mean the defaults.
	Limits activities.Limits
	// Tokenizers replaces the built-in tokenizers by name; nil means them.
	Tokenizers func(name string) (memagent.Tokenizer, error)
}

// Telemetry: the wiring below reports to the OpenTelemetry global
// providers, which telemetry.Setup installs and which are no-ops until then.

// NewStore builds the S3 store described by cfg. Its requests made under a
// span are traced.
func NewStore(ctx context.Context, cfg config.Config) (*s3store.Store, error) {
	return newStore(ctx, cfg, Options{})
}

// newStore is NewStore with the S3 client or AWS configuration of opts.
func newStore(ctx context.Context, cfg config.Config, opts Options) (*s3store.Store, error) {
	return s3store.New(ctx, s3store.Config{
		Client:           opts.S3Client,
		AWSConfig:        opts.AWSConfig,
		Endpoint:         cfg.S3Endpoint,
		Region:           cfg.S3Region,
		AccessKeyID:      cfg.S3AccessKey,
		SecretAccessKey:  cfg.S3SecretKey,
		VirtualHostStyle: !cfg.S3PathStyle,
		TracerProvider:   otel.GetTracerProvider(),
		MeterProvider:    otel.GetMeterProvider(),
		SSE:              cfg.S3SSE,
		KMSKeyID:         cfg.S3KMSKeyID,
	})
}

// NewModelPool builds the pool of model endpoints described by cfg. The
// caller starts its health checks with Start (a worker does; a CLI need not)
// and closes it.
func NewModelPool(cfg config.Config, logger *slog.Logger) (*inference.Pool, error) {
	parse := inference.ParseEndpoints
	if cfg.ModelAPI == inference.APIAzure {
		parse = inference.ParseAzureEndpoints
	}
	eps, err := parse(cfg.ModelBaseURL, cfg.ModelAPIKey, cfg.ModelMaxInFlight)
	if err != nil {
		return nil, err
	}
	return inference.NewPool(inference.PoolConfig{
		API: cfg.ModelAPI, Endpoints: eps, APIVersion: cfg.ModelAPIVersion,
		Model: cfg.Model, ModelFamily: cfg.ModelFamily, ContextLength: cfg.ModelContext,
		RequestTimeout: cfg.ModelTimeout, Logger: logger,
		TracerProvider: otel.GetTracerProvider(), MeterProvider: otel.GetMeterProvider(),
	})
}

// ModelLister is what ResolveModel needs of a model server.
type ModelLister interface {
	Models(ctx context.Context) ([]inference.ModelInfo, error)
}

// ResolveModel asks the server which models it serves: with no model
// configured it picks the first, with one configured it checks it is served.
// It returns the model name and its context length (0 when not reported).
func ResolveModel(ctx context.Context, m ModelLister, configured string) (string, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	models, err := m.Models(ctx)
	if err != nil {
		if configured != "" {
			// The pool may come up later; activities retry until it does.
			return configured, 0, nil
		}
		return "", 0, fmt.Errorf("list models: %w: set MEMAGENT_MODEL or check OPENAI_BASE_URL", err)
	}
	mi, err := FindModel(models, configured)
	if err != nil {
		return "", 0, err
	}
	return mi.ID, mi.MaxModelLen, nil
}

// FindModel picks a model from a server's list: the named one, or the first
// when name is empty. The error names what the server does serve.
func FindModel(models []inference.ModelInfo, name string) (inference.ModelInfo, error) {
	if len(models) == 0 {
		return inference.ModelInfo{}, errors.New("the model server lists no models: check OPENAI_BASE_URL")
	}
	if name == "" {
		return models[0], nil
	}
	i := slices.IndexFunc(models, func(mi inference.ModelInfo) bool { return mi.ID == name })
	if i < 0 {
		ids := make([]string, len(models))
		for j, mi := range models {
			ids[j] = mi.ID
		}
		return inference.ModelInfo{}, fmt.Errorf("model %q is not served at the model URL (it serves %v): fix --model / MEMAGENT_MODEL", name, ids)
	}
	return models[i], nil
}

// LoadTemplates reads template files, falling back to the built-in prompts.
func LoadTemplates(updatePath, finalPath string) (memagent.Templates, error) {
	t := memagent.DefaultTemplates()
	update, final := t.Update, t.Final
	if updatePath != "" {
		b, err := os.ReadFile(updatePath)
		if err != nil {
			return t, fmt.Errorf("read update template: %w", err)
		}
		update = string(b)
	}
	if finalPath != "" {
		b, err := os.ReadFile(finalPath)
		if err != nil {
			return t, fmt.Errorf("read final template: %w", err)
		}
		final = string(b)
	}
	return memagent.ParseTemplates(update, final)
}

// NewActivities builds the activities with all their dependencies, checking
// that the store's bucket and the model server answer. It also returns the
// model pool, which the caller starts (health checks) and closes.
func NewActivities(ctx context.Context, cfg config.Config, opts Options) (*activities.Activities, *inference.Pool, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	templates, err := LoadTemplates(opts.UpdateTemplate, opts.FinalTemplate)
	if err != nil {
		return nil, nil, err
	}
	store, err := newStore(ctx, cfg, opts)
	if err != nil {
		return nil, nil, err
	}
	if err := store.EnsureBucket(ctx, cfg.Bucket, cfg.CreateBucket); err != nil {
		return nil, nil, BucketError(cfg.Bucket, err)
	}
	pool, err := NewModelPool(cfg, logger)
	if err != nil {
		return nil, nil, err
	}
	name, maxLen, err := ResolveModel(ctx, pool, cfg.Model)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	tokenizers := opts.Tokenizers
	if tokenizers == nil {
		tokenizers = tokenizer.New
	}
	tok, err := tokenizers(api.DefaultTokenizer)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	metrics, err := activities.NewMetrics(otel.GetMeterProvider())
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	checkTokenizer(ctx, pool, name, tok, logger)
	adviseHostedModel(cfg, name, maxLen, tok, logger)
	logger.Info("model resolved", "model", name, "max_model_len", maxLen, "endpoints", len(pool.Stats()), "capacity", pool.Capacity())
	acts := &activities.Activities{
		Store:         store,
		Model:         pool,
		DefaultModel:  name,
		MaxModelLen:   maxLen,
		Bucket:        cfg.Bucket,
		ReadPrefixes:  cfg.ReadPrefixes,
		WritePrefixes: cfg.WritePrefixes,
		Templates:     templates,
		Tokenizers:    tokenizers,
		Logger:        logger,
		Metrics:       metrics,
		Limits:        opts.Limits,
	}
	if acts.Limits.MaxConvertedBytes == 0 {
		acts.Limits.MaxConvertedBytes = int64(cfg.MaxConvertedMB) << 20
	}
	if acts.Limits.PDFMemoryBytes == 0 {
		acts.Limits.PDFMemoryBytes = int64(cfg.PDFMemoryMB) << 20
	}
	if acts.Limits.ConvertTimeout == 0 {
		acts.Limits.ConvertTimeout = cfg.ConvertTimeout
	}
	switch {
	case cfg.ChunkCacheMB < 0:
		acts.Chunks.MaxBytes = -1
	case cfg.ChunkCacheMB > 0:
		acts.Chunks.MaxBytes = int64(cfg.ChunkCacheMB) << 20
	}
	if err := metrics.ObserveChunkCache(&acts.Chunks); err != nil {
		pool.Close()
		return nil, nil, err
	}
	return acts, pool, nil
}

// tokenizerProbe mixes the kinds of text on which tokenizers disagree.
const tokenizerProbe = "MemAgent reads 1,234,567 tokens: café, naïve, 東京, 😀, func(x int) {\n\treturn x*2\n}  "

// checkTokenizer compares the chunking tokenizer with the server's own
// (POST /tokenize) on a probe. A mismatch means chunk budgets are counted in
// the wrong units; it is worth a warning, not a refusal to start. Servers
// without /tokenize are skipped.
func checkTokenizer(ctx context.Context, pool *inference.Pool, model string, tok memagent.Tokenizer, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, err := pool.Tokenize(ctx, model, tokenizerProbe)
	if err != nil {
		logger.Debug("server tokenizer not checked", "err", err)
		return
	}
	if local := tok.Count(tokenizerProbe); local != n {
		logger.Warn("the server's tokenizer disagrees with the chunking tokenizer: chunk budgets may be off; set --tokenizer to the model's",
			"tokenizer", tok.Name(), "local_tokens", local, "server_tokens", n)
	}
}

// adviseHostedModel says at start what a hosted model's configuration
// leaves to chance: an unknown context length (Azure reports none), and
// chunk budgets counted with another tokenizer than the model's own (the
// default is Qwen's, the published MemAgent models'; OpenAI's models use
// o200k_base or cl100k_base, chosen per request with options.tokenizer).
func adviseHostedModel(cfg config.Config, model string, maxLen int, tok memagent.Tokenizer, logger *slog.Logger) {
	if maxLen == 0 && cfg.ModelAPI == inference.APIAzure {
		logger.Warn("Azure OpenAI reports no context length: set MEMAGENT_MODEL_CONTEXT to the deployment's, so that a prompt that cannot fit fails before it is sent",
			"model", model)
	}
	if want := tokenizer.ForModel(cmp.Or(cfg.ModelFamily, model)); want != "" && want != tok.Name() {
		logger.Warn("the model's tokenizer is not the default one: chunk sizes are counted in the default's tokens; ask with --tokenizer "+want+" (options.tokenizer) for exact ones",
			"model", model, "model_tokenizer", want, "default_tokenizer", tok.Name())
	}
}

// NewWorker creates a Temporal worker on cfg.TaskQueue with memagent's
// workflows and the given activities registered. Its activity slots default
// to twice the model pool's capacity: the extra calls wait inside the pool
// (heartbeating), so a freed model slot goes to a waiting call at once
// rather than after a task-queue poll. (An earlier bench, since removed,
// measured the gain; no current figure in BENCHMARKS.md isolates it.)
func NewWorker(c client.Client, cfg config.Config, acts *activities.Activities, capacity int, opts Options) worker.Worker {
	n := opts.Concurrency
	if n <= 0 {
		n = 2 * capacity
	}
	if n <= 0 {
		n = 8
	}
	w := worker.New(c, cfg.TaskQueue, worker.Options{
		MaxConcurrentActivityExecutionSize: n,
		TaskQueueActivitiesPerSecond:       cfg.RateLimit,
		// Let in-flight model calls finish on a graceful stop (30s unless
		// MEMAGENT_STOP_TIMEOUT says otherwise); what does not finish is
		// cancelled, fails its attempt as retryable and runs elsewhere.
		WorkerStopTimeout: cfg.WorkerStopTimeout(),
	})
	workflows.Register(w)
	acts.Register(w)
	return w
}

// Dial connects a Temporal client. The client, and every worker created
// from it, carries the SDK's OpenTelemetry tracing interceptor (a span for
// each workflow and activity started and run, parented across processes
// through Temporal headers; queries are not traced) and reports the SDK's
// metrics. With cfg.CodecKeys it encrypts every payload it writes
// (workflow and activity inputs and results, queries, memo, user metadata)
// and the message and stack trace of every failure; search attributes stay
// plaintext, as Temporal indexes them.
func Dial(ctx context.Context, cfg config.Config, logger *slog.Logger) (client.Client, error) {
	if logger == nil {
		logger = slog.Default()
	}
	dc, fc, err := Converters(cfg)
	if err != nil {
		return nil, err
	}
	tracing, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
		Tracer: otel.GetTracerProvider().Tracer(telemetry.TemporalMeterName),
		// The CLI polls the progress query every few seconds: a span each
		// would bury a long run's trace.
		DisableQueryTracing: true,
	})
	if err != nil {
		return nil, fmt.Errorf("temporal tracing: %w", err)
	}
	conn, creds, err := cfg.TemporalConnection()
	if err != nil {
		return nil, err
	}
	for _, d := range cfg.Deprecations {
		logger.Warn(d)
	}
	c, err := client.DialContext(ctx, client.Options{
		HeadersProvider:   cfg.TemporalHeaders(),
		HostPort:          cfg.TemporalAddress,
		Namespace:         cfg.TemporalNamespace,
		ConnectionOptions: conn,
		Credentials:       creds,
		Logger:            newTemporalLogger(logger),
		Interceptors:      []interceptor.ClientInterceptor{tracing},
		DataConverter:     dc,
		FailureConverter:  fc,
		MetricsHandler: temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
			Meter:                otel.GetMeterProvider().Meter(telemetry.TemporalMeterName),
			UseMonotonicCounters: true,
			// The default panics.
			OnError: func(err error) { logger.Warn("temporal sdk metric", "err", err) },
		}),
	})
	if err != nil {
		if cfg.TemporalAddress == config.DevTemporalAddress {
			return nil, fmt.Errorf("connect to Temporal at %s: %w (is the dev stack up? start it with `go run ./devstack`, or set TEMPORAL_ADDRESS)", cfg.TemporalAddress, err)
		}
		return nil, fmt.Errorf("connect to Temporal at %s (TEMPORAL_ADDRESS): %w: check that the server is up and reachable from here", cfg.TemporalAddress, err)
	}
	return c, nil
}

// Converters returns the data and failure converters for cfg: the SDK's
// defaults without codec keys (nil, nil), else both wrapped in the codec.
// Failures are encoded too, since their messages may quote what a model
// said about a document.
func Converters(cfg config.Config) (converter.DataConverter, converter.FailureConverter, error) {
	if len(cfg.CodecKeys) == 0 {
		return nil, nil, nil
	}
	c, err := codec.New(cfg.CodecKeys)
	if err != nil {
		return nil, nil, err
	}
	dc := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)
	fc := temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{
		DataConverter:          dc,
		EncodeCommonAttributes: true,
	})
	return dc, fc, nil
}

// CodecServer returns the codec server for cfg (decrypting payloads for the
// Temporal UI and CLI, behind cfg.CodecToken and CORS for cfg.CodecOrigins),
// or nil when no codec keys are configured.
func CodecServer(cfg config.Config) (http.Handler, error) {
	if len(cfg.CodecKeys) == 0 {
		return nil, nil
	}
	c, err := codec.New(cfg.CodecKeys)
	if err != nil {
		return nil, err
	}
	return codec.NewServer(c, codec.ServerOptions{Token: cfg.CodecToken, AllowOrigins: cfg.CodecOrigins,
		AllowHosts: cfg.CodecHosts, AllowEncode: cfg.CodecEncode}), nil
}

// BucketError says what to do about a bucket that cannot be used.
func BucketError(bucket string, err error) error {
	switch {
	case errors.Is(err, s3store.ErrBucketMissing):
		return fmt.Errorf("bucket %s does not exist: fix MEMAGENT_BUCKET (--bucket), create the bucket, or let memagent create it with MEMAGENT_CREATE_BUCKET=true (--create-bucket)", bucket)
	case errors.Is(err, s3store.ErrBadCredentials):
		return fmt.Errorf("bucket %s: the S3 service does not accept these credentials (%v): check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or the role the worker runs as", bucket, err)
	case errors.Is(err, s3store.ErrAccessDenied):
		return fmt.Errorf("bucket %s: access denied: the credentials are valid but may not use this bucket; grant s3:ListBucket, s3:GetObject and s3:PutObject on it (docs/DEPLOY.md)", bucket)
	}
	return fmt.Errorf("bucket %s: %w", bucket, err)
}
