package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/memagent/memagent/internal/cliflags"
	"github.com/memagent/memagent/starter/cli"
)

// toolNames are devstack's commands besides the stack itself: the
// developer's tools, which the client CLI (starter) does not link.
var toolNames = map[string]bool{"demo": true, "gen-doc": true, "simulator": true, "eval": true}

// tools runs one of devstack's commands with the process's arguments and
// exits: 0 on success or help, 2 for a request that cannot work (a flag, a
// value), the starter's codes (docs/EXIT-CODES.md) for what the demo's
// question and eval run's batch return, 1 otherwise.
func tools() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := runTools(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "devstack: %v\n", err)
	}
	os.Exit(toolExitCode(err))
}

// runTools runs one command of args (its name first) and returns its error
// unprinted.
func runTools(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	root := toolsRoot(ctx, stdout, stderr)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

// toolExitCode is the process's exit code for an error of runTools.
func toolExitCode(err error) int {
	var u *usageError
	if errors.As(err, &u) {
		return 2
	}
	return cli.ExitCode(err)
}

// usageError is a request the command cannot run: exit 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// badRequest marks err as the caller's to fix (exit 2).
func badRequest(err error) error {
	if err == nil {
		return nil
	}
	return &usageError{err}
}

// toolsRoot is the tree of devstack's commands.
func toolsRoot(ctx context.Context, stdout, stderr io.Writer) *cobra.Command {
	bind := func(f func(context.Context, *cobra.Command, io.Writer, io.Writer) func([]string) error) func(*cobra.Command) func([]string) error {
		return func(cmd *cobra.Command) func([]string) error { return f(ctx, cmd, stdout, stderr) }
	}
	root := &cobra.Command{
		Use:           "devstack",
		Short:         "memagent's development environment and tools",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetHelpFunc(func(c *cobra.Command, _ []string) { fmt.Fprint(stderr, helpText(c)) })
	root.SetUsageFunc(func(c *cobra.Command) error { _, err := fmt.Fprint(stderr, helpText(c)); return err })
	root.SetFlagErrorFunc(flagError)
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(
		leaf("demo [flags]", "Run the stack, the simulator and a worker in this process and answer a question about a generated document",
			`Runs the embedded Temporal server, S3 and the inference simulator with a worker in
this process, and answers a question about a generated document of 100K+
tokens with the starter's ask, with a live progress bar.`,
			`  go run ./devstack demo
  go run ./devstack demo --tokens 1000000 --keep`, bind(bindDemo)),
		leaf("gen-doc --tokens N --out PATH [--depth 0..1] [--seed N]", "Write the demo's generated document to a file",
			"Writes the demo's generated document (filler with one planted fact) to a file.",
			"  go run ./devstack gen-doc --tokens 1000000 --out big.txt", bind(bindGenDoc)),
		leaf("simulator [flags]", "Serve the inference simulator alone",
			`Serves the inference simulator alone: an OpenAI-compatible stand-in for a GPU
pool, with latency, capacity and fault models. Not a model.`,
			`  go run ./devstack simulator --addr 127.0.0.1:8000 --replicas 4 --capacity batch`, bind(bindSimulator)),
		evalCommand(bind, stderr),
	)
	return root
}

// leaf is a command that runs bind's body.
func leaf(use, short, long, example string, bind func(*cobra.Command) func([]string) error) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Long: long, Example: example, Args: cobra.ArbitraryArgs}
	body := bind(cmd)
	cmd.RunE = func(_ *cobra.Command, args []string) error { return body(args) }
	return cmd
}

// group is a command that only holds subcommands.
func group(use, short, long, example string, stderr io.Writer, children ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Long: long, Example: example, Args: cobra.ArbitraryArgs}
	cmd.AddCommand(children...)
	cmd.RunE = func(c *cobra.Command, args []string) error {
		fmt.Fprint(stderr, helpText(c))
		if len(args) == 0 {
			return badRequest(fmt.Errorf("%s: no subcommand given", c.Name()))
		}
		return badRequest(fmt.Errorf("%s: unknown subcommand %q", c.Name(), args[0]))
	}
	return cmd
}

// stringList is a repeatable flag.
type stringList = cliflags.StringList

// outputFlag binds --output text|json (-o) and its alias --json, as the
// starter's commands do; the result is true for json.
func outputFlag(cmd *cobra.Command, jsonUsage string) *bool {
	return cliflags.Output(cmd, jsonUsage)
}

// printJSON writes v as JSON on one line, as the starter's --output json.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// changedFlags are the flags of fs set on the command line, as arguments
// that set them again (--name=value), for a command run on their behalf.
func changedFlags(fs *pflag.FlagSet, names []string) []string {
	var out []string
	for _, name := range names {
		if f := fs.Lookup(name); f != nil && f.Changed {
			out = append(out, "--"+name+"="+f.Value.String())
		}
	}
	return out
}

// toolLogger logs at warning level and above unless MEMAGENT_LOG_LEVEL
// says otherwise, as the starter's commands do.
func toolLogger(w io.Writer) *slog.Logger {
	level := slog.LevelWarn
	if v := os.Getenv("MEMAGENT_LOG_LEVEL"); v != "" {
		_ = level.UnmarshalText([]byte(v))
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// flagError words pflag's parse errors as the flag package (and the
// starter) do, and marks them as the caller's to fix.
func flagError(_ *cobra.Command, err error) error {
	msg := err.Error()
	for _, p := range []string{"unknown flag: ", "unknown shorthand flag: "} {
		if rest, ok := strings.CutPrefix(msg, p); ok {
			msg = "flag provided but not defined: " + rest
		}
	}
	return badRequest(errors.New(msg))
}

// helpText is a command's help as the starter prints it: what it does,
// how to call it, examples, subcommands, then its flags in --flag style.
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
	flags := pflag.NewFlagSet("flags", pflag.ContinueOnError)
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" {
			flags.AddFlag(f)
		}
	})
	if u := flags.FlagUsages(); u != "" {
		b.WriteString("\nFlags:\n" + u)
	}
	return b.String()
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
