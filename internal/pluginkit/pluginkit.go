// Package pluginkit hands memagent's own programs and tests (the dev stack,
// bench, chaos, the end-to-end tests) the parts a worker the plugin is
// attached to builds: its S3 store, its model pool and its activities, made
// from a plugin.Options through the plugin's one mapping of options to
// parts. They used to be exported by package plugin, whose public API then
// named types no other module can name; the plugin now fills the builders
// here when it is initialised, and only code inside this module can reach
// them.
//
// Options are passed as plugin.Options (this package cannot name the type:
// plugin imports it); anything else panics, a programming error.
package pluginkit

import (
	"context"
	"log/slog"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/s3store"
)

// Builders are what package plugin registers.
type Builders struct {
	// NewStore builds the S3 store the options name, its requests traced.
	NewStore func(ctx context.Context, options any) (*s3store.Store, error)
	// NewModelPool builds the pool of the model servers the options name,
	// without starting its health checks; the caller closes it.
	NewModelPool func(options any, logger *slog.Logger) (*inference.Pool, error)
	// NewActivities builds the activities as a worker does: it checks that
	// the bucket and the model server answer, and returns the model pool,
	// which the caller starts (health checks) and closes.
	NewActivities func(ctx context.Context, options any) (*activities.Activities, *inference.Pool, error)
}

var builders Builders

// Register is called once by package plugin's initialisation.
func Register(b Builders) { builders = b }

func get() Builders {
	if builders.NewStore == nil {
		panic("pluginkit: package plugin is not linked (import github.com/memagent/memagent/plugin for plugin.Options)")
	}
	return builders
}

// NewStore builds the S3 store options (a plugin.Options) name.
func NewStore(ctx context.Context, options any) (*s3store.Store, error) {
	return get().NewStore(ctx, options)
}

// NewModelPool builds the model pool options (a plugin.Options) name.
func NewModelPool(options any, logger *slog.Logger) (*inference.Pool, error) {
	return get().NewModelPool(options, logger)
}

// NewActivities builds the activities options (a plugin.Options) describe,
// and their model pool.
func NewActivities(ctx context.Context, options any) (*activities.Activities, *inference.Pool, error) {
	return get().NewActivities(ctx, options)
}
