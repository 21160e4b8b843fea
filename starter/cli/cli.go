package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/memagent/memagent/internal/clientconf"
	"github.com/memagent/memagent/internal/cliflags"
	"github.com/memagent/memagent/internal/contract"
)

// binder registers a command's flags on cmd and returns its body, which
// runs once cobra has parsed them.
type binder func(cmd *cobra.Command) func(args []string) error

// leaf is a command that runs bind's body.
func leaf(use, short, long, example string, bind binder) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Long: long, Example: example, Args: cobra.ArbitraryArgs}
	body := bind(cmd)
	cmd.RunE = func(_ *cobra.Command, args []string) error { return body(args) }
	return cmd
}

// group is a command that only holds subcommands; run without one, or
// with an unknown one, it says so after its help.
func group(use, short, long, example string, stderr io.Writer, children ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Long: long, Example: example, Args: cobra.ArbitraryArgs}
	cmd.AddCommand(children...)
	cmd.RunE = func(c *cobra.Command, args []string) error {
		fmt.Fprint(stderr, helpText(c))
		if len(args) == 0 {
			return fmt.Errorf("%s: no subcommand given", c.Name())
		}
		return fmt.Errorf("%s: unknown subcommand %q", c.Name(), args[0])
	}
	return cmd
}

// connectionAnnotation marks the flags that say where Temporal and S3 are,
// shown apart in help.
const connectionAnnotation = "memagent_connection"

// connectionFlags binds cfg's flags (Temporal, S3, the model a run
// names) as persistent flags of cmd, with their environment variables as
// defaults. The worker's own flags (the model server, --max-in-flight,
// --chunk-cache-mb, --rate-limit…) stay accepted, for the scripts that
// passed them, but hidden and unused: a client does not use them.
func connectionFlags(cmd *cobra.Command, cfg *clientconf.Config) {
	client := flag.NewFlagSet(cmd.Name(), flag.ContinueOnError)
	cfg.RegisterFlags(client)
	pfs := cmd.PersistentFlags()
	pfs.AddGoFlagSet(client)
	client.VisitAll(func(f *flag.Flag) {
		_ = pfs.SetAnnotation(f.Name, connectionAnnotation, []string{"true"})
	})
	pfs.AddGoFlagSet(ignoredWorkerFlags(cmd.Name()))
	for _, name := range workerFlagNames {
		_ = pfs.MarkHidden(name)
	}
}

// workerFlagNames are the worker's flags a client accepts and ignores.
var workerFlagNames = []string{"model-url", "model-api", "model-context", "max-in-flight", "chunk-cache-mb", "rate-limit", "model-timeout"}

// ignoredWorkerFlags are the worker's own flags, with the worker's types
// (a value they would refuse is still refused), bound to nothing.
func ignoredWorkerFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.String("model-url", "", "the worker's; ignored by a client")
	fs.String("model-api", "", "the worker's; ignored by a client")
	fs.Int("model-context", 0, "the worker's; ignored by a client")
	fs.Int("max-in-flight", 0, "the worker's; ignored by a client")
	fs.Int("chunk-cache-mb", 0, "the worker's; ignored by a client")
	fs.Float64("rate-limit", 0, "the worker's; ignored by a client")
	fs.Duration("model-timeout", 0, "the worker's; ignored by a client")
	return fs
}

// outputFlag binds --output text|json (-o) and its alias --json, which
// jsonUsage describes; the result is true for json.
func outputFlag(cmd *cobra.Command, jsonUsage string) *bool {
	return cliflags.Output(cmd, jsonUsage)
}

// flagError turns pflag's parse errors into the flag package's words,
// which scripts and isFlagError know, and marks them as the caller's to
// fix (exit code 2).
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	for _, p := range []string{"unknown flag: ", "unknown shorthand flag: "} {
		if rest, ok := strings.CutPrefix(msg, p); ok {
			msg = "flag provided but not defined: " + rest
			if name, ok := strings.CutPrefix(rest, "--"); ok {
				if s := suggestFlag(cmd, name); s != "" {
					msg += " (did you mean --" + s + "?)"
				}
			}
		}
	}
	return badRequest(errors.New(msg))
}

// suggestFlag is the flag of cmd that the unknown flag name most likely
// meant: one a short edit away (--questoin), or one whose name begins the
// other's (--document for --doc, --max-call for --max-calls); "" when
// none is close.
func suggestFlag(cmd *cobra.Command, name string) string {
	best, bestScore := "", 3
	visit := func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		score := contract.EditDistance(name, f.Name)
		if min(len(name), len(f.Name)) >= 3 && (strings.HasPrefix(name, f.Name) || strings.HasPrefix(f.Name, name)) {
			score = min(score, 2)
		}
		if score < bestScore {
			best, bestScore = f.Name, score
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	return best
}

// unknownCommand checks the command words at the start of args (before
// any flag) against root's tree and returns, for a word that names no
// command, the error that says so with the commands it may have meant
// ("asks": did you mean "ask"?); nil when every word is known.
func unknownCommand(root *cobra.Command, args []string) error {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	c := root
	for _, a := range args {
		if strings.HasPrefix(a, "-") || !c.HasSubCommands() || strings.HasPrefix(a, "__") {
			return nil
		}
		next := findSub(c, a)
		if next == nil && c.Annotations[argsBesideSubcommands] != "" {
			return nil // a command of its own, with subcommands beside
		}
		if next == nil {
			msg := fmt.Sprintf("unknown command %q for %q", a, c.CommandPath())
			if c != root {
				msg = fmt.Sprintf("%s: unknown subcommand %q", c.Name(), a)
			}
			if c.SuggestionsMinimumDistance <= 0 {
				c.SuggestionsMinimumDistance = 2
			}
			if s := c.SuggestionsFor(a); len(s) > 0 {
				msg += fmt.Sprintf(": did you mean %q?", s[0])
			}
			return badRequest(fmt.Errorf("%s (%s --help lists the commands)", msg, c.CommandPath()))
		}
		c = next
	}
	return nil
}

// argsBesideSubcommands annotates a command that runs with arguments of
// its own as well as having subcommands (starter validate ID, beside
// starter validate decide …): a word that names no subcommand is its
// argument.
const argsBesideSubcommands = "memagent.args-beside-subcommands"

// findSub is c's subcommand named (or aliased) name, or nil.
func findSub(c *cobra.Command, name string) *cobra.Command {
	for _, sub := range c.Commands() {
		if sub.Name() == name || sub.HasAlias(name) {
			return sub
		}
	}
	return nil
}

// oneDashLongFlags rewrites -name and -name=value, which the flag package
// accepted for long flags, to --name: scripts written for it keep working.
// Only names of the command's own flags are rewritten, and never a flag's
// value or what follows "--".
func oneDashLongFlags(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil {
		return args
	}
	lookup := func(name string) *pflag.Flag {
		for c := cmd; c != nil; c = c.Parent() {
			if f := c.Flags().Lookup(name); f != nil {
				return f
			}
			if f := c.PersistentFlags().Lookup(name); f != nil {
				return f
			}
		}
		return nil
	}
	out := slices.Clone(args)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if a == "--" {
			break
		}
		body := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if len(a) < 2 || a[0] != '-' || body == "" || body[0] == '-' {
			continue
		}
		name, _, hasValue := strings.Cut(body, "=")
		oneDash := len(a)-len(body) == 1
		if name == "help" && oneDash {
			out[i] = "--help"
			continue
		}
		f := lookup(name)
		if f == nil || len(name) < 2 {
			continue
		}
		if oneDash {
			out[i] = "-" + a
		}
		if !hasValue && f.NoOptDefVal == "" {
			i++ // the flag's value
		}
	}
	return out
}

// helpText is a command's help: what it does, how to call it, examples,
// subcommands and flags, the flags listed as the flag package lists them.
func helpText(c *cobra.Command) string {
	var b strings.Builder
	about := c.Long
	if about == "" {
		about = c.Short
	}
	if about != "" {
		b.WriteString(strings.TrimSpace(about) + "\n\n")
	}
	fmt.Fprintf(&b, "Usage:\n  %s\n", c.UseLine())
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "  %s <command> [flags]\n", c.CommandPath())
	}
	if c.Example != "" {
		fmt.Fprintf(&b, "\nExamples:\n%s\n", strings.TrimRight(c.Example, "\n"))
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\nCommands:\n")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				fmt.Fprintf(&b, "  %-*s %s\n", sub.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	// Two groups in cobra's own --flag style: the command's flags, then the
	// connection's (inherited, or marked as such).
	local := pflag.NewFlagSet("local", pflag.ContinueOnError)
	conn := pflag.NewFlagSet("connection", pflag.ContinueOnError)
	add := func(fs *pflag.FlagSet) func(*pflag.Flag) {
		return func(f *pflag.Flag) {
			if f.Name != "help" {
				fs.AddFlag(f)
			}
		}
	}
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if _, ok := f.Annotations[connectionAnnotation]; ok {
			add(conn)(f)
		} else {
			add(local)(f)
		}
	})
	c.InheritedFlags().VisitAll(add(conn))
	if u := local.FlagUsages(); u != "" {
		b.WriteString("\nFlags:\n" + u)
	}
	if u := conn.FlagUsages(); u != "" {
		b.WriteString("\nConnection flags (default from the environment variable named):\n" + u)
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\nRun \"%s <command> --help\" for the flags of a command.\n", c.CommandPath())
	}
	return b.String()
}

// printJSON writes v as JSON on one line, the form every --output json of
// the starter prints, a failure's object included.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
