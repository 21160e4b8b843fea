package workerapp

import (
	"context"
	"log/slog"
	"net/http"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/internal/assemble"
	"github.com/memagent/memagent/plugin"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/workflows"
)

// NewWorker creates a Temporal worker on cfg.TaskQueue with memagent's
// workflows and the given activities registered, for tests and benchmarks
// that build the activities themselves. Its options are the plugin's
// (assemble.FillWorkerOptions); memagent's worker itself is a host of the
// plugin (Start).
func NewWorker(c client.Client, cfg config.Config, acts *activities.Activities, capacity int, opts Options) worker.Worker {
	var wo worker.Options
	assemble.FillWorkerOptions(&wo, capacity, opts.Concurrency, cfg.RateLimit, cfg.WorkerStopTimeout())
	if cfg.DeploymentName != "" {
		assemble.FillDeploymentOptions(&wo, cfg.DeploymentName, cfg.WorkerBuildID())
	}
	w := worker.New(c, cfg.TaskQueue, wo)
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
	return cfg.Client().Dial(ctx, logger)
}

// Converters returns the data and failure converters for cfg: the SDK's
// defaults without codec keys (nil, nil), else both wrapped in the codec.
// Failures are encoded too, since their messages may quote what a model
// said about a document.
func Converters(cfg config.Config) (converter.DataConverter, converter.FailureConverter, error) {
	c, err := cfg.Client().Converters()
	return c.Data, c.Failure, err
}

// CodecServer returns the codec server for cfg (decrypting payloads for the
// Temporal UI and CLI, behind cfg.CodecToken and CORS for cfg.CodecOrigins),
// or nil when no codec keys are configured.
func CodecServer(cfg config.Config) (http.Handler, error) {
	if len(cfg.CodecKeys) == 0 {
		return nil, nil
	}
	c, err := cfg.Codec()
	if err != nil {
		return nil, err
	}
	return plugin.NewCodecHandler(c, cfg.CodecServer), nil
}

// Options are the worker settings the worker's flags and memagent's tests
// set beside the configuration; PluginOptions puts them into the plugin's.
type Options struct {
	// UpdateTemplate and FinalTemplate are paths of template files; empty
	// means the built-in prompts.
	UpdateTemplate, FinalTemplate string
	// Concurrency caps activities running at once in this worker; default
	// four times the model pool's capacity.
	Concurrency int
	Logger      *slog.Logger
	// Limits bound documents; zero fields mean the configuration's.
	Limits activities.Limits
	// Tokenizers replaces the built-in tokenizers by name; nil means them.
	Tokenizers func(name string) (activities.Tokenizer, error)
}
