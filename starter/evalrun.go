package main

import (
	"context"
	"errors"
	"io"
)

func runEvalRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("eval run: not implemented yet")
}
