package activities

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/inference"
	"github.com/memagent/memagent/internal/s3store"
)

func badInput(err error) error {
	return temporal.NewNonRetryableApplicationError(err.Error(), api.ErrBadInput, nil)
}

// storeError classifies an S3 failure: a missing or replaced document is
// permanent, anything else is retried.
func storeError(err error, what string) error {
	switch {
	case errors.Is(err, s3store.ErrNotFound):
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("%s does not exist: check the URI and that the worker's credentials can read it", what),
			api.ErrDocumentNotFound, err)
	case errors.Is(err, s3store.ErrChanged):
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("%s was replaced after it was indexed: start a new run for the new version", what),
			api.ErrDocumentChanged, err)
	}
	return err
}

// modelError classifies an inference failure once. Transient kinds stay
// retryable and carry the server's Retry-After as the next retry delay.
func modelError(err error) error {
	var ie *inference.Error
	if !errors.As(err, &ie) {
		return err
	}
	msg := ie.Error()
	switch ie.Kind {
	case inference.KindPromptTooLong:
		return temporal.NewNonRetryableApplicationError(msg+": lower options.chunk_tokens or options.memory_max_tokens", api.ErrPromptTooLong, nil)
	case inference.KindAuth:
		return temporal.NewNonRetryableApplicationError(msg+": check OPENAI_API_KEY", api.ErrModelAuth, nil)
	case inference.KindModelNotFound:
		return temporal.NewNonRetryableApplicationError(msg+": check options.model (or the worker's MEMAGENT_MODEL) against the server's /v1/models", api.ErrModelNotFound, nil)
	case inference.KindBadRequest:
		return temporal.NewNonRetryableApplicationError(msg, api.ErrModelBadRequest, nil)
	}
	return temporal.NewApplicationErrorWithOptions(msg, api.ErrModelUnavailable, temporal.ApplicationErrorOptions{
		NextRetryDelay: ie.RetryAfter,
	})
}
