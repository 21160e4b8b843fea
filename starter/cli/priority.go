package cli

import (
	"fmt"

	"github.com/spf13/pflag"
)

// scheduling binds --priority, --fairness-key and --fairness-weight to the
// input fields of the same names; def is the level the workflow defaults
// to and what is the kind of run, for the help text.
func schedulingFlags(fs *pflag.FlagSet, priority *int, key *string, weight *float64, def int, what string) {
	fs.IntVar(priority, "priority", 0, fmt.Sprintf("priority of %s on the shared task queue and GPU pool, 1 highest … 5 lowest (0 = the default, %d)", what, def))
	fs.StringVar(key, "fairness-key", "", "share the pool fairly with other keys of the same priority: a tenant, client or matter (at most 64 bytes)")
	fs.Float64Var(weight, "fairness-weight", 0, "the fairness key's share relative to other keys (0 = the default, 1)")
}
