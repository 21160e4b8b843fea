package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
)

type clusterInfoOnly struct {
	workflowservice.WorkflowServiceClient
	info *workflowservice.GetClusterInfoResponse
}

func (c clusterInfoOnly) GetClusterInfo(context.Context, *workflowservice.GetClusterInfoRequest, ...grpc.CallOption) (*workflowservice.GetClusterInfoResponse, error) {
	return c.info, nil
}

// TestExternalServerNamesDeploysSettings checks the report header for a
// server running deploy's dynamic config: its values, and where it differs
// from the embedded server.
func TestExternalServerNamesDeploysSettings(t *testing.T) {
	ws := clusterInfoOnly{info: &workflowservice.GetClusterInfoResponse{
		ServerVersion: "1.32.0", PersistenceStore: "postgres12", VisibilityStore: "postgres12", HistoryShardCount: 4}}
	s, err := externalServer(context.Background(), ws, externalTemporal{Address: "127.0.0.1:7233", Namespace: "default",
		DB: "PostgreSQL 15.18", DynamicConfig: "../deploy/temporal/dynamicconfig.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.heading("Pool utilisation"), "Pool utilisation (Temporal with PostgreSQL)"; got != want {
		t.Errorf("heading %q, want %q", got, want)
	}
	for _, want := range []string{
		"persistence `postgres12` on PostgreSQL 15.18", "4 history shards",
		"`system.enableActivityEagerExecution` true", "`history.transferProcessorMaxPollRPS` 1000",
		"`matching.useNewMatcher` true", "`matching.enableFairness` true",
		"`history.workflowIdReuseMinimalInterval` unset (server default 1s)",
		"`history.workflowIdReuseMinimalInterval` 1s here, 0s there; `matching.numTaskqueueReadPartitions` 4 here, 1 there; `matching.numTaskqueueWritePartitions` 4 here, 1 there; 4 history shards here, 1 there.",
	} {
		if !strings.Contains(s.Settings, want) {
			t.Errorf("settings lack %q:\n%s", want, s.Settings)
		}
	}
	if strings.Contains(s.Settings, "MaxPollRPS` 1000 here") || strings.Contains(s.Settings, "enableFairness` true here") {
		t.Errorf("settings name an equal setting as different:\n%s", s.Settings)
	}
	if embeddedServer.heading("Pool utilisation") != "Pool utilisation" {
		t.Error("the embedded server's headings changed")
	}
}

func TestTemporalNeedsAnExternalSection(t *testing.T) {
	for _, args := range [][]string{{"-temporal", "127.0.0.1:1"}, {"-temporal", "127.0.0.1:1", "-only", "scale"}} {
		err := run(context.Background(), args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "-temporal needs -only overhead or -only pool") {
			t.Errorf("%q: %v, want -temporal refused", args, err)
		}
	}
}
