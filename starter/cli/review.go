package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/clientconf"
	"github.com/memagent/memagent/internal/contract"
	"github.com/memagent/memagent/internal/report"
	"github.com/memagent/memagent/memclient"
)

// reviewQuestionFlags collects --question and --answer in command-line
// order: an --answer is a gold answer of the --question before it.
type reviewQuestionFlags struct {
	questions []api.ReviewQuestion
	err       error
}

type reviewQuestionFlag struct{ f *reviewQuestionFlags }

func (v reviewQuestionFlag) String() string { return "" }
func (v reviewQuestionFlag) Type() string   { return "string" }
func (v reviewQuestionFlag) Set(q string) error {
	v.f.questions = append(v.f.questions, api.ReviewQuestion{Question: q})
	return nil
}

type reviewAnswerFlag struct{ f *reviewQuestionFlags }

func (v reviewAnswerFlag) String() string { return "" }
func (v reviewAnswerFlag) Type() string   { return "string" }
func (v reviewAnswerFlag) Set(a string) error {
	if len(v.f.questions) == 0 {
		return errors.New("an --answer belongs to the --question before it: put it after one")
	}
	q := &v.f.questions[len(v.f.questions)-1]
	q.GoldAnswers = append(q.GoldAnswers, a)
	return nil
}

func bindReview(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	fs := cmd.Flags()
	cfg, cfgErr := clientconf.Load()
	connectionFlags(cmd, &cfg)
	var req askRequest
	qf := &reviewQuestionFlags{}
	var docs docFlags
	fs.Var(&docs.values, "doc", docUsage)
	fs.Var(reviewQuestionFlag{qf}, "question", "a question (repeatable)")
	fs.Var(reviewAnswerFlag{qf}, "answer", "a gold answer of the --question before it (repeatable)")
	questionsFile := fs.String("questions", "", "`FILE` of questions: one a line (# comments), or a JSON array of {\"id\", \"question\", \"answers\"}")
	in := api.ReviewInput{}
	fs.IntVar(&in.Parallelism, "parallelism", 0, fmt.Sprintf("memory updates in flight at once (default min(questions, %d))", api.DefaultReviewParallelism))
	fs.IntVar(&in.MaxChunksAhead, "max-chunks-ahead", 0, fmt.Sprintf("how many chunks a question may read ahead of the slowest (default %d; 1 = lockstep)", api.DefaultReviewChunksAhead))
	fs.IntVar(&in.ActivitiesPerRun, "activities-per-run", 0, fmt.Sprintf("activities per run before continue-as-new (default %d)", api.DefaultReviewActivitiesPerRun))
	fs.StringVar(&in.OutputPrefix, "output-prefix", "", "s3:// prefix for traces, results, grid and report (default s3://BUCKET/reviews/<workflow id>/<run id>/)")
	htmlOut := fs.String("html", "", "also save the HTML report to this local `PATH`, with the files it links in PATH_files/ beside it so that it works offline")
	asJSON := outputFlag(cmd, "print the grid as one JSON object instead of a table")
	signOff := fs.Int("signoff", 0, "once the review completes, start its sign-off with this many `LEVELS` (1 or 2): reviewers then decide on every answer (in the review desk, the desk command, or with starter decide)")
	schedulingFlags(fs, &in.Priority, &in.FairnessKey, &in.FairnessWeight, api.PriorityReview, "the review")
	budget := budgetFlags(fs, "the review")
	finish := askFlags(fs, &req)
	return func(args []string) (err error) {
		if cfgErr != nil {
			return cfgErr
		}
		asked := make([]string, len(qf.questions))
		for i, q := range qf.questions {
			asked[i] = q.Question
		}
		if *questionsFile != "" && len(args) > 0 {
			return badRequest(fmt.Errorf("the arguments %s were left over after the flags: the questions come from --questions %s; give the document as --doc FILE", quoteWords(args), shellWord(*questionsFile)))
		}
		if err := strayArgs(cmd, args, docs.values, asked); err != nil {
			return err
		}
		if *signOff < 0 || *signOff > 2 {
			return badRequest(fmt.Errorf("--signoff %d: a sign-off has 1 or 2 levels", *signOff))
		}
		req.Options.Model = cfg.Model
		if err := finish(); err != nil {
			return badRequest(err)
		}
		if in.Budget, err = budget(); err != nil {
			return err
		}
		switch {
		case *questionsFile != "" && len(qf.questions) > 0:
			return badRequest(errors.New("pass questions with --question or --questions FILE, not both"))
		case *questionsFile != "":
			if in.Questions, err = readReviewQuestions(*questionsFile); err != nil {
				return badRequest(err)
			}
		case len(qf.questions) == 0:
			return badRequest(errors.New("no questions: pass --question (repeatable) or --questions FILE"))
		default:
			in.Questions = qf.questions
		}
		if err := req.setDocs(&docs); err != nil {
			return err
		}
		in.Options = req.Options
		if req.Reuse == api.ReuseNone {
			in.Reuse = req.Reuse
		}
		cfg.Normalize()
		if err := cfg.Validate(); err != nil {
			return err
		}
		// Everything that can be checked without the services is checked
		// before connecting to them.
		probe := in
		probe.Document = "s3://check/document"
		if err := probe.Validate(); err != nil {
			return badRequest(err)
		}

		ctx, s, end, err := startWithDocument(ctx, cfg, stderr, *asJSON, "starter review", req.localDocs(), in.Options.InvalidUTF8 == api.InvalidUTF8Replace)
		if err != nil {
			return err
		}
		defer func() { end(err) }()
		res, err := s.review(ctx, in, req)
		if err != nil {
			return err
		}
		var saved savedPage
		if *htmlOut != "" {
			if saved, err = savePage(ctx, s.store, res.HTMLURI, *htmlOut); err != nil {
				return err
			}
		}
		signOffID := ""
		if *signOff != 0 {
			if signOffID, err = memclient.New(s.temporal, memclient.Options{TaskQueue: cfg.TaskQueue}).StartSignOff(ctx,
				api.SignOffInput{Review: res.WorkflowID, Levels: *signOff}); err != nil {
				return err
			}
		}
		if *asJSON {
			return printJSON(stdout, res)
		}
		printReviewGrid(stdout, res)
		if *htmlOut != "" {
			fmt.Fprintf(stdout, "Saved:    %s\n", saved)
		}
		if signOffID != "" {
			fmt.Fprintf(stdout, "Sign-off: %s (the review desk: the desk command; or starter decide %s --cell ID --accept)\n", signOffID, res.WorkflowID)
		}
		return nil
	}
}

// review uploads a local document, checks the budget, starts (or joins)
// the ReviewDocument run and waits for its grid.
func (s *session) review(ctx context.Context, in api.ReviewInput, req askRequest) (*api.ReviewResult, error) {
	s.replaceInvalid = in.Options.InvalidUTF8 == api.InvalidUTF8Replace
	fresh := req.Fresh
	var sha string
	var err error
	if len(req.Docs) > 0 {
		if in.Documents, err = s.resolveDocuments(ctx, req.Docs); err != nil {
			return nil, err
		}
	} else if in.Document, sha, err = s.resolveDocument(ctx, req.Doc); err != nil {
		return nil, err
	}
	in = in.WithDefaults()
	if err := in.Validate(); err != nil {
		return nil, err
	}
	run, err := memclient.New(s.temporal, memclient.Options{TaskQueue: s.cfg.TaskQueue}).StartReview(ctx, in,
		memclient.StartOptions{Fresh: fresh, Memo: documentMemo(sha)})
	if err != nil {
		return nil, err
	}
	if run.Existing {
		fmt.Fprintf(s.progressOut(), "the same review is already running or done as %s; joining it (--fresh runs it again)\n", run.ID)
	} else {
		fmt.Fprintf(s.progressOut(), "started %s: %d questions\n", run.ID, len(in.Questions))
	}
	stop := func() {}
	if s.progress != nil {
		stop = watchRun(ctx, readerFor(s.temporal, s.cfg.TemporalNamespace, api.ReviewDocumentName, run.ID), newProgressView(s.progress, s.progressTTY))
	}
	var res api.ReviewResult
	if err := awaitBudgeted(ctx, s.temporal, run.ID, in.Budget != nil, stop, &res, s.progressOut()); err != nil {
		return nil, err
	}
	return &res, nil
}

// documentMemo is the memo entry of an uploaded document's SHA-256, when
// known.
func documentMemo(sha string) map[string]any {
	if sha == "" {
		return nil
	}
	return map[string]any{"document_sha256": sha}
}

// readReviewQuestions reads a questions file: a JSON array of objects
// {"id", "question", "gold_answers"} ("answers" is its alias), or plain text with one
// question a line, where empty lines and lines starting with '#' are
// skipped.
func readReviewQuestions(path string) ([]api.ReviewQuestion, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("questions: %w", err)
	}
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("questions file %s is not UTF-8 text", path)
	}
	var qs []api.ReviewQuestion
	if trimmed := bytes.TrimSpace(data); bytes.HasPrefix(trimmed, []byte("[")) {
		// The same strict decoding as the workflow's, so a questions file
		// is exactly the review input's "questions" array.
		if err := contract.Decode(trimmed, &qs); err != nil {
			return nil, fmt.Errorf("questions file %s: %w (want a JSON array of {\"id\", \"question\", \"gold_answers\"})", path, err)
		}
	} else {
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 64<<10), api.MaxQuestionBytes+1024)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			qs = append(qs, api.ReviewQuestion{Question: line})
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("questions file %s: %w", path, err)
		}
	}
	if len(qs) == 0 {
		return nil, fmt.Errorf("questions file %s has no questions", path)
	}
	return qs, nil
}

// reviewTableEvidence is how many evidence entries a table row lists; the
// grid and the report have them all.
const reviewTableEvidence = 3

// printReviewGrid prints the grid as a table for a person. Answers and
// questions are untrusted text: they are clipped to one line and control
// characters (terminal escapes) are replaced.
func printReviewGrid(w io.Writer, g *api.ReviewResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tANSWER\tSCORE\tGROUNDING\tEVIDENCE (chunk@bytes, ✓ = in final memory)\tREUSED\tCALLS\tTOKENS")
	answersReused, chunksReused, chunksRead := 0, 0, 0
	for _, r := range g.Rows {
		chunksReused += r.ChunksReused
		chunksRead += r.ChunksRead - r.ChunksReused
		if r.AnswerReused {
			answersReused++
		}
		answer := r.Answer
		switch {
		case r.Status == "failed":
			answer = "FAILED: " + r.ErrorType
		case !r.AnswerFound:
			answer = "(no answer) " + answer
		}
		score := "-"
		if r.Scores != nil {
			score = fmt.Sprintf("f1=%.2f", r.Scores.F1)
			if r.Scores.ExactMatch {
				score = "exact"
			}
		}
		var ev []string
		for i, e := range r.Evidence {
			if i == reviewTableEvidence {
				ev = append(ev, fmt.Sprintf("+%d more", len(r.Evidence)-i+r.EvidenceDropped))
				break
			}
			s := fmt.Sprintf("%d@%d-%d", e.Chunk, e.Start, e.End)
			if c := e.Cite(); c != "" {
				s += "(" + c + ")"
			}
			if e.SupportsAnswer {
				s += "✓"
			}
			ev = append(ev, s)
		}
		if r.EvidenceDropped > 0 && len(r.Evidence) <= reviewTableEvidence {
			ev = append(ev, fmt.Sprintf("+%d dropped", r.EvidenceDropped))
		}
		evidence := strings.Join(ev, " ")
		if evidence == "" {
			evidence = "none"
		}
		grounding := "-"
		if g := r.Grounding; g != nil {
			grounding = g.Status
			if p := g.Pages.String(); p != "" {
				grounding += " " + p
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d+%d\n", reviewPrintable(r.ID, 24), reviewPrintable(answer, 40), score,
			reviewPrintable(grounding, 30), reviewPrintable(evidence, 80), report.ReuseMark(r, g.Chunks), r.Usage.Calls, r.Usage.PromptTokens, r.Usage.CompletionTokens)
	}
	tw.Flush()
	fmt.Fprintln(w)
	printDocument(w, g.Source, g.Format, g.Document, g.Chunks, g.Tokens, g.Bytes)
	fmt.Fprintf(w, "Model:    %s, %d calls, %d prompt + %d completion tokens\n", g.Model, g.Usage.Calls, g.Usage.PromptTokens, g.Usage.CompletionTokens)
	if chunksReused > 0 {
		fmt.Fprintf(w, "Reused:   %d of %d chunk readings from memory checkpoints of earlier readings (%d read now)", chunksReused, chunksReused+chunksRead, chunksRead)
		if answersReused > 0 {
			fmt.Fprintf(w, "; %d answers with their whole reading, no call", answersReused)
		}
		fmt.Fprintln(w, "; --reuse none reads them again")
	}
	fmt.Fprintf(w, "Workflow: %s (%d run(s))\n", g.WorkflowID, g.Runs)
	fmt.Fprintf(w, "Grid:     %s\n          %s\n", g.JSONURI, g.CSVURI)
	fmt.Fprintf(w, "Report:   %s\n", g.HTMLURI)
}

// reviewPrintable is s on one line, without control characters, clipped to
// n runes.
func reviewPrintable(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return '\uFFFD'
		}
		return r
	}, strings.Join(strings.Fields(s), " "))
	return clip(s, n)
}

// printDocument says what was read: the document the caller gave, and,
// when it was converted (PDF, DOCX, HTML), the text read from it on a line
// of its own, which is where chunks and byte offsets point.
func printDocument(w io.Writer, source, format, text string, chunks int, tokens, bytes int64) {
	if source == "" {
		fmt.Fprintf(w, "Document: %s (%d chunks, %d tokens, %d bytes)\n", text, chunks, tokens, bytes)
		return
	}
	fmt.Fprintf(w, "Document: %s (%s; %d chunks, %d tokens)\n", source, format, chunks, tokens)
	fmt.Fprintf(w, "Text:     %s (%d bytes, converted from it)\n", text, bytes)
}
