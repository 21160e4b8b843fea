package desk

import (
	"context"
	"errors"
	"regexp"
	"strings"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/internal/s3store"
)

// internalPrefix is a package's or a program's prefix inside an error's
// message ("memagent: ", "starter: ", "s3: "): it tells a reviewer
// nothing, and reads like a crash.
var internalPrefix = regexp.MustCompile(`(^|: )(?:(?:memagent|starter|desk|s3|json): |rpc error: code = \w+ desc = )`)

// plain is err as the desk tells a reviewer: what is wrong and what to
// do, without the prefixes of the packages it passed through
// ("starter: memagent: reason is empty: …" reads "reason is empty: …").
// A refused Update says the workflow validator's message; Temporal out
// of reach or slow, and an object gone from the store, say so and what
// to do.
func plain(err error) string {
	if err == nil {
		return ""
	}
	var (
		app         *temporal.ApplicationError
		unavailable *serviceerror.Unavailable
	)
	switch {
	case errors.As(err, &app):
		return strip(app.Message())
	case errors.As(err, &unavailable):
		return "Temporal is out of the desk's reach: reload the page in a moment; if it stays so, ask the operator to check Temporal (starter status)"
	case errors.Is(err, context.DeadlineExceeded):
		return "Temporal or the store did not answer in time: reload the page in a moment"
	case errors.Is(err, context.Canceled):
		return "the request was canceled: reload the page"
	case errors.Is(err, s3store.ErrNotFound):
		return strip(err.Error()) + ": the run's outputs are no longer in the store; ask the operator whether they were deleted or moved"
	}
	return strip(err.Error())
}

// strip takes internal prefixes out of msg.
func strip(msg string) string {
	for {
		s := internalPrefix.ReplaceAllString(msg, "$1")
		if s == msg {
			return strings.TrimSpace(s)
		}
		msg = s
	}
}
