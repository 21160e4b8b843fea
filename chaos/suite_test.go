package main

import (
	"context"
	"fmt"
	"io"
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
// without memagent's search attributes before its worker. Then a BatchQA of
// 8 items, one a run, clean, with the worker SIGKILLed at 3 of its
// continue-as-new boundaries, and with the server SIGKILLed and restarted
// at one: no item lost, answered twice or counted twice. Every run ends
// with the clean run's answers and memories, and the kills repeat at most
// one model call each.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("starts stack and worker processes and kills them")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	starter, err := buildStarter(ctx, t.TempDir(), "../starter", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	o := chaosOptions{Starter: starter,
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
	if len(rows) != 10 {
		t.Fatalf("got %d scenarios, want 10", len(rows))
	}
	if err := chaosCheck(rows, o); err != nil {
		t.Error(err)
	}
	for _, r := range rows {
		clean := rows[0]
		if strings.HasPrefix(r.Scenario, "batch") {
			clean = rows[7]
		}
		if r.Chunks != clean.Chunks {
			t.Errorf("%s: %d chunks, the clean run %d", r.Scenario, r.Chunks, clean.Chunks)
		}
		if strings.Contains(r.Scenario, "sigkill") && r.Disturbances == 0 {
			t.Errorf("%s: nothing was killed", r.Scenario)
		}
	}
	if f := rows[3]; f.ModelFaults == 0 || f.S3Faults == 0 {
		t.Errorf("faults: %d model and %d S3 faults injected, want some of each", f.ModelFaults, f.S3Faults)
	}
}

func TestMain(m *testing.M) {
	if role := os.Getenv(chaosRoleEnv); role != "" {
		// A worker or stack process of TestChaos.
		if err := runChaosRole(context.Background(), role, os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "chaos", role+":", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// tWriter writes the suite's progress lines to the test log.
type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestFlags: bad numbers are refused before anything starts.
func TestFlags(t *testing.T) {
	for _, args := range [][]string{{"--chunks", "5"}, {"--kills", "-1"}, {"--fault-rate", "1"}} {
		if err := run(context.Background(), args, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "--chunks must be") {
			t.Errorf("chaos %v: %v, want the flags refused", args, err)
		}
	}
}
