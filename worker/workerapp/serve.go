package workerapp

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/internal/telemetry"
	"github.com/memagent/memagent/plugin"
	"github.com/memagent/memagent/worker/config"
)

// RegisterFlags adds the worker's own flags (beyond cfg's) to fs: the
// worker binary and the devstack command share them.
func RegisterFlags(fs *flag.FlagSet, cfg *config.Config, opts *Options) {
	cfg.RegisterFlags(fs)
	fs.StringVar(&opts.UpdateTemplate, "update-template", "", "file with the memory-update prompt ({question} {memory} {chunk})")
	fs.StringVar(&opts.FinalTemplate, "final-template", "", "file with the final-answer prompt ({question} {memory})")
	fs.IntVar(&opts.Concurrency, "concurrency", 0, "activities running at once in this worker; 0 = four times the model pool's capacity")
	fs.DurationVar(&cfg.StopTimeout, "stop-timeout", cfg.StopTimeout, "on SIGTERM, how long in-flight activities may run before they are cancelled and handed back to Temporal (MEMAGENT_STOP_TIMEOUT)")
	fs.StringVar(&cfg.HTTPAddr, "http-addr", cfg.HTTPAddr, `serve /metrics, /healthz, /readyz (and /codec with codec keys) on this host:port; "" turns it off (MEMAGENT_HTTP_ADDR)`)
	fs.StringVar(&cfg.DeploymentName, "deployment-name", cfg.DeploymentName, "Temporal Worker Deployment this worker is a build of: turns Worker Versioning on (TEMPORAL_DEPLOYMENT_NAME; docs/DEPLOY.md, Upgrading)")
	fs.StringVar(&cfg.BuildID, "build-id", cfg.BuildID, "this worker's build id in its Worker Deployment; empty = the binary's version (TEMPORAL_WORKER_BUILD_ID)")
}

// Serve runs a worker for cfg until ctx ends: telemetry, the HTTP endpoint
// (metrics, health, codec), the worker itself; then it stops the worker,
// letting in-flight activities finish within the stop timeout. It writes
// what it serves where to stdout.
func Serve(ctx context.Context, cfg config.Config, opts Options, stdout io.Writer) error {
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
		opts.Logger = logger
	}
	if err := cfg.Validate(); err != nil {
		return Usage(err)
	}
	tel, err := telemetry.Setup(ctx, telemetry.Options{ServiceName: "memagent-worker", Logger: logger})
	if err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tel.Shutdown(ctx); err != nil {
			logger.Warn("telemetry not flushed", "err", err)
		}
	}()
	logger.Info("telemetry", "traces", tel.Traces, "metrics", tel.Metrics)
	var probe Probe
	codecServer, err := CodecServer(cfg)
	if err != nil {
		return err
	}
	logger.Info("payload encryption", "codec_keys", describeKeys(cfg.CodecKeys), "s3_sse", cfg.S3SSE)
	if cfg.HTTPAddr != "" {
		addr, stopHTTP, err := ServeHTTP(cfg.HTTPAddr, Handler(tel.Prometheus, &probe, WithCodecServer(codecServer)), logger)
		if err != nil {
			// Observability must not keep a worker from working.
			logger.Warn(`no /metrics, /healthz or /readyz: set --http-addr to a free host:port, or to "" to turn the endpoint off`, "err", err)
		} else {
			defer stopHTTP()
			fmt.Fprintf(stdout, "metrics and health on http://%s (/metrics, /healthz, /readyz)\n", addr)
			if codecServer != nil {
				fmt.Fprintf(stdout, "codec server on http://%s%s (set it as the Temporal UI's codec endpoint)\n", addr, CodecPath)
			}
		}
	}
	run, err := Start(ctx, cfg, opts)
	if err != nil {
		return err
	}
	defer func() {
		began := time.Now()
		run.Stop()
		logger.Info("worker stopped", "took", time.Since(began).Round(time.Millisecond))
	}()
	probe.Started(run.Client, run.Plugin)
	if cfg.DeploymentName != "" {
		fmt.Fprintf(stdout, "worker polling task queue %q on %s as build %q of worker deployment %q\n",
			cfg.TaskQueue, cfg.TemporalAddress, cfg.WorkerBuildID(), cfg.DeploymentName)
		go reportRouting(ctx, run.Client, cfg.DeploymentName, cfg.WorkerBuildID(), logger)
	} else {
		fmt.Fprintf(stdout, "worker polling task queue %q on %s\n", cfg.TaskQueue, cfg.TemporalAddress)
	}
	<-ctx.Done()
	probe.Stopping()
	logger.Info("stopping: no new tasks; waiting for in-flight activities", "stop_timeout", cfg.WorkerStopTimeout())
	return nil
}

// reportRouting logs, once the deployment knows this build (from its
// polls, within seconds), whether runs come to it: a build that is neither
// current nor ramping takes none, and a deployment without a current build
// starts no run at all, which looks like a stuck run to whoever started
// one. It gives up after a minute.
func reportRouting(ctx context.Context, c client.Client, deployment, buildID string, logger *slog.Logger) {
	h := c.WorkerDeploymentClient().GetHandle(deployment)
	deadline := time.Now().Add(time.Minute)
	for wait := 500 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		d, err := h.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
		known := false
		for _, v := range d.Info.VersionSummaries {
			known = known || v.Version.BuildID == buildID
		}
		if err == nil && known {
			logRouting(d.Info.RoutingConfig, deployment, buildID, logger)
			return
		}
		if time.Now().After(deadline) {
			logger.Debug("the worker deployment does not list this build yet", "deployment", deployment, "build_id", buildID, "err", err)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// logRouting says what rc means for build buildID of deployment.
func logRouting(rc client.WorkerDeploymentRoutingConfig, deployment, buildID string, logger *slog.Logger) {
	set := fmt.Sprintf("temporal worker deployment set-current-version --deployment-name %s --build-id %s", deployment, buildID)
	switch {
	case rc.CurrentVersion == nil:
		logger.Warn("no build of the worker deployment is current, so no run starts until one is (docs/DEPLOY.md, Upgrading): "+set,
			"deployment", deployment, "build_id", buildID)
	case rc.CurrentVersion.BuildID == buildID:
		logger.Info("this build is current: new runs start on it", "deployment", deployment, "build_id", buildID)
	case rc.RampingVersion != nil && rc.RampingVersion.BuildID == buildID:
		logger.Info("this build is ramping", "deployment", deployment, "build_id", buildID,
			"percentage", rc.RampingVersionPercentage, "current_build_id", rc.CurrentVersion.BuildID)
	default:
		logger.Info("another build is current: this one takes runs once made current or ramping: "+set,
			"deployment", deployment, "build_id", buildID, "current_build_id", rc.CurrentVersion.BuildID)
	}
}

// describeKeys says how many codec keys there are and which one encrypts,
// never their material.
func describeKeys(keys []plugin.CodecKey) string {
	if len(keys) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d key(s), active %q", len(keys), keys[0].ID)
}
