package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/memagent/memagent/internal/dev/evalgen"
	"github.com/memagent/memagent/internal/tokenizer"
)

func bindEvalGen(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	fs := cmd.Flags()
	tasks := fs.String("task", evalgen.TaskNIAHSingle, "tasks, comma-separated: "+strings.Join(evalgen.Tasks, ", "))
	lengths := fs.String("lengths", "8K,16K,32K,64K,128K", "target context lengths in tokens, comma-separated; K = 1024, M = 1048576 (e.g. 8K,1.75M,3.5M)")
	samples := fs.Int("samples", 10, "samples per task and length")
	seed := fs.Uint64("seed", 42, "seed of every random choice; the same flags write the same bytes")
	out := fs.String("out", "", "output file, or - for stdout (required); a file appears only once complete")
	tokName := fs.String("tokenizer", tokenizer.Qwen, `tokenizer that measures lengths: qwen2.5 or cl100k_base`)
	keyType := fs.String("key-type", evalgen.KindWords, "needle keys: words (adjective-noun), numbers (7 digits) or uuids")
	valueType := fs.String("value-type", evalgen.KindNumbers, "needle values: numbers (7 digits), words (adjective-noun) or uuids")
	numKeys := fs.Int("num-keys", 4, "niah_multikey: keys in all, the asked one and its distractors")
	numValues := fs.Int("num-values", 4, "niah_multivalue: values of the one key")
	numQueries := fs.Int("num-queries", 4, "niah_multiquery: keys asked at once")
	depth := fs.Float64("depth", -1, "niah_single and niah_multikey: where the asked needle sits, 0 (start) to 1 (end); -1 is a seeded random depth per sample")
	hayDir := fs.String("haystack-dir", "", "niah and vt: directory of .txt essays to use as haystack (paragraphs, repeated as needed); default a repeated noise paragraph")
	vtChains := fs.Int("vt-chains", 1, "vt: chains of assignments; the first is asked about, the others are distractors")
	vtHops := fs.Int("vt-hops", 4, "vt: assignments after the first in each chain")
	fweAlpha := fs.Float64("fwe-alpha", 2, "fwe: Zipf exponent, word r appears in proportion to 1/r^alpha")
	fweVocab := fs.Int("fwe-vocab", 1000, "fwe: distinct coded words")
	hotpot := fs.String("hotpotqa", "", "hqa: HotpotQA file in its standard format (hotpot_dev_distractor_v1.json); samples take its questions in file order")
	return func(args []string) (err error) {
		if len(args) > 0 {
			return fmt.Errorf("eval gen: unexpected argument %q: every setting is a flag (see devstack eval gen -h)", args[0])
		}
		if *out == "" {
			return errors.New("eval gen: --out is required: a file path, or - for stdout")
		}
		cfg := evalgen.Config{
			Samples: *samples, Seed: *seed,
			KeyType: *keyType, ValueType: *valueType,
			NumKeys: *numKeys, NumValues: *numValues, NumQueries: *numQueries,
			VTChains: *vtChains, VTHops: *vtHops,
			FWEAlpha: *fweAlpha, FWEVocab: *fweVocab,
		}
		for t := range strings.SplitSeq(*tasks, ",") {
			if t = strings.TrimSpace(t); t != "" {
				cfg.Tasks = append(cfg.Tasks, t)
			}
		}
		if cfg.Lengths, err = evalgen.ParseLengths(*lengths); err != nil {
			return fmt.Errorf("eval gen: --lengths: %w", err)
		}
		if *depth != -1 {
			cfg.Depth = depth
		}
		// Zero means "the default" to the package; on the command line it is
		// an explicit, invalid choice.
		for _, f := range []struct {
			name string
			v    int
		}{{"num-keys", *numKeys}, {"num-values", *numValues}, {"num-queries", *numQueries}, {"vt-chains", *vtChains}, {"vt-hops", *vtHops}, {"fwe-vocab", *fweVocab}} {
			if f.v <= 0 {
				return fmt.Errorf("eval gen: --%s is %d: it must be positive", f.name, f.v)
			}
		}
		if *fweAlpha <= 0 {
			return fmt.Errorf("eval gen: --fwe-alpha is %g: it must be positive", *fweAlpha)
		}
		if cfg.Tokenizer, err = tokenizer.New(*tokName); err != nil {
			return fmt.Errorf("eval gen: --tokenizer: %w", err)
		}
		for _, t := range cfg.Tasks {
			if t == evalgen.TaskHQA && *hotpot == "" {
				return errors.New("eval gen: task hqa needs --hotpotqa PATH (hotpot_dev_distractor_v1.json or a file in its format)")
			}
		}
		if *hayDir != "" {
			if cfg.Haystack, err = evalgen.LoadHaystackDir(*hayDir); err != nil {
				return fmt.Errorf("eval gen: %w", err)
			}
		}
		if *hotpot != "" {
			if cfg.HotpotQA, err = evalgen.LoadHotpotQA(*hotpot); err != nil {
				return fmt.Errorf("eval gen: %w", err)
			}
		}
		g, err := evalgen.New(cfg)
		if err != nil {
			return fmt.Errorf("eval gen: %w", err)
		}
		return writeEvalSet(ctx, g, cfg, *out, stdout, stderr)
	}
}

// writeEvalSet writes the set to path (or stdout for "-"), reporting
// progress on stderr. A file is written under a temporary name and renamed
// once complete, so a failed or interrupted run leaves no partial set.
func writeEvalSet(ctx context.Context, g *evalgen.Generator, cfg evalgen.Config, path string, stdout, stderr io.Writer) (err error) {
	w, name := stdout, "stdout"
	if path != "-" {
		f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
		if err != nil {
			return fmt.Errorf("eval gen: --out %s: %w", path, err)
		}
		w, name = f, path
		defer func() {
			if err == nil {
				if err = f.Chmod(0o644); err == nil {
					err = f.Close()
				}
				if err == nil {
					err = os.Rename(f.Name(), path)
				}
				if err != nil {
					err = fmt.Errorf("eval gen: %w", err)
				}
			}
			if err != nil {
				f.Close()
				os.Remove(f.Name())
			}
		}()
	}
	start, groupStart := time.Now(), time.Now()
	var groupTokens int64
	n, err := g.Write(ctx, w, func(s evalgen.Written) {
		groupTokens += int64(s.Tokens)
		if s.Index == cfg.Samples-1 {
			fmt.Fprintf(stderr, "%-16s %6s  %d samples, %d tokens on average, %.1fs\n", s.Task, evalgen.FormatLength(s.Length),
				cfg.Samples, groupTokens/int64(cfg.Samples), time.Since(groupStart).Seconds())
			groupTokens, groupStart = 0, time.Now()
		}
	})
	if err != nil {
		return fmt.Errorf("eval gen: %w", err)
	}
	fmt.Fprintf(stderr, "wrote %d samples to %s in %.1fs\n", n, name, time.Since(start).Seconds())
	return nil
}
