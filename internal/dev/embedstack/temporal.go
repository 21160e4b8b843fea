package embedstack

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	otelsdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	servertelemetry "go.temporal.io/server/common/telemetry"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
	"google.golang.org/protobuf/types/known/durationpb"

	memtelemetry "github.com/memagent/memagent/internal/telemetry"
)

const (
	// clusterName is the name of the single local cluster.
	clusterName = "active"
	// storeName names the one SQLite data store used for persistence and
	// visibility.
	storeName = "sqlite-default"
	// dbFile is the SQLite file under Options.DataDir.
	dbFile = "temporal.db"
	// numHistoryShards is persisted with the cluster metadata on first start
	// and must never change for an existing database.
	numHistoryShards = 1
	// namespaceRetention is how long closed workflows stay visible.
	namespaceRetention = 7 * 24 * time.Hour
)

// sqlConfig returns the SQLite configuration: a fresh shared-cache in-memory
// database when dataDir is empty, else dataDir/temporal.db in WAL mode.
func sqlConfig(dataDir string) (*config.SQL, error) {
	if dataDir == "" {
		return &config.SQL{
			PluginName: sqliteplugin.PluginName,
			// The plugin keys its connection pool by DSN, so a unique name
			// keeps stacks in one process apart.
			DatabaseName:      "devstack-" + randomHex(8),
			ConnectAttributes: map[string]string{"mode": "memory", "cache": "shared"},
		}, nil
	}
	path, err := filepath.Abs(filepath.Join(dataDir, dbFile))
	if err != nil {
		return nil, fmt.Errorf("sqlite path: %w", err)
	}
	// The plugin pastes the name into a "file:" URI unescaped.
	if strings.ContainsAny(path, "?#%") {
		return nil, fmt.Errorf("data dir %q: the path must not contain '?', '#' or '%%'", dataDir)
	}
	return &config.SQL{
		PluginName:   sqliteplugin.PluginName,
		DatabaseName: path,
		// Plain pragma names: the plugin turns unknown keys into
		// _pragma=name=value; an underscore-prefixed key would be ignored.
		ConnectAttributes: map[string]string{
			"mode":         "rwc",
			"journal_mode": "wal",
			"synchronous":  "normal",
			"busy_timeout": "10000",
		},
	}, nil
}

// prepareDatabase creates the schema of a new database file and registers the
// namespace. The schema is built in a temporary file that is renamed into
// place only when complete, so an interrupted first start never leaves a
// half-built database that later starts would trust.
func prepareDatabase(cfg *config.SQL, persistent bool, namespace string) error {
	if persistent {
		if err := createSchemaFile(cfg); err != nil {
			return err
		}
	}
	// In-memory databases get their schema from the plugin when the first
	// connection is opened.
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, namespace, false, nil)
	if err != nil {
		return fmt.Errorf("namespace %s: %w", namespace, err)
	}
	ns.Detail.Config.Retention = durationpb.New(namespaceRetention)
	if err := sqliteschema.CreateNamespaces(cfg, ns); err != nil {
		return fmt.Errorf("register namespace %s: %w", namespace, err)
	}
	return nil
}

func createSchemaFile(cfg *config.SQL) error {
	path := cfg.DatabaseName
	if _, err := os.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sqlite file: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	tmp := path + ".init-" + randomHex(4)
	// Rollback-journal mode for the build, so that everything is in the
	// main file when it is renamed. (The plugin keeps this connection in
	// its pool for the life of the process; it is idle and never reused.)
	tmpCfg := &config.SQL{
		PluginName:        cfg.PluginName,
		DatabaseName:      tmp,
		ConnectAttributes: map[string]string{"mode": "rwc"},
	}
	if err := sqliteschema.SetupSchema(tmpCfg); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("create temporal schema in %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("sqlite file: %w", err)
	}
	return nil
}

// serverConfig builds the Temporal server configuration in code: one cluster,
// four services bound to host, SQLite for persistence and visibility.
func serverConfig(host string, p temporalPorts, sql *config.SQL) *config.Config {
	addr := func(port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }
	svc := func(grpcPort, httpPort int) config.Service {
		return config.Service{RPC: config.RPC{GRPCPort: grpcPort, HTTPPort: httpPort, BindOnIP: host}}
	}

	cfg := &config.Config{}
	cfg.Global.Membership.BroadcastAddress = host
	cfg.Persistence = config.Persistence{
		DefaultStore:     storeName,
		VisibilityStore:  storeName,
		NumHistoryShards: numHistoryShards,
		DataStores:       map[string]config.DataStore{storeName: {SQL: sql}},
	}
	cfg.ClusterMetadata = &cluster.Config{
		EnableGlobalNamespace:    false,
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {
				Enabled:                true,
				InitialFailoverVersion: 1,
				RPCAddress:             addr(p.frontend),
				HTTPAddress:            addr(p.frontendHTTP),
			},
		},
	}
	cfg.DCRedirectionPolicy.Policy = "noop"
	cfg.Services = map[string]config.Service{
		string(primitives.FrontendService): svc(p.frontend, p.frontendHTTP),
		string(primitives.HistoryService):  svc(p.history, 0),
		string(primitives.MatchingService): svc(p.matching, 0),
		string(primitives.WorkerService):   svc(p.worker, 0),
	}
	cfg.Archival.History.State = "disabled"
	cfg.Archival.Visibility.State = "disabled"
	cfg.NamespaceDefaults.Archival.History.State = "disabled"
	cfg.NamespaceDefaults.Archival.Visibility.State = "disabled"
	// The server's own SDK clients (system workflows) dial this address.
	cfg.PublicClient.HostPort = addr(p.frontend)
	return cfg
}

// devDynamicConfig holds the dynamic config values suited to a single
// developer machine.
func devDynamicConfig() dynamicconfig.StaticClient {
	return dynamicconfig.StaticClient{
		// Custom search attributes registered a moment ago are usable at once.
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key(): true,
		// The UI polls visibility often; the default per-instance limit is low.
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
		// The default host-level mutable state cache (128k entries) is sized
		// for servers, not laptops.
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key(): 8192,
		// A workflow task that schedules an activity on its own task queue
		// hands it straight back to the worker: one round trip less per chunk.
		dynamicconfig.EnableActivityEagerExecution.Key(): true,
		// Continue-as-new starts the next run at once instead of after the
		// one-second minimum between runs of one workflow id.
		dynamicconfig.WorkflowIdReuseMinimalInterval.Key(): time.Duration(0),
		// Task-queue priority and fairness (temporal.Priority on workflows,
		// children and activities): the new matcher orders a backed-up
		// queue by priority, and fairness shares each priority between
		// fairness keys by weight. A self-hosted cluster needs the same two
		// settings (docs/DEPLOY.md).
		dynamicconfig.MatchingUseNewMatcher.Key():  true,
		dynamicconfig.MatchingEnableFairness.Key(): true,
		// One partition a task queue: the dev server has one matching
		// host and one worker polling it, and with the default four each
		// step of a run that lands on a partition without a poller is
		// forwarded to one that has: the 64-document batch of bench -only
		// pool, bound by its longest document's chain of 41 calls, took
		// 1.04–1.05× that chain with four (95.6% and 95.9%) and 1.02× with
		// one (97.8%), on 2026-11-27.
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():  1,
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): 1,
		// The history service reads its transfer queue (which hands a new
		// workflow or activity task to matching) at most 20 times a second
		// per shard by default: a run that moves one step at a time then
		// waits up to 50 ms a step. bench -only overhead: a bare activity
		// loop takes 50.5 ms an activity at the default, 4.9 ms at 1000.
		dynamicconfig.TransferProcessorMaxPollRPS.Key(): 1000,
		// Worker Versioning (docs/DEPLOY.md, Upgrading) needs nothing
		// here to route runs, ramp and move pinned runs at continue-as-new
		// (on by default in 1.32). A build that is no longer current or
		// ramping reports "drained" once visibility shows no open run on
		// it, and only after a grace period for visibility to catch up (3
		// minutes by default), checked every 3 minutes: up to 6 minutes
		// before a drained build says so. The dev server's SQLite
		// visibility is current within a second.
		dynamicconfig.VersionDrainageStatusVisibilityGracePeriod.Key(): 10 * time.Second,
		dynamicconfig.VersionDrainageStatusRefreshInterval.Key():       time.Second,
	}
}

// newTemporalServer builds (but does not start) the server.
func newTemporalServer(host string, p temporalPorts, sql *config.SQL, logger *slog.Logger) (temporal.Server, error) {
	cfg := serverConfig(host, p, sql)
	slogger := serverLogger{l: logger}
	authorizer, err := authorization.GetAuthorizerFromConfig(&cfg.Global.Authorization)
	if err != nil {
		return nil, fmt.Errorf("temporal authorizer: %w", err)
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&cfg.Global.Authorization, slogger)
	if err != nil {
		return nil, fmt.Errorf("temporal claim mapper: %w", err)
	}
	// The server's own exporter from OTEL_* speaks gRPC only, whatever
	// OTEL_EXPORTER_OTLP_PROTOCOL says (it reads just the traces-specific
	// variable): given memagent's, which honours it, the server's spans go
	// where the worker's go, over the same protocol.
	exp, err := memtelemetry.UnstartedSpanExporter()
	if err != nil {
		return nil, err
	}
	if exp != nil {
		cfg.ExporterConfig.CustomExporters = map[servertelemetry.SpanExporterType]otelsdktrace.SpanExporter{"otlp": exp}
	}
	local := func(port int) static.Hosts { return static.SingleLocalHost(net.JoinHostPort(host, strconv.Itoa(port))) }
	var srv temporal.Server
	err = guard(func() (err error) {
		srv, err = temporal.NewServer(
			temporal.WithConfig(cfg),
			temporal.ForServices(temporal.DefaultServices),
			// Static membership: no ringpop, no membership ports, no join delay.
			temporal.WithStaticHosts(map[primitives.ServiceName]static.Hosts{
				primitives.FrontendService: local(p.frontend),
				primitives.HistoryService:  local(p.history),
				primitives.MatchingService: local(p.matching),
				primitives.WorkerService:   local(p.worker),
			}),
			temporal.WithLogger(slogger),
			temporal.WithAuthorizer(authorizer),
			temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
			temporal.WithDynamicConfigClient(devDynamicConfig()),
		)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("temporal server: %w", err)
	}
	return srv, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}
