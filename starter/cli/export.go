package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/clientconf"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/memclient"
	"github.com/memagent/memagent/rollout"
)

func bindExportRollouts(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	fs := cmd.Flags()
	cfg, cfgErr := clientconf.Load()
	connectionFlags(cmd, &cfg)
	out := fs.String("out", "", "JSON Lines `file` to write (required)")
	reward := fs.String("reward", rollout.RewardSubEM, `reward metric, as the MemAgent paper scores: "sub_em", "em" or "f1"`)
	update := fs.String("update-template", "", "the worker's memory-update prompt `file`, if it ran with one (default the built-in prompt)")
	final := fs.String("final-template", "", "the worker's final-answer prompt `file`, if it ran with one")
	asJSON := outputFlag(cmd, "print the counts as JSON")
	return func(args []string) (err error) {
		if cfgErr != nil {
			return cfgErr
		}
		var id string
		if len(args) == 1 {
			id = args[0]
		} else if len(args) > 1 {
			return fmt.Errorf("unexpected arguments %q: export rollouts takes one workflow id", args)
		}
		if id == "" {
			return errors.New("no batch: pass the BatchQA workflow id, as in starter export rollouts memagent-batch-… --out rollouts.jsonl")
		}
		if *out == "" {
			return errors.New("no --out: pass the file to write, such as --out rollouts.jsonl")
		}
		tmpl, err := loadTemplates(*update, *final)
		if err != nil {
			return err
		}
		opts := rollout.Options{Reward: *reward, Templates: tmpl}
		ctx, s, end, err := startCommand(ctx, cfg, stderr, *asJSON, "starter export rollouts")
		if err != nil {
			return err
		}
		defer func() { end(err) }()
		mc := memclient.New(s.temporal, memclient.Options{TaskQueue: cfg.TaskQueue})
		// Only memagent's batch: a look-alike under the id is refused, and
		// the verified run is the one read.
		x, err := mc.Verify(ctx, id, "", api.BatchQAName)
		if err != nil {
			return notMemagents(fmt.Errorf("batch %s: %w", id, err))
		}
		res, err := mc.GetBatch(ctx, id, x.RunID).Get(ctx)
		if err != nil {
			return fmt.Errorf("batch %s: %w", id, err)
		}
		tmp, err := os.CreateTemp(filepath.Dir(*out), ".rollouts-*")
		if err != nil {
			return err
		}
		defer os.Remove(tmp.Name())
		st, err := rollout.Export(ctx, s.store, res.ReportURI, opts, tmp)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		// Renamed whole, so a failed export never leaves half a file.
		if err := os.Rename(tmp.Name(), *out); err != nil {
			return err
		}
		var whole string
		if len(st.Incomplete) > 0 {
			rep, err := rollout.ReadReport(ctx, s.store, res.ReportURI)
			if err != nil {
				return err
			}
			whole = wholeCommand(rep, cfg.TaskQueue)
		}
		if *asJSON {
			if err := printJSON(stdout, struct {
				rollout.Stats
				Out string `json:"out"`
				// WholeCommand reads every item again, every sample
				// in its own run: set when samples were left out.
				WholeCommand string `json:"whole_command,omitempty"`
			}{st, *out, whole}); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(stdout, "%s: %d turns of %d samples in %d groups (left out: %d failed, %d without gold answers, %d without all their turns)\n",
				*out, st.Turns, st.Samples, st.Groups, st.Failed, st.Unscored, len(st.Incomplete))
			if st.Unverified > 0 {
				fmt.Fprintf(stdout, "%d turns come from runs that stored no prompt digest: their prompts are rebuilt, not proved\n", st.Unverified)
			}
			for _, in := range st.Incomplete {
				fmt.Fprintf(stdout, "left out: item %d (%s) sample %d, %d of %d turns missing: %s\n",
					in.Seq, in.Group, in.Sample, in.Missing, in.Turns, in.Reason)
			}
			if whole != "" {
				fmt.Fprintf(stdout, "to answer every item again, each sample reading every chunk in its own run: %s\n", whole)
			}
		}
		if len(st.Incomplete) > 0 {
			return &samplesIncomplete{left: len(st.Incomplete), of: st.Samples + len(st.Incomplete), out: *out}
		}
		return nil
	}
}

// samplesIncomplete is an export that left out samples without all their
// turns: exit 1 once the file is written and the counts printed, so that
// a script notices.
type samplesIncomplete struct {
	left, of int
	out      string
}

func (e *samplesIncomplete) Error() string {
	return fmt.Sprintf("%d of %d answered samples left out of %s for lack of turns: the output lists them, and the command that answers them whole", e.left, e.of, e.out)
}

func (*samplesIncomplete) resultPrinted() {}

// wholeCommand is a command that answers the batch's items again, every
// sample reading every chunk in its own run: starter batch with the
// report's manifest, samples and options and --reuse none, or, when the
// options need a field starter batch has no flag for, the BatchQA input
// for the Temporal CLI.
func wholeCommand(rep *api.BatchReport, taskQueue string) string {
	o := rep.Options
	model := cmp.Or(rep.Model, o.Model)
	flagged := api.ModelOptions{Model: o.Model, ChunkTokens: o.ChunkTokens, Temperature: o.Temperature}.WithDefaults()
	if a, b := o.WithDefaults(), flagged; a.Tokenizer != b.Tokenizer || a.MemoryMaxTokens != b.MemoryMaxTokens ||
		a.AnswerMaxTokens != b.AnswerMaxTokens || *a.TopP != *b.TopP || a.InvalidUTF8 != b.InvalidUTF8 {
		in, _ := json.Marshal(api.BatchQAInput{Manifest: rep.Manifest, Options: o, Samples: rep.Samples, Reuse: api.ReuseNone})
		return fmt.Sprintf("temporal workflow start --type %s --task-queue %s --input %s",
			api.BatchQAName, shellQuote(taskQueue), shellQuote(string(in)))
	}
	args := []string{"starter", "batch", "--manifest", shellQuote(rep.Manifest)}
	if rep.Samples > 1 {
		args = append(args, "--samples", strconv.Itoa(rep.Samples))
	}
	args = append(args, "--chunk-tokens", strconv.Itoa(o.WithDefaults().ChunkTokens))
	if o.Temperature != nil {
		args = append(args, "--temperature", strconv.FormatFloat(float64(*o.Temperature), 'g', -1, 32))
	}
	if model != "" {
		args = append(args, "--model", shellQuote(model))
	}
	return strings.Join(append(args, "--reuse", api.ReuseNone), " ")
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and -_./:=@,+%.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@,+%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// loadTemplates reads the template files a batch's worker used (empty
// paths: the built-in prompts), as the worker reads them.
func loadTemplates(updatePath, finalPath string) (memagent.Templates, error) {
	t := memagent.DefaultTemplates()
	update, final := t.Update, t.Final
	for _, f := range []struct {
		path, what string
		text       *string
	}{{updatePath, "update", &update}, {finalPath, "final", &final}} {
		if f.path == "" {
			continue
		}
		b, err := os.ReadFile(f.path)
		if err != nil {
			return t, fmt.Errorf("read %s template: %w", f.what, err)
		}
		*f.text = string(b)
	}
	return memagent.ParseTemplates(update, final)
}
