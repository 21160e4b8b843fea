package cli

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
	"github.com/spf13/pflag"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/clientconf"
	"github.com/memagent/memagent/internal/reviewer"
	"github.com/memagent/memagent/internal/s3client"
	"github.com/memagent/memagent/internal/signoff"
	"github.com/memagent/memagent/memclient"
)

// reviewerFlags are the identity flags of decide and signoff.
type reviewerFlags struct {
	source    *string
	tokenFile *string
}

func bindReviewerFlags(fs *pflag.FlagSet) reviewerFlags {
	return reviewerFlags{
		source:    fs.String("reviewers", os.Getenv(reviewer.Env), "the reviewer identity `SOURCE` the operator set up: tokens:FILE ("+reviewer.Env+")"),
		tokenFile: fs.String("token-file", "", "read your reviewer token from `FILE` (default $"+reviewer.TokenEnv+")"),
	}
}

// who is the reviewer the token names, through the operator's token file.
func (f reviewerFlags) who() (string, error) {
	if reviewer.IsHeader(*f.source) {
		return "", badRequest(errors.New("the reviewer identity source is a proxy's header, which only the desk sees: the CLI needs a token file (" + reviewer.Env + "=tokens:FILE)"))
	}
	src, err := reviewer.Parse(*f.source, nil)
	if err != nil {
		return "", badRequest(err)
	}
	if !src.Tokens() {
		return "", badRequest(errors.New("the reviewer identity source is a proxy's header, which only the desk sees: the CLI needs a token file (" + reviewer.Env + "=tokens:FILE)"))
	}
	token := os.Getenv(reviewer.TokenEnv)
	if *f.tokenFile != "" {
		data, err := os.ReadFile(*f.tokenFile)
		if err != nil {
			return "", badRequest(err)
		}
		token = strings.TrimSpace(string(data))
	}
	name, err := src.FromToken(token)
	if err != nil {
		return "", badRequest(err)
	}
	return name, nil
}

// clientIdentity is the Temporal client identity of a starter command run
// for a reviewer: Temporal records it beside each Update.
func clientIdentity(command, name string) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%d@%s starter %s (reviewer %s)", os.Getpid(), host, command, name)
}

// subjectArg is the one workflow id a sign-off command takes: the
// review's or batch's, or its sign-off's in either form (<id>.signoff,
// or <id>/signoff for a sign-off started before that form), which names
// the same subject. Which execution is the sign-off, memclient finds and
// verifies.
func subjectArg(args []string, command string) (string, error) {
	if len(args) != 1 || args[0] == "" {
		return "", badRequest(fmt.Errorf("%s takes one workflow id: the review's or batch's (its sign-off is <id>%s)", command, api.SignOffSuffix))
	}
	if subject, ok := api.SignOffSubjectOf(args[0]); ok {
		return subject, nil
	}
	return args[0], nil
}

func bindDecide(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	fs := cmd.Flags()
	cfg, cfgErr := clientconf.Load()
	connectionFlags(cmd, &cfg)
	rf := bindReviewerFlags(fs)
	cell := fs.String("cell", "", "the `CELL` to decide: a question id (a batch item's seq)")
	accept := fs.Bool("accept", false, "accept the model's answer")
	edit := fs.String("edit", "", "replace the model's answer with `ANSWER` (needs --reason)")
	reject := fs.Bool("reject", false, "reject the answer (needs --reason)")
	reopen := fs.Bool("reopen", false, "withdraw the cell's decisions at --level and above (needs --reason)")
	reason := fs.String("reason", "", "why the answer is edited or rejected, or the cell reopened")
	comment := fs.String("comment", "", "a comment kept with the decision")
	level := fs.Int("level", 0, "the level decided at, 1 or 2 (default the level the sign-off waits for)")
	version := fs.Int("version", -1, "the cell's version you decided on; a cell that changed since refuses the decision (default the version it has now)")
	asJSON := outputFlag(cmd, "print the cell as JSON")
	return func(args []string) (err error) {
		if cfgErr != nil {
			return cfgErr
		}
		subject, err := subjectArg(args, "decide")
		if err != nil {
			return err
		}
		n := 0
		decision := ""
		for _, b := range []struct {
			set bool
			d   string
		}{{*accept, api.DecisionAccepted}, {*edit != "", api.DecisionEdited}, {*reject, api.DecisionRejected}, {*reopen, "reopen"}} {
			if b.set {
				n++
				decision = b.d
			}
		}
		if n != 1 {
			return badRequest(errors.New("give one of --accept, --edit ANSWER, --reject or --reopen"))
		}
		if *cell == "" {
			return badRequest(errors.New("no --cell: name the question id (or batch item) to decide"))
		}
		name, err := rf.who()
		if err != nil {
			return err
		}
		cfg.ClientIdentity = clientIdentity("decide", name)
		ctx, s, end, err := startCommand(ctx, cfg, stderr, *asJSON, "starter decide")
		if err != nil {
			return err
		}
		defer func() { end(err) }()
		mc := memclient.New(s.temporal, memclient.Options{TaskQueue: cfg.TaskQueue})
		g, err := mc.SignOffGrid(ctx, subject)
		if err != nil {
			return notMemagents(err)
		}
		if g.State == api.SignOffSignedOff {
			return badRequest(fmt.Errorf("the sign-off of %s is complete: every level is signed off, and the grid is final", subject))
		}
		c := g.Cell(*cell)
		if c == nil {
			return badRequest(fmt.Errorf("no cell %q in the sign-off of %s", *cell, subject))
		}
		lv, ver := *level, *version
		if lv == 0 {
			lv = waitingLevel(g)
		}
		if ver < 0 {
			ver = c.Version
		}
		var out *api.SignOffCell
		if decision == "reopen" {
			out, err = mc.Reopen(ctx, subject, api.ReopenRequest{Cell: *cell, Level: lv, Reason: *reason, Version: ver, Reviewer: name, ClientIdentity: cfg.ClientIdentity})
		} else {
			out, err = mc.Decide(ctx, subject, api.DecideRequest{Cell: *cell, Level: lv, Decision: decision, FinalAnswer: *edit,
				Reason: *reason, Comment: *comment, Version: ver, Reviewer: name, ClientIdentity: cfg.ClientIdentity})
		}
		if err != nil {
			return refusal(err)
		}
		if *asJSON {
			return printJSON(stdout, out)
		}
		did := decision
		if decision == api.DecisionAccepted && lv == 2 {
			did = "approved"
		}
		fmt.Fprintf(stdout, "%s cell %s: %s at level %d by %s; the cell is %s (version %d)\n", subject, out.ID, did, lv, name, out.Status, out.Version)
		return nil
	}
}

// notMemagents marks as the caller's to fix (exit 2) a workflow that is
// not memagent's (memclient.ErrNotMemagent) or a sign-off whose subject
// was run again (memclient.ErrSubjectChanged): nothing of it is read.
func notMemagents(err error) error {
	if errors.Is(err, memclient.ErrNotMemagent) || errors.Is(err, memclient.ErrSubjectChanged) {
		return badRequest(err)
	}
	return err
}

// refusal marks an Update the sign-off refused as the caller's to fix.
func refusal(err error) error {
	if errors.Is(err, memclient.ErrNotMemagent) || strings.Contains(err.Error(), "memagent:") || isValidatorRefusal(err) {
		return badRequest(err)
	}
	return err
}

// isValidatorRefusal reports whether err is an Update's validator refusing
// it (an application error the sign-off returned before accepting).
func isValidatorRefusal(err error) bool {
	var app interface{ Type() string }
	return errors.As(err, &app)
}

// waitingLevel is the level a sign-off waits for.
func waitingLevel(g *api.SignOffGrid) int {
	for _, s := range g.SignOffs {
		if s.Level == 1 {
			return 2
		}
	}
	return 1
}

func bindSignOff(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	fs := cmd.Flags()
	cfg, cfgErr := clientconf.Load()
	connectionFlags(cmd, &cfg)
	rf := bindReviewerFlags(fs)
	start := fs.Bool("start", false, "start the sign-off of the finished review (or batch) instead")
	levels := fs.Int("levels", 2, "with --start: how many levels the sign-off has, 1 or 2")
	runID := fs.String("run", "", "with --start: the run of the review (or batch) to sign off (default: its latest, completed run); another latest run is refused")
	level := fs.Int("level", 0, "sign this level off, 1 or 2")
	comment := fs.String("comment", "", "a comment kept with the sign-off")
	asJSON := outputFlag(cmd, "print the sign-off's grid as JSON")
	return func(args []string) (err error) {
		if cfgErr != nil {
			return cfgErr
		}
		subject, err := subjectArg(args, "signoff")
		if err != nil {
			return err
		}
		if *start && *level != 0 {
			return badRequest(errors.New("--start and --level: start the sign-off first, then sign a level off"))
		}
		name := ""
		if *level != 0 {
			if name, err = rf.who(); err != nil {
				return err
			}
			cfg.ClientIdentity = clientIdentity("signoff", name)
		}
		ctx, s, end, err := startCommand(ctx, cfg, stderr, *asJSON, "starter signoff")
		if err != nil {
			return err
		}
		defer func() { end(err) }()
		mc := memclient.New(s.temporal, memclient.Options{TaskQueue: cfg.TaskQueue})
		switch {
		case *start:
			in := api.SignOffInput{Review: subject, Levels: *levels}
			d, err := s.temporal.DescribeWorkflowExecution(ctx, subject, "")
			if err != nil {
				return fmt.Errorf("%s: %w", subject, err)
			}
			if d.GetWorkflowExecutionInfo().GetType().GetName() == api.BatchQAName {
				in = api.SignOffInput{Batch: subject, Levels: *levels}
			}
			in.SubjectRunID = *runID
			if _, err := mc.StartSignOff(ctx, in); err != nil {
				return badRequest(err)
			}
		case *level != 0:
			if _, err := mc.SignOff(ctx, subject, api.SignOffRequest{Level: *level, Comment: *comment, Reviewer: name, ClientIdentity: cfg.ClientIdentity}); err != nil {
				return refusal(err)
			}
		}
		g, err := signOffGridAwait(ctx, mc, subject)
		if err != nil {
			return notMemagents(err)
		}
		if *asJSON {
			return printJSON(stdout, g)
		}
		levels := "two levels"
		if g.Levels == 1 {
			levels = "one level"
		}
		fmt.Fprintf(stdout, "Sign-off: %s (%s %s run %s, %s)\n", g.WorkflowID, g.Subject.Kind, g.Subject.WorkflowID, g.Subject.RunID, levels)
		fmt.Fprintf(stdout, "State:    %s", g.State)
		if g.State != api.SignOffSignedOff {
			fmt.Fprintf(stdout, ", %d of %d cells pending at level %d", g.Pending, len(g.Cells), waitingLevel(g))
		}
		fmt.Fprintln(stdout)
		for _, so := range g.SignOffs {
			fmt.Fprintf(stdout, "Level %d:  signed off by %s at %s\n", so.Level, so.Reviewer, so.At.Format(time.RFC3339))
		}
		fmt.Fprintf(stdout, "Audit:    %s (%d lines)\n", g.Subject.AuditURI, g.AuditLines)
		switch {
		case g.XLSXURI != "":
			fmt.Fprintf(stdout, "Decided:  %s\n          %s\n", g.CSVURI, g.XLSXURI)
		case g.State == api.SignOffSignedOff:
			// The grid is final; the worker writes decided.{json,csv,xlsx}
			// a moment after the last sign-off.
			fmt.Fprintln(stdout, "Decided:  being written beside the audit log; run this again in a moment")
		}
		return nil
	}
}

// signOffGridAwait reads the sign-off's grid, waiting a little for one just
// started to read what it signs off.
func signOffGridAwait(ctx context.Context, mc *memclient.Client, subject string) (*api.SignOffGrid, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		g, err := mc.SignOffGrid(ctx, subject)
		if err == nil || time.Now().After(deadline) || !strings.Contains(err.Error(), "still reading") {
			return g, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func bindExportGrid(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	fs := cmd.Flags()
	cfg, cfgErr := clientconf.Load()
	connectionFlags(cmd, &cfg)
	xlsx := fs.String("xlsx", "", "write the decided grid as an XLSX workbook to `FILE`")
	csvOut := fs.String("csv", "", "write the decided grid as CSV to `FILE`")
	return func(args []string) (err error) {
		if cfgErr != nil {
			return cfgErr
		}
		subject, err := subjectArg(args, "export grid")
		if err != nil {
			return err
		}
		if *xlsx == "" && *csvOut == "" {
			return badRequest(errors.New("no --xlsx FILE or --csv FILE: say what to write"))
		}
		ctx, s, end, err := startCommand(ctx, cfg, stderr, false, "starter export grid")
		if err != nil {
			return err
		}
		defer func() { end(err) }()
		mc := memclient.New(s.temporal, memclient.Options{TaskQueue: cfg.TaskQueue})
		g, err := mc.SignOffGrid(ctx, subject)
		if err != nil {
			return notMemagents(err)
		}
		// A finished validation of the same run is the workbook's
		// Validation sheet.
		var val *api.ValidationReport
		if *xlsx != "" {
			// A look-alike under the validation's id is not believed, and
			// does not keep the grid from being exported.
			switch val, err = mc.FinishedValidation(ctx, subject, g.Subject.RunID); {
			case errors.Is(err, memclient.ErrNotMemagent):
				fmt.Fprintf(stderr, "%v: the workbook has no Validation sheet\n", err)
			case err != nil:
				return err
			}
		}
		rows, err := readSignOffRows(ctx, s.store, g)
		if err != nil {
			return err
		}
		recs, err := signoff.Join(*g, rows)
		if err != nil {
			return err
		}
		for _, f := range []struct {
			path  string
			write func(io.Writer) error
		}{
			{*xlsx, func(w io.Writer) error { return signoff.WriteXLSXWithValidation(w, *g, recs, val) }},
			{*csvOut, func(w io.Writer) error { return signoff.WriteCSV(w, recs) }},
		} {
			if f.path == "" {
				continue
			}
			if err := writeFileWhole(f.path, f.write); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s: %d cells of %s (%s)\n", f.path, len(recs), subject, g.State)
			if val != nil && f.path == *xlsx {
				fmt.Fprintf(stdout, "%s: sheet %s, validation %s (%d cells sampled)\n", f.path, signoff.ValidationSheetName, val.WorkflowID, len(val.Cells))
			}
		}
		return nil
	}
}

// readSignOffRows reads the grid a sign-off was made on.
func readSignOffRows(ctx context.Context, store reportReader, g *api.SignOffGrid) ([]signoff.Row, error) {
	loc, err := s3client.ParseURI(g.Subject.GridURI)
	if err != nil {
		return nil, err
	}
	data, err := store.ReadAll(ctx, loc)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", g.Subject.GridURI, err)
	}
	if g.Subject.Kind == api.SubjectReview {
		rg, err := signoff.DecodeReviewGrid(data)
		if err != nil {
			return nil, err
		}
		return signoff.ReviewRows(rg), nil
	}
	return signoff.BatchRows(data)
}

// writeFileWhole writes path through a temporary file renamed over it, so
// that a failure never leaves half a file.
func writeFileWhole(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".export-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
