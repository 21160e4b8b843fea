// Package config owns the one Config struct shared by the worker and the
// starter: its defaults (the embedded dev stack's addresses), the usual
// environment variables and the command-line flags that override them, and
// its validation at start-up.
//
// It must never print secrets: String() and errors name variables, not
// their values.
package config
