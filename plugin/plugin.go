package plugin

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/memagent/memagent/internal/config"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/workerapp"
	"github.com/memagent/memagent/workflows"
)

// Name is the plugin's name, as Temporal reports it.
const Name = "memagent"

// DefaultStartTimeout bounds the checks made when a worker starts.
const DefaultStartTimeout = time.Minute

// Options configure the plugin.
type Options struct {
	// Config is the bucket, store and model server the activities use. Nil
	// means config.Load (the environment: MEMAGENT_BUCKET,
	// AWS_ENDPOINT_URL_S3, OPENAI_BASE_URL, MEMAGENT_MODEL, ...). Its
	// Temporal settings are not used: the host's client is.
	Config *config.Config
	// UpdateTemplate and FinalTemplate are paths of prompt template files;
	// empty means the built-in prompts.
	UpdateTemplate, FinalTemplate string
	// Concurrency caps activities running at once in a worker when the host
	// left worker.Options.MaxConcurrentActivityExecutionSize unset; default
	// twice the model pool's capacity.
	Concurrency int
	// StartTimeout bounds the checks of the bucket and the model server at
	// worker start; default DefaultStartTimeout.
	StartTimeout time.Duration
	// Logger defaults to slog.Default.
	Logger *slog.Logger
}

// Plugin is a worker plugin (and a client plugin, for the payload codec)
// that adds MemAgent to every worker it is attached to. One Plugin may be
// attached to many workers: each gets its own model pool.
type Plugin struct {
	*temporal.SimplePlugin

	cfg    config.Config
	opts   Options
	logger *slog.Logger

	mu    sync.Mutex
	pools map[string]*inference.Pool // by worker instance key
}

var (
	_ worker.Plugin = (*Plugin)(nil)
	_ client.Plugin = (*Plugin)(nil)
)

// New returns the plugin. It only loads the configuration: it is checked,
// and the bucket and model server are reached, when a worker starts.
//
// With codec keys (MEMAGENT_CODEC_KEYS) the plugin must also be in the
// client's Options.Plugins, where it installs the encrypting data and
// failure converters; on a worker alone it cannot change the client's.
func New(opts Options) (*Plugin, error) {
	var cfg config.Config
	if opts.Config != nil {
		cfg = *opts.Config
	} else {
		c, err := config.Load()
		if err != nil {
			return nil, fmt.Errorf("memagent plugin: %w", err)
		}
		cfg = c
	}
	cfg.Normalize()
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	p := &Plugin{cfg: cfg, opts: opts, logger: logger, pools: make(map[string]*inference.Pool)}
	so := temporal.SimplePluginOptions{
		Name:             Name,
		ConfigureWorker:  p.configureWorker,
		RunContextBefore: p.before,
		RunContextAfter:  p.after,
	}
	dc, fc, err := workerapp.Converters(cfg)
	if err != nil {
		return nil, fmt.Errorf("memagent plugin: %w", err)
	}
	so.DataConverter, so.FailureConverter = dc, fc
	sp, err := temporal.NewSimplePlugin(so)
	if err != nil {
		return nil, fmt.Errorf("memagent plugin: %w", err)
	}
	p.SimplePlugin = sp
	return p, nil
}

// Config returns the configuration the plugin runs with.
func (p *Plugin) Config() config.Config { return p.cfg }

// configureWorker fills in the worker options memagent's own worker sets,
// where the host left them unset. It checks nothing: an error here would be
// a panic in worker.New.
func (p *Plugin) configureWorker(_ context.Context, o worker.PluginConfigureWorkerOptions) error {
	wo := o.WorkerOptions
	if wo.MaxConcurrentActivityExecutionSize == 0 {
		n := p.opts.Concurrency
		if n <= 0 {
			n = 2 * capacity(p.cfg)
		}
		if n <= 0 {
			n = 8
		}
		wo.MaxConcurrentActivityExecutionSize = n
	}
	if wo.TaskQueueActivitiesPerSecond == 0 {
		wo.TaskQueueActivitiesPerSecond = p.cfg.RateLimit
	}
	if wo.WorkerStopTimeout == 0 {
		// Let in-flight model calls finish on a graceful stop: 30s unless
		// MEMAGENT_STOP_TIMEOUT says otherwise.
		wo.WorkerStopTimeout = p.cfg.WorkerStopTimeout()
	}
	if o.TaskQueue != p.cfg.TaskQueue {
		p.logger.Info("memagent plugin on a task queue other than the configured one: start runs on this one",
			"task_queue", o.TaskQueue, "configured_task_queue", p.cfg.TaskQueue)
	}
	return nil
}

// capacity is the model pool's capacity as configured, or 0 when the model
// URL does not parse (worker start reports that).
func capacity(cfg config.Config) int {
	eps, err := inference.ParseEndpoints(cfg.ModelBaseURL, "", cfg.ModelMaxInFlight)
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

// before runs when a worker starts (and before each replay of a workflow
// replayer): it checks the configuration, builds the activities and
// registers them with the workflow. An error here fails Worker.Start.
func (p *Plugin) before(ctx context.Context, o temporal.SimplePluginRunContextBeforeOptions) error {
	workflows.Register(o.Registry)
	if o.WorkflowReplayer {
		return nil
	}
	if err := p.cfg.Validate(); err != nil {
		return fmt.Errorf("memagent plugin: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.StartTimeout)
	defer cancel()
	acts, pool, err := workerapp.NewActivities(ctx, p.cfg, workerapp.Options{
		UpdateTemplate: p.opts.UpdateTemplate, FinalTemplate: p.opts.FinalTemplate, Logger: p.logger,
	})
	if err != nil {
		return fmt.Errorf("memagent plugin: %w", err)
	}
	p.mu.Lock()
	p.pools[o.InstanceKey] = pool
	p.mu.Unlock()
	// The health checks outlive this call: they stop when the pool closes.
	pool.Start(context.WithoutCancel(ctx))
	acts.Register(o.Registry)
	return nil
}

// after runs when a worker stops: it closes that worker's model pool.
func (p *Plugin) after(_ context.Context, o temporal.SimplePluginRunContextAfterOptions) {
	p.closePool(o.InstanceKey)
}

func (p *Plugin) closePool(key string) {
	p.mu.Lock()
	pool := p.pools[key]
	delete(p.pools, key)
	p.mu.Unlock()
	if pool != nil {
		pool.Close()
	}
}

// StartWorker runs the plugin's start checks and then the worker's own
// start. When the worker's start fails after the checks passed (an unknown
// namespace, say), it closes the pool the checks opened: a worker whose
// Start failed is usually never stopped.
func (p *Plugin) StartWorker(ctx context.Context, o worker.PluginStartWorkerOptions, next func(context.Context, worker.PluginStartWorkerOptions) error) error {
	err := p.SimplePlugin.StartWorker(ctx, o, next)
	if err != nil {
		p.closePool(o.WorkerInstanceKey)
	}
	return err
}

// openPools is how many model pools are open, for tests.
func (p *Plugin) openPools() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pools)
}
