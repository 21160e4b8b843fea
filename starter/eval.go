package main

import (
	"context"
	"errors"
	"io"
)

func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("eval: not implemented yet")
}
