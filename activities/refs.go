package activities

import (
	"context"

	"go.temporal.io/sdk/activity"

	"github.com/memagent/memagent/internal/actwire"
)

// bind registers fn under ref's name: fn's input and output must be ref's.
func bind[I, O any](r Registry, ref actwire.Ref[I, O], fn func(context.Context, I) (*O, error)) {
	r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: ref.Name})
}

// bind0 registers fn, which returns only an error, under ref's name.
func bind0[I any](r Registry, ref actwire.Ref0[I], fn func(context.Context, I) error) {
	r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: ref.Name})
}
