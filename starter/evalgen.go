package main

import (
	"context"
	"errors"
	"io"
)

func runEvalGen(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("eval gen: not implemented yet")
}
