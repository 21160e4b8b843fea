package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/memagent/memagent/internal/dev/docgen"
	"github.com/memagent/memagent/internal/tokenizer"
)

func bindGenDoc(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	fs := cmd.Flags()
	tokens := fs.Int("tokens", 120_000, "length in tokens (Qwen)")
	depth := fs.Float64("depth", 0.62, "where the planted fact sits, 0 (start) to 1 (end)")
	seed := fs.Uint64("seed", 7, "seed of the filler")
	out := fs.String("out", "", "output file (required)")
	return func(args []string) (err error) {
		if *out == "" || *tokens < 1 || *depth < 0 || *depth > 1 {
			return badRequest(errors.New("usage: devstack gen-doc --tokens N --out PATH [--depth 0..1] [--seed N]"))
		}
		tok, err := tokenizer.New(tokenizer.Qwen)
		if err != nil {
			return err
		}
		doc := docgen.Needle(tok, *tokens, *depth, *seed)
		if err := os.WriteFile(*out, []byte(doc), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s: %d bytes, about %d tokens\nquestion: %s\nanswer:   %s\n", *out, len(doc), *tokens, docgen.Question, docgen.Answer)
		return nil
	}
}
