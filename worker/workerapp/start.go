package workerapp

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/plugin"
	"github.com/memagent/memagent/worker/config"
)

// Running is a started worker with the client and plugin it owns.
type Running struct {
	// Plugin set the worker up: its activities and model pool.
	Plugin *plugin.Plugin
	Client client.Client
	Worker worker.Worker
}

// PluginOptions are the plugin options of memagent's worker: cfg's, as
// plugin.OptionsFromEnv reads them, with opts' templates, limits,
// tokenizers, concurrency and logger.
func PluginOptions(cfg config.Config, opts Options) plugin.Options {
	cfg.Normalize()
	po := cfg.Options
	po.UpdateTemplate, po.FinalTemplate = opts.UpdateTemplate, opts.FinalTemplate
	po.Concurrency = opts.Concurrency
	po.Tokenizers = opts.Tokenizers
	po.Logger = opts.Logger
	l := opts.Limits
	fillLimits(&l, po.Limits)
	po.Limits = l
	return po
}

// Start runs memagent's worker as a host of the plugin: it dials Temporal
// (Dial), checks the namespace's search attributes, and starts a worker on
// cfg.TaskQueue with the plugin, which checks the bucket and the model
// server, starts the model pool and registers the workflows and
// activities. Stop releases all of it.
func Start(ctx context.Context, cfg config.Config, opts Options) (*Running, error) {
	p, err := plugin.New(PluginOptions(cfg, opts))
	if err != nil {
		return nil, err
	}
	c, err := Dial(ctx, cfg, opts.Logger)
	if err != nil {
		return nil, err
	}
	// The plugin is in the worker's options only: it checks through the
	// worker's client here, and so knows they were checked.
	if err := p.CheckSearchAttributes(ctx, c, cfg.TemporalNamespace); err != nil {
		c.Close()
		return nil, err
	}
	w := worker.New(c, cfg.TaskQueue, worker.Options{Plugins: []worker.Plugin{p}})
	if err := w.Start(); err != nil {
		c.Close()
		return nil, fmt.Errorf("start worker: %w", err)
	}
	return &Running{Plugin: p, Client: c, Worker: w}, nil
}

// Stop stops the worker (letting in-flight activities finish within the
// worker's stop timeout; the plugin then closes the model pool and the
// activities), then closes the client.
func (r *Running) Stop() {
	r.Worker.Stop()
	r.Client.Close()
}

// fillLimits sets the zero fields of l to def's.
func fillLimits(l *activities.Limits, def activities.Limits) {
	fill := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	fill(&l.MaxConvertedBytes, def.MaxConvertedBytes)
	fill(&l.PDFMemoryBytes, def.PDFMemoryBytes)
	fill(&l.OCRMemoryBytes, def.OCRMemoryBytes)
	fill(&l.MaxDocumentBytes, def.MaxDocumentBytes)
	if l.ConvertTimeout == 0 {
		l.ConvertTimeout = def.ConvertTimeout
	}
	if l.OCRPageTimeout == 0 {
		l.OCRPageTimeout = def.OCRPageTimeout
	}
	if l.OCRMaxPages == 0 {
		l.OCRMaxPages = def.OCRMaxPages
	}
	if l.OCRBudget == 0 {
		l.OCRBudget = def.OCRBudget
	}
	if l.EmailMaxMessages == 0 {
		l.EmailMaxMessages = def.EmailMaxMessages
	}
	fill(&l.EmailMaxMessageBytes, def.EmailMaxMessageBytes)
	if l.EmailMaxParts == 0 {
		l.EmailMaxParts = def.EmailMaxParts
	}
	if l.EmailMaxDepth == 0 {
		l.EmailMaxDepth = def.EmailMaxDepth
	}
	fill(&l.EmailMaxPartBytes, def.EmailMaxPartBytes)
	fill(&l.EmailMaxHeaderBytes, def.EmailMaxHeaderBytes)
	if l.OCRWorkers == 0 {
		l.OCRWorkers = def.OCRWorkers
	}
	if l.MaxChunks == 0 {
		l.MaxChunks = def.MaxChunks
	}
}
