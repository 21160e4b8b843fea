package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/memagent/memagent/api"
)

// validateCommand is `validate ID` (start a validation) and its
// subcommands decide, reveal, extend, finish and status. The commands speak to
// memagent through memclient only; validationConn is their one link to
// the connection settings.
func validateCommand(bind bindWith) *cobra.Command {
	cmd := leaf("validate ID [--confidence 0.95] [--margin 0.1 | --sample N] [--threshold recall>=0.75 ...] [flags]",
		"Validate a finished batch or review by a blind random sample",
		`Starts the validation of a finished batch or review (memagent.Validate, under the
workflow id <ID>.validate): a random sample of its cells, per question answered and
not found, sized for --margin at --confidence (or --sample cells a stratum),
drawn with a recorded seed over a recorded hash of the population. Reviewers
decide the sampled cells blind (starter validate decide); the figures, with
their confidence intervals and pass or fail against the thresholds given here,
are in starter validate status (with whether each interval is within the margin);
starter validate extend grows the sample without redrawing what was decided;
starter validate finish signs the validation off and writes its report. See
docs/VALIDATION.md.`,
		`  starter validate memagent-batch-contracts-20250102T030405.006Z --margin 0.1 --threshold 'recall>=0.75'
  starter validate memagent-review-1f2e3d4c5b6a7980 --sample 20 --confidence 0.9`, bind(bindValidate))
	cmd.Annotations = map[string]string{argsBesideSubcommands: "ID"}
	cmd.AddCommand(
		leaf("decide VALIDATION_ID CELL (--right | --wrong [--has-answer] [--answer TEXT --page N] | --no-answer | --has-answer [--answer TEXT --page N]) [flags]",
			"Decide one sampled cell of a validation",
			`Records what is true of one sampled cell, as the reviewer your token names: on a
cell the model answered, --right or --wrong (with --has-answer, --answer and --page
when the document holds another answer); on a cell where it found none,
--no-answer or --has-answer (with the answer and its page). In blind mode a
reviewer who revealed the cell's model answer cannot decide it.`,
			`  starter validate decide memagent-batch-x.validate 17 --right
  starter validate decide memagent-batch-x.validate 23 --has-answer --answer "30 days" --page 4`, bind(bindValidateDecide)),
		leaf("reveal VALIDATION_ID CELL [flags]", "Show a sampled cell's model answer (recorded; blind mode then bars your decision on it)",
			`Shows the model's answer of one sampled cell to the reviewer your token names,
and records that they saw it.`, `  starter validate reveal memagent-batch-x.validate 17`, bind(bindValidateReveal)),
		leaf("finish VALIDATION_ID [--comment TEXT] [flags]", "Sign a validation off and write its report",
			`Signs the validation off once every sampled cell is decided (with four eyes, as a
reviewer who decided none); the report (JSON and HTML) is written beside the
batch's report, under validation/.`, `  starter validate finish memagent-batch-x.validate --comment "sample checked"`, bind(bindValidateFinish)),
		leaf("extend VALIDATION_ID (--margin M | --sample N) [--comment TEXT] [flags]", "Grow a validation's sample without redrawing what was decided",
			`Grows the sample of every stratum to the size for a narrower --margin (at the
validation's confidence) or to --sample cells (a smaller stratum whole), taking in
each stratum the next cells of the same seeded draw: the cells drawn and decided
so far stay, and a redraw from the seed gives the whole sample. The extension is
recorded (who, when, each stratum's size before and after); the new cells are
decided like the others before the sign-off.`,
			`  starter validate extend memagent-batch-x.validate --margin 0.05
  starter validate extend memagent-batch-x.validate --sample 60`, bind(bindValidateExtend)),
		leaf("status VALIDATION_ID [flags]", "Print a validation's sample and figures",
			`Prints the validation's figures so far (each with its interval), the thresholds'
outcomes, and the sampled cells with their decisions.`, `  starter validate status memagent-batch-x.validate`, bind(bindValidateStatus)),
	)
	return cmd
}

// validationID is the validation's workflow id from ID: a batch's or
// review's id, or its validation's (<id>.validate).
func validationID(id string) string {
	if strings.HasSuffix(id, api.ValidationSuffix) {
		return id
	}
	return api.ValidationWorkflowID(id)
}

func bindValidate(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	conn := bindValidationConn(cmd)
	fs := cmd.Flags()
	review := fs.Bool("review", false, "ID is a review's (default a batch's)")
	confidence := fs.Float64("confidence", 0.95, "the confidence level of every interval")
	margin := fs.Float64("margin", 0, "the margin of error each stratum's sample is sized for (default 0.1)")
	sample := fs.Int("sample", 0, "the number of cells to sample in each stratum, instead of --margin")
	thresholds := fs.StringArray("threshold", nil, "a pass mark set before sampling: FIGURE>=VALUE (the interval's lower bound) or FIGURE<=VALUE (its upper bound); figures: precision, elusion, richness, recall")
	notBlind := fs.Bool("not-blind", false, "show the model's answers to the reviewers from the start")
	fourEyes := fs.Bool("four-eyes", false, "the validation is signed off by a reviewer who decided none of its cells")
	seed := fs.String("seed", "", "the seed of the draw (default the validation's workflow id); recorded in the report")
	asJSON := outputFlag(cmd, "print the validation as JSON")
	return func(args []string) (err error) {
		if len(args) != 1 || args[0] == "" {
			return badRequest(errors.New("validate takes one workflow id: the finished batch's (or, with --review, review's)"))
		}
		in := api.ValidateInput{Confidence: *confidence, Margin: *margin, SampleSize: *sample, FourEyes: *fourEyes, Seed: *seed}
		if *review {
			in.Review = args[0]
		} else {
			in.Batch = args[0]
		}
		if *notBlind {
			f := false
			in.Blind = &f
		}
		for _, s := range *thresholds {
			t, err := api.ParseValidationThreshold(s)
			if err != nil {
				return badRequest(err)
			}
			in.Thresholds = append(in.Thresholds, t)
		}
		if err := in.Validate(); err != nil {
			return badRequest(validateFlagError(err))
		}
		ctx, mc, end, err := conn.open(ctx, stderr, *asJSON, "starter validate", "")
		if err != nil {
			return err
		}
		defer func() { end(err) }()
		id, err := mc.StartValidation(ctx, in)
		if err != nil {
			return refusal(err)
		}
		// The sample is drawn at once: a subject that cannot be
		// validated (a stratum smaller than --sample) is refused here.
		vw, err := mc.AwaitValidation(ctx, id)
		if err != nil {
			return refusal(err)
		}
		if *asJSON {
			return printJSON(stdout, vw)
		}
		fmt.Fprintf(stdout, "validation %s: %d cells sampled (seed %s, population hash %s); decide them with starter validate decide %s CELL, see them with starter validate status %s\n",
			id, len(vw.Cells), vw.Seed, vw.PopulationHash, id, id)
		return nil
	}
}

// validateFlagError speaks the CLI's flags for the input's JSON names.
func validateFlagError(err error) error {
	r := strings.NewReplacer("sample_size", "--sample", "margin", "--margin", "confidence", "--confidence")
	return errors.New(r.Replace(err.Error()))
}

func oneCellArgs(args []string, command string) (string, string, error) {
	if len(args) != 2 || args[0] == "" || args[1] == "" {
		return "", "", badRequest(fmt.Errorf("%s takes a validation's workflow id and a sampled cell's id", command))
	}
	return validationID(args[0]), args[1], nil
}

func bindValidateDecide(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	conn := bindValidationConn(cmd)
	rf := bindReviewerFlags(cmd.Flags())
	fs := cmd.Flags()
	right := fs.Bool("right", false, "the model's answer is right")
	wrong := fs.Bool("wrong", false, "the model's answer is wrong")
	noAnswer := fs.Bool("no-answer", false, "the document holds no answer (the model found none)")
	hasAnswer := fs.Bool("has-answer", false, "the document holds an answer: one the model missed, or (with --wrong) another than the model's")
	answer := fs.String("answer", "", "the right answer, where the document holds one")
	page := fs.Int("page", 0, "the page the right answer is on")
	comment := fs.String("comment", "", "a comment kept with the decision")
	asJSON := outputFlag(cmd, "print the view as JSON")
	return func(args []string) (err error) {
		id, cell, err := oneCellArgs(args, "validate decide")
		if err != nil {
			return err
		}
		r := api.ValidationDecision{Cell: cell, Answer: *answer, Page: *page, Comment: *comment}
		switch {
		case *right && !*wrong && !*noAnswer && !*hasAnswer:
			r.Verdict = api.VerdictRight
		case *wrong && !*right && !*noAnswer:
			r.Verdict, r.HasAnswer = api.VerdictWrong, *hasAnswer
		case *noAnswer && !*right && !*wrong && !*hasAnswer:
			r.Verdict = api.VerdictNoAnswer
		case *hasAnswer && !*right && !*wrong && !*noAnswer:
			r.Verdict = api.VerdictHasAnswer
		default:
			return badRequest(errors.New("give one of --right, --wrong (with --has-answer when the document holds another answer), --no-answer or --has-answer"))
		}
		name, err := rf.who()
		if err != nil {
			return err
		}
		ctx, mc, end, err := conn.open(ctx, stderr, *asJSON, "starter validate decide", name)
		if err != nil {
			return err
		}
		defer func() { end(err) }()
		r.Reviewer, r.ClientIdentity = name, clientIdentity("validate decide", name)
		vw, err := mc.DecideValidation(ctx, id, r)
		if err != nil {
			return refusal(err)
		}
		if *asJSON {
			return printJSON(stdout, vw)
		}
		fmt.Fprintf(stdout, "%s cell %s: %s by %s; %d sampled cells pending\n", id, cell, r.Verdict, name, vw.Pending)
		return nil
	}
}

func bindValidateReveal(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	conn := bindValidationConn(cmd)
	rf := bindReviewerFlags(cmd.Flags())
	asJSON := outputFlag(cmd, "print the cell as JSON")
	return func(args []string) (err error) {
		id, cell, err := oneCellArgs(args, "validate reveal")
		if err != nil {
			return err
		}
		name, err := rf.who()
		if err != nil {
			return err
		}
		ctx, mc, end, err := conn.open(ctx, stderr, *asJSON, "starter validate reveal", name)
		if err != nil {
			return err
		}
		defer func() { end(err) }()
		c, err := mc.RevealValidation(ctx, id, api.ValidationReveal{Cell: cell, Reviewer: name, ClientIdentity: clientIdentity("validate reveal", name)})
		if err != nil {
			return refusal(err)
		}
		if *asJSON {
			return printJSON(stdout, c)
		}
		fmt.Fprintf(stdout, "cell %s: %s\nmodel answer: %s\npages: %s\n", c.ID, c.Question, c.ModelAnswer, c.AnswerPages)
		return nil
	}
}

func bindValidateExtend(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	conn := bindValidationConn(cmd)
	rf := bindReviewerFlags(cmd.Flags())
	fs := cmd.Flags()
	margin := fs.Float64("margin", 0, "the new margin of error: every stratum's sample grows to the size for it")
	sample := fs.Int("sample", 0, "the new number of cells a stratum (a smaller stratum is taken whole)")
	comment := fs.String("comment", "", "a comment kept with the extension")
	asJSON := outputFlag(cmd, "print the view as JSON")
	return func(args []string) (err error) {
		if len(args) != 1 || args[0] == "" {
			return badRequest(errors.New("validate extend takes a validation's workflow id"))
		}
		r := api.ValidationExtend{Margin: *margin, SampleSize: *sample, Comment: *comment}
		name, err := rf.who()
		if err != nil {
			return err
		}
		r.Reviewer, r.ClientIdentity = name, clientIdentity("validate extend", name)
		if err := r.Validate(); err != nil {
			return badRequest(validateFlagError(err))
		}
		ctx, mc, end, err := conn.open(ctx, stderr, *asJSON, "starter validate extend", name)
		if err != nil {
			return err
		}
		defer func() { end(err) }()
		id := validationID(args[0])
		vw, err := mc.ExtendValidation(ctx, id, r)
		if err != nil {
			return refusal(err)
		}
		if *asJSON {
			return printJSON(stdout, vw)
		}
		fmt.Fprintf(stdout, "%s: the sample is %d cells; %d pending: decide them with starter validate decide %s CELL\n", id, len(vw.Cells), vw.Pending, id)
		return nil
	}
}

func bindValidateFinish(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	conn := bindValidationConn(cmd)
	rf := bindReviewerFlags(cmd.Flags())
	comment := cmd.Flags().String("comment", "", "a comment kept with the sign-off")
	asJSON := outputFlag(cmd, "print the report as JSON")
	return func(args []string) (err error) {
		if len(args) != 1 || args[0] == "" {
			return badRequest(errors.New("validate finish takes a validation's workflow id"))
		}
		name, err := rf.who()
		if err != nil {
			return err
		}
		ctx, mc, end, err := conn.open(ctx, stderr, *asJSON, "starter validate finish", name)
		if err != nil {
			return err
		}
		defer func() { end(err) }()
		rep, err := mc.FinishValidation(ctx, validationID(args[0]), api.ValidationFinish{Comment: *comment, Reviewer: name, ClientIdentity: clientIdentity("validate finish", name)})
		if err != nil {
			return refusal(err)
		}
		if *asJSON {
			return printJSON(stdout, rep)
		}
		printValidation(stdout, rep)
		return nil
	}
}

func bindValidateStatus(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	conn := bindValidationConn(cmd)
	reviewerName := cmd.Flags().String("as", "", "show the sample as `REVIEWER` sees it (the model's answers they revealed)")
	asJSON := outputFlag(cmd, "print the view as JSON")
	return func(args []string) (err error) {
		if len(args) != 1 || args[0] == "" {
			return badRequest(errors.New("validate status takes a validation's workflow id"))
		}
		ctx, mc, end, err := conn.open(ctx, stderr, *asJSON, "starter validate status", "")
		if err != nil {
			return err
		}
		defer func() { end(err) }()
		vw, err := mc.Validation(ctx, validationID(args[0]), *reviewerName)
		if err != nil {
			return notMemagents(err)
		}
		if *asJSON {
			return printJSON(stdout, vw)
		}
		printValidation(stdout, vw)
		return nil
	}
}

// printValidation prints a validation's figures, thresholds and sample.
func printValidation(w io.Writer, vw *api.ValidationView) {
	state := fmt.Sprintf("%d of %d sampled cells pending", vw.Pending, len(vw.Cells))
	if vw.Finished != nil {
		state = "signed off by " + vw.Finished.Reviewer
	}
	fmt.Fprintf(w, "validation %s of %s %s (run %s): %s\n", vw.WorkflowID, vw.Kind, vw.Subject, vw.SubjectRun, state)
	fmt.Fprintf(w, "seed %s · population hash %s · confidence %g", vw.Seed, vw.PopulationHash, vw.Confidence)
	if vw.Blind {
		fmt.Fprint(w, " · blind")
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "intervals: %s; richness and recall: %s\n", vw.IntervalMethod, vw.CombinedMethod)
	if vw.OverallMethod != "" && len(vw.Questions) > 1 {
		fmt.Fprintf(w, "overall: %s\n", vw.OverallMethod)
	}
	if vw.StopMargin > 0 {
		verdict := "not every interval is within it yet: decide the pending cells, or extend the sample (starter validate extend)"
		if vw.WithinMargin {
			verdict = "every interval is within it: the sample may stop here"
		}
		fmt.Fprintf(w, "margin ±%g: %s\n", vw.StopMargin, verdict)
	}
	figs := func(f api.ValidationFigures) {
		fmt.Fprintf(w, "  answered %d (sampled %d: %d right, %d wrong with an answer held) · not found %d (sampled %d: %d missed)\n",
			f.Answered, f.AnsweredSampled, f.Right, f.WrongHeld, f.NotFound, f.NotFoundSampled, f.Missed)
		if f.Error != "" {
			fmt.Fprintf(w, "  no figures yet: %s\n", f.Error)
			return
		}
		for _, x := range []struct {
			name string
			i    api.ValidationInterval
			ok   bool
		}{{"precision", f.Precision, true}, {"elusion", f.Elusion, true}, {"richness", f.Richness, true}, {"recall", f.Recall, f.RecallDefined}} {
			if !x.ok {
				fmt.Fprintf(w, "  %-9s undefined (no sampled cell holds an answer)\n", x.name)
				continue
			}
			within := ""
			if vw.StopMargin > 0 {
				within = fmt.Sprintf("  ±%.1f%% over the margin", 100*x.i.HalfWidth)
				if x.i.WithinMargin {
					within = fmt.Sprintf("  ±%.1f%% within the margin", 100*x.i.HalfWidth)
				}
			}
			fmt.Fprintf(w, "  %-9s %6.1f%%  [%5.1f%%, %5.1f%%]%s\n", x.name, 100*x.i.Estimate, 100*x.i.Lower, 100*x.i.Upper, within)
		}
	}
	fmt.Fprintln(w, "overall:")
	figs(vw.Overall)
	if len(vw.Questions) > 1 {
		for _, q := range vw.Questions {
			fmt.Fprintf(w, "question %q:\n", q.Question)
			figs(q)
		}
	}
	for _, o := range vw.Thresholds {
		verdict := "fail"
		if o.Passed {
			verdict = "pass"
		}
		fmt.Fprintf(w, "threshold %s: %s (bound %.4f)", o.Threshold, verdict, o.Bound)
		if o.Why != "" {
			fmt.Fprintf(w, ": %s", o.Why)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "sample:")
	for _, c := range vw.Cells {
		d := "pending"
		if c.Decision != nil {
			d = c.Decision.Verdict + " by " + c.Decision.Reviewer
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\n", c.ID, c.Stratum, d)
	}
	if vw.ReportURI != "" {
		fmt.Fprintf(w, "report: %s\nhtml:   %s\n", vw.ReportURI, vw.HTMLURI)
	}
}
