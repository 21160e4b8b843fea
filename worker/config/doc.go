// Package config owns the one Config struct shared by memagent's worker and
// starter: the plugin's Options, embedded, which plugin.OptionsFromLookup
// reads from the environment, and the host's own settings (the Temporal
// connection as envconfig reads it, logging, the worker's HTTP endpoint);
// the command-line flags that override them, and the validation at start-up.
// Each default is defined once: the plugin's in plugin.DevOptions, the
// host's in Default.
//
// It must never print secrets: String() and errors name variables, not
// their values. It lives beside the worker, above plugin, because Config
// embeds plugin.Options; plugin never imports it.
//
// It is importable so that memagent's own commands (worker, devstack,
// starter, bench, chaos) and tests share it; other programs configure the
// plugin with plugin.Options and plugin.OptionsFromEnv, which are the
// stable API: this package makes no compatibility promise.
package config
