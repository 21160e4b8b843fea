package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestChaos runs the chaos suite small: a 60-chunk document, a worker
// process SIGKILLed 3 times, the server process SIGKILLed and restarted
// once, 20% model faults with 5% S3 faults, and S3 hung for 5 s (past the
// 2 s heartbeat timeout) with exactly one model call per chunk, and a
// `starter ask` process that waits through the server's SIGKILL and
// restart and exits 0 with the answer, and a run started on a namespace
// without memagent's search attributes before its worker. Every run ends with the
// clean run's answer and memory, and the kills repeat at most one model
// call each.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("starts stack and worker processes and kills them")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	o := chaosOptions{
		Chunks: 60, ChunkTokens: 200, Kills: 3, Restarts: 1, FaultRate: 0.2, S3FaultRate: 0.05, Seed: 3,
		SimLatency: 50 * time.Millisecond, ModelTimeout: 2 * time.Second, Downtime: 2 * time.Second, S3Hang: 5 * time.Second, ScenarioTimeout: 2 * time.Minute,
		Exe: os.Args[0], Args: []string{"-test.run=^$"}, Progress: tWriter{t},
	}
	began := time.Now()
	rows, err := runChaosSuite(ctx, o)
	t.Logf("%s in all\n%s", time.Since(began).Round(time.Second), chaosTable(rows))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 7 {
		t.Fatalf("got %d scenarios, want 7", len(rows))
	}
	if err := chaosCheck(rows, o); err != nil {
		t.Error(err)
	}
	for _, r := range rows {
		if r.Chunks != rows[0].Chunks {
			t.Errorf("%s: %d chunks, the clean run %d", r.Scenario, r.Chunks, rows[0].Chunks)
		}
		if strings.HasPrefix(r.Scenario, "sigkill") && r.Disturbances == 0 {
			t.Errorf("%s: nothing was killed", r.Scenario)
		}
	}
	if f := rows[3]; f.ModelFaults == 0 || f.S3Faults == 0 {
		t.Errorf("faults: %d model and %d S3 faults injected, want some of each", f.ModelFaults, f.S3Faults)
	}
}
