package main

import (
	"context"
	"errors"
	"fmt"
	"io"
)

const evalUsage = `usage: starter eval gen|run|score [flags]

  gen    write a RULER-style evaluation set in MemAgent's JSON format
  run    run an evaluation set through BatchQA and print the score by length
         (--protocol paper: as the MemAgent paper's scripts, beside its table)
  score  score one answer against gold answers (--protocol default|paper)
`

func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, evalUsage)
		return errors.New("eval: no subcommand given")
	}
	switch args[0] {
	case "gen":
		return runEvalGen(ctx, args[1:], stdout, stderr)
	case "run":
		return runEvalRun(ctx, args[1:], stdout, stderr)
	case "score":
		return runEvalScore(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, evalUsage)
		return nil
	}
	fmt.Fprint(stderr, evalUsage)
	return fmt.Errorf("eval: unknown subcommand %q", args[0])
}
