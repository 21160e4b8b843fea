// Package deskapp is the review desk's command: its flags, its connections
// to Temporal and S3, and the HTTP server around package internal/desk.
// Command desk (./desk) runs it, and the end-to-end tests run it in process.
// The desk is a server that reads S3 and renders PDF pages with PDFium, so it
// is a program of its own and no part of the client CLI (starter), which
// links none of it.
package deskapp

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/internal/desk"
	"github.com/memagent/memagent/internal/pluginkit"
	"github.com/memagent/memagent/internal/reviewer"
	"github.com/memagent/memagent/internal/telemetry"
	"github.com/memagent/memagent/worker/config"
	"github.com/memagent/memagent/worker/workerapp"
)

// usageHead heads the desk's help.
const usageHead = `Serves the review desk, a web page on which reviewers go through the reviews and
batches waiting for sign-off, decide on each answer with the cited page of the PDF
rendered and the quote highlighted where it stands, and sign a level off
(keyboard: a accept, e edit, r reject, n next open cell). Reviewers sign in
through the identity source the operator configures (docs/REVIEW.md#who-decided);
a proxy's header needs the proxy named, by --trusted-proxy or by its secret.
Each page renders within --render-timeout. Loopback by default.

Usage:
  desk [--addr 127.0.0.1:8090] [--reviewers tokens:FILE|header:NAME] [flags]

Examples:
  MEMAGENT_REVIEWERS=tokens:/etc/memagent/reviewers go run ./desk
  go run ./desk --reviewers header:X-Forwarded-User --proxy-secret-file /etc/memagent/desk-proxy-secret

Flags:
`

// Run runs the desk with args (without the program's name) until ctx ends:
// it prints "Review desk: http://ADDR/ (reviewers: SOURCE)" on stdout once it
// listens. An error that is the caller's to fix (a flag, a variable, a
// reviewer source that cannot work) is a workerapp.UsageError, exit code 2
// under workerapp.Main.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := config.Load()
	if err != nil {
		return workerapp.Usage(err)
	}
	fs := flag.NewFlagSet("desk", flag.ContinueOnError)
	fs.SetOutput(stderr)
	workerapp.SetUsage(fs, usageHead)
	f := bindFlags(fs)
	cfg.RegisterClientFlags(fs)
	if err := fs.Parse(args); err != nil {
		return workerapp.Usage(err)
	}
	if fs.NArg() > 0 {
		return workerapp.Usage(fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	src, err := f.reviewers()
	if err != nil {
		return workerapp.Usage(err)
	}
	if f.renderTimeout <= 0 || f.renderInstances <= 0 || f.pageCacheMB <= 0 {
		return workerapp.Usage(errors.New("--render-timeout, --render-instances and --page-cache-mb must be positive"))
	}
	cfg.Normalize()
	if err := cfg.Validate(); err != nil {
		return workerapp.Usage(err)
	}
	host, _ := os.Hostname()
	cfg.ClientIdentity = fmt.Sprintf("%d@%s memagent-desk", os.Getpid(), host)
	logger := logger(stderr)
	tel, err := telemetry.Setup(ctx, telemetry.Options{ServiceName: "memagent-desk", Logger: logger})
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = tel.Shutdown(sctx)
	}()
	store, err := pluginkit.NewStore(ctx, cfg.Options)
	if err != nil {
		return err
	}
	tc, err := workerapp.Dial(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer tc.Close()
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return workerapp.Usage(fmt.Errorf("listen on %s: %w", f.addr, err))
	}
	lhost, port, _ := net.SplitHostPort(ln.Addr().String())
	allowed := append([]string{ln.Addr().String(), lhost, "localhost", "localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port}, f.hosts.values...)
	// The desk's checks (may this reader see that object, the OCR of a
	// scanned page's words, a mailbox's email index) are the activities'
	// own, run here on the desk's S3 client; with the worker's limits
	// (the same environment), whose email limits name where a mailbox's
	// conversion is kept.
	checks := &activities.Activities{Store: store, Bucket: cfg.Bucket, ReadPrefixes: cfg.ReadPrefixes, WritePrefixes: cfg.WritePrefixes, Limits: cfg.Limits}
	d, err := desk.New(desk.Config{
		Temporal: tc, ClientIdentity: cfg.ClientIdentity, TaskQueue: cfg.TaskQueue, Store: store,
		Checks: checks, OCR: checks, Email: checks, Reviewers: src, Hosts: allowed, Logger: logger,
		RenderTimeout: f.renderTimeout, RenderInstances: f.renderInstances, PageCacheBytes: f.pageCacheMB << 20,
	})
	if err != nil {
		ln.Close()
		return err
	}
	defer d.Close()
	// PDFium started before the desk says where it listens, and the first
	// cells' pages rendered ahead: the first panel as fast as the next.
	d.Warm(ctx)
	srv := &http.Server{Handler: d, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "Review desk: http://%s/ (reviewers: %s)\n", ln.Addr(), f.source)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// flags are the desk's own flags (the connection's are the configuration's).
type flags struct {
	addr, source, secretHeader, secretFile string
	trusted, hosts                         listFlag
	renderTimeout                          time.Duration
	renderInstances                        int
	pageCacheMB                            int64
}

func bindFlags(fs *flag.FlagSet) *flags {
	f := &flags{trusted: envList(reviewer.TrustedEnv)}
	fs.StringVar(&f.addr, "addr", "127.0.0.1:8090", "listen on `ADDR` (loopback by default: put an authenticating proxy in front to serve others)")
	fs.StringVar(&f.source, "reviewers", os.Getenv(reviewer.Env), "the reviewer identity `SOURCE`: tokens:FILE, or header:NAME set by an authenticating proxy ("+reviewer.Env+")")
	fs.Var(&f.trusted, "trusted-proxy", "with header:NAME, the proxy's `ADDRESS` or CIDR the header is believed from, exactly (repeatable, or comma-separated): no default, since loopback is every local process ("+reviewer.TrustedEnv+")")
	fs.StringVar(&f.secretHeader, "proxy-secret-header", reviewer.DefaultSecretHeader, "with header:NAME, the `HEADER` the proxy sends its secret in")
	fs.StringVar(&f.secretFile, "proxy-secret-file", "", "with header:NAME, read the secret the proxy sends from `FILE` (default $"+reviewer.SecretEnv+"); a request without it is no one")
	fs.DurationVar(&f.renderTimeout, "render-timeout", desk.DefaultRenderTimeout, "stop rendering a page after `DURATION` (the page's request fails)")
	fs.IntVar(&f.renderInstances, "render-instances", desk.DefaultRenderInstances, "render at most `N` pages at once, each in a PDFium instance of its own")
	fs.Int64Var(&f.pageCacheMB, "page-cache-mb", desk.DefaultPageCacheBytes>>20, "keep at most `MB` of rendered pages")
	fs.Var(&f.hosts, "host", "a `NAME` the desk is reached by (Host header), besides ADDR's and localhost (repeatable, or comma-separated)")
	return f
}

// reviewers is the reviewer identity source the flags name.
func (f *flags) reviewers() (*reviewer.Source, error) {
	proxy := &reviewer.Proxy{Trusted: f.trusted.values, SecretHeader: f.secretHeader, Secret: os.Getenv(reviewer.SecretEnv)}
	if f.secretFile != "" {
		data, err := os.ReadFile(f.secretFile)
		if err != nil {
			return nil, fmt.Errorf("--proxy-secret-file: %w", err)
		}
		proxy.Secret = strings.TrimSpace(string(data))
	}
	return reviewer.Parse(f.source, proxy)
}

// listFlag is a repeatable flag whose values may be comma-separated, as
// the starter's string slices were: the first value given replaces the
// default (the environment's), the next ones add to it.
type listFlag struct {
	values []string
	set    bool
}

func (l *listFlag) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(l.values, ",")
}

func (l *listFlag) Set(v string) error {
	if !l.set {
		l.values, l.set = nil, true
	}
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			l.values = append(l.values, s)
		}
	}
	return nil
}

// envList is the comma-separated list in the environment variable name.
func envList(name string) listFlag {
	var out listFlag
	for _, v := range strings.Split(os.Getenv(name), ",") {
		if v = strings.TrimSpace(v); v != "" {
			out.values = append(out.values, v)
		}
	}
	return out
}

// logger logs at warning level and above unless MEMAGENT_LOG_LEVEL says
// otherwise, as the starter did.
func logger(w io.Writer) *slog.Logger {
	level := slog.LevelWarn
	if v := os.Getenv("MEMAGENT_LOG_LEVEL"); v != "" {
		_ = level.UnmarshalText([]byte(v))
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}
