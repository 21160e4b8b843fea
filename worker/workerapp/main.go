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

// UsageError is a command line a command cannot run: Main exits 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Main runs a worker command's run with the process's arguments and
// output, and exits: 0 when it returns nil (or asked for help), 2 for a
// UsageError, 1 for anything else, the error printed after the command's
// name. The first SIGINT or SIGTERM cancels run's context (a graceful
// stop); a second one ends the process at once.
func Main(name string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err == nil {
		return
	}
	if !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	}
	var usage *UsageError
	if errors.As(err, &usage) {
		os.Exit(2)
	}
	os.Exit(1)
}
