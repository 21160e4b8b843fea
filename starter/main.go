// Command starter starts and inspects memagent runs: the commands are in
// package starter/cli (`starter --help` lists them). It links no Temporal
// server; the demo on the embedded stack is `go run ./devstack demo`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/memagent/memagent/starter/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
