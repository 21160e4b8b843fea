package assemble

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"go.opentelemetry.io/otel"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/internal/s3client"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/internal/searchattrs"
	"github.com/memagent/memagent/internal/secret"
)

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
	// Priority is how the servers are told a request's priority: none
	// (off), one form for all, or one per URL (inference.SetServerPriorities).
	Priority []string
	// Hold is the pool's PriorityHold: the least urgent priority whose
	// calls hold back the others' at a server; 0 holds nothing back.
	Hold int
	// Reserve is the pool's PriorityReserve: urgent calls a server that
	// orders by priority may take beyond MaxInFlight; 0 none,
	// inference.PriorityReserveAuto a quarter of the cap.
	Reserve int
	// Evict is the pool's PriorityEvict: how young a less urgent call is
	// stopped for an urgent one at a server that orders by priority; 0
	// stops none.
	Evict time.Duration
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
	if err := inference.SetServerPriorities(eps, m.Priority); err != nil {
		return nil, fmt.Errorf("inference: %w", err)
	}
	return inference.NewPool(inference.PoolConfig{
		API: m.API, Endpoints: eps, APIVersion: m.APIVersion,
		Model: m.Name, ModelFamily: m.Family, ContextLength: m.Context,
		RequestTimeout: m.Timeout, Logger: logger, PriorityHold: m.Hold, PriorityReserve: m.Reserve, PriorityEvict: m.Evict,
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

// BucketError says what to do about a bucket that cannot be used.
func BucketError(bucket string, err error) error { return s3client.BucketError(bucket, err) }

// CheckSearchAttributes makes sure the namespace has memagent's search
// attributes before a worker polls: a run that upserts an unregistered
// attribute would sit in a failing workflow task for good. It registers
// the missing ones where the server allows it (the dev stack, an admin
// key) and otherwise fails, naming `starter setup`.
func CheckSearchAttributes(ctx context.Context, c client.Client, namespace string, logger *slog.Logger) error {
	added, err := searchattrs.Ensure(ctx, c.OperatorService(), namespace, searchattrs.Memagent(), true)
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
