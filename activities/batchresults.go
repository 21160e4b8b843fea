package activities

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/s3store"
)

// writeBatchResults writes outcomes as one part of JSON Lines. A retry
// overwrites the same part.
func (a *Activities) writeBatchResults(ctx context.Context, in actwire.WriteResultsInput) error {
	defer a.startHeartbeat(ctx)()
	loc, err := s3store.ParseURI(in.URI)
	if err != nil {
		return badInput(err)
	}
	if err := a.allowOutput(ctx, "uri", in.URI); err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range in.Results {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("encode outcome of item %d: %w", r.Seq, err)
		}
	}
	if err := a.Store.Put(ctx, loc, buf.Bytes(), "application/x-ndjson"); err != nil {
		return fmt.Errorf("write outcomes: %w", err)
	}
	var from *batchChain
	if len(in.Answers) > 0 && activity.IsActivity(ctx) && !a.SkipExecutionChecks {
		b, why, err := callingBatch(ctx, activity.GetClient(ctx))
		if err != nil {
			return err
		}
		if why != "" {
			// Not a batch of memagent's: it has no children whose answers
			// the cache may take.
			a.logger().WarnContext(ctx, "answers not cached: the caller is not memagent's batch", "reason", why, "answers", len(in.Answers))
			return nil
		}
		from = b
	}
	return a.cacheAnswers(ctx, from, in.Answers)
}

// cacheAnswers puts answers in the cache (cacheAnswer). With from (always,
// in an activity) each answer must be the result of a child of from's
// chain, as Temporal describes it (batchChain.answeredBy, all at once):
// another is not copied, and said at warn level (ids only, no text).
func (a *Activities) cacheAnswers(ctx context.Context, from *batchChain, answers []actwire.AnswerEntry) error {
	skip := make([]bool, len(answers))
	if from != nil {
		runs := "s3://" + a.Bucket + "/runs/"
		errs := make([]error, len(answers))
		parallel(ctx, len(answers), func(i int) {
			why, err := from.answeredBy(ctx, runs, answers[i].ResultURI)
			if err != nil {
				errs[i] = err
				return
			}
			if why != "" {
				skip[i] = true
				a.logger().WarnContext(ctx, "answer not cached: not the result of the batch's own child", "batch", from.workflowID,
					"result_uri", answers[i].ResultURI, "entry", answers[i].Prefix, "reason", why)
			}
		})
		if err := errors.Join(errs...); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	for i, e := range answers {
		if skip[i] {
			continue
		}
		if err := a.cacheAnswer(ctx, e); err != nil {
			return err
		}
	}
	return nil
}

// cacheAnswer copies an answered child's result.json into the answer
// cache, unless the entry is there already (the first batch to answer a
// key keeps it). Only a batch calls it, with an answer it settled from its
// own child: the result lies in the worker's own runs/ area, the entry in
// answers/. In an activity, cacheAnswers has checked with Temporal that
// the result is that of the batch's own child.
func (a *Activities) cacheAnswer(ctx context.Context, e actwire.AnswerEntry) error {
	runs, answers := "s3://"+a.Bucket+"/runs/", a.answersPrefix()
	if !strings.HasPrefix(e.Prefix, answers) || !strings.HasSuffix(e.Prefix, "/") || strings.Count(strings.TrimPrefix(e.Prefix, answers), "/") != 1 {
		return badInput(fmt.Errorf("answer entry %s is not a key under %s", e.Prefix, answers))
	}
	if !strings.HasPrefix(e.ResultURI, runs) {
		return badInput(fmt.Errorf("answer %s is not a run's result under %s", e.ResultURI, runs))
	}
	src, err := s3store.ParseURI(e.ResultURI)
	if err != nil {
		return badInput(err)
	}
	dst, err := s3store.ParseURI(e.Prefix + "result.json")
	if err != nil {
		return badInput(err)
	}
	data, err := a.Store.ReadAll(ctx, src)
	if errors.Is(err, s3store.ErrNotFound) {
		// Nothing to cache; the item's outcome stands.
		return nil
	}
	if err != nil {
		return fmt.Errorf("read answer %s: %w", e.ResultURI, err)
	}
	if _, err := a.putIfAbsent(ctx, dst, data); err != nil {
		return fmt.Errorf("cache answer %s: %w", dst, err)
	}
	return nil
}

// readParts streams every part and calls f with each outcome, in part
// order.
func (a *Activities) readParts(ctx context.Context, parts []string, f func(r api.BatchItemResult, line []byte) error) error {
	for _, p := range parts {
		loc, err := s3store.ParseURI(p)
		if err != nil {
			return badInput(err)
		}
		body, err := a.Store.Open(ctx, loc, "")
		if err != nil {
			if errors.Is(err, s3store.ErrNotFound) {
				return temporal.NewNonRetryableApplicationError(fmt.Sprintf("outcome part %s does not exist", p), ErrBatchIncomplete, err)
			}
			return fmt.Errorf("read part %s: %w", p, err)
		}
		br := bufio.NewReaderSize(body, 64<<10)
		for n := 1; ; n++ {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				var r api.BatchItemResult
				if jerr := json.Unmarshal(line, &r); jerr != nil {
					body.Close()
					return badInput(fmt.Errorf("part %s line %d: %w", p, n, jerr))
				}
				if ferr := f(r, bytes.TrimSpace(line)); ferr != nil {
					body.Close()
					return ferr
				}
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				body.Close()
				return fmt.Errorf("read part %s: %w", p, err)
			}
		}
		body.Close()
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx)
		}
	}
	return nil
}

// progressReader heartbeats, with the activity's resume point, while a
// long manifest streams through, and remembers a read error so it is not
// mistaken for bad input.
type progressReader struct {
	ctx     context.Context
	r       io.Reader
	every   time.Duration
	last    time.Time
	details func() any
	err     error
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if err != nil && err != io.EOF {
		p.err = err
	}
	if now := time.Now(); now.Sub(p.last) >= p.every && activity.IsActivity(p.ctx) {
		p.last = now
		activity.RecordHeartbeat(p.ctx, p.details())
	}
	return n, err
}
