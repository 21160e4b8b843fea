package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/sdk/activity"

	"github.com/memagent/memagent/internal/s3store"
)

// MaxUnfinishedAttempts is how many attempts of one conversion or indexing
// may end without finishing, their worker gone (out of memory, killed, or
// past the activity's time), before the next attempt refuses the document.
// A document that takes down every worker that reads it would otherwise be
// retried, and take down workers, until someone terminated the run.
const MaxUnfinishedAttempts = 3

// guardsArea holds the markers of conversions and indexings in progress,
// one small object per activity.
const guardsArea = "guards/"

// unfinished is a guard marker: how many attempts of the activity began the
// work and did not say how it ended.
type unfinished struct {
	Attempts int `json:"unfinished_attempts"`
}

// guardHeavy is called before an activity converts or indexes a document
// (what names the work, uri the document). It counts the attempt in a
// marker in the worker's bucket, keyed by the activity, and refuses with
// memagent.BadInput once MaxUnfinishedAttempts earlier attempts began and
// never returned. The returned ended is called when the attempt returns,
// success or error: either way its worker lived, and the count starts
// again. Outside an activity it does nothing.
func (a *Activities) guardHeavy(ctx context.Context, what, uri string) (ended func(), err error) {
	if !activity.IsActivity(ctx) || a.Bucket == "" {
		return func() {}, nil
	}
	info := activity.GetInfo(ctx)
	sum := sha256.Sum256([]byte(info.WorkflowExecution.ID + "\x00" + info.WorkflowExecution.RunID + "\x00" + info.ActivityID + "\x00" + what))
	loc := s3store.Location{Bucket: a.Bucket, Key: guardsArea + hex.EncodeToString(sum[:16]) + ".json"}
	var g unfinished
	sctx, cancel := a.s3ctx(ctx)
	data, err := a.Store.ReadAll(sctx, loc)
	cancel()
	switch {
	case err == nil:
		_ = json.Unmarshal(data, &g)
	case !errors.Is(err, s3store.ErrNotFound):
		return nil, fmt.Errorf("read the %s guard of %s: %w", what, uri, err)
	}
	if g.Attempts >= MaxUnfinishedAttempts {
		return nil, badInput(fmt.Errorf("%s of %s stopped its worker %d times before it finished (out of memory, killed, or past its time): the document is refused; check it, or give the workers more memory and start the run again",
			what, uri, g.Attempts))
	}
	write := func(ctx context.Context, n int) error {
		body, _ := json.Marshal(unfinished{Attempts: n})
		sctx, cancel := a.s3ctx(ctx)
		defer cancel()
		return a.Store.Put(sctx, loc, body, "application/json")
	}
	if err := write(ctx, g.Attempts+1); err != nil {
		return nil, fmt.Errorf("write the %s guard of %s: %w", what, uri, err)
	}
	return func() {
		// The attempt's own context may be done (canceled, timed out):
		// its worker is alive all the same.
		if err := write(context.WithoutCancel(ctx), 0); err != nil {
			a.logger().WarnContext(ctx, "guard marker not reset", "document", uri, "err", err)
		}
	}, nil
}
