package assemble

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"go.opentelemetry.io/otel"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/config"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/notify"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/searchattrs"
	"github.com/memagent/memagent/internal/tokenizer"
	"github.com/memagent/memagent/workflows"
)

// Options are the worker settings that are not connection settings.
type Options struct {
	// UpdateTemplate and FinalTemplate are paths of template files; empty
	// means the built-in prompts.
	UpdateTemplate, FinalTemplate string
	// Concurrency caps activities running at once in this worker; default
	// four times the model pool's capacity (ActivitySlotsPerModelSlot).
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
	eps, err := parse(string(cfg.ModelBaseURL), string(cfg.ModelAPIKey), cfg.ModelMaxInFlight)
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
	nets, err := notify.ParseNets(cfg.NotifyAllowNets)
	if err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("%w (MEMAGENT_NOTIFY_ALLOW_NETS)", err)
	}
	acts := &activities.Activities{
		Store:         store,
		Model:         pool,
		DefaultModel:  name,
		MaxModelLen:   maxLen,
		Bucket:        cfg.Bucket,
		ReadPrefixes:  cfg.ReadPrefixes,
		WritePrefixes: cfg.WritePrefixes,
		ClaimRoots:    cfg.ClaimRoots,
		ClaimDepth:    cfg.ClaimDepth,
		NotifyPolicy:  notify.Policy{Hosts: cfg.NotifyHosts, AllowNets: nets},
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
	if acts.Limits.OCRWorkers == 0 {
		acts.Limits.OCRWorkers = cfg.OCRWorkers
	}
	if acts.Limits.OCRPageTimeout == 0 {
		acts.Limits.OCRPageTimeout = cfg.OCRPageTimeout
	}
	if acts.Limits.OCRMemoryBytes == 0 {
		acts.Limits.OCRMemoryBytes = int64(cfg.OCRMemoryMB) << 20
	}
	acts.OCRCommand = cfg.OCRCommand
	logOCR(acts.OCR(ctx), logger)
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

// logOCR says at start whether the worker reads scanned pages.
func logOCR(s activities.OCRStatus, logger *slog.Logger) {
	if s.Err != nil {
		logger.Warn("no OCR: a scanned PDF page fails its document as memagent.BadInput; install Debian's tesseract-ocr and tesseract-ocr-<lang> packages on the worker to read scans",
			"err", s.Err)
		return
	}
	logger.Info("OCR available", "engine", s.Engine, "languages", strings.Join(s.Languages, "+"), "pages_at_once", s.Workers)
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

// CheckSearchAttributes makes sure the namespace has memagent's search
// attributes before a worker polls: a run that upserts an unregistered
// attribute would sit in a failing workflow task for good. It registers
// the missing ones where the server allows it (the dev stack, an admin
// key) and otherwise fails, naming `starter setup`.
func CheckSearchAttributes(ctx context.Context, c client.Client, namespace string, logger *slog.Logger) error {
	added, err := searchattrs.Ensure(ctx, c.OperatorService(), namespace, workflows.SearchAttributes(), true)
	var missing *searchattrs.MissingError
	switch {
	case errors.As(err, &missing):
		return fmt.Errorf("%w: run `starter setup` with an account that may add search attributes (or `temporal operator search-attribute create`, or tcld on Temporal Cloud), then start the worker again", err)
	case err != nil:
		return fmt.Errorf("check search attributes: %w", err)
	}
	if len(added) > 0 && logger != nil {
		logger.Info("registered memagent's search attributes", "namespace", namespace, "added", added)
	}
	return nil
}

// DefaultActivitySlots is a worker's activity slots when the model pool's
// capacity is unknown.
const DefaultActivitySlots = 8

// ActivitySlotsPerModelSlot is a worker's activity slots for each slot of
// its model pool, by default: a quarter of them call the model, the rest
// wait in the pool's queue, heartbeating. That queue decides who gets a
// freed model slot (by priority, then the fairness keys' weights, then the
// run with the most work left), so it must see the calls it orders. With
// twice the capacity (until 2026-11-27) it held only the handful the
// server had just handed it: two tenants at weight 2:1 got 59–62% and
// 40–38% of the calls instead of 67% and 33%, and at 1:1 one of them up
// to 54%. At four times, with the default batch window of twice the
// capacity, it holds the waiting calls of two batches, and the shares are
// the weights' (bench -only fairness).
const ActivitySlotsPerModelSlot = 4

// FillWorkerOptions sets the worker options memagent decides, where wo
// leaves them unset: activity slots (concurrency, else
// ActivitySlotsPerModelSlot times the model pool's capacity: the extra
// calls wait inside the pool, heartbeating, so a freed model slot goes at
// once to the waiting call the pool's queue puts first rather than after a
// task-queue poll), the task queue's activity rate limit, and the stop
// timeout that lets in-flight model calls finish on a graceful stop (what
// does not finish is cancelled, fails its attempt as retryable and runs
// elsewhere). It is the one place these defaults are decided: the plugin
// applies it to every worker it is attached to.
func FillWorkerOptions(wo *worker.Options, capacity, concurrency int, rateLimit float64, stopTimeout time.Duration) {
	if wo.MaxConcurrentActivityExecutionSize == 0 {
		n := concurrency
		if n <= 0 {
			n = ActivitySlotsPerModelSlot * capacity
		}
		if n <= 0 {
			n = DefaultActivitySlots
		}
		wo.MaxConcurrentActivityExecutionSize = n
	}
	if wo.TaskQueueActivitiesPerSecond == 0 {
		wo.TaskQueueActivitiesPerSecond = rateLimit
	}
	if wo.WorkerStopTimeout == 0 {
		wo.WorkerStopTimeout = stopTimeout
	}
}

// FillDeploymentOptions turns Worker Versioning on in wo, as build buildID
// of the Worker Deployment name, unless wo has deployment options of its
// own; it reports whether it did. Every memagent workflow registers its
// versioning behaviour (workflows.Register), so none is set by default.
func FillDeploymentOptions(wo *worker.Options, name, buildID string) bool {
	if wo.DeploymentOptions != (worker.DeploymentOptions{}) {
		return false
	}
	wo.DeploymentOptions = worker.DeploymentOptions{
		UseVersioning: true,
		Version:       worker.WorkerDeploymentVersion{DeploymentName: name, BuildID: buildID},
	}
	return true
}
