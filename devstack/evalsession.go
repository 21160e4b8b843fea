package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/assemble"
	"github.com/memagent/memagent/internal/pluginkit"
	"github.com/memagent/memagent/internal/report"
	"github.com/memagent/memagent/internal/s3client"
	"github.com/memagent/memagent/internal/s3store"
	"github.com/memagent/memagent/memclient"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
)

// connectionFlags binds cfg's client flags (Temporal, S3, the model a run
// names) on cmd, with their environment variables as defaults, as the
// starter's commands bind them.
func connectionFlags(cmd *cobra.Command, cfg *config.Config) {
	fs := flag.NewFlagSet(cmd.Name(), flag.ContinueOnError)
	cfg.RegisterClientFlags(fs)
	cmd.Flags().AddGoFlagSet(fs)
}

// evalSession is what eval run connects to: Temporal and S3.
type evalSession struct {
	cfg      config.Config
	store    *s3store.Store
	temporal client.Client
}

// connectEval checks cfg and connects to S3 and Temporal; close the
// session.
func connectEval(ctx context.Context, cfg config.Config, stderr io.Writer) (*evalSession, error) {
	cfg.Normalize()
	if err := cfg.Validate(); err != nil {
		return nil, badRequest(err)
	}
	store, err := pluginkit.NewStore(ctx, cfg.Options)
	if err != nil {
		return nil, err
	}
	c, err := workerapp.Dial(ctx, cfg, toolLogger(stderr))
	if err != nil {
		return nil, err
	}
	return &evalSession{cfg: cfg, store: store, temporal: c}, nil
}

func (s *evalSession) close() { s.temporal.Close() }

// uploadEvalSet returns the s3:// URI of an evaluation set: an s3:// set
// is checked to exist; a local one is read once, streaming, to check its
// items and hash it, and uploaded under its SHA-256,
// s3://<bucket>/manifests/sha256/<hex>/<name> (where the starter's batch
// puts manifests), unless that object is there already.
func (s *evalSession) uploadEvalSet(ctx context.Context, path string) (string, error) {
	if strings.HasPrefix(path, "s3://") {
		loc, err := s3store.ParseURI(path)
		if err != nil {
			return "", badRequest(fmt.Errorf("evaluation set: %w", err))
		}
		if _, err := s.store.Head(ctx, loc); errors.Is(err, s3store.ErrNotFound) {
			return "", badRequest(fmt.Errorf("evaluation set %s does not exist: check the bucket and key", path))
		} else if err != nil {
			return "", fmt.Errorf("evaluation set %s: %w", path, err)
		}
		return path, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", badRequest(fmt.Errorf("evaluation set: %w", err))
	}
	defer f.Close()
	h := sha256.New()
	if err := checkEvalItems(io.TeeReader(f, h)); err != nil {
		return "", badRequest(fmt.Errorf("evaluation set %s: %w", path, err))
	}
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read evaluation set %s: %w", path, err)
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return "", err
	}
	loc := s3store.Location{Bucket: s.cfg.Bucket, Key: "manifests/sha256/" + hex.EncodeToString(h.Sum(nil)) + "/" + s3client.SafeName(filepath.Base(path))}
	if _, err := s.store.Head(ctx, loc); err == nil {
		return loc.String(), nil
	}
	if err := s.store.EnsureBucket(ctx, s.cfg.Bucket, s.cfg.CreateBucket); err != nil {
		return "", assemble.BucketError(s.cfg.Bucket, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	if err := s.store.PutReader(ctx, loc, f, size, "application/json"); err != nil {
		return "", fmt.Errorf("upload evaluation set: %w", err)
	}
	return loc.String(), nil
}

// checkEvalItems checks a set's items as a batch manifest in MemAgent's
// format (report.CheckManifest).
func checkEvalItems(r io.Reader) error {
	_, err := report.CheckManifest(r, api.ManifestMemAgent)
	if errors.Is(err, report.ErrNoItems) {
		return errors.New("the set has no items")
	}
	return err
}

// runBatch starts a BatchQA run for in, waits for it and reads its report.
// When progress is not nil it names the batch there, and prints a line of
// its progress each time it changes, at most every progressEvery.
func (s *evalSession) runBatch(ctx context.Context, in api.BatchQAInput, progress io.Writer) (*api.BatchQAResult, *api.BatchReport, error) {
	run, err := memclient.New(s.temporal, memclient.Options{TaskQueue: s.cfg.TaskQueue}).StartBatch(ctx, in, memclient.StartOptions{})
	if err != nil {
		return nil, nil, err
	}
	if progress != nil {
		fmt.Fprintf(progress, "started batch %s (starter watch %s follows it)\n", run.ID, run.ID)
		wctx, stop := context.WithCancel(ctx)
		defer stop()
		go showBatchProgress(wctx, run, progress)
	}
	res, err := run.Get(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("batch %s: %w", run.ID, err)
	}
	loc, err := s3store.ParseURI(res.ReportURI)
	if err != nil {
		return res, nil, fmt.Errorf("report: %w", err)
	}
	data, err := s.store.ReadAll(ctx, loc)
	if err != nil {
		return res, nil, fmt.Errorf("read report %s: %w", res.ReportURI, err)
	}
	var rep api.BatchReport
	if err := json.Unmarshal(data, &rep); err != nil {
		return res, nil, fmt.Errorf("decode report %s: %w", res.ReportURI, err)
	}
	return res, &rep, nil
}

// progressEvery is how often eval run asks a batch for its progress.
const progressEvery = 5 * time.Second

// showBatchProgress prints a line of run's progress each time it changes,
// until ctx ends; a query that fails (no worker yet) prints nothing.
func showBatchProgress(ctx context.Context, run memclient.BatchRun, w io.Writer) {
	last := ""
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p, err := run.Progress(ctx)
		if err != nil {
			continue
		}
		line := fmt.Sprintf("%s: %d of %d items done (%d answered, %d reused, %d failed), %d running", p.Stage, p.Done, p.Items, p.Answered, p.Reused, p.Failed, p.Running)
		if line != last && ctx.Err() == nil {
			fmt.Fprintln(w, line)
			last = line
		}
	}
}
