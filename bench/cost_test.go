package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/dev/procstat"
	"github.com/memagent/memagent/internal/dev/simulator"
	"github.com/memagent/memagent/internal/memagent"
	"github.com/memagent/memagent/plugin"
	"github.com/memagent/memagent/worker/config"
)

func TestCostFiguresAndProjection(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	a := costReading{At: t0, Worker: 2 * time.Second, Temporal: 10 * time.Second, Postgres: 30 * time.Second, Bench: time.Second,
		Machine: procstat.MachineCPU{Busy: 100 * time.Second, Idle: 100 * time.Second}, Load: 1.5, Statements: 1000, S3Requests: 7}
	b := costReading{At: t0.Add(100 * time.Second), Worker: 12 * time.Second, Temporal: 40 * time.Second, Postgres: 70 * time.Second, Bench: 3 * time.Second,
		Machine: procstat.MachineCPU{Busy: 250 * time.Second, Idle: 150 * time.Second}, Load: 3.5, Statements: 41000, S3Requests: 4007}
	f := diff(a, b)
	f.ChunkUpdates, f.Events = 1000, 25_000
	checks := []struct {
		name      string
		got, want float64
	}{
		{"worker ms per chunk", f.perMS(f.Worker), 10},
		{"temporal ms per chunk", f.perMS(f.Temporal), 30},
		{"postgres ms per chunk", f.perMS(f.Postgres), 40},
		{"statements per chunk", f.per(f.Statements), 40},
		{"s3 requests per chunk", f.per(f.S3Requests), 4},
		{"worker cores", f.cores(f.Worker), 0.1},
		{"machine busy", f.machineBusy(), 0.75},
	}
	for _, c := range checks {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if f.LoadBefore != 1.5 || f.LoadAfter != 3.5 {
		t.Errorf("load %v → %v, want 1.5 → 3.5", f.LoadBefore, f.LoadAfter)
	}
	// 1,000 chunk updates a second at 10, 30 and 40 ms each: 10, 30 and
	// 40 cores; 40 statements, 25 events and 4 S3 requests each.
	p := project(f, 1000)
	want := projection{Rate: 1000, WorkerCores: 10, TemporalCores: 30, PGCores: 40, StatementsPerSec: 40_000, EventsPerSec: 25_000, S3PerS: 4000}
	for _, c := range [][2]float64{{p.WorkerCores, want.WorkerCores}, {p.TemporalCores, want.TemporalCores}, {p.PGCores, want.PGCores},
		{p.StatementsPerSec, want.StatementsPerSec}, {p.EventsPerSec, want.EventsPerSec}, {p.S3PerS, want.S3PerS}} {
		if math.Abs(c[0]-c[1]) > 1e-9 {
			t.Errorf("project(1000) = %+v, want %+v", p, want)
			break
		}
	}
}

func TestWriteCostWithoutPostgres(t *testing.T) {
	f := costFigures{Wall: 10 * time.Second, Worker: time.Second, Temporal: 2 * time.Second, ChunkUpdates: 100, Units: 150}
	bare := costFigures{Wall: 10 * time.Second, Worker: 500 * time.Millisecond, Temporal: time.Second, ChunkUpdates: 100, Units: 100}
	var b strings.Builder
	writeCost(&b, &benchEnv{server: embeddedServer}, costResult{Idle: f, Batch: f, Bare: bare, Items: 50, Calls: 150, MeanCall: 4500 * time.Millisecond})
	out := b.String()
	for _, want := range []string{
		"| memagent batch, per chunk update | 100 | 10.0 s | 10.00 ms | 20.00 ms | — |",
		"worker CPU 2.00×, Temporal CPU 2.00×, PostgreSQL CPU —",
		"| 100 | 1.0 | 2.0 | — | — |",
		"| 1000 | 10.0 | 20.0 | — | — |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the section lacks %q:\n%s", want, out)
		}
	}
}

func TestWriteCostLongDocumentsAndModelCall(t *testing.T) {
	batch := costFigures{Wall: 10 * time.Second, Worker: 3 * time.Second, Temporal: 4 * time.Second, ChunkUpdates: 1000, Units: 1050}
	bare := costFigures{Wall: 10 * time.Second, Worker: 500 * time.Millisecond, Temporal: time.Second, ChunkUpdates: 500, Units: 500}
	model := costFigures{Wall: 10 * time.Second, Worker: time.Second, Temporal: time.Second, ChunkUpdates: 500, Units: 500}
	var b strings.Builder
	writeCost(&b, &benchEnv{server: embeddedServer}, costResult{Idle: batch, Batch: batch, Bare: bare, Model: model, DocTokens: 100_000,
		ModelPromptTokens: 5400, ModelSectionTokens: 5000, Items: 50, Calls: 1050, MeanCall: 4500 * time.Millisecond})
	out := b.String()
	for _, want := range []string{
		"## Cost per chunk, documents of 100,000 tokens",
		"8 generated documents of 100,000 tokens each (the long-document mode, `-cost-doc-tokens 100000`)",
		"| bare activity, per activity | 500 | 10.0 s | 1.00 ms |",
		"| bare model call, per call | 500 | 10.0 s | 2.00 ms | 2.00 ms | — |",
		// 3 ms a chunk update against 1 ms a bare activity and 2 ms a
		// bare model call; Temporal 4 ms against 2 and 2.
		"worker CPU 3.00×, Temporal CPU 2.00×, PostgreSQL CPU —",
		"its prompt is a chunk update's size, 5400 tokens",
		"worker CPU 1.50×, Temporal CPU 2.00×, PostgreSQL CPU — (memagent per chunk update ÷ bare model call per call); worker CPU 1.00 ms a chunk update beyond the call's own 2.00 ms",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the section lacks %q:\n%s", want, out)
		}
	}
}

func TestWriteCostWithoutModelCallHasNoSuchRow(t *testing.T) {
	f := costFigures{Wall: 10 * time.Second, Worker: time.Second, ChunkUpdates: 100}
	var b strings.Builder
	writeCost(&b, &benchEnv{server: embeddedServer}, costResult{Idle: f, Batch: f, Bare: f, Items: 50, Calls: 150})
	out := b.String()
	if strings.Contains(out, "bare model call") {
		t.Errorf("the section names a bare model call it did not run:\n%s", out)
	}
	if !strings.Contains(out, "## Cost per chunk\n") || !strings.Contains(out, "the pool section's 40 documents of 1K–12K tokens") {
		t.Errorf("the mixed-length section's heading or documents changed:\n%s", out)
	}
}

func TestMedianMemory(t *testing.T) {
	calls := []simulator.Call{
		{Kind: simulator.KindUpdate, MemoryIn: "ccc"},
		{Kind: simulator.KindFinal, MemoryIn: "the final call's memory, never chosen"},
		{Kind: simulator.KindUpdate, MemoryIn: "a"},
		{Kind: simulator.KindUpdate, MemoryIn: "bb"},
	}
	if got := medianMemory(calls); got != "bb" {
		t.Errorf("medianMemory = %q, want %q", got, "bb")
	}
	if got := medianMemory(nil); got != "" {
		t.Errorf("medianMemory(nil) = %q, want empty", got)
	}
}

func TestBareModelCallAsksTheSimulator(t *testing.T) {
	sim := simulator.New(simulator.Options{})
	srv := httptest.NewServer(sim)
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "prompt.txt")
	prompt := memagent.DefaultTemplates().RenderUpdate("Which colour is the door?", "No previous memory", "The door is green. The wall is white.")
	if err := os.WriteFile(path, []byte(prompt), 0o644); err != nil {
		t.Fatal(err)
	}
	mc, err := newBareModelCall(path, config.Config{Options: plugin.Options{ModelURLs: []string{srv.URL + "/v1"}}})
	if err != nil {
		t.Fatal(err)
	}
	n, err := mc.call(context.Background(), floorActivityInput{})
	if err != nil {
		t.Fatal(err)
	}
	calls := sim.Calls()
	if len(calls) != 1 || calls[0].Kind != simulator.KindUpdate || n != len(calls[0].Output) {
		t.Fatalf("the simulator saw %+v, the call returned %d bytes; want one update call whose output it returned", calls, n)
	}
	if sum := sha256.Sum256([]byte(prompt)); calls[0].PromptSHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("the simulator got another prompt than the file's")
	}
}
