package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/spf13/cobra"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/clientconf"
	"github.com/memagent/memagent/memclient"
)

func bindStatus(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	fs := cmd.Flags()
	cfg, cfgErr := clientconf.Load()
	connectionFlags(cmd, &cfg)
	asJSON := outputFlag(cmd, "print the progress as JSON, with its workflow_type")
	showMemory := fs.Bool("memory", false, "also print the current memory (DocumentQA runs)")
	showHistory := fs.Bool("history", false, "also list every run of the workflow (continue-as-new generations) with its history size")
	return func(args []string) (err error) {
		if cfgErr != nil {
			return cfgErr
		}
		id, err := oneWorkflowID("status", args)
		if err != nil {
			return err
		}
		cfg.Normalize()
		s := &session{cfg: cfg, logger: cliLogger(stderr)}
		if err := s.connect(ctx); err != nil {
			return err
		}
		defer s.close()
		kind, err := runKind(ctx, s.temporal, id)
		if err != nil {
			return err
		}
		if *showMemory && kind != api.DocumentQAName {
			return fmt.Errorf("--memory shows the memory of a %s run; %s is a %s, whose memories are in its per-question traces", api.DocumentQAName, id, kind)
		}
		qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		p, err := queryStatus(qctx, s.temporal, kind, id)
		cancel()
		if err != nil {
			// Say why the query failed when the server can tell: a failing
			// workflow task, no worker polling.
			d := newDiagnoser(s.temporal, s.cfg.TemporalNamespace, id)
			d.noPollerSince = time.Now().Add(-noPollerGrace)
			switch why := d.trouble(ctx); {
			case strings.Contains(why, "no worker is polling"):
				// The query's own error is a transport detail here.
				err = fmt.Errorf("%s is running, but %s; its progress needs a worker to answer. To end it: starter cancel %s (a worker acts on it), or starter terminate %s --reason ... (at once)", id, why, id, id)
			case why != "":
				err = fmt.Errorf("query %s: %w (%s)", id, err, why)
			default:
				err = fmt.Errorf("query %s: %w (queries need a worker polling the run's task queue)", id, err)
			}
			if !*showHistory {
				return err
			}
			fmt.Fprintln(stderr, "starter:", err)
			return printRuns(ctx, stdout, s.temporal, s.cfg.TemporalNamespace, id)
		}
		if *asJSON {
			return writeStatusJSON(stdout, id, kind, p)
		}
		if why := newDiagnoser(s.temporal, s.cfg.TemporalNamespace, id).trouble(ctx); why != "" {
			defer fmt.Fprintf(stdout, "trouble: %s\n", why)
		}
		switch p := p.(type) {
		case api.ReviewProgress:
			printReviewStatus(stdout, p)
		case api.BatchProgress:
			printBatchStatus(stdout, p)
		case api.Progress:
			printQAStatus(stdout, p)
			if *showMemory {
				fmt.Fprintf(stdout, "memory:\n%s\n", p.Memory)
			}
		}
		if *showHistory {
			return printRuns(ctx, stdout, s.temporal, s.cfg.TemporalNamespace, id)
		}
		return nil
	}
}

// oneWorkflowID checks that args are one WORKFLOW_ID; flags may come
// before or after it (starter status ID --history as well as --history ID).
func oneWorkflowID(name string, args []string) (string, error) {
	if len(args) != 1 {
		return "", badRequest(fmt.Errorf("usage: starter %s [flags] WORKFLOW_ID (got %d arguments)", name, len(args)))
	}
	return args[0], nil
}

// queryStatus runs the progress query of a run of type kind and returns
// its typed result: api.Progress, ReviewProgress or BatchProgress.
func queryStatus(ctx context.Context, c client.Client, kind, id string) (any, error) {
	mc := memclient.New(c, memclient.Options{})
	switch kind {
	case api.ReviewDocumentName:
		return mc.ReviewProgress(ctx, id)
	case api.BatchQAName:
		return mc.BatchProgress(ctx, id)
	}
	return queryProgress(ctx, c, id)
}

// writeStatusJSON prints the progress as one JSON object, its own fields,
// workflow_id and workflow_type, so a reader knows which of the three it
// has.
func writeStatusJSON(w io.Writer, id, kind string, p any) error {
	raw, err := json.Marshal(p)
	if err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return err
	}
	fields["workflow_type"], _ = json.Marshal(kind)
	fields["workflow_id"], _ = json.Marshal(id)
	return printJSON(w, fields)
}

// printQAStatus prints a DocumentQA run's progress.
func printQAStatus(w io.Writer, p api.Progress) {
	fmt.Fprintf(w, "stage:  %s (run %d)\nchunks: %d/%d%s\ntokens: %d/%d (%.1f%%)%s\ncalls:  %d (%d prompt + %d completion tokens)\n",
		p.Stage, p.Run, p.ChunksDone, p.ChunksTotal, readReused(p.ChunksDone-p.ChunksReused, p.ChunksReused),
		p.TokensDone, p.TokensTotal, percent(p.TokensDone, p.TokensTotal), readReused(p.TokensDone-p.TokensReused, p.TokensReused),
		p.Usage.Calls, p.Usage.PromptTokens, p.Usage.CompletionTokens)
	if p.Answer != "" {
		fmt.Fprintf(w, "answer: %s\n", p.Answer)
	}
}

// printReviewStatus prints a review's progress and a line per question.
// Answers are untrusted text, printed on one line without control
// characters.
func printReviewStatus(w io.Writer, p api.ReviewProgress) {
	counts := map[string]int{}
	for _, q := range p.Questions {
		counts[q.Status]++
	}
	var tally []string
	for _, st := range []string{api.QuestionDone, api.QuestionAnswering, api.QuestionReading, api.QuestionFailed} {
		if counts[st] > 0 {
			tally = append(tally, fmt.Sprintf("%d %s", counts[st], st))
		}
	}
	fmt.Fprintf(w, "stage:     %s (run %d)\n", p.Stage, p.Run)
	fmt.Fprintf(w, "chunks:    %d/%d (read or reused by every question still going)\n", p.ChunksDone, p.ChunksTotal)
	fmt.Fprintf(w, "tokens:    %d/%d (%.1f%%)\n", p.TokensDone, p.TokensTotal, percent(p.TokensDone, p.TokensTotal))
	fmt.Fprintf(w, "updates:   %d/%d memory updates%s (%d in flight)\n", p.UpdatesDone, p.UpdatesTotal, readReused(p.ChunksRead, p.ChunksReused), p.InFlight)
	if all := p.TokensTotal * int64(len(p.Questions)); p.TokensRead+p.TokensReused > 0 {
		fmt.Fprintf(w, "readings:  %d/%d tokens over all questions: %d read, %d reused\n", p.TokensRead+p.TokensReused, all, p.TokensRead, p.TokensReused)
	}
	fmt.Fprintf(w, "calls:     %d (%d prompt + %d completion tokens)\n", p.Usage.Calls, p.Usage.PromptTokens, p.Usage.CompletionTokens)
	if p.AnswersReused > 0 {
		fmt.Fprintf(w, "reused:    %d answers, with their whole reading, no call\n", p.AnswersReused)
	}
	fmt.Fprintf(w, "questions: %d (%s)\n", len(p.Questions), orDash(strings.Join(tally, ", ")))
	if len(p.Questions) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tSTATUS\tCHUNKS\tREUSED\tEVIDENCE\tANSWER")
	for _, q := range p.Questions {
		answer := q.Answer
		switch {
		case q.Status == api.QuestionFailed:
			answer = "FAILED: " + q.ErrorType
		case q.Status == api.QuestionDone && !q.AnswerFound:
			answer = "(no \\boxed{}) " + answer
		}
		reused := "-"
		switch {
		case q.AnswerReused:
			reused = fmt.Sprintf("%d + answer", q.ChunksReused)
		case q.ChunksReused > 0:
			reused = fmt.Sprint(q.ChunksReused)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d/%d\t%s\t%d\t%s\n", reviewPrintable(q.ID, 24), q.Status, q.ChunksDone, p.ChunksTotal,
			reused, q.Evidence, orDash(reviewPrintable(answer, 60)))
	}
	tw.Flush()
}

// printBatchStatus prints a batch's progress.
func printBatchStatus(w io.Writer, p api.BatchProgress) {
	fmt.Fprintf(w, "batch:   %s\n", p.Name)
	fmt.Fprintf(w, "stage:   %s (run %d)\n", p.Stage, p.Run)
	fmt.Fprintf(w, "items:   %d/%d done: %d answered, %d reused, %d failed\n", p.Done, p.Items, p.Answered, p.Reused, p.Failed)
	fmt.Fprintf(w, "running: %d (%d started in all)\n", p.Running, p.Started)
	fmt.Fprintf(w, "pages:   %d/%d resolved\n", p.PagesResolved, p.Pages)
	fmt.Fprintf(w, "calls:   %d (%d prompt + %d completion tokens, answered items)\n", p.Usage.Calls, p.Usage.PromptTokens, p.Usage.CompletionTokens)
	if p.ReportPrefix != "" {
		fmt.Fprintf(w, "report:  %s\n", p.ReportPrefix)
	}
}

// readReused says how a count splits into read and reused, as
// " (3 read, 9 reused)", or nothing when nothing was reused.
func readReused[N int | int64](read, reused N) string {
	if reused <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%d read, %d reused)", read, reused)
}

func percent(done, total int64) float64 {
	if total <= 0 {
		return 0
	}
	return 100 * float64(done) / float64(total)
}

// printRuns lists the runs of one workflow id, oldest first, with the size
// of each run's history: the figure continue-as-new keeps bounded.
func printRuns(ctx context.Context, w io.Writer, c client.Client, namespace, id string) error {
	runs, err := memclient.ListRuns(ctx, c, namespace, id)
	if err != nil {
		return err
	}
	var maxEvents, maxBytes int64
	fmt.Fprintf(w, "runs:   %d\n", len(runs))
	for i, r := range runs {
		fmt.Fprintf(w, "  %3d  %s  %-22s %6d events %9d bytes\n", i+1, r.GetExecution().GetRunId(), r.GetStatus(), r.GetHistoryLength(), r.GetHistorySizeBytes())
		maxEvents, maxBytes = max(maxEvents, r.GetHistoryLength()), max(maxBytes, r.GetHistorySizeBytes())
	}
	fmt.Fprintf(w, "largest run history: %d events, %d bytes\n", maxEvents, maxBytes)
	return nil
}
