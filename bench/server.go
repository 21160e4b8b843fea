package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"gopkg.in/yaml.v3"
)

// externalTemporal is the -temporal flags: a Temporal server the bench uses
// instead of starting the embedded one.
type externalTemporal struct {
	Address       string // host:port of the frontend; empty = the embedded server
	Namespace     string
	DB            string // the server's database as the report names it, e.g. "PostgreSQL 15.18"
	DynamicConfig string // the dynamic config file the server runs with
}

// externalSections are the sections that can run on an external server:
// the others' text describes the embedded stack.
var externalSections = []string{"overhead", "pool", "cost"}

// benchServer says which Temporal server the figures come from.
type benchServer struct {
	// Label goes after a section's heading, in parentheses; empty for the
	// embedded server, so that its headings stay as they were.
	Label string
	// Stack names the stack in a sentence: "the embedded stack (...)".
	Stack string
	// Server names the server in a sentence: "embedded server".
	Server string
	// Settings is the report header's paragraph about the server.
	Settings string
}

func (s benchServer) heading(name string) string {
	if s.Label == "" {
		return name
	}
	return fmt.Sprintf("%s (%s)", name, s.Label)
}

var embeddedServer = benchServer{
	Stack:    "the embedded stack (Temporal with SQLite in memory, S3 on loopback)",
	Server:   "embedded server",
	Settings: serverSettings,
}

// embeddedHistoryShards is the embedded server's shard count
// (internal/dev/embedstack numHistoryShards).
const embeddedHistoryShards = 1

// serverDynamicConfig is the dynamic config the figures depend on: its value
// on the embedded server (internal/dev/embedstack devDynamicConfig) and the
// server's default (go.temporal.io/server v1.32.0), for a file that does not
// set it.
var serverDynamicConfig = []struct{ key, what, embedded, serverDefault string }{
	{"system.enableActivityEagerExecution", "eager activity execution", "true", "true"},
	{"history.transferProcessorMaxPollRPS", "transfer queue polls per second and shard", "1000", "20"},
	{"history.workflowIdReuseMinimalInterval", "minimum between runs of one id, continue-as-new included", "0s", "1s"},
	{"matching.useNewMatcher", "new matcher", "true", "true"},
	{"matching.enableFairness", "fairness", "true", "false"},
	{"matching.numTaskqueueReadPartitions", "task queue read partitions", "1", "4"},
	{"matching.numTaskqueueWritePartitions", "task queue write partitions", "1", "4"},
}

// externalServer describes the server at ext.Address for the report: what
// it says about itself (GetClusterInfo) and the settings of ext's dynamic
// config file that the figures depend on.
func externalServer(ctx context.Context, ws workflowservice.WorkflowServiceClient, ext externalTemporal) (benchServer, error) {
	info, err := ws.GetClusterInfo(ctx, &workflowservice.GetClusterInfoRequest{})
	if err != nil {
		return benchServer{}, fmt.Errorf("temporal at %s: cluster info: %w", ext.Address, err)
	}
	db := ext.DB
	if db == "" {
		db = info.GetPersistenceStore()
	}
	s := benchServer{Label: "Temporal at " + ext.Address, Server: "server"}
	if f := strings.Fields(db); len(f) > 0 {
		s.Label = "Temporal with " + f[0]
	}
	s.Stack = fmt.Sprintf("Temporal with %s (the server a process of its own; S3 on loopback)", db)
	set := map[string]string{}
	file := "no dynamic config file named (-temporal-dynamic-config)"
	if ext.DynamicConfig != "" {
		if set, err = readDynamicConfig(ext.DynamicConfig); err != nil {
			return s, err
		}
		file = "`" + relPath(ext.DynamicConfig) + "`"
	}
	var values, differs []string
	for _, c := range serverDynamicConfig {
		v, ok := set[strings.ToLower(c.key)]
		shown := v
		if !ok {
			v, shown = c.serverDefault, "unset (server default "+c.serverDefault+")"
		}
		values = append(values, fmt.Sprintf("%s `%s` %s", c.what, c.key, shown))
		if !sameValue(v, c.embedded) {
			differs = append(differs, fmt.Sprintf("`%s` %s here, %s there", c.key, v, c.embedded))
		}
	}
	if n := info.GetHistoryShardCount(); n != embeddedHistoryShards {
		differs = append(differs, fmt.Sprintf("%d history shards here, %d there", n, embeddedHistoryShards))
	}
	diff := "none of these settings differs from the embedded dev server's."
	if len(differs) > 0 {
		diff = "unlike the embedded dev server (SQLite in memory, its development settings): " + strings.Join(differs, "; ") + "."
	}
	s.Settings = fmt.Sprintf("The sections marked *(%s)* were measured on a Temporal server of its own at %s, not the embedded one: `temporal-server` %s, persistence `%s` on %s, visibility `%s`, %d history shards, namespace `%s`; the worker, S3 and the simulator in the bench's process on loopback, %d cores. Its dynamic config is %s, as operators run it: %s; %s",
		s.Label, ext.Address, info.GetServerVersion(), info.GetPersistenceStore(), db, info.GetVisibilityStore(), info.GetHistoryShardCount(), ext.Namespace, runtime.NumCPU(),
		file, strings.Join(values, ", "), diff)
	return s, nil
}

// readDynamicConfig reads a Temporal dynamic config file: each key's
// unconstrained value, keys in lower case (the server ignores their case).
func readDynamicConfig(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var file map[string][]struct {
		Value       any            `yaml:"value"`
		Constraints map[string]any `yaml:"constraints"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("dynamic config %s: %w", path, err)
	}
	out := map[string]string{}
	for k, vs := range file {
		for _, v := range vs {
			if len(v.Constraints) == 0 {
				out[strings.ToLower(k)] = fmt.Sprint(v.Value)
			}
		}
	}
	return out, nil
}

// sameValue compares two dynamic config values as text, or as durations
// when both are ("0" and "0s").
func sameValue(a, b string) bool {
	if strings.EqualFold(a, b) {
		return true
	}
	da, errA := parseDuration(a)
	db, errB := parseDuration(b)
	return errA == nil && errB == nil && da == db
}

func parseDuration(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	return time.ParseDuration(s)
}

// relPath is path relative to the working directory when it lies below it.
func relPath(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if r, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}
