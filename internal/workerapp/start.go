package workerapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/internal/config"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/searchattrs"
	"github.com/memagent/memagent/workflows"
)

// Running is a started worker with the clients it owns.
type Running struct {
	Activities *activities.Activities
	Pool       *inference.Pool
	Client     client.Client
	Worker     worker.Worker
}

// Start assembles a worker from cfg (activities, model pool with its health
// checks, Temporal client) and starts it polling. Stop releases all of it.
func Start(ctx context.Context, cfg config.Config, opts Options) (*Running, error) {
	acts, pool, err := NewActivities(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	pool.Start(ctx)
	c, err := Dial(ctx, cfg, opts.Logger)
	if err != nil {
		pool.Close()
		return nil, err
	}
	if err := CheckSearchAttributes(ctx, c, cfg.TemporalNamespace, opts.Logger); err != nil {
		c.Close()
		pool.Close()
		return nil, err
	}
	w := NewWorker(c, cfg, acts, pool.Capacity(), opts)
	if err := w.Start(); err != nil {
		c.Close()
		pool.Close()
		return nil, fmt.Errorf("start worker: %w", err)
	}
	return &Running{Activities: acts, Pool: pool, Client: c, Worker: w}, nil
}

// Stop stops the worker (letting in-flight activities finish within the
// worker's stop timeout), then closes the client and the model pool.
func (r *Running) Stop() {
	r.Worker.Stop()
	r.Client.Close()
	r.Pool.Close()
	if err := r.Activities.Close(); err != nil {
		slog.Warn("closing the PDF converter", "err", err)
	}
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
