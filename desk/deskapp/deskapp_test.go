package deskapp

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/memagent/memagent/internal/reviewer"
	"github.com/memagent/memagent/worker/workerapp"
)

// TestRunRefusesBeforeConnecting runs the desk with flags that cannot work
// (docs/EXIT-CODES.md, "The desk"): each is a UsageError, exit 2 under
// workerapp.Main, found before the desk dials anything (no Temporal server
// answers at the address set here).
func TestRunRefusesBeforeConnecting(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
	t.Setenv(reviewer.Env, "")
	t.Setenv(reviewer.TrustedEnv, "")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"a proxy's header with no proxy named", []string{"--reviewers", "header:X-Forwarded-User"}, "proxy"},
		{"a trusted proxy that is a name, not an address", []string{"--reviewers", "header:X-Forwarded-User", "--trusted-proxy", "proxy.example"}, "proxy.example"},
		{"no identity source", nil, reviewer.Env},
		{"an unknown flag", []string{"--no-such-flag"}, "no-such-flag"},
		{"a render timeout of zero", []string{"--reviewers", "header:X-User", "--trusted-proxy", "127.0.0.1", "--render-timeout", "0s"}, "--render-timeout"},
		{"an argument", []string{"--reviewers", "header:X-User", "--trusted-proxy", "127.0.0.1", "extra"}, "unexpected arguments"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := Run(context.Background(), c.args, &stdout, &stderr)
			var usage *workerapp.UsageError
			if !errors.As(err, &usage) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("desk %q: %v; want a usage error naming %q", c.args, err, c.want)
			}
			if stdout.Len() > 0 {
				t.Errorf("desk %q printed %q before refusing", c.args, stdout.String())
			}
		})
	}
}

// TestHelpListsTheDeskAndConnectionFlags: --help is no error and lists the
// desk's flags with the connection's, in --flag style.
func TestHelpListsTheDeskAndConnectionFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := Run(context.Background(), []string{"--help"}, &stdout, &stderr)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("desk --help: %v", err)
	}
	for _, want := range []string{"review desk", "--addr ADDR", "--reviewers SOURCE", "--trusted-proxy ADDRESS", "--render-timeout DURATION", "--host NAME", "--temporal-address", "--bucket"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("desk --help has no %q:\n%s", want, stderr.String())
		}
	}
}

// TestListFlag: the first value given replaces the environment's, later
// ones add to it, and commas separate values, as the starter's string
// slices did.
func TestListFlag(t *testing.T) {
	t.Setenv(reviewer.TrustedEnv, "10.0.0.1, 10.0.0.2")
	l := envList(reviewer.TrustedEnv)
	if got := l.String(); got != "10.0.0.1,10.0.0.2" {
		t.Errorf("from the environment: %q", got)
	}
	for _, v := range []string{"192.0.2.1,192.0.2.2", "192.0.2.3"} {
		if err := l.Set(v); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := l.String(), "192.0.2.1,192.0.2.2,192.0.2.3"; got != want {
		t.Errorf("after two flags: %q, want %q", got, want)
	}
}
