// Package settings reads a configuration from environment variables
// through a table: one row per variable (or per set of names for one
// setting), each saying what its value does to the configuration. The
// plugin's table (plugin.OptionsFromEnv) and the worker's (worker/config)
// are both written with it, so that parsing, the "set and empty is unset"
// rule and the wording of errors are written once.
//
// It reads only the lookup it is given; it never reads the process's
// environment itself.
package settings

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Lookup finds an environment variable: os.LookupEnv in production, a map
// in tests.
type Lookup func(name string) (string, bool)

// Row is one setting of a configuration C: the variable it is read from,
// or several names for it (the first set wins), and what its value does.
type Row[C any] struct {
	Names []string
	// Field is the setting's name in C ("Bucket", "Limits.OCRBudget"), by
	// which a validation of C names the variables a setting comes from.
	Field string
	// Set applies the value v of the variable name; its error names the
	// variable and says what to write instead.
	Set func(c *C, name, v string) error
	// EmptyCounts reads Names[0] even when set and empty (which turns the
	// worker's HTTP endpoint off).
	EmptyCounts bool
	// Load, instead of Set, reads what it needs itself, always.
	Load func(c *C, lookup Lookup) error
}

// Apply applies rows to c in order: a later row may depend on what an
// earlier one set. The error is the first row's that fails.
func Apply[C any](c *C, rows []Row[C], lookup Lookup) error {
	for _, r := range rows {
		if err := r.apply(c, lookup); err != nil {
			return err
		}
	}
	return nil
}

func (r Row[C]) apply(c *C, lookup Lookup) error {
	if r.Load != nil {
		return r.Load(c, lookup)
	}
	name, v, ok := firstSet(lookup, r.Names)
	if r.EmptyCounts {
		name = r.Names[0]
		v, ok = lookup(name)
	}
	if !ok {
		return nil
	}
	return r.Set(c, name, v)
}

// firstSet is the first of names that is set and not empty, and its value.
func firstSet(lookup Lookup, names []string) (string, string, bool) {
	for _, n := range names {
		if v, ok := lookup(n); ok && v != "" {
			return n, v, true
		}
	}
	return "", "", false
}

// Names are every variable rows read through Set (not those a Load reads).
func Names[C any](rows []Row[C]) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Names...)
	}
	return out
}

// FirstSet is the value of the first of names that is set and not empty:
// set and empty is unset, for every setting but those with EmptyCounts.
func FirstSet(lookup Lookup) func(names ...string) (string, bool) {
	return func(names ...string) (string, bool) {
		_, v, ok := firstSet(lookup, names)
		return v, ok
	}
}

// Text sets a string field to the value as it is.
func Text[C any, T ~string](field func(*C) *T) func(*C, string, string) error {
	return func(c *C, _, v string) error {
		*field(c) = T(v)
		return nil
	}
}

// List sets a field to the comma-separated items of the value.
func List[C any](field func(*C) *[]string) func(*C, string, string) error {
	return func(c *C, _, v string) error {
		*field(c) = Split(v)
		return nil
	}
}

// Whole passes set the value, a whole number within [lo, hi], or fails
// saying what is wanted.
func Whole[C any](set func(*C, int), lo, hi int, want string) func(*C, string, string) error {
	return func(c *C, name, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("%s %q: %s", name, v, want)
		}
		set(c, n)
		return nil
	}
}

// Bool passes set the value, true or false (as strconv.ParseBool reads
// them: 1, t, TRUE, 0, f, False, ...), or fails saying so.
func Bool[C any](set func(*C, bool)) func(*C, string, string) error {
	return func(c *C, name, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%s %q: want true or false", name, v)
		}
		set(c, b)
		return nil
	}
}

// Positive passes set the value, a positive duration, or fails with an
// example.
func Positive[C any](set func(*C, time.Duration), example string) func(*C, string, string) error {
	return func(c *C, name, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("%s %q: want a positive duration such as %s", name, v, example)
		}
		set(c, d)
		return nil
	}
}

// Split splits a comma-separated setting, dropping empty items.
func Split(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
