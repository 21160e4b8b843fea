package embedstack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rclone/gofakes3"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/temporal"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/memagent/memagent/internal/devaddr"
)

// Defaults and fixed development values.
const (
	// DefaultHost is the address every server binds unless Options.Host says
	// otherwise.
	DefaultHost = "127.0.0.1"
	// DefaultTemporalPort is the frontend gRPC port. The other Temporal
	// ports are derived from it: +1 history, +2 matching, +6 worker and +10
	// frontend HTTP.
	DefaultTemporalPort = 7233
	// DefaultUIPort is the Web UI port.
	DefaultUIPort = 8233
	// DefaultS3Port is the S3-compatible server's port.
	DefaultS3Port = 9000
	// FreePort, as any port option, asks for a free port picked at start.
	FreePort = -1
	// DefaultNamespace is the Temporal namespace registered at start.
	DefaultNamespace = "default"
	// DefaultBucket is the bucket created at start: the configuration's
	// default bucket, so that a worker without environment finds it.
	DefaultBucket = devaddr.Bucket
	// DevAccessKey and DevSecretKey are the S3 server's only credentials,
	// the ones the configuration supplies for the dev stack's endpoint.
	// They guard nothing but accidents: the server is for loopback use.
	DevAccessKey = devaddr.S3AccessKey
	// DevSecretKey is the secret of DevAccessKey.
	DevSecretKey = devaddr.S3SecretKey
	// DevRegion is the region clients must sign S3 requests for.
	DevRegion = devaddr.Region
)

// startTimeout bounds the wait for the frontend when the caller's context
// has no deadline.
const startTimeout = time.Minute

// Options configures Start. The zero value runs everything in memory on the
// default ports.
type Options struct {
	// DataDir, when set, keeps Temporal's state in DataDir/temporal.db and
	// the objects under DataDir/s3, so that runs survive a restart. Empty
	// means everything in memory.
	DataDir string
	// Host is the IP address the servers bind; default 127.0.0.1.
	Host string
	// TemporalPort, UIPort and S3Port: 0 means the default
	// (DefaultTemporalPort, DefaultUIPort, DefaultS3Port) and FreePort (-1)
	// a free port picked at start.
	TemporalPort, UIPort, S3Port int
	// Namespace is registered at start if missing; default "default".
	Namespace string
	// Bucket is created at start if missing; default "memagent".
	Bucket string
	// DisableUI skips the Web UI.
	DisableUI bool
	// ExternalTemporal, when set, is the host:port of a Temporal frontend
	// the stack uses instead of starting its own server (TemporalPort is
	// then ignored): the stack serves S3 (and the UI) only, and Start waits
	// for Namespace, which must already be registered there. Benchmarks use
	// it to measure against a cluster with another persistence.
	ExternalTemporal string
	// Logger receives the stack's messages and the embedded servers'
	// warnings and errors; default slog.Default().
	Logger *slog.Logger
}

// Stack is a running development stack. Its exported fields describe how to
// reach it; they are set by Start and must not be changed.
type Stack struct {
	// TemporalAddress is the frontend's gRPC host:port.
	TemporalAddress string
	// TemporalHTTPAddress is the frontend's HTTP API host:port; empty with
	// Options.ExternalTemporal.
	TemporalHTTPAddress string
	// Namespace is the registered namespace.
	Namespace string
	// UIURL is the Web UI's base URL, empty when the UI is disabled.
	UIURL string
	// S3Endpoint is the S3 server's base URL; clients must use path-style
	// addressing.
	S3Endpoint string
	// Bucket is the bucket created at start.
	Bucket string
	// Region, S3AccessKey and S3SecretKey are what S3 clients sign with.
	Region, S3AccessKey, S3SecretKey string

	logger *slog.Logger
	// serverLevel is the lowest level of the embedded servers' records
	// that reach logger; Close raises it, because stopping services warn
	// about each other going away.
	serverLevel *slog.LevelVar
	temporal    temporal.Server
	client      client.Client
	ui          *http.Server
	uiConn      *grpc.ClientConn
	s3          *http.Server
	s3Sent      atomic.Int64
	s3Requests  atomic.Int64

	closeOnce sync.Once
	closeErr  error
}

func (o *Options) withDefaults() error {
	switch o.Host {
	case "":
		o.Host = DefaultHost
	case "localhost":
		o.Host = DefaultHost
	}
	if net.ParseIP(o.Host) == nil {
		return fmt.Errorf("host %q is not an IP address: use 127.0.0.1 or another local IP", o.Host)
	}
	for _, p := range []struct {
		name string
		port *int
		def  int
	}{
		{"temporal port", &o.TemporalPort, DefaultTemporalPort},
		{"ui port", &o.UIPort, DefaultUIPort},
		{"s3 port", &o.S3Port, DefaultS3Port},
	} {
		if err := checkPort(p.name, *p.port); err != nil {
			return err
		}
		if *p.port == 0 {
			*p.port = p.def
		}
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.Bucket == "" {
		o.Bucket = DefaultBucket
	}
	if err := gofakes3.ValidateBucketName(o.Bucket); err != nil {
		return fmt.Errorf("bucket %q: %w", o.Bucket, err)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return nil
}

// Start starts the S3 server, the Temporal server and the Web UI, and returns
// once the frontend answers for the namespace and the S3 server answers. On
// error everything already started is stopped again. ctx bounds the start
// only; the stack runs until Close.
func Start(ctx context.Context, opts Options) (*Stack, error) {
	if err := opts.withDefaults(); err != nil {
		return nil, fmt.Errorf("devstack options: %w", err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, startTimeout)
		defer cancel()
	}
	began := time.Now()
	s := &Stack{
		Namespace:   opts.Namespace,
		Bucket:      opts.Bucket,
		Region:      DevRegion,
		S3AccessKey: DevAccessKey,
		S3SecretKey: DevSecretKey,
		logger:      opts.Logger.With("component", "devstack"),
		serverLevel: new(slog.LevelVar),
	}
	s.serverLevel.Set(slog.LevelWarn)
	if err := s.start(ctx, opts); err != nil {
		if cerr := s.Close(); cerr != nil {
			s.logger.Warn("stop partly started dev stack", "error", cerr)
		}
		return nil, err
	}
	s.logger.Info("dev stack ready",
		"temporal_address", s.TemporalAddress,
		"namespace", s.Namespace,
		"ui_url", s.UIURL,
		"s3_endpoint", s.S3Endpoint,
		"bucket", s.Bucket,
		"data_dir", opts.DataDir,
		"elapsed", time.Since(began).Round(time.Millisecond))
	return s, nil
}

func (s *Stack) start(ctx context.Context, opts Options) error {
	if opts.DataDir != "" {
		if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
			return fmt.Errorf("data dir: %w", err)
		}
	}

	// Bind the ports the stack serves itself first, then check the
	// Temporal ones: a conflict fails before anything heavy starts.
	// Listeners not yet handed to a server are closed on return.
	var s3Listener, uiListener net.Listener
	defer func() {
		for _, l := range []net.Listener{s3Listener, uiListener} {
			if l != nil {
				_ = l.Close()
			}
		}
	}()
	var err error
	if s3Listener, err = listen("s3", opts.Host, opts.S3Port); err != nil {
		return err
	}
	if !opts.DisableUI {
		if uiListener, err = listen("ui", opts.Host, opts.UIPort); err != nil {
			return err
		}
	}
	var ports temporalPorts
	if opts.ExternalTemporal == "" {
		if ports, err = planTemporalPorts(opts.Host, opts.TemporalPort); err != nil {
			return err
		}
	}

	// S3.
	faker, err := newS3Handler(ctx, opts.DataDir, opts.Bucket, quiet(opts.Logger, s.serverLevel, "s3"))
	if err != nil {
		return fmt.Errorf("s3 server: %w", err)
	}
	s.S3Endpoint = "http://" + s3Listener.Addr().String()
	s.s3 = &http.Server{Handler: countBytes(faker.Server(), &s.s3Sent, &s.s3Requests), ReadHeaderTimeout: 10 * time.Second}
	s.serve("s3", s.s3, s3Listener)
	s3Listener = nil

	// Temporal: the embedded server, or the one at ExternalTemporal.
	if opts.ExternalTemporal != "" {
		s.TemporalAddress = opts.ExternalTemporal
	} else {
		sql, err := sqlConfig(opts.DataDir)
		if err != nil {
			return err
		}
		if err := prepareDatabase(sql, opts.DataDir != "", opts.Namespace); err != nil {
			return err
		}
		if ports, err = s.startTemporal(opts, ports, sql); err != nil {
			return err
		}
		s.TemporalAddress = net.JoinHostPort(opts.Host, strconv.Itoa(ports.frontend))
		s.TemporalHTTPAddress = net.JoinHostPort(opts.Host, strconv.Itoa(ports.frontendHTTP))
	}

	// The UI proxies its API to the frontend, which is up by now.
	if uiListener != nil {
		h, conn, err := newUIHandler(s.TemporalAddress, opts.Namespace)
		if err != nil {
			return err
		}
		s.uiConn = conn
		s.UIURL = "http://" + uiListener.Addr().String()
		s.ui = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		s.serve("ui", s.ui, uiListener)
		uiListener = nil
	}

	c, err := client.DialContext(ctx, client.Options{
		HostPort:  s.TemporalAddress,
		Namespace: opts.Namespace,
		Logger:    sdklog.NewStructuredLogger(quiet(opts.Logger, s.serverLevel, "temporal-client")),
	})
	if err != nil {
		return fmt.Errorf("connect to temporal at %s: %w", s.TemporalAddress, err)
	}
	s.client = c
	if err := waitNamespace(ctx, c, opts.Namespace); err != nil {
		return err
	}
	return waitS3(ctx, s.S3Endpoint)
}

// startTemporal builds and starts the Temporal server on ports. Free ports
// are checked and then released before the server binds them, so another
// process can take one in between; with FreePort the stack then picks new
// ports and tries again.
func (s *Stack) startTemporal(opts Options, ports temporalPorts, sql *config.SQL) (temporalPorts, error) {
	const attempts = 3
	for attempt := 1; ; attempt++ {
		err := s.startTemporalOnce(opts.Host, ports, sql, quiet(opts.Logger, s.serverLevel, "temporal"))
		if err == nil {
			return ports, nil
		}
		if opts.TemporalPort != FreePort || attempt == attempts || !strings.Contains(err.Error(), "address already in use") {
			return ports, err
		}
		s.logger.Warn("temporal port taken during start, picking new ports", "attempt", attempt, "error", err)
		if ports, err = planTemporalPorts(opts.Host, FreePort); err != nil {
			return ports, err
		}
	}
}

func (s *Stack) startTemporalOnce(host string, ports temporalPorts, sql *config.SQL, logger *slog.Logger) error {
	srv, err := newTemporalServer(host, ports, sql, logger)
	if err != nil {
		return err
	}
	if err := guard(srv.Start); err != nil {
		// A failed start may have started some services.
		_ = guard(srv.Stop)
		return fmt.Errorf("start temporal server: %w", err)
	}
	s.temporal = srv
	return nil
}

// serve runs srv on l until Close.
func (s *Stack) serve(name string, srv *http.Server, l net.Listener) {
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logger.Error("server stopped", "server", name, "error", err)
		}
	}()
}

// RegisterNamespace registers another namespace on the stack's server
// (retention one day) and returns once the frontend serves it, as a
// namespace where `starter setup` never ran.
func (s *Stack) RegisterNamespace(ctx context.Context, namespace string) error {
	if s.client == nil {
		return errors.New("register namespace: stack not started")
	}
	if _, err := s.client.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: namespace, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour)}); err != nil {
		return fmt.Errorf("register namespace %s: %w", namespace, err)
	}
	return waitNamespace(ctx, s.client, namespace)
}

func waitNamespace(ctx context.Context, c client.Client, namespace string) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for temporal namespace %s: %w (last error: %v)", namespace, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// waitS3 waits until the S3 server answers a CORS preflight request, the one
// request it serves without a signature and without logging.
func waitS3(ctx context.Context, endpoint string) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodOptions, endpoint+"/", nil)
		if err != nil {
			return fmt.Errorf("probe s3 at %s: %w", endpoint, err)
		}
		req.Header.Set("Origin", endpoint)
		req.Header.Set("Access-Control-Request-Method", http.MethodGet)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for s3 at %s: %w (last error: %v)", endpoint, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// S3BytesSent is how many response body bytes the S3 server has sent: the
// bytes clients read, for benchmarks that check chunk reads stay ranged.
func (s *Stack) S3BytesSent() int64 { return s.s3Sent.Load() }

// S3Requests is how many requests the S3 server has been sent, of every
// kind: what a benchmark counts per chunk.
func (s *Stack) S3Requests() int64 { return s.s3Requests.Load() }

// countBytes counts the requests h serves and the response body bytes it
// writes.
func countBytes(h http.Handler, n, requests *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		h.ServeHTTP(&countingWriter{ResponseWriter: w, n: n}, r)
	})
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Close stops the UI, the Temporal server and the S3 server and releases
// their ports. It takes about a second: the Temporal frontend drains requests
// for at least that long. The embedded servers' own log records are dropped
// from the moment Close begins, since stopping services complain about each
// other going away. It is safe to call more than once; later calls return
// the first call's result.
func (s *Stack) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.serverLevel.Set(slog.LevelError + 1)
		var errs []error
		if s.client != nil {
			s.client.Close()
		}
		if s.ui != nil {
			if err := s.ui.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("stop ui: %w", err))
			}
		}
		if s.uiConn != nil {
			if err := s.uiConn.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close ui connection: %w", err))
			}
		}
		if s.temporal != nil {
			if err := guard(s.temporal.Stop); err != nil {
				errs = append(errs, fmt.Errorf("stop temporal server: %w", err))
			}
		}
		if s.s3 != nil {
			if err := s.s3.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("stop s3 server: %w", err))
			}
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}
