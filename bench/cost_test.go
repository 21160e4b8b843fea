package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/dev/procstat"
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
