package main

import (
	"context"
	"errors"
	"io"
)

func runSchedule(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("schedule: not implemented yet")
}
