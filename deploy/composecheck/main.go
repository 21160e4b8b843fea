// Command composecheck does what `docker compose config` does, without
// Docker: it loads a compose file with the Compose Specification's own Go
// loader (the one the compose CLI uses), with an env file and profiles,
// checks it (interpolation, required variables, schema, references between
// services, depends_on cycles) and prints the resolved project.
//
//	go run . -f ../../docker-compose.yml --env-file ../../.env.example --profile simulator
//
// It lives in a module of its own so the compose loader's dependencies stay
// out of memagent's go.mod; deploy/compose_test.go runs it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
)

// profiles collects repeated --profile flags.
type profiles []string

func (p *profiles) String() string     { return strings.Join(*p, ",") }
func (p *profiles) Set(v string) error { *p = append(*p, v); return nil }

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "composecheck:", err)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("composecheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		file    = fs.String("f", "docker-compose.yml", "compose file")
		envFile = fs.String("env-file", "", "env file (default: .env beside the compose file, if any)")
		osEnv   = fs.Bool("os-env", false, "let this process's environment override the env file, as docker compose does")
		format  = fs.String("format", "json", "output: json or yaml")
		active  profiles
	)
	fs.Var(&active, "profile", "profile to activate (repeatable; default: COMPOSE_PROFILES from the env file)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	opts := []cli.ProjectOptionsFn{}
	if *osEnv {
		opts = append(opts, cli.WithOsEnv)
	}
	var envFiles []string
	if *envFile != "" {
		envFiles = []string{*envFile}
	}
	opts = append(opts,
		cli.WithEnvFiles(envFiles...),
		cli.WithDotEnv,
		cli.WithDefaultProfiles(active...),
		cli.WithConsistency(true),
		cli.WithResolvedPaths(false),
	)
	po, err := cli.NewProjectOptions([]string{*file}, opts...)
	if err != nil {
		return err
	}
	project, err := po.LoadProject(ctx)
	if err != nil {
		return err
	}
	var out []byte
	switch *format {
	case "json":
		out, err = json.MarshalIndent(project, "", "  ")
	case "yaml":
		out, err = project.MarshalYAML()
	default:
		return fmt.Errorf("--format %q: use json or yaml", *format)
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, string(out))
	return err
}
