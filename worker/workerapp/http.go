package workerapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
)

// readyTimeout bounds the Temporal health check behind one /readyz.
const readyTimeout = 3 * time.Second

// HealthChecker is the part of a Temporal client that Probe uses.
type HealthChecker interface {
	CheckHealth(ctx context.Context, req *client.CheckHealthRequest) (*client.CheckHealthResponse, error)
}

// ModelPool is what Probe asks of the worker's model pools (the plugin's
// ModelReady): nil when they can take calls.
type ModelPool interface {
	ModelReady() error
}

// Probe says whether a worker is alive and ready. Its zero value is a
// worker that is starting: alive, not ready. It is safe for concurrent use.
type Probe struct {
	mu       sync.Mutex
	temporal HealthChecker
	pool     ModelPool
	stopping bool
}

// Started records that the worker polls through c and calls the model
// through pool.
func (p *Probe) Started(c HealthChecker, pool ModelPool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.temporal, p.pool = c, pool
}

// Stopping records that the worker is shutting down: it is no longer ready.
func (p *Probe) Stopping() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopping = true
}

// Ready returns nil when the worker has started, Temporal answers its
// health check and at least one model endpoint is in rotation; otherwise
// an error saying which of these fails.
func (p *Probe) Ready(ctx context.Context) error {
	p.mu.Lock()
	c, pool, stopping := p.temporal, p.pool, p.stopping
	p.mu.Unlock()
	switch {
	case stopping:
		return errors.New("worker is stopping")
	case c == nil:
		return errors.New("worker is starting")
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return fmt.Errorf("temporal health check: %w", err)
	}
	return pool.ModelReady()
}

// HandlerOption adds an endpoint to Handler.
type HandlerOption func(*http.ServeMux)

// CodecPath is where Handler serves the codec server: the Temporal UI's
// and CLI's codec endpoint is http://<worker HTTP address>/codec.
const CodecPath = "/codec"

// WithCodecServer serves the codec server h (see CodecServer) under
// CodecPath: POST /codec/encode and /codec/decode, and the CORS preflight.
// A nil h adds nothing.
func WithCodecServer(h http.Handler) HandlerOption {
	return func(mux *http.ServeMux) {
		if h != nil {
			mux.Handle(CodecPath+"/", h)
		}
	}
}

// Handler serves a worker's operational endpoints:
//
//	/metrics  metrics in the Prometheus text format (when metrics is not nil)
//	/healthz  200 while the process runs
//	/readyz   200 when probe is ready, else 503 with the reason
//	/codec/   the codec server, with WithCodecServer
func Handler(metrics http.Handler, probe *Probe, opts ...HandlerOption) http.Handler {
	mux := http.NewServeMux()
	for _, o := range opts {
		o(mux)
	}
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := probe.Ready(r.Context()); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ready:", err)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}

// ServeHTTP serves h on addr in the background. It returns the address
// listened on (useful with port 0) and a function that stops the server.
func ServeHTTP(addr string, h http.Handler, logger *slog.Logger) (net.Addr, func(), error) {
	if logger == nil {
		logger = slog.Default()
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("http endpoint: listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("http endpoint stopped", "err", err)
		}
	}()
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}
	return l.Addr(), stop, nil
}
