package workerapp

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// SetUsage makes fs's help the head, then its flags in the starter's
// style (cobra's): one line each, `--name type`, the usage and the default,
// aligned. Go's flag package takes --name as well as -name, so the form
// shown is one the program accepts.
func SetUsage(fs *flag.FlagSet, head string) {
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), head)
		WriteFlags(fs.Output(), fs)
	}
}

// WriteFlags lists fs's flags in the starter's style.
func WriteFlags(w io.Writer, fs *flag.FlagSet) {
	type line struct{ name, usage string }
	var lines []line
	width := 0
	fs.VisitAll(func(f *flag.Flag) {
		typ, usage := flag.UnquoteUsage(f)
		name := "--" + f.Name
		if typ != "" {
			name += " " + typ
		}
		if def := f.DefValue; def != "" && def != "0" && def != "false" && def != "0s" {
			// A string's default quoted, as the flag package does.
			if fmt.Sprintf("%T", f.Value) == "*flag.stringValue" {
				usage += fmt.Sprintf(" (default %q)", def)
			} else {
				usage += " (default " + def + ")"
			}
		}
		lines = append(lines, line{name, strings.ReplaceAll(usage, "\n", " ")})
		width = max(width, len(name))
	})
	for _, l := range lines {
		fmt.Fprintf(w, "      %-*s   %s\n", width, l.name, l.usage)
	}
}
