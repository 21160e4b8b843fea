package plugin

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/assemble"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/notify"
	"github.com/memagent/memagent/internal/pluginkit"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/tokenizer"
)

func init() {
	pluginkit.Register(pluginkit.Builders{
		NewStore: func(ctx context.Context, o any) (*s3store.Store, error) {
			return assemble.NewStore(ctx, options(o).s3())
		},
		NewModelPool: func(o any, logger *slog.Logger) (*inference.Pool, error) {
			return assemble.NewModelPool(options(o).withDefaults().model(), logger)
		},
		NewActivities: func(ctx context.Context, o any) (any, *inference.Pool, error) {
			return newActivities(ctx, options(o).withDefaults())
		},
	})
}

// options is the Options a pluginkit builder was given; a builder given
// anything else is a programming error in memagent's own code.
func options(o any) Options {
	switch v := o.(type) {
	case Options:
		return v
	case *Options:
		return *v
	}
	panic(fmt.Sprintf("pluginkit: a builder was given %T, not plugin.Options", o))
}

// newActivities builds the activities with all their dependencies from o,
// whose defaults are filled.
func newActivities(ctx context.Context, o Options) (*activities.Activities, *inference.Pool, error) {
	logger := o.Logger
	templates, err := assemble.LoadTemplates(o.UpdateTemplate, o.FinalTemplate)
	if err != nil {
		return nil, nil, err
	}
	store, err := assemble.NewStore(ctx, o.s3())
	if err != nil {
		return nil, nil, err
	}
	if err := store.EnsureBucket(ctx, o.Bucket, o.CreateBucket); err != nil {
		return nil, nil, assemble.BucketError(o.Bucket, err)
	}
	model := o.model()
	pool, err := assemble.NewModelPool(model, logger)
	if err != nil {
		return nil, nil, err
	}
	acts, err := activitiesOn(ctx, o, store, pool, model, templates)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return acts, pool, nil
}

// activitiesOn builds the activities on a store and a model pool.
func activitiesOn(ctx context.Context, o Options, store *s3store.Store, pool *inference.Pool, model assemble.Model, templates memagent.Templates) (*activities.Activities, error) {
	logger := o.Logger
	name, maxLen, err := assemble.ResolveModel(ctx, pool, model.Name)
	if err != nil {
		return nil, err
	}
	tokenizers := o.Tokenizers
	if tokenizers == nil {
		tokenizers = tokenizer.New
	}
	tok, err := tokenizers(api.DefaultTokenizer)
	if err != nil {
		return nil, err
	}
	metrics, err := activities.NewMetrics(otel.GetMeterProvider())
	if err != nil {
		return nil, err
	}
	checkTokenizer(ctx, pool, name, tok, logger)
	adviseHostedModel(model, name, maxLen, tok, logger)
	logger.Info("model resolved", "model", name, "max_model_len", maxLen, "endpoints", len(pool.Stats()), "capacity", pool.Capacity())
	nets, err := notify.ParseNets(o.NotifyAllowNets)
	if err != nil {
		return nil, fmt.Errorf("%w (MEMAGENT_NOTIFY_ALLOW_NETS)", err)
	}
	acts := &activities.Activities{
		Store:         store,
		Model:         pool,
		DefaultModel:  name,
		Served:        servedModels(pool),
		MaxModelLen:   maxLen,
		Bucket:        o.Bucket,
		ReadPrefixes:  o.ReadPrefixes,
		WritePrefixes: o.WritePrefixes,
		ClaimRoots:    o.ClaimRoots,
		ClaimDepth:    o.ClaimDepth,
		NotifyPolicy:  notify.Policy{Hosts: o.NotifyHosts, AllowNets: nets},
		Templates:     templates,
		Tokenizers:    tokenizers,
		Logger:        logger,
		Metrics:       metrics,
		Limits:        o.Limits,
		OCRCommand:    o.OCRCommand,
	}
	logOCR(acts.OCR(ctx), logger)
	switch {
	case o.ChunkCacheMB < 0:
		acts.Chunks.MaxBytes = -1
	case o.ChunkCacheMB > 0:
		acts.Chunks.MaxBytes = int64(o.ChunkCacheMB) << 20
	}
	if err := metrics.ObserveChunkCache(&acts.Chunks); err != nil {
		return nil, err
	}
	return acts, nil
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
func adviseHostedModel(m assemble.Model, model string, maxLen int, tok memagent.Tokenizer, logger *slog.Logger) {
	if maxLen == 0 && m.API == inference.APIAzure {
		logger.Warn("Azure OpenAI reports no context length: set MEMAGENT_MODEL_CONTEXT to the deployment's, so that a prompt that cannot fit fails before it is sent",
			"model", model)
	}
	if want := tokenizer.ForModel(cmp.Or(m.Family, model)); want != "" && want != tok.Name() {
		logger.Warn("the model's tokenizer is not the default one: chunk sizes are counted in the default's tokens; ask with --tokenizer "+want+" (options.tokenizer) for exact ones",
			"model", model, "model_tokenizer", want, "default_tokenizer", tok.Name())
	}
}

// servedModels lists the ids of the models pool's servers serve, asked
// each time: a server may load another model while the worker runs.
func servedModels(pool *inference.Pool) func(ctx context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		models, err := pool.Models(ctx)
		ids := make([]string, len(models))
		for i, m := range models {
			ids[i] = m.ID
		}
		return ids, err
	}
}
