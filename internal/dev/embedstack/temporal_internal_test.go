package embedstack

import (
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPortTakenDuringStart takes one of the planned Temporal ports before the
// server binds it, as a racing process could. The server logs that as fatal;
// building or starting it must return an error instead of crashing the
// process, and stopping must not hang. (Listeners the server bound before
// the failure stay open: NewServer returns no handle to release them.)
func TestPortTakenDuringStart(t *testing.T) {
	for _, name := range []string{"frontend", "frontend http", "history", "matching", "worker"} {
		t.Run(name, func(t *testing.T) {
			p, err := planTemporalPorts("127.0.0.1", FreePort)
			if err != nil {
				t.Fatalf("planTemporalPorts: %v", err)
			}
			ports := map[string]int{"frontend": p.frontend, "frontend http": p.frontendHTTP, "history": p.history, "matching": p.matching, "worker": p.worker}
			busy, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[name])))
			if err != nil {
				t.Fatalf("take %s port: %v", name, err)
			}
			defer busy.Close()

			sql, err := sqlConfig("")
			if err != nil {
				t.Fatal(err)
			}
			if err := prepareDatabase(sql, false, DefaultNamespace); err != nil {
				t.Fatalf("prepareDatabase: %v", err)
			}
			srv, err := newTemporalServer("127.0.0.1", p, sql, slog.New(slog.DiscardHandler))
			if err == nil {
				err = guard(srv.Start)
				done := make(chan error, 1)
				go func() { done <- guard(srv.Stop) }()
				select {
				case <-done:
				case <-time.After(20 * time.Second):
					t.Fatalf("stop after a failed start did not return in 20s")
				}
			}
			if err == nil || !strings.Contains(err.Error(), "address already in use") {
				t.Errorf("start with the %s port taken: err = %v, want one naming the port conflict", name, err)
			}
		})
	}
}

// TestStartTemporalRetriesFreePorts checks that with FreePort a port taken
// after planning leads to new ports rather than a failed start.
func TestStartTemporalRetriesFreePorts(t *testing.T) {
	p, err := planTemporalPorts("127.0.0.1", FreePort)
	if err != nil {
		t.Fatalf("planTemporalPorts: %v", err)
	}
	busy, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p.frontend)))
	if err != nil {
		t.Fatalf("take frontend port: %v", err)
	}
	defer busy.Close()
	sql, err := sqlConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if err := prepareDatabase(sql, false, DefaultNamespace); err != nil {
		t.Fatalf("prepareDatabase: %v", err)
	}
	level := new(slog.LevelVar)
	level.Set(slog.LevelError + 1)
	s := &Stack{logger: slog.New(slog.DiscardHandler), serverLevel: level}
	opts := Options{Host: "127.0.0.1", TemporalPort: FreePort, Logger: slog.New(slog.DiscardHandler)}
	got, err := s.startTemporal(opts, p, sql)
	if err != nil {
		t.Fatalf("startTemporal with a taken frontend port: %v", err)
	}
	defer func() { _ = guard(s.temporal.Stop) }()
	if got.frontend == p.frontend {
		t.Errorf("frontend port = %d, the taken one; want a new port", got.frontend)
	}
}
