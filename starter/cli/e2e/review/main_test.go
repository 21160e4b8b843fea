package review

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/memclient"
	"github.com/memagent/memagent/starter/cli"
	"github.com/memagent/memagent/starter/cli/clitest"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
	"go.temporal.io/sdk/client"
)

// TestMain runs this package's end-to-end tests on a dev stack of its own
// (clitest), driving the CLI through its exported Run.
func TestMain(m *testing.M) {
	clitest.Main(m, func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		return cli.Run(ctx, args, stdout, stderr)
	}, cli.ExitCode)
}

// signOffGridAwait reads the sign-off's grid, waiting up to 30 seconds for
// one just started to read what it signs off.
func signOffGridAwait(ctx context.Context, mc *memclient.Client, subject string) (*api.SignOffGrid, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		g, err := mc.SignOffGrid(ctx, subject)
		if err == nil || time.Now().After(deadline) || !strings.Contains(err.Error(), "still reading") {
			return g, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// dialed dials the stack's Temporal with cfg and returns the client and a
// memclient on cfg's task queue, closed when the test ends.
func dialed(t *testing.T, ctx context.Context, cfg config.Config) (client.Client, *memclient.Client) {
	t.Helper()
	tc, err := workerapp.Dial(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)
	return tc, memclient.New(tc, memclient.Options{TaskQueue: cfg.TaskQueue})
}

// reviewOf reviews doc with questions through `starter review --json`.
func reviewOf(t *testing.T, doc string, questions []string) api.ReviewGrid {
	t.Helper()
	args := []string{"review", "--doc", doc, "--json"}
	for _, q := range questions {
		args = append(args, "--question", q)
	}
	out, stderr, err := clitest.RunCLI(t, args...)
	if err != nil {
		t.Fatalf("review: %v\n%s", err, stderr)
	}
	var grid api.ReviewGrid
	if err := json.Unmarshal([]byte(out), &grid); err != nil {
		t.Fatal(err)
	}
	return grid
}
