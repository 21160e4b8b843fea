package plugin

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/internal/assemble"
	"github.com/memagent/memagent/internal/codec"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/workflows"
)

// Name is the plugin's name, as Temporal reports it.
const Name = "memagent"

// DefaultStartTimeout bounds the checks made when a worker starts.
const DefaultStartTimeout = time.Minute

// Plugin is a worker plugin, and a client plugin, that adds MemAgent to
// every worker it is attached to: directly in worker.Options.Plugins, or
// through client.Options.Plugins (the SDK then attaches it to every worker
// of that client), or both. It sets each worker up once, however many
// times it is listed. One Plugin may serve many workers: each gets its own
// model pool.
type Plugin struct {
	*temporal.SimplePlugin

	opts  Options
	codec *codec.Codec

	mu sync.Mutex
	// workers are the workers this plugin set up, by instance key; a nil
	// entry is a worker being set up.
	workers map[string]*workerParts
	// clientConfigured records that a client was built with this plugin.
	clientConfigured bool
	// attrsChecked records that the namespace's search attributes were
	// checked: by a client with this plugin (NewClient) or by the host
	// (CheckSearchAttributes).
	attrsChecked bool
}

// workerParts are what the plugin started for one worker and closes when
// it stops: the model pool and the activities (their PDFium runtime).
type workerParts struct {
	pool *inference.Pool
	acts *activities.Activities
}

var (
	_ worker.Plugin = (*Plugin)(nil)
	_ client.Plugin = (*Plugin)(nil)
)

// owners maps a worker instance key to the plugin that registered
// memagent on it, across Plugin values: two different Plugins on one
// worker would register the same workflow names twice, which the SDK
// turns into a panic. The second gets an error at worker start instead.
var owners sync.Map

// New returns the plugin for opts (see Options; OptionsFromEnv reads the
// environment). It checks only the codec keys: the rest is checked, and
// the bucket and model server are reached, when a worker starts.
func New(opts Options) (*Plugin, error) {
	opts = opts.withDefaults()
	c, err := newCodec(opts.CodecKeys)
	if err != nil {
		return nil, fmt.Errorf("memagent plugin: %w", err)
	}
	p := &Plugin{opts: opts, codec: c, workers: make(map[string]*workerParts)}
	sp, err := temporal.NewSimplePlugin(temporal.SimplePluginOptions{
		Name:                      Name,
		ConfigureClient:           p.configureClient,
		ConfigureWorker:           p.configureWorker,
		ConfigureWorkflowReplayer: p.configureReplayer,
		// Only workflow replayers reach this hook: StartWorker and
		// StopWorker below replace SimplePlugin's.
		RunContextBefore: p.beforeReplay,
	})
	if err != nil {
		return nil, fmt.Errorf("memagent plugin: %w", err)
	}
	p.SimplePlugin = sp
	return p, nil
}

// Options returns the options the plugin runs with, defaults filled in.
func (p *Plugin) Options() Options { return p.opts }

// configureClient records that a client carries the plugin and, only when
// asked (InstallConverter) and with codec keys, wraps the host's data
// converter in the codec and sets an encrypting failure converter where
// the host set none.
func (p *Plugin) configureClient(_ context.Context, o client.PluginConfigureClientOptions) error {
	p.mu.Lock()
	p.clientConfigured = true
	p.mu.Unlock()
	if !p.opts.InstallConverter || p.codec == nil {
		return nil
	}
	co := o.ClientOptions
	co.DataConverter = p.DataConverter(co.DataConverter)
	if co.FailureConverter == nil {
		co.FailureConverter = FailureConverter(co.DataConverter)
	} else {
		p.opts.Logger.Warn("memagent plugin: the client has its own failure converter, which is kept: failure messages are not encrypted by memagent's codec")
	}
	return nil
}

// configureReplayer does for a workflow replayer what configureClient does
// for a client: a replayer reads histories the workers wrote.
func (p *Plugin) configureReplayer(_ context.Context, o worker.PluginConfigureWorkflowReplayerOptions) error {
	if !p.opts.InstallConverter || p.codec == nil {
		return nil
	}
	ro := o.WorkflowReplayerOptions
	ro.DataConverter = p.DataConverter(ro.DataConverter)
	if ro.FailureConverter == nil {
		ro.FailureConverter = FailureConverter(ro.DataConverter)
	}
	return nil
}

// configureWorker fills in the worker options memagent's own worker sets,
// where the host left them unset. It checks nothing: an error here would be
// a panic in worker.New. Listed twice, it runs twice, to the same effect.
func (p *Plugin) configureWorker(_ context.Context, o worker.PluginConfigureWorkerOptions) error {
	assemble.FillWorkerOptions(o.WorkerOptions, p.opts.capacity(), p.opts.Concurrency, p.opts.RateLimit, p.opts.StopTimeout)
	if p.opts.DeploymentName != "" {
		if !assemble.FillDeploymentOptions(o.WorkerOptions, p.opts.DeploymentName, p.opts.buildID()) {
			p.opts.Logger.Info("memagent plugin: the worker has Worker Deployment options of its own, which are kept",
				"deployment_name", o.WorkerOptions.DeploymentOptions.Version.DeploymentName, "build_id", o.WorkerOptions.DeploymentOptions.Version.BuildID)
		}
	}
	if p.opts.TaskQueue != "" && o.TaskQueue != p.opts.TaskQueue {
		p.opts.Logger.Info("memagent plugin on a task queue other than the configured one: start runs on this one",
			"task_queue", o.TaskQueue, "configured_task_queue", p.opts.TaskQueue)
	}
	return nil
}

// beforeReplay registers the workflows on a workflow replayer.
func (p *Plugin) beforeReplay(_ context.Context, o temporal.SimplePluginRunContextBeforeOptions) error {
	if o.WorkflowReplayer {
		workflows.Register(o.Registry)
	}
	return nil
}

// StartWorker sets the worker up (checks the options, reaches the bucket
// and the model server, starts the model pool, registers the workflows and
// activities) and then runs the worker's own start. An error fails
// Worker.Start, and whatever the checks opened is closed.
//
// The SDK calls it once for each time the plugin is listed on the worker
// (client and worker options): the first call sets the worker up, the
// others pass straight through.
func (p *Plugin) StartWorker(ctx context.Context, o worker.PluginStartWorkerOptions, next func(context.Context, worker.PluginStartWorkerOptions) error) error {
	key := o.WorkerInstanceKey
	p.mu.Lock()
	_, dup := p.workers[key]
	if !dup {
		p.workers[key] = nil
	}
	clientConfigured, attrsChecked := p.clientConfigured, p.attrsChecked
	p.mu.Unlock()
	if dup {
		return next(ctx, o)
	}
	if !attrsChecked {
		p.opts.Logger.Info("memagent plugin: the namespace's search attributes were not checked (the plugin is not in the client's options, and Plugin.CheckSearchAttributes was not called): run `starter setup` once per namespace, list the plugin in client.Options.Plugins, or call Plugin.CheckSearchAttributes before starting the worker")
	}
	if owner, taken := owners.LoadOrStore(key, p); taken && owner != p {
		p.forget(key)
		return fmt.Errorf("memagent plugin: another memagent Plugin already set this worker up: list one Plugin value, in client.Options.Plugins, worker.Options.Plugins or both")
	}
	if p.opts.InstallConverter && p.codec != nil && !clientConfigured {
		p.forget(key)
		return fmt.Errorf("memagent plugin: InstallConverter needs the plugin in client.Options.Plugins, since a worker uses its client's data converter: add it there, or set client.Options.DataConverter to Plugin.DataConverter(...) yourself and leave InstallConverter off")
	}
	if err := p.setUp(ctx, key, o.WorkerRegistry); err != nil {
		p.forget(key)
		return fmt.Errorf("memagent plugin: %w", err)
	}
	if err := next(ctx, o); err != nil {
		// A worker whose Start failed (an unknown namespace, say) is
		// usually never stopped.
		p.forget(key)
		return err
	}
	return nil
}

// registry is what a worker offers its plugins to register on.
type registry interface {
	workflows.Registry
	activities.Registry
}

// setUp checks the options, builds the activities with their model pool
// and registers them and the workflows on r.
func (p *Plugin) setUp(ctx context.Context, key string, r registry) error {
	if err := p.opts.Validate(nil); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.StartTimeout)
	defer cancel()
	acts, pool, err := newActivities(ctx, p.opts)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.workers[key] = &workerParts{pool: pool, acts: acts}
	p.mu.Unlock()
	// The health checks outlive this call: they stop when the pool closes.
	pool.Start(context.WithoutCancel(ctx))
	workflows.Register(r)
	acts.Register(r)
	return nil
}

// StopWorker runs the worker's own stop, which lets in-flight activities
// finish (worker.Options.WorkerStopTimeout), and then closes the worker's
// model pool and activities. Listed twice, the second call only passes
// through.
func (p *Plugin) StopWorker(ctx context.Context, o worker.PluginStopWorkerOptions, next func(context.Context, worker.PluginStopWorkerOptions)) {
	next(ctx, o)
	p.forget(o.WorkerInstanceKey)
}

// forget closes the pool and activities of the worker with key, if this
// plugin set it up, and releases the worker.
func (p *Plugin) forget(key string) {
	p.mu.Lock()
	parts, ok := p.workers[key]
	delete(p.workers, key)
	p.mu.Unlock()
	if !ok {
		return
	}
	owners.CompareAndDelete(key, p)
	if parts != nil {
		parts.pool.Close()
		if err := parts.acts.Close(); err != nil {
			p.opts.Logger.Warn("memagent plugin: closing the PDF converter", "err", err)
		}
	}
}

// ModelReady reports whether the workers this plugin set up can call the
// model: nil when every one of them has a model endpoint in rotation, an
// error saying which is not otherwise, or when none has started. It is for
// a host's readiness probe (memagent's worker serves it on /readyz).
func (p *Plugin) ModelReady() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	started := 0
	for _, parts := range p.workers {
		if parts == nil {
			continue
		}
		started++
		if err := parts.pool.Ready(); err != nil {
			return err
		}
	}
	if started == 0 {
		return errors.New("memagent plugin: no worker has started")
	}
	return nil
}

// openPools is how many model pools are open, for tests.
func (p *Plugin) openPools() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, parts := range p.workers {
		if parts != nil {
			n++
		}
	}
	return n
}
