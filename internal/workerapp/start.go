package workerapp

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/internal/config"
	"github.com/memagent/memagent/internal/inference"
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
}
