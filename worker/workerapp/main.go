package workerapp

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// UsageError is a command line or a configuration a command cannot run,
// found before it starts anything: Main exits 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usage is err, a flag that does not parse or a configuration that cannot
// work, as a UsageError; nil and a request for help stay as they are.
func Usage(err error) error {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return &UsageError{Msg: err.Error()}
}

// Main runs a worker command's run with the process's arguments and
// output, and exits: 0 when it returns nil or help was asked for, 2 for a
// UsageError (a flag, an environment variable or a setting that cannot
// work, before anything started), 1 for anything else (what fails once it
// runs: Temporal, S3 or the model server out of reach), the error printed
// after the command's name. The first SIGINT or SIGTERM cancels run's
// context (a graceful stop); a second one ends the process at once.
func Main(name string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(name, err, os.Stderr))
}

// exitCode prints err after the command's name, unless it is nil or a
// request for help, and returns the exit code Main documents.
func exitCode(name string, err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	var usage *UsageError
	if errors.As(err, &usage) {
		return 2
	}
	return 1
}
