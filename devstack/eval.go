package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"
)

// evalCommand is `eval` and its subcommands.
func evalCommand(bind func(func(context.Context, *cobra.Command, io.Writer, io.Writer) func([]string) error) func(*cobra.Command) func([]string) error, stderr io.Writer) *cobra.Command {
	return group("eval", "Evaluation sets: generate, run, score", "RULER-style evaluation sets in MemAgent's format, their scores by length, and one answer's score.",
		`  go run ./devstack eval gen --task niah_single,vt --lengths 2K,8K --samples 4 --out small.json
  go run ./devstack eval run --set small.json --chunk-tokens 1024`, stderr,
		leaf("gen --task TASK[,TASK...] --lengths 8K,16K,... --out PATH|- [flags]", "Write a RULER-style evaluation set in MemAgent's JSON format",
			`Writes a RULER-style evaluation set in MemAgent's format: a JSON array of
{"_id", "context", "input", "answers", "length", "task", "tokens"}, one
object per sample, streamed. The same flags always write the same bytes.

Tasks:
  niah_single      one needle "One of the special magic numbers for KEY is: VALUE."
  niah_multikey    the asked needle among distractor needles with other keys
  niah_multivalue  one key with several values, all of them answers
  niah_multiquery  several keys asked at once; every value is an answer
  vt               variable tracking: which variables a chain of VAR assignments gives a value
  fwe              frequent words: the three most frequent coded words (Zipf-like counts)
  hqa              RULER-HQA: a HotpotQA question's gold paragraphs among distractors (--hotpotqa)

Lengths are tokens of --tokenizer, with K = 1024 and M = 1048576 (1.75M =
1835008); each context is within 1% of its length, usually exact.`,
			"  go run ./devstack eval gen --task vt,fwe --lengths 8K,32K --samples 4 --out -", bind(bindEvalGen)),
		leaf("run --set PATH|s3://bucket/key [flags]", "Run an evaluation set through BatchQA and print the score by length",
			`Runs an evaluation set through BatchQA and prints the score by length
(--protocol paper: as the MemAgent paper's scripts, beside its table).`,
			`  go run ./devstack eval run --set small.json --chunk-tokens 1024
  go run ./devstack eval run --set ruler-hqa.json --protocol paper`, bind(bindEvalRun)),
		leaf("score [--protocol default|paper] --pred ANSWER --gold GOLD [--gold GOLD ...]", "Score one answer against gold answers",
			`Scores one answer and prints the scores as JSON.

  --protocol default  against every --gold (aliases; recall counts them all):
                      {"exact_match":…,"substring_match":…,"f1":…,"best_gold":…,"recall":…}
  --protocol paper    as the MemAgent evaluation scripts: against the first --gold only,
                      Python's normalisation, empty strings included:
                      {"em":…,"sub_em":…,"f1":…,"f1_rounded":…}

JSON (--output json, the default) carries the values unrounded; f1_rounded is
the paper protocol's F1 to two decimals, as its scripts average it.`,
			`  go run ./devstack eval score --pred "Paris" --gold "Paris, France" --protocol paper`, bind(bindEvalScore)),
	)
}
