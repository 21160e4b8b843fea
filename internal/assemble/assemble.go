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

	"go.opentelemetry.io/otel"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/notify"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/searchattrs"
	"github.com/memagent/memagent/internal/secret"
	"github.com/memagent/memagent/internal/tokenizer"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/workflows"
)

// Config is what the activities are built from: the store, the model
// servers, the bucket and the areas a run may use. The plugin builds it
// from its Options; memagent's CLI and tests from config.Config.
type Config struct {
	// S3 says how to reach the store.
	S3 s3store.Config
	// Model says which model servers to call, and how.
	Model Model
	// Bucket holds the indexes, traces and results; CreateBucket lets
	// NewActivities create it when it is missing.
	Bucket       string
	CreateBucket bool
	// ReadPrefixes, WritePrefixes, ClaimRoots and ClaimDepth bound where
	// a run may read, write and claim (see activities.Activities).
	ReadPrefixes, WritePrefixes, ClaimRoots []string
	ClaimDepth                              int
	// NotifyHosts and NotifyAllowNets bound the notifications a batch
	// sends (see notify.Policy).
	NotifyHosts, NotifyAllowNets []string
	// Limits bound documents; zero fields mean the defaults (Options.Limits
	// wins where it is set).
	Limits activities.Limits
	// OCRCommand is the Tesseract binary; "" finds it on PATH, "none"
	// turns OCR off.
	OCRCommand string
	// ChunkCacheMB bounds the chunk cache in MiB; 0 means the default, -1
	// turns it off.
	ChunkCacheMB int
}

// Model says which model servers a pool reaches and how.
type Model struct {
	// API is the servers' dialect; "" is OpenAI's.
	API inference.API
	// URLs are the servers' base URLs (Azure: the resources' endpoints),
	// one server each.
	URLs []string
	// APIKey is sent to every server; empty sends none.
	APIKey secret.Value
	// APIVersion is Azure's api-version; empty means the client's default.
	APIVersion string
	// Name is the served model requests use when they name none; empty
	// means the first the server lists.
	Name string
	// Family names the model's family when Name does not.
	Family string
	// Context is the model's context length in tokens; 0 means what the
	// server reports.
	Context int
	// Timeout bounds one request.
	Timeout time.Duration
	// MaxInFlight caps the requests in flight per server; 0 means the
	// pool's default.
	MaxInFlight int
}

// ConfigFrom is what memagent's configuration builds the activities from,
// for tools and tests that build them without the plugin (the plugin builds
// them from its Options).
func ConfigFrom(c config.Config) Config {
	return Config{
		S3: c.S3(),
		Model: Model{
			API:         c.ModelAPI,
			URLs:        c.ModelURLs(),
			APIKey:      c.ModelAPIKey,
			APIVersion:  c.ModelAPIVersion,
			Name:        c.Model,
			Family:      c.ModelFamily,
			Context:     c.ModelContext,
			Timeout:     c.ModelTimeout,
			MaxInFlight: c.ModelMaxInFlight,
		},
		Bucket:          c.Bucket,
		CreateBucket:    c.CreateBucket,
		ReadPrefixes:    c.ReadPrefixes,
		WritePrefixes:   c.WritePrefixes,
		ClaimRoots:      c.ClaimRoots,
		ClaimDepth:      c.ClaimDepth,
		NotifyHosts:     c.NotifyHosts,
		NotifyAllowNets: c.NotifyAllowNets,
		Limits: activities.Limits{
			MaxConvertedBytes: int64(c.MaxConvertedMB) << 20,
			PDFMemoryBytes:    int64(c.PDFMemoryMB) << 20,
			ConvertTimeout:    c.ConvertTimeout,
			OCRWorkers:        c.OCRWorkers,
			OCRPageTimeout:    c.OCRPageTimeout,
			OCRMemoryBytes:    int64(c.OCRMemoryMB) << 20,
		},
		OCRCommand:   c.OCRCommand,
		ChunkCacheMB: c.ChunkCacheMB,
	}
}

// Options are the worker settings that are not connection settings.
type Options struct {
	// UpdateTemplate and FinalTemplate are paths of template files; empty
	// means the built-in prompts.
	UpdateTemplate, FinalTemplate string
	// Concurrency caps activities running at once in this worker; default
	// four times the model pool's capacity (ActivitySlotsPerModelSlot).
	Concurrency int
	Logger      *slog.Logger

	// Limits bound documents; zero fields mean Config.Limits'.
	Limits activities.Limits
	// Tokenizers replaces the built-in tokenizers by name; nil means them.
	Tokenizers func(name string) (memagent.Tokenizer, error)
}

// Telemetry: the wiring below reports to the OpenTelemetry global
// providers, which telemetry.Setup installs and which are no-ops until then.

// NewStore builds the S3 store cfg describes. Its requests made under a span
// are traced.
func NewStore(ctx context.Context, cfg s3store.Config) (*s3store.Store, error) {
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = otel.GetTracerProvider()
	}
	if cfg.MeterProvider == nil {
		cfg.MeterProvider = otel.GetMeterProvider()
	}
	return s3store.New(ctx, cfg)
}

// NewModelPool builds the pool of the model servers m describes. The caller
// starts its health checks with Start (a worker does; a CLI need not) and
// closes it.
func NewModelPool(m Model, logger *slog.Logger) (*inference.Pool, error) {
	eps, err := inference.Endpoints(m.API, m.URLs, string(m.APIKey), m.MaxInFlight)
	if err != nil {
		return nil, err
	}
	return inference.NewPool(inference.PoolConfig{
		API: m.API, Endpoints: eps, APIVersion: m.APIVersion,
		Model: m.Name, ModelFamily: m.Family, ContextLength: m.Context,
		RequestTimeout: m.Timeout, Logger: logger,
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
func NewActivities(ctx context.Context, cfg Config, opts Options) (*activities.Activities, *inference.Pool, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	templates, err := LoadTemplates(opts.UpdateTemplate, opts.FinalTemplate)
	if err != nil {
		return nil, nil, err
	}
	store, err := NewStore(ctx, cfg.S3)
	if err != nil {
		return nil, nil, err
	}
	if err := store.EnsureBucket(ctx, cfg.Bucket, cfg.CreateBucket); err != nil {
		return nil, nil, BucketError(cfg.Bucket, err)
	}
	pool, err := NewModelPool(cfg.Model, logger)
	if err != nil {
		return nil, nil, err
	}
	name, maxLen, err := ResolveModel(ctx, pool, cfg.Model.Name)
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
	adviseHostedModel(cfg.Model, name, maxLen, tok, logger)
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
	FillLimits(&acts.Limits, cfg.Limits)
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

// FillLimits sets the zero fields of l to def's.
func FillLimits(l *activities.Limits, def activities.Limits) {
	fill := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	fill(&l.MaxConvertedBytes, def.MaxConvertedBytes)
	fill(&l.PDFMemoryBytes, def.PDFMemoryBytes)
	fill(&l.OCRMemoryBytes, def.OCRMemoryBytes)
	if l.ConvertTimeout == 0 {
		l.ConvertTimeout = def.ConvertTimeout
	}
	if l.OCRPageTimeout == 0 {
		l.OCRPageTimeout = def.OCRPageTimeout
	}
	if l.OCRWorkers == 0 {
		l.OCRWorkers = def.OCRWorkers
	}
	if l.MaxDocumentBytes == 0 {
		l.MaxDocumentBytes = def.MaxDocumentBytes
	}
	if l.MaxChunks == 0 {
		l.MaxChunks = def.MaxChunks
	}
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
func adviseHostedModel(m Model, model string, maxLen int, tok memagent.Tokenizer, logger *slog.Logger) {
	if maxLen == 0 && m.API == inference.APIAzure {
		logger.Warn("Azure OpenAI reports no context length: set MEMAGENT_MODEL_CONTEXT to the deployment's, so that a prompt that cannot fit fails before it is sent",
			"model", model)
	}
	if want := tokenizer.ForModel(cmp.Or(m.Family, model)); want != "" && want != tok.Name() {
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
