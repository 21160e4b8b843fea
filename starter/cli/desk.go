package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/memagent/memagent/activities"
	"github.com/memagent/memagent/internal/desk"
	"github.com/memagent/memagent/internal/reviewer"
	"github.com/memagent/memagent/worker/config"
)

func bindDesk(ctx context.Context, cmd *cobra.Command, stdout, stderr io.Writer) func(args []string) error {
	fs := cmd.Flags()
	cfg, cfgErr := config.Load()
	connectionFlags(cmd, &cfg)
	addr := fs.String("addr", "127.0.0.1:8090", "listen on `ADDR` (loopback by default: put an authenticating proxy in front to serve others)")
	source := fs.String("reviewers", os.Getenv(reviewer.Env), "the reviewer identity `SOURCE`: tokens:FILE, or header:NAME set by an authenticating proxy ("+reviewer.Env+")")
	trusted := fs.StringSlice("trusted-proxy", envList(reviewer.TrustedEnv), "with header:NAME, the proxy's `ADDRESS` or CIDR the header is believed from, exactly: no default, since loopback is every local process ("+reviewer.TrustedEnv+")")
	secretHeader := fs.String("proxy-secret-header", reviewer.DefaultSecretHeader, "with header:NAME, the `HEADER` the proxy sends its secret in")
	secretFile := fs.String("proxy-secret-file", "", "with header:NAME, read the secret the proxy sends from `FILE` (default $"+reviewer.SecretEnv+"); a request without it is no one")
	renderTimeout := fs.Duration("render-timeout", desk.DefaultRenderTimeout, "stop rendering a page after `DURATION` (the page's request fails)")
	renderInstances := fs.Int("render-instances", desk.DefaultRenderInstances, "render at most `N` pages at once, each in a PDFium instance of its own")
	pageCacheMB := fs.Int64("page-cache-mb", desk.DefaultPageCacheBytes>>20, "keep at most `MB` of rendered pages")
	hosts := fs.StringSlice("host", nil, "a `NAME` the desk is reached by (Host header), besides ADDR's and localhost")
	return func(args []string) (err error) {
		if cfgErr != nil {
			return cfgErr
		}
		if len(args) > 0 {
			return badRequest(fmt.Errorf("unexpected arguments %q", args))
		}
		proxy := &reviewer.Proxy{Trusted: *trusted, SecretHeader: *secretHeader, Secret: os.Getenv(reviewer.SecretEnv)}
		if *secretFile != "" {
			data, err := os.ReadFile(*secretFile)
			if err != nil {
				return badRequest(fmt.Errorf("--proxy-secret-file: %w", err))
			}
			proxy.Secret = strings.TrimSpace(string(data))
		}
		src, err := reviewer.Parse(*source, proxy)
		if err != nil {
			return badRequest(err)
		}
		if *renderTimeout <= 0 || *renderInstances <= 0 || *pageCacheMB <= 0 {
			return badRequest(errors.New("--render-timeout, --render-instances and --page-cache-mb must be positive"))
		}
		host, _ := os.Hostname()
		cfg.ClientIdentity = fmt.Sprintf("%d@%s memagent-desk", os.Getpid(), host)
		ctx, s, end, err := startCommand(ctx, cfg, stderr, false, "starter desk")
		if err != nil {
			return err
		}
		defer func() { end(err) }()
		ln, err := net.Listen("tcp", *addr)
		if err != nil {
			return badRequest(fmt.Errorf("listen on %s: %w", *addr, err))
		}
		lhost, port, _ := net.SplitHostPort(ln.Addr().String())
		allowed := append([]string{ln.Addr().String(), lhost, "localhost", "localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port}, *hosts...)
		checks := &activities.Activities{Store: s.store, Bucket: s.cfg.Bucket, ReadPrefixes: s.cfg.ReadPrefixes, WritePrefixes: s.cfg.WritePrefixes}
		d, err := desk.New(desk.Config{
			Temporal: s.temporal, ClientIdentity: cfg.ClientIdentity, TaskQueue: cfg.TaskQueue, Store: s.store,
			Checks: checks, OCR: checks, Reviewers: src, Hosts: allowed, Logger: s.logger,
			RenderTimeout: *renderTimeout, RenderInstances: *renderInstances, PageCacheBytes: *pageCacheMB << 20,
		})
		if err != nil {
			return err
		}
		defer d.Close()
		// PDFium started before the desk says where it listens, and the
		// first cells' pages rendered ahead: the first panel as fast as
		// the next.
		d.Warm(ctx)
		srv := &http.Server{Handler: d, ReadHeaderTimeout: 10 * time.Second}
		fmt.Fprintf(stdout, "Review desk: http://%s/ (reviewers: %s)\n", ln.Addr(), *source)
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
}

// envList is the comma-separated list in the environment variable name.
func envList(name string) []string {
	var out []string
	for _, v := range strings.Split(os.Getenv(name), ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
