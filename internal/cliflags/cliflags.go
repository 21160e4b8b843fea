// Package cliflags holds the flag types memagent's command-line programs
// share (the starter, devstack): --output text|json with its --json alias,
// and a repeatable string flag. It links cobra and pflag only.
package cliflags

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// StringList is a repeatable flag: each use appends its value.
type StringList []string

func (s *StringList) String() string     { return strings.Join(*s, ", ") }
func (s *StringList) Set(v string) error { *s = append(*s, v); return nil }
func (s *StringList) Type() string       { return "string" }

// outputFormat is --output: text or json.
type outputFormat struct{ json bool }

func (o *outputFormat) String() string {
	if o.json {
		return "json"
	}
	return "text"
}

func (o *outputFormat) Set(v string) error {
	switch v {
	case "text":
		o.json = false
	case "json":
		o.json = true
	default:
		return fmt.Errorf("%q is not an output format: use text or json", v)
	}
	return nil
}

func (o *outputFormat) Type() string { return "text|json" }

// jsonAlias is --json, the shorter spelling of --output json.
type jsonAlias struct{ o *outputFormat }

func (a jsonAlias) String() string { return strconv.FormatBool(a.o.json) }
func (a jsonAlias) Type() string   { return "bool" }
func (a jsonAlias) Set(v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return err
	}
	a.o.json = b
	return nil
}

// Output binds --output text|json (-o) and its alias --json, which
// jsonUsage describes; the result is true for json.
func Output(cmd *cobra.Command, jsonUsage string) *bool {
	o := &outputFormat{}
	fs := cmd.Flags()
	fs.VarP(o, "output", "o", "output format: text, or json ("+jsonUsage+")")
	fs.VarPF(jsonAlias{o}, "json", "", jsonUsage+"; the same as --output json").NoOptDefVal = "true"
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
	return &o.json
}

// OutputJSONFirst binds --output text|json (-o) with json the default
// and no --json alias, for a command whose output was JSON before it had
// --output; usage describes the flag. The result is true for json.
func OutputJSONFirst(cmd *cobra.Command, usage string) *bool {
	o := &outputFormat{json: true}
	cmd.Flags().VarP(o, "output", "o", usage)
	return &o.json
}
