package workerapp

import (
	"flag"
	"testing"

	"github.com/memagent/memagent/worker/config"
)

// TestFlagsNamedExist: every flag the configuration's messages name
// ("set MEMAGENT_BUCKET or --bucket") is one the worker registers.
func TestFlagsNamedExist(t *testing.T) {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	cfg := config.Default()
	var opts Options
	RegisterFlags(fs, &cfg, &opts)
	names := config.FlagNames()
	if len(names) < 10 {
		t.Fatalf("the configuration names %d flags, want each of its settings' flags", len(names))
	}
	for _, f := range names {
		if fs.Lookup(f) == nil {
			t.Errorf("the configuration's messages name --%s, which the worker does not register", f)
		}
	}
}
