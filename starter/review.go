package main

import (
	"context"
	"errors"
	"io"
)

func runReview(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("review: not implemented yet")
}
