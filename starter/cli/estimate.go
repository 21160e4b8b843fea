package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/clientconf"
	"github.com/memagent/memagent/memclient"
)

// bindEstimate prints what asking the questions of the document would
// cost, without calling the model: the memagent.Estimate workflow indexes
// the document as a run would and counts the calls and tokens.
func bindEstimate(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	fs := cmd.Flags()
	cfg, cfgErr := clientconf.Load()
	connectionFlags(cmd, &cfg)
	var req askRequest
	var questions stringList
	var docs docFlags
	fs.Var(&docs.values, "doc", docUsage)
	fs.Var(&questions, "question", "a question to estimate (repeatable: a review's questions)")
	samples := fs.Int("samples", 1, "times each question is answered (a batch's --samples)")
	priceIn := fs.Float64("price-in", 0, "price of a million prompt tokens, to price the estimate")
	priceOut := fs.Float64("price-out", 0, "price of a million completion tokens")
	asJSON := outputFlag(cmd, "print the estimate as one JSON object")
	finish := askFlags(fs, &req)
	return func(args []string) (err error) {
		if cfgErr != nil {
			return cfgErr
		}
		if err := strayArgs(cmd, args, docs.values, questions); err != nil {
			return err
		}
		req.Options.Model = cfg.Model
		if err := finish(); err != nil {
			return badRequest(err)
		}
		if err := req.setDocs(&docs); err != nil {
			return err
		}
		in := api.EstimateInput{Document: "s3://check/document", Questions: questions, Options: req.Options,
			Samples: *samples, PriceInPerMillion: *priceIn, PriceOutPerMillion: *priceOut}
		if req.Reuse == api.ReuseNone {
			in.Reuse = req.Reuse
		}
		if err := in.Validate(); err != nil {
			return badRequest(err)
		}
		ctx, s, end, err := startWithDocument(ctx, cfg, stderr, *asJSON, "starter estimate", req.localDocs(), req.Options.InvalidUTF8 == api.InvalidUTF8Replace)
		if err != nil {
			return err
		}
		defer func() { end(err) }()
		if len(req.Docs) > 0 {
			in.Document = ""
			if in.Documents, err = s.resolveDocuments(ctx, req.Docs); err != nil {
				return err
			}
		} else if in.Document, _, err = s.resolveDocument(ctx, req.Doc); err != nil {
			return err
		}
		run, err := memclient.New(s.temporal, memclient.Options{TaskQueue: s.cfg.TaskQueue}).StartEstimate(ctx, in, memclient.StartOptions{})
		if err != nil {
			return err
		}
		var est api.Estimate
		if err := s.temporal.GetWorkflow(ctx, run.ID, run.RunID).Get(ctx, &est); err != nil {
			return runFailed(run.ID, err)
		}
		if *asJSON {
			return printJSON(stdout, struct {
				api.Estimate
				WorkflowID string `json:"workflow_id"`
			}{est, run.ID})
		}
		printEstimate(stdout, est)
		return nil
	}
}

func printEstimate(w io.Writer, e api.Estimate) {
	if len(e.Documents) > 0 {
		fmt.Fprintf(w, "Corpus:      %d documents, from %s on, read as one stream: %s\n", len(e.Documents), e.Documents[0], e.Document)
	} else {
		fmt.Fprintf(w, "Document:    %s\n", e.Document)
	}
	approx := ""
	if e.TokensApproximate {
		approx = fmt.Sprintf("; about %d tokens counted for each scanned page not read yet", api.OCRTokensPerPage)
	}
	fmt.Fprintf(w, "Chunks:      %d (%s tokens, %s%s)\n", e.Chunks, groupDigits(e.Tokens), e.Tokenizer, approx)
	if e.OCRPages > 0 {
		pages := fmt.Sprintf("%d scanned pages", e.OCRPages)
		if e.OCRPages == 1 {
			pages = "1 scanned page"
		}
		switch {
		case e.OCRPagesPending > 0:
			fmt.Fprintf(w, "OCR:         %s, %d to read: about %s on the worker (--ocr off reads none)\n",
				pages, e.OCRPagesPending, (time.Duration(e.OCRSecondsExpected * float64(time.Second))).Round(time.Second))
		default:
			fmt.Fprintf(w, "OCR:         %s, read already\n", pages)
		}
	}
	fresh := fmt.Sprintf("%d question(s) × %d sample(s) × (%d chunks + 1)", e.Questions, e.Samples, e.Chunks)
	if e.ChunksReused > 0 {
		fmt.Fprintf(w, "Calls:       %d, starting from the memory checkpoints of earlier readings (%s of %s chunk readings reused; --reuse none reads them again)\n",
			e.CallsExpected, groupDigits(e.ChunksReused), groupDigits(int64(e.Chunks)*int64(e.Questions)*int64(e.Samples)))
		fmt.Fprintf(w, "             %d read afresh (%s)\n", e.Calls, fresh)
	} else {
		fmt.Fprintf(w, "Calls:       %d (%s)\n", e.Calls, fresh)
	}
	fmt.Fprintf(w, "Prompt:      at most %s tokens, typically %s\n", groupDigits(e.PromptTokensMax), groupDigits(e.PromptTokensTypical))
	fmt.Fprintf(w, "Completion:  at most %s tokens, typically %s\n", groupDigits(e.CompletionTokensMax), groupDigits(e.CompletionTokensTypical))
	if e.ChunksReused > 0 {
		fmt.Fprintf(w, "With reuse:  typically %s prompt + %s completion tokens\n", groupDigits(e.PromptTokensExpected), groupDigits(e.CompletionTokensExpected))
	}
	if e.PriceMax > 0 {
		fmt.Fprintf(w, "Price:       at most %.4f, typically %.4f (at the prices given)", e.PriceMax, e.PriceTypical)
		if e.ChunksReused > 0 {
			fmt.Fprintf(w, "; typically %.4f with reuse", e.PriceExpected)
		}
		fmt.Fprintln(w)
	}
	switch {
	case e.GPUSeconds > 0:
		fmt.Fprintf(w, "GPU time:    %s of pool slot time, at least %s wall time on an idle pool of %d slots (from %s calls the worker measured)\n",
			seconds(e.GPUSeconds), seconds(e.WallSeconds), e.PoolSlots, groupDigits(e.MeasuredCalls))
	default:
		fmt.Fprintln(w, "GPU time:    unknown until the worker has made a call (it times its own calls)")
	}
	fmt.Fprintln(w, "No model was called; typical figures assume memories half full and short answers.")
}

// groupDigits writes n with thousands separators: 1,234,567.
func groupDigits(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// seconds renders a duration in seconds as 4.2s, 3m20s or 2h5m0s.
func seconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}
