package devenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/memagent/memagent/internal/dev/embedstack"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/devaddr"
	"github.com/memagent/memagent/internal/searchattrs"
	"github.com/memagent/memagent/internal/tokenizer"
)

// DefaultSimulatorPort is where the dev stack serves the simulator, vLLM's
// usual port.
const DefaultSimulatorPort = 8000

// Options configures Start.
type Options struct {
	// DataDir persists Temporal's and S3's state; empty keeps it in memory.
	DataDir string
	// FreePorts picks free loopback ports instead of the defaults.
	FreePorts bool
	// TemporalPort, UIPort and S3Port, when nonzero, are the stack's ports
	// whatever FreePorts says (see embedstack.Options): a stack restarted on
	// the same DataDir and ports is the same stack to its clients.
	TemporalPort, UIPort, S3Port int
	// Simulator serves the inference simulator next to the stack.
	Simulator bool
	// SimulatorLatency is added to every simulated call.
	SimulatorLatency time.Duration
	// SimulatorPolicy is the simulator's Options.Policy.
	SimulatorPolicy string
	// DisableUI skips the Temporal Web UI.
	DisableUI bool
	// ExternalTemporal and Namespace: see embedstack.Options. With
	// ExternalTemporal no Temporal server is started; the search attributes
	// are registered in Namespace on that server all the same.
	ExternalTemporal, Namespace string

	Logger *slog.Logger
}

// Env is a running dev stack with, optionally, the simulator.
type Env struct {
	Stack        *embedstack.Stack
	Simulator    *simulator.Server
	SimulatorURL string // base URL including /v1; empty without simulator
	simSrv       *http.Server
}

// Start starts the embedded Temporal server, Web UI and S3 server, and
// the simulator when asked. It registers DocumentQA's search attributes
// before it returns: a run that upserts an unregistered attribute would
// block until they were.
func Start(ctx context.Context, opts Options) (*Env, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	sopts := embedstack.Options{DataDir: opts.DataDir, DisableUI: opts.DisableUI, Logger: logger,
		ExternalTemporal: opts.ExternalTemporal, Namespace: opts.Namespace}
	if opts.FreePorts {
		sopts.TemporalPort, sopts.UIPort, sopts.S3Port = embedstack.FreePort, embedstack.FreePort, embedstack.FreePort
	}
	if opts.TemporalPort != 0 {
		sopts.TemporalPort = opts.TemporalPort
	}
	if opts.UIPort != 0 {
		sopts.UIPort = opts.UIPort
	}
	if opts.S3Port != 0 {
		sopts.S3Port = opts.S3Port
	}
	stack, err := embedstack.Start(ctx, sopts)
	if err != nil {
		return nil, fmt.Errorf("start dev stack: %w", err)
	}
	if err := stack.RegisterSearchAttributes(ctx, searchattrs.Memagent()); err != nil {
		stack.Close()
		return nil, fmt.Errorf("start dev stack: %w", err)
	}
	d := &Env{Stack: stack}
	if !opts.Simulator {
		return d, nil
	}
	tok, err := tokenizer.New(tokenizer.Qwen)
	if err != nil {
		stack.Close()
		return nil, err
	}
	d.Simulator = simulator.New(simulator.Options{Tokenizer: tok, Latency: opts.SimulatorLatency, Logger: logger, Policy: opts.SimulatorPolicy})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(DefaultSimulatorPort))
	if opts.FreePorts {
		addr = "127.0.0.1:0"
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		stack.Close()
		return nil, fmt.Errorf("simulator: listen on %s: %w (is something else, e.g. vLLM, on that port? set OPENAI_BASE_URL to use it instead, or run with --free-ports)", addr, err)
	}
	d.simSrv = &http.Server{Handler: d.Simulator, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := d.simSrv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("simulator stopped", "err", err)
		}
	}()
	d.SimulatorURL = "http://" + l.Addr().String() + "/v1"
	return d, nil
}

// Addresses are where the stack is, for a configuration to point at it
// (worker/config's Config.AtDevStack): Temporal, S3 with the stack's
// credentials, and the simulator's URL when it runs.
func (d *Env) Addresses() devaddr.Stack {
	return devaddr.Stack{
		TemporalAddress: d.Stack.TemporalAddress, Namespace: d.Stack.Namespace,
		S3Endpoint: d.Stack.S3Endpoint, Region: d.Stack.Region,
		S3AccessKey: d.Stack.S3AccessKey, S3SecretKey: d.Stack.S3SecretKey,
		Bucket: d.Stack.Bucket, SimulatorURL: d.SimulatorURL,
	}
}

// Close stops the simulator and the stack.
func (d *Env) Close() error {
	var errs []error
	if d.simSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs = append(errs, d.simSrv.Shutdown(ctx))
		cancel()
	}
	errs = append(errs, d.Stack.Close())
	return errors.Join(errs...)
}
