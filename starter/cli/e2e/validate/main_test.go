// Package validate holds the end-to-end test of a validation (issue 51):
// a batch on the embedded stack, validated by blind decisions from the
// review desk in headless Chromium and from the starter.
package validate

import (
	"context"
	"io"
	"testing"

	"github.com/memagent/memagent/starter/cli"
	"github.com/memagent/memagent/starter/cli/clitest"
)

// TestMain runs this package's end-to-end tests on a dev stack of its own
// (clitest), driving the CLI through its exported Run.
func TestMain(m *testing.M) {
	clitest.Main(m, func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		return cli.Run(ctx, args, stdout, stderr)
	}, cli.ExitCode)
}
